"""Issue 39, "CI false passes and lies": a guard never passes a chain it did not measure or a depth it did not
reach, and a verdict never contradicts its evidence. One class per test group; each test names its item, and a case
nobody listed is tested beside it. Cheap: simulated exact series on hand-built points, or the real CLI on a tiny
chain or ``--cmd`` program.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from adprof import model
from adprof.analysis.classify import decide
from adprof.cli import main
from adprof.comparison import State, compare_reports
from adprof.guard import DEFAULT_DEPTHS, GuardLimits, guard_specs, guard_targets, missing_depths, missing_text
from adprof.measure.client import WorkerTimeout
from adprof.measure.cmd_points import CommandPoints, CommandSettings
from adprof.model import Point, Result, Series, Stop, StopReason

REPO = Path(__file__).resolve().parents[1]
H3 = REPO / "tests" / "cmds" / "hostile3.py"

# ------------------------------------------------------------------------- a guard measures what it claims to


TWO_BACKENDS = """
import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4, 5, 6))
def lin(xp, x, depth):
    y = x
    for _ in range(depth):
        y = y * 0.5
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4, 5, 6), modes={"jax": ("traced",)})
def jaxonly(xp, x, depth):
    y = x
    for _ in range(depth):
        y = y * y
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4, 5, 6), modes=("eager",))
def eageronly(xp, x, depth):
    y = x
    for _ in range(depth):
        y = y * y
    return xp.sum(y)
"""


def _write(tmp_path: Path, text: str, name: str = "chains.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_r3_a_guard_fails_a_chain_restricted_to_another_backend_or_mode(tmp_path, capsys, monkeypatch):
    """R3: a chain the guard cannot measure (a case for jax; or, a case nobody listed, a chain declaring only
    modes that were not selected) fails the guard with a line naming why, in the text and the JSON."""
    monkeypatch.setenv("COLUMNS", "400")
    path = _write(tmp_path, TWO_BACKENDS)
    out_json = tmp_path / "g.json"
    code = main(["guard", str(path), "--mode", "traced", "--no-color", "--json", str(out_json)])
    out, _ = capsys.readouterr()
    assert code == 1, out
    assert "1 of 3 held" in out
    fails = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
    assert any("jaxonly" in ln and "not guarded: skipped on engine (a case for jax)" in ln for ln in fails), out
    assert any("eageronly" in ln and "not guarded: skipped on engine (declares modes eager)" in ln for ln in fails)
    doc = json.loads(out_json.read_text())
    assert any("jaxonly" in n for n in doc["notes"])
    errors = {r["chain"]: r["error"] for r in doc["results"] if r.get("error")}
    assert set(errors) == {"jaxonly", "eageronly"}


def test_r3_the_fixture_path_fails_an_unmeasured_chain_too(tmp_path):
    """R3: the pytest fixture's path (:func:`guard_targets`) fails the same chain."""
    path = _write(tmp_path, TWO_BACKENDS)
    checks, _ = guard_targets([f"{path}::lin", f"{path}::jaxonly"], GuardLimits(), mode="traced")
    assert not checks.ok
    (bad,) = checks.failures
    assert bad.result.series.chain == "jaxonly" and "a case for jax" in bad.reason


def test_r4_a_chain_without_declared_depths_is_guarded_past_depth_8():
    """R4: a chain that declares no depths gets the guard's own depths (16 and 32 too); declared ones stay."""
    metas = [
        {"file": "c.py", "name": "free", "depths": list(range(1, 9)), "declared_depths": False},
        {"file": "c.py", "name": "mine", "depths": [1, 2, 4], "declared_depths": True},
    ]
    specs = {s.chain: s for s in guard_specs(metas, ["engine"], None, "traced", None, [])}
    assert specs["free"].depths == DEFAULT_DEPTHS and specs["free"].required_depths == DEFAULT_DEPTHS
    assert max(DEFAULT_DEPTHS) > 8
    assert specs["mine"].depths == (1, 2, 4)


EXPLODES_PAST_8 = '''
import adprof


@adprof.chain(input_shape=(3,))
def late(xp, x, depth):
    """Linear to depth 8, then the previous value used twice per layer."""
    y = x
    for i in range(depth):
        y = (y * y) * 0.5 if i >= 8 else y * 0.5
    return xp.sum(y)
'''


def test_r4_a_chain_that_explodes_past_depth_8_fails_the_guard(tmp_path, capsys):
    """R4 through the CLI: the chain is linear over 1..8; the guard measures 16 and 32 and fails it."""
    path = _write(tmp_path, EXPLODES_PAST_8)
    code = main(["guard", str(path), "--profile", "v08", "--mode", "traced", "--no-color", "--cap", "1"])
    out, _ = capsys.readouterr()
    assert code == 1, out
    assert "0 of 1 held" in out
    assert any(f"  {d:5d}  " in out for d in (16, 32)), out


# ------------------------------------------- an open exact reading spends the budget before it asks for a cap

KNEE = REPO / "tests" / "cmds" / "knee.py"


def _exact_series(cost, depths, backend: str = "cmd") -> Series:
    pts = [
        Point(
            depth=d,
            times={"transform": 1e-6 * cost(d)},
            counters={"transform": {"key_comparisons": cost(d)}},
            wall_seconds=1e-6 * cost(d) + 0.01,
        )
        for d in depths
    ]
    return Series("c", backend, None, "traced", points=pts)


def _flat_then_doubling(d: int) -> float:
    return 1000.0 * 2.0 ** max(d - 8, 0)


def test_r5_fill_depth_fills_the_widest_gap_past_the_unit_steps_deepest_first():
    from adprof.measure.series import fill_depth

    assert fill_depth([1, 2, 3, 4, 5, 6, 7, 8, 16]) == 12
    assert fill_depth([1, 2, 3, 4, 5, 6, 7, 8, 12, 16]) == 14
    assert fill_depth(list(range(1, 17))) is None
    assert fill_depth([1, 2, 3]) is None


def test_r5_an_exact_knee_with_too_few_depths_past_it_is_open():
    """R5: the schedule's 1..8 then 16 read a knee at 8 with one depth past it: open (fill in); the filled series
    is closed; a case nobody listed: a plain linear or a pure exponential series is never open."""
    from adprof.analysis.costs import open_exact

    assert open_exact(_exact_series(_flat_then_doubling, [1, 2, 3, 4, 5, 6, 7, 8, 16]))
    assert not open_exact(_exact_series(_flat_then_doubling, [1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16]))
    assert not open_exact(_exact_series(lambda d: 10.0 * d, range(1, 9)))
    assert not open_exact(_exact_series(lambda d: 2.0**d, range(1, 12)))


def test_r5_check_measures_the_depths_below_max_depth_before_it_asks_for_a_cap(tmp_path, capsys):
    """R5 through the CLI: flat to depth 8 then x2 per layer, max depth 16: check fills in depths 9..15 and reads
    x2.00 past 8 (on fc6d0bb: 1..8 and 16 only, inconclusive 'raise --cap')."""
    out_json = tmp_path / "c.json"
    argv = ["check", "--cmd", f"{sys.executable} {KNEE} {{depth}}", "--max-depth", "16", "--budget", "40"]
    code = main([*argv, "--no-color", "--json", str(out_json)])
    capsys.readouterr()
    assert code == 1
    (res,) = json.loads(out_json.read_text())["results"]
    depths = {p["depth"] for p in res["points"]}
    assert depths & set(range(9, 16)), depths
    assert res["verdict"] == "exponential-transform", res["reason"]
    assert res["base"] == pytest.approx(2.0, abs=1e-6)
    lo, hi = res["interval"]
    assert lo <= 2.0 + 1e-9 and hi >= 2.0 - 1e-9


# ------------------------------------------------------------- a stopped point names what really stopped it


def test_r17_a_command_cut_by_the_budget_is_a_budget_stop_not_a_hang():
    """R17: a finite slow program whose time limit the budget's end shortened is killed by the budget
    (``by_deadline``), never "killed after the 1.0 s timeout: the chain hangs"."""
    points = CommandPoints(CommandSettings(f"{sys.executable} -c 'import time; time.sleep(30)' {{depth}}"))
    msg = {"op": "point", "depth": 1, "mode": "traced"}
    with pytest.raises(WorkerTimeout) as got:
        points.request(msg, timeout=6.0, hard_deadline=time.monotonic() + 0.2)
    assert got.value.by_deadline and got.value.limit < 6.0


def test_r17_check_says_the_budget_cut_a_slow_command(capsys, monkeypatch):
    """R17 through the CLI: a 30 s point at depth 4 under a 4 s budget is cut by the budget, not a hang."""
    monkeypatch.setenv("ADPROF_H3_SLEEP", "30")
    monkeypatch.setenv("COLUMNS", "400")
    code = main(["check", "--cmd", f"{sys.executable} {H3} slowpoint {{depth}}", "--budget", "4", "--no-color"])
    out, err = capsys.readouterr()
    assert "timeout: the chain hangs" not in out + err
    assert "budget" in out
    assert code in (0, 1)


# ------------------------------------------------------ a verdict's interval holds what the exact data say


SHAPES = {
    "flat then x2": lambda d: 1000.0 * 2.0 ** max(d - 8, 0),
    "flat + x2 past 8": lambda d: 1000.0 + (2.0 ** (d - 8) if d > 8 else 0.0),
    "line + x2 past 8": lambda d: 100.0 + 10.0 * d + (2.0 ** (d - 8) if d > 8 else 0.0),
    "line + x3 past 6": lambda d: 50.0 + 7.0 * d + (3.0 ** (d - 6) if d > 6 else 0.0),
    "x2 from the start over a line": lambda d: 500.0 + 40.0 * d + 2.0**d,
}
DEPTH_SETS = {
    "unit 1..16": list(range(1, 17)),
    "unit 1..12": list(range(1, 13)),
    "filled": [1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 16],
    "filled more": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16],
    "guard 8..32 by 8": [1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32],
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("depths", DEPTH_SETS)
def test_r19_an_exact_exponential_reads_its_base_and_its_interval_holds_it(shape, depths):
    """R19: exact, noise-free values (flat or a line, then x b per layer) read b, and the interval holds b
    (fc6d0bb: [2.009, 2.018] for an exact 2 over a line). Undecided is allowed (it says what would decide),
    a wrong base is not."""
    true = 3.0 if "x3" in shape else 2.0
    v = decide(_exact_series(SHAPES[shape], DEPTH_SETS[depths]))
    if v.kind == model.INCONCLUSIVE:
        return
    assert v.kind == model.EXPONENTIAL_TRANSFORM, (v.kind, v.reason)
    reading = v.reading if v.reading is not None else v.fit
    lo, hi = reading.interval
    assert v.base == pytest.approx(true, rel=1e-3)
    assert lo - 1e-9 <= true <= hi + 1e-9, (lo, hi)


def test_r19_a_knee_off_a_flat_line_names_no_absurd_slope_ratio():
    """R19 (a case nobody listed): past a flat line the slope is not "1244019195350354688.0x the line's"."""
    v = decide(_exact_series(SHAPES["flat then x2"], [1, 2, 3, 4, 5, 6, 7, 8, 16, 32]))
    assert v.kind == model.INCONCLUSIVE and v.knee is not None
    assert "grows off a flat line" in v.reason
    assert "x the line's" not in v.reason


def test_r19_the_guard_never_advises_a_cap_past_its_budget():
    """R19: a depth predicted to take 2.9e20 s is not "--cap 290155922449189404672": a cap past the budget is no
    advice (the steep cost fails the guard)."""
    s = _exact_series(lambda d: 10.0 * d, range(1, 9))
    s.planned_depths = [*range(1, 9), 16]
    s.stop = Stop(StopReason.PREDICTED_CAP, after=8, depth=16, phase="transform", seconds=1.9e20, limit=15.0)
    r = Result(s, decide(s))
    text = missing_text(r, missing_depths(r), 600.0)
    assert "--cap" not in text and "depth 16 would take about 1.9e+20 s, past the 600 s budget" in text
    s.stop = Stop(StopReason.PREDICTED_CAP, after=8, depth=16, phase="transform", seconds=20.0, limit=15.0)
    assert "--cap 30" in missing_text(r, missing_depths(r), 600.0)


# --------------------------------------------------------- an open verdict is never unchanged against a closed one


def test_item4_compare_never_calls_an_open_verdict_unchanged_against_a_closed_one(tmp_path, capsys):
    """Issue 39 (new): R5's series read inconclusive after a decided base; compare said `unchanged`, exit 0. Now a
    lost decision regresses (exit 1); a case nobody listed: an open base against a decided pathology regresses, an
    open base against linear improves, and open against open stays unchanged."""
    from adprof.render.jsonout import report_to_json
    from tests.compare_helpers import report, result

    base = report(result("late", model.LINEAR, 1.0), result("open", model.INCONCLUSIVE, 1.0))
    new = report(result("late", model.INCONCLUSIVE, 1.0), result("open", model.INCONCLUSIVE, 1.0))
    (tmp_path / "b.json").write_text(json.dumps(report_to_json(base)))
    (tmp_path / "n.json").write_text(json.dumps(report_to_json(new)))
    code = main(["compare", str(tmp_path / "b.json"), str(tmp_path / "n.json"), "--no-color"])
    capsys.readouterr()
    assert code == 1
    states = {c.key.chain: c.state for c in compare_reports(base, new).changes}
    assert states == {"late": State.REGRESSED, "open": State.UNCHANGED}
    for after, state in (
        (model.EXPONENTIAL_TRANSFORM, State.REGRESSED),
        (model.RUNAWAY, State.REGRESSED),
        (model.LINEAR, State.IMPROVED),
    ):
        changed = compare_reports(report(result("c", model.INCONCLUSIVE, 1.0)), report(result("c", after, 2.0)))
        assert [c.state for c in changed.changes] == [state], after


# ------------------------------------------------------------ a program without the mode's phase: one line


def test_r18_an_eager_program_without_a_backward_phase_stops_after_its_first_point(capsys, monkeypatch):
    """R18: `--cmd --mode eager` with a program that prints no backward phase measured depth 1 27 times and said
    "no cost was measured" (exit 0). Now its first point ends the run: one line naming the missing phase, exit 2
    (bad input); the guard too."""
    monkeypatch.setenv("NOPHASE", "1")
    for command in ("check", "guard"):
        code = main([command, "--cmd", f"{sys.executable} {KNEE} {{depth}}", "--mode", "eager", "--budget", "20"])
        out, err = capsys.readouterr()
        lines = [ln for ln in (out + err).splitlines() if ln.strip()]
        assert code == 2, (command, out, err)
        assert len(lines) == 1 and "no backward phase, which eager mode classifies" in lines[0], (command, err)


def test_r18_a_point_reporting_none_of_the_phases_fails_in_the_command_runner():
    """R18 (the class): any mode: a point whose protocol reports none of the classified phases is a failed
    answer at once; a program with no JSON at all (its process time) is still measured."""
    prog = f"{sys.executable} {KNEE} {{depth}}"
    points = CommandPoints(CommandSettings(prog), phases=("drop",))
    ans = points.request({"op": "point", "depth": 1, "mode": "traced"}, timeout=30.0)
    assert not ans["ok"] and "no drop phase" in ans["error"]
    plain = CommandPoints(CommandSettings(f"{sys.executable} -c 'print(1)' {{depth}}"), phases=("transform",))
    assert plain.request({"op": "point", "depth": 1, "mode": "traced"}, timeout=30.0)["ok"]


# ------------------------------------------------------------------ a prediction never comes from one point


def test_r22_the_budget_never_stops_a_series_on_a_prediction_from_one_point():
    """R22: one 3 s point, 16 s of the share left: the quadratic guess (4x, with margin 6x) stopped the series
    with most of the budget unspent. One point predicts nothing: the next runs while what it took fits."""
    from adprof.measure.config import MeasureConfig
    from adprof.measure.series import SeriesSpec, _SeriesRun
    from adprof.measure.time_schedule import EXPLORE, Step

    spec = SeriesSpec(file="p", chain="p", backend="cmd", profile=None, mode="traced", max_depth=8)
    series = spec.new_series(points=[Point(depth=1, times={"transform": 3.0}, wall_seconds=3.1)])
    run = _SeriesRun(spec, None, MeasureConfig(budget=20.0), 16.0, None, None, series)  # type: ignore[arg-type]
    assert run.budget_stop(Step(2, EXPLORE, 12.0), 1) is None
    run.allowance = 2.0  # what it took no longer fits: a stop
    assert run.budget_stop(Step(2, EXPLORE, 12.0), 1) is not None


# ------------------------------------------------------------------ a cause names the source that decided


@pytest.mark.parametrize("kind", [model.EXPONENTIAL_BACKWARD, model.SUPERLINEAR_BACKWARD, model.MILD_TRANSFORM])
def test_r21_a_cause_never_says_no_counters_were_measured_when_counters_decided(kind):
    """R21: the eager cause "no engine counters were measured" sat on a row decided by engine counters (counters
    decided but named no dominant counter). The claim follows the source: counters, a metric, or time."""
    from adprof.analysis import explain

    kw = {"base": 2.0, "exponent": 2.0, "mode": "eager", "backend": "engine", "label": "steady backward counters"}
    by_counters = explain.cause(kind, source="counters", dominant=None, **kw)
    assert "no engine counters were measured" not in by_counters and "counters that decided" in by_counters
    assert "no engine counters were measured" not in explain.cause(kind, source="metric", dominant=None, **kw)
    assert "no engine counters were measured" in explain.cause(kind, source="time", dominant=None, **kw)


# ------------------------------------------------------------ an interrupted hunt counts what it found


def test_item10_an_interrupted_hunt_reports_the_candidates_its_search_found(tmp_path, monkeypatch):
    """Issue 39 (new): interrupted after its search, a hunt reported 0 candidates where its progress line said 8.
    The report counts the candidates the search found (the ones it would have confirmed), as the progress does."""
    from types import SimpleNamespace

    from adprof.hunt.evaluate import Evaluation
    from adprof.hunt.fitness import Archive, best_per_target
    from adprof.hunt.gen import Generator, Node
    from adprof.hunt.run import Hunt, HuntConfig
    from adprof.hunt.targets import Target

    target = Target("engine", "v08", "traced")
    archive = Archive()
    for gen, law in (
        (Generator((Node("mul", (0, 0)),)), lambda d: 2.0**d),
        (Generator((Node("sin", (0,)),)), lambda d: float(d * d)),
    ):
        pts = [Point(depth=d, counters={"transform": {"key_comparisons": law(d)}}) for d in (1, 2, 4, 8, 16, 32)]
        archive.offer(gen, Evaluation(target=target, points=pts))
    found = len(best_per_target(archive.candidates(), [target]))
    assert found >= 2
    executor = SimpleNamespace(interrupted=None)

    def interrupted_search(self):
        self.search = SimpleNamespace(archive=archive)
        executor.interrupted = "SIGINT"  # Ctrl-C as the search's last generation ends
        return archive

    monkeypatch.setattr(Hunt, "_search", interrupted_search)
    cfg = HuntConfig(targets=[target], seed=0, budget=30.0, out=tmp_path / "out", workdir=tmp_path)
    report = Hunt(cfg, executor, check_executor=SimpleNamespace(interrupted=None)).run()  # type: ignore[arg-type]
    assert report.interrupted == "SIGINT"
    assert report.stats.candidates == found


def test_r17_the_guard_never_advises_a_budget_far_past_its_own():
    """R17: the advice for depths the budget cut was `--budget 1886` on a 4 s run: a budget over ten times the
    run's is no advice; a sane one still is."""
    s = _exact_series(lambda d: 10.0 * d, range(1, 5))
    s.planned_depths = list(range(1, 9))
    s.stop = Stop(StopReason.BUDGET_SHARE, after=4, depth=5, seconds=1200.0, limit=1.0)
    r = Result(s, decide(s))
    text = missing_text(r, missing_depths(r), 4.0)
    assert "--budget" not in text and "over 10x the 4 s budget" in text
    s.stop = Stop(StopReason.BUDGET_SHARE, after=4, depth=5, seconds=2.0, limit=1.0)
    assert "rerun with --budget" in missing_text(r, missing_depths(r), 4.0)


def test_depths_past_the_key_comparison_budget_get_no_budget_advice():
    """A first hour: the guard of an exponential chain on v08 said 'rerun with --budget 610'; rerun so, it said
    'rerun with --budget 621'. The key-comparison budget stopped it, not the clock: no --budget measures them."""
    s = _exact_series(lambda d: 2.0**d, range(1, 16))
    s.planned_depths = list(range(1, 17))
    s.stop = Stop(StopReason.COUNTER_BUDGET, after=15, depth=16, seconds=6.6, limit=5e6)
    text = missing_text(Result(s, decide(s)), [16], 600.0)
    assert "--budget " not in text.replace("no --budget", "") and "key-comparison budget" in text, text
