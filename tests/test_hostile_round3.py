"""The third hostile round (issue 25, section 3): one regression test per failure that benchmarks/hostile_round3.py
found (the table of cases, run through the real CLI). Each test names its case(s) of the table; each failed on
the branch as it was found. Cheap: in-process through ``adprof.cli.main`` or the function at fault, one short
program run at most.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from adprof import model, words
from adprof.cli import main
from adprof.model import Point, Report, Result, Series, Shard, Stop, StopReason, Verdict
from adprof.report import MergeError, build_report, merge_reports

REPO = Path(__file__).resolve().parents[1]
H3 = REPO / "tests" / "cmds" / "hostile3.py"
PWN = "\x1b]0;PWNED\x07\x1b[2J <script>alert(1)</script> [bold]x[/] $x^{$"
RAW = ("\x1b", "\x07")


def _series(chain: str = "c", error: str | None = None, n: int = 4) -> Series:
    pts = [
        Point(depth=d, times={"transform": 1e-4 * d, "drop": 1e-5 * d}, counters={"transform": {"key_comparisons": d}})
        for d in range(1, n + 1)
    ]
    return Series(chain, "engine", "fixed", "traced", points=[] if error else pts, error=error)


def _saved(tmp_path: Path, edit: Any = None, name: str = "r.json") -> Path:
    """A real report's JSON (two series decided by build_report), edited by ``edit``, written to ``name``."""
    from adprof.render.jsonout import report_to_json

    doc = report_to_json(build_report([_series("a"), _series("b")], {}))
    doc = json.loads(json.dumps(doc))
    if edit is not None:
        edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc, allow_nan=True) if isinstance(doc, dict) else doc)
    return path


def _report(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["report", *args, "--no-color"])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_exit_2(code: int, err: str, pattern: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and pattern in lines[0], (code, err)
    assert "Traceback" not in err and "internal error" not in err


# --------------------------------------------------------------------------- report: hostile JSON


@pytest.mark.parametrize("reason", list(StopReason))
def test_a_stop_without_its_figures_is_still_a_sentence(reason: StopReason) -> None:
    """report/stop-without-its-figures, stop-unknown-keys: ``{"reason": "cap"}`` (no phase, seconds, limit) in a
    saved report was a TypeError in stop_text (exit 3); every Stop the type allows is written."""
    text = words.stop_text(Stop(reason))
    assert text and "None" not in text
    assert words.stop_text(Stop(StopReason.CAP, after=3, phase="transform", seconds=2.0, limit=1.5)) == (
        "stopped after depth 3: transform 2.00 s > 1.5 s cap"
    )


def test_a_report_with_a_bare_stop_renders(tmp_path: Path, capsys) -> None:
    path = _saved(tmp_path, lambda d: d["results"][0].update(stop={"reason": "budget", "depth": 3, "bogus": 1}))
    code, out, err = _report(capsys, str(path), "--json", str(tmp_path / "o.json"))
    assert code == 0 and "Traceback" not in err, (out, err)
    stopped = json.loads((tmp_path / "o.json").read_text())["results"][0]["stopped"]
    assert stopped == "not measured: depth 3 killed after ? s: the budget ran out"


@pytest.mark.parametrize(
    ("case", "edit", "pattern"),
    [
        ("decided-by-a-number", lambda d: d["results"][0].update(decided_by=5), "decided_by: 5"),
        ("decided-by-another-field", lambda d: d["results"][0].update(decided_by="kind"), "decided_by: 'kind'"),
        ("verdict-unknown", lambda d: d["results"][0].update(verdict="splendid"), "verdict: 'splendid'"),
        ("results-an-object", lambda d: d.update(results={}), "results: expected a list"),
        ("fit-depths-values-differ", lambda d: d["results"][0]["fit"].update(depths=[1]), "1 depths but 4 values"),
        ("curve-lengths-differ", lambda d: d["results"][0]["fit"].update(curve_values=[1.0]), "curve_values"),
    ],
)
def test_a_report_that_does_not_fit_the_model_is_one_line(tmp_path: Path, capsys, case: str, edit, pattern) -> None:
    """A hand-edited report: decided_by 5 (AttributeError, exit 3), "kind" (setattr replaced the verdict's kind by a
    Fit), an unknown verdict (rendered as if it were one), ``results: {}`` (an empty report, exit 0), a fit whose
    depths and values differ ("--html: cannot write it (x and y must have same first dimension)"): each is one
    line naming the field, exit 2, and no file is written."""
    path = _saved(tmp_path, edit)
    code, out, err = _report(capsys, str(path), "--html", str(tmp_path / "r.html"))
    _one_line_exit_2(code, err, "does not fit schema")
    assert pattern in err and "cannot write" not in err, err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("where", ["notes", "environment"])
def test_json_nested_too_deeply_is_one_line(tmp_path: Path, capsys, where: str) -> None:
    """report/deep-nesting-list, deep-nesting-object: 100,000 nested lists was a RecursionError (exit 3)."""
    deep = "[" * 100_000 + "]" * 100_000 if where == "notes" else '{"a":' * 5000 + "1" + "}" * 5000
    path = tmp_path / "deep.json"
    path.write_text(f'{{"schema": 2, "results": [], "{where}": {deep}}}')
    code, _, err = _report(capsys, str(path))
    _one_line_exit_2(code, err, "nested too deeply")


def test_json_nested_deeper_than_any_report_is_one_line(tmp_path: Path, capsys) -> None:
    """report/nesting-under-the-parser-limit: 900 nested lists parse, then the writers' recursion (to_plain,
    json_safe) ran out: a RecursionError, exit 3. A report nests a dozen levels: deeper is not one."""
    path = tmp_path / "deep.json"
    path.write_text('{"schema": 2, "results": [], "environment": {"x": ' + "[" * 900 + "]" * 900 + "}}")
    code, _, err = _report(capsys, str(path), "--json", str(tmp_path / "o.json"))
    _one_line_exit_2(code, err, "nested more than 64 levels deep")


def test_a_saved_sweep_table_is_rebuilt_not_trusted(tmp_path: Path, capsys) -> None:
    """report/sweep-row-missing-keys: ``sweeps: [{"chain": "x"}]`` was a KeyError in the console (exit 3); the
    table is derived from the results, so it is rebuilt from them."""
    path = _saved(tmp_path, lambda d: d.update(sweeps=[{"chain": "x"}]))
    code, out, err = _report(capsys, str(path), "--json", str(tmp_path / "o.json"), "--html", str(tmp_path / "o.html"))
    assert code == 0 and "Traceback" not in err, err
    assert json.loads((tmp_path / "o.json").read_text())["sweeps"] == []


# --------------------------------------------------------------------------- report: escapes in HTML and plots


def test_the_html_shows_control_characters_escaped(tmp_path: Path) -> None:
    """report/markup-*: a chain name, an error, a note, the environment or a machine with ESC/BEL went into the
    HTML raw (html.escape leaves control characters); the page shows them as ``\\x1b``, as the terminal does.
    Reachable without editing a report: a chain's ``ValueError("\\x1b]0;PWNED\\x07")`` is its series' error."""
    from adprof.render import render_html

    series = [_series("ok"), _series("bad", error=f"ValueError: {PWN}")]
    series[0].params = {"k": PWN}
    series[0].machine = model.Machine(host=PWN, cpu_model=PWN, cpus=2)
    report = build_report(series, {}, notes=[PWN], environment={PWN: PWN})
    page = render_html(report)
    assert not [c for c in RAW if c in page] and "<script>" not in page
    assert "\\x1b]0;PWNED\\x07" in page


def test_a_plot_draws_a_users_string_literally(tmp_path: Path) -> None:
    """report/markup-chain-name: a label with ESC printed "UserWarning: Glyph 27 (\\x1b) missing" with the raw ESC
    on the terminal; one with ``$x^{$`` is mathtext that does not parse (ValueError: "--html: cannot write it")."""
    pytest.importorskip("matplotlib", reason="needs the plot extra (matplotlib)")
    from adprof.render.plot import chain_svg, plot_report

    report = build_report([_series(PWN), _series("b", error=PWN)], {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        svg = chain_svg(PWN, report.results)
        plot_report(report, tmp_path / "p.png")
    assert not [c for c in RAW if c in svg] and "\\x1b]0;PWNED\\x07" in svg


# --------------------------------------------------------------------------- shards


def _shard_report(k: int, n: int, planned: int, positions: list[int], plan: str = "p") -> Report:
    results = [Result(Series(f"c{i}", "engine", "v08", "traced"), Verdict(model.LINEAR)) for i in positions]
    return Report(results=results, shard=Shard(k, n, planned, positions, plan))


@pytest.mark.parametrize(
    ("case", "edited", "pattern"),
    [
        ("merge-index-over-count", _shard_report(7, 3, 6, [4, 5]), "not a part of 3"),
        ("merge-index-zero", _shard_report(0, 3, 6, [4, 5]), "not a part of 3"),
        ("merge-position-out-of-plan", _shard_report(3, 3, 6, [4, 999]), "series 999 is not in a plan of 6"),
        ("merge-negative-position", _shard_report(3, 3, 6, [-1, 5]), "series -1 is not in a plan of 6"),
    ],
)
def test_a_hand_edited_shard_is_refused(case: str, edited: Report, pattern: str) -> None:
    """shard/merge-*: a shard record no ``--shard K/N`` writes (K outside 1..N, a position outside the plan)
    merged silently (exit 0; "merged 3 of 3 shards: shard 2/3 missing (0 of 13 series...)")."""
    good = [_shard_report(1, 3, 6, [0, 2]), _shard_report(2, 3, 6, [1, 3])]
    with pytest.raises(MergeError, match=pattern):
        merge_reports([*good, edited])


@pytest.mark.parametrize("field", ["count", "planned"])
def test_shards_of_a_plan_they_cannot_hold_are_refused(field: str) -> None:
    """shard/merge-count-zero, merge-planned-too-small: ``count: 0`` or ``planned: 1`` in every shard (the plan's
    fingerprint unchanged) merged 13 series."""

    def edit(r: Report) -> Report:
        assert r.shard is not None
        setattr(r.shard, field, 0 if field == "count" else 1)
        return r

    shards = [edit(_shard_report(1, 2, 4, [0, 2])), edit(_shard_report(2, 2, 4, [1, 3]))]
    with pytest.raises(MergeError):
        merge_reports(shards)


def test_shards_measured_with_other_options_are_of_another_run() -> None:
    """shard/merge-other-run: shard 2/3 run with ``--depths 1,2,3`` merged with shards 1 and 3 run without (exit 0):
    the plan's fingerprint held the series' names only; it holds how they are measured too."""
    from adprof.cli.run import measuring_settings, shard_specs
    from adprof.measure import MeasureConfig, SeriesSpec

    specs = [
        SeriesSpec(file="f.py", chain=f"c{i}", backend="engine", profile="fixed", mode="traced", max_depth=8)
        for i in range(6)
    ]
    plans = {
        name: shard_specs(specs, 1, 2, settings=measuring_settings(MeasureConfig(**kw), None))[1].plan
        for name, kw in {"plain": {}, "same": {}, "depths": {"depths": (1, 2, 3)}, "cap": {"cap": 9.0}}.items()
    }
    assert plans["plain"] == plans["same"]
    assert len({plans["plain"], plans["depths"], plans["cap"]}) == 3
    deeper = [SeriesSpec(**{**vars(s), "max_depth": 16}) for s in specs]
    assert shard_specs(deeper, 1, 2)[1].plan != shard_specs(specs, 1, 2)[1].plan
    # the split itself is by name only: the same series land in the same shards
    assert shard_specs(deeper, 1, 2)[1].positions == shard_specs(specs, 1, 2)[1].positions


# --------------------------------------------------------------------------- --cmd protocol


@pytest.mark.parametrize(
    ("obj", "pattern"),
    [
        ({"transform_seconds": 10**400}, "transform_seconds is an integer of 401 digits"),
        ({"transform_seconds": [0.1, 10**400]}, r"transform_seconds\[1\] is an integer of 401 digits"),
        ({"counters": {"transform": {"key_comparisons": 10**400}}}, "key_comparisons is an integer of 401 digits"),
    ],
)
def test_an_integer_too_large_for_a_float_is_malformed_output(obj: dict[str, Any], pattern: str) -> None:
    """cmd/cmd-bigint, cmd-bigcounter: a 400-digit integer (valid JSON) was an OverflowError: "internal error" as
    the series' error; it is the program's malformed output at that depth."""
    from adprof.backends.cmd import CommandFailure, apply_protocol
    from adprof.backends.cmd.protocol import check_within

    check_within(obj, 0.05)  # no OverflowError
    with pytest.raises(CommandFailure, match=pattern) as info:
        apply_protocol(Point(depth=4), obj, "traced")
    assert info.value.kind == "malformed"


def test_a_huge_value_is_kept_as_a_number() -> None:
    """cmd/cmd-bigvalue: ``"value": 10**400`` (shown, not classified) was an OverflowError too."""
    from adprof.backends.cmd import apply_protocol

    pt = Point(depth=1)
    assert apply_protocol(pt, {"transform_seconds": 0.1, "value": 10**400}, "traced")
    assert pt.extra["value"] == math.inf


def test_the_program_at_fault_is_named_at_its_depth() -> None:
    """cmd/cmd-bigint end to end: one run of the hostile program at the depth it breaks."""
    from adprof.backends.cmd import CommandFailure, run_command_point

    run_command_point(f"{sys.executable} {H3} bigint {{depth}}", 3, "traced", timeout=20)
    with pytest.raises(CommandFailure, match="integer of 401 digits") as info:
        run_command_point(f"{sys.executable} {H3} bigint {{depth}}", 4, "traced", timeout=20)
    assert info.value.kind == "malformed"


def test_max_depth_zero_is_bad_input(capsys) -> None:
    """cmd/cmd-max-depth-zero: ``--max-depth 0`` was read as "not given" (256) and measured; -3 was refused."""
    with pytest.raises(SystemExit) as info:  # refused by its rule (adprof/options.py) while parsing
        main(["check", "--cmd", f"{sys.executable} {H3} ok {{depth}}", "--max-depth", "0"])
    assert info.value.code == 2
    assert "argument --max-depth: expected a positive integer, got '0'" in capsys.readouterr().err


def test_flame_cmd_on_a_program_that_hangs_is_a_finding_naming_it(monkeypatch, tmp_path: Path, capsys) -> None:
    """compile/flame-cmd-hangs: a program that hangs under ``flame --cmd`` was exit 2 (bad input) with
    "/usr/bin/valgrind did not finish within 60 s"; it is exit 1, naming the program (valgrind only runs it)."""
    import adprof.cli.cmd as cli_cmd
    from adprof.backends.cmd import CommandFailure
    from adprof.backends.cmd.process import run_process

    with pytest.raises(CommandFailure, match=r"^prog \(under valgrind\) did not finish within 0.3 s") as info:
        run_process(["sleep", "5"], timeout=0.3, name="prog (under valgrind)")
    hang = info.value

    def profile(*a: Any, **kw: Any) -> Any:
        raise hang

    monkeypatch.setattr(cli_cmd, "callgrind_profile", profile)
    code = main(
        ["flame", "--cmd", f"{sys.executable} {H3} sleepcap {{depth}}", "--depth", "4", "-o", str(tmp_path / "f.svg")]
    )
    err = capsys.readouterr().err
    assert code == 1 and "prog (under valgrind) did not finish" in err, err


# --------------------------------------------------------------------------- guard: a metric at zero


def test_time_growth_contradicts_a_metric_that_stays_at_zero() -> None:
    """guard/issue-expsleep(-eager), fixture-expsleep: the issue's chain sleeping 0.0005 * 2**depth, in eager mode
    on the fixed engine, where the steady backward's counters are zero at every depth: a zero metric was "no
    growth known", so time could never contradict it (``ok ... linear``); staying at zero is growing x1."""
    s = Series("expsleep", "engine", "fixed", "eager")
    for d in range(1, 9):
        fwd = 0.0005 * 2**d + 1e-4 * d
        times = {"forward0": fwd, "forward": fwd, "backward0": 2e-4, "backward": 1e-5}
        zero = {"key_comparisons": 0, "metadata_lookups": 0, "nodes_visited": 0}
        s.points.append(Point(depth=d, times=times, counters={"backward": zero, "backward0": zero}, calls=6))
    from adprof.analysis.classify import decide
    from adprof.guard import GuardLimits, check_result

    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and "whole point" in v.reason, (v.kind, v.reason)
    assert not check_result(Result(s, v), GuardLimits()).ok
    assert decide(s, trust="counters").kind == model.LINEAR  # the user may say which to trust


def test_a_healthy_chain_with_a_metric_at_zero_still_reads_linear() -> None:
    """The twin: the same series with a linear forward stays linear (a zero metric is not a contradiction)."""
    from adprof.analysis.classify import decide

    s = Series("twin", "engine", "fixed", "eager")
    for d in range(1, 9):
        times = {"forward0": 1e-3 * d, "forward": 1e-3 * d, "backward0": 2e-4, "backward": 1e-5}
        zero = {"key_comparisons": 0, "metadata_lookups": 0, "nodes_visited": 0}
        s.points.append(Point(depth=d, times=times, counters={"backward": zero, "backward0": zero}, calls=6))
    assert decide(s).kind == model.LINEAR


# --------------------------------------------------------------------------- dask


def test_an_embedded_cluster_starts_no_more_workers_than_series(monkeypatch) -> None:
    """dask/local-huge-n: ``--scheduler local:100000`` for one series started a LocalCluster of 100,000 processes
    (1.5 GB and growing after 10 min, past its 10 s budget and deaf to SIGTERM); the local lanes never start more
    workers than series, nor does the embedded cluster."""
    pytest.importorskip("distributed", reason="needs the dask extra (dask[distributed])")
    import distributed

    from adprof.measure.dask_executor import DaskExecutor, SchedulerError

    asked: list[int] = []

    class Refused(RuntimeError):
        pass

    def cluster(*, n_workers: int, **kw: Any) -> Any:
        asked.append(n_workers)
        raise Refused("stop here")

    monkeypatch.setattr(distributed, "LocalCluster", cluster)
    for scheduler, most, workers in (("local:100000", 3, 2), ("local", 1, 2), ("local:2", 5, 2)):
        with pytest.raises(SchedulerError):
            DaskExecutor(scheduler, workers=workers, most=most)
    assert asked == [3, 1, 2]


# --------------------------------------------------------------------------- the table itself


def test_the_round_has_at_least_a_hundred_cases() -> None:
    """benchmarks/hostile_round3.py lists its cases without running them (the run is the benchmark)."""
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "hostile_round3.py"), "--list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    groups = {ln.split()[0] for ln in out.splitlines()[:-1]}
    assert int(out.splitlines()[-1].split()[0]) >= 100
    assert groups == {"dask", "shard", "report", "compile", "cmd", "guard"}


# --------------------------------------------------------------------------- guard: a loaded machine


def test_a_jump_is_confirmed_only_where_every_run_shows_it(monkeypatch) -> None:
    """guard/guard-healthy-mul-under-load (and tests/test_guard.py's fixed-engine guards on a machine at load 7: 4-5
    of 8 failed): a healthy point re-measured because one phase jumped, each run preempted in *another*
    sub-millisecond phase (a few ms of scheduling on a busy machine), was "confirmed": the run kept was the fastest
    by total, which still had its own slow phase (``depth 8 takes 3.69 ms (compile grew most): 5x ...``). A phase
    jumped only if it is slow in every run: the point kept has each phase at its fastest run."""
    from test_censored_evidence import _Clock, _healthy

    from adprof.analysis.classify import assess_series, predicted_growth
    from adprof.analysis.jumps import unconfirmed_jumps
    from adprof.guard import GuardLimits, guard_checks
    from adprof.measure import series as series_mod
    from adprof.measure.config import MeasureConfig
    from adprof.measure.series import SeriesSpec, fastest_per_phase, run_series

    class Busy:
        """Healthy linear points; every run of the deepest depth (8: a jump there has no deeper depth to persist
        to, so it is re-measured) loses 25 ms in one phase (past the wall-time floor of a jump), a different one
        each run."""

        def __init__(self, clock: _Clock) -> None:
            self.clock, self.runs = clock, 0

        def count_instructions(self, counting: bool) -> None:
            return None

        def request(self, req, timeout, on_event=None, hard_deadline=None, first_timeout=None):
            d = int(req["depth"])
            times = _healthy(d)
            if d == 8:
                times[("record", "transform", "drop")[self.runs % 3]] += 0.025
                self.runs += 1
            self.clock.now += sum(times.values()) + 0.003
            counters = {"transform": {"key_comparisons": 10 * d}, "drop": {"key_comparisons": 2 * d}}
            return {"ok": True, "point": {"depth": d, "times": times, "counters": counters}}

    clock = _Clock()
    monkeypatch.setattr(series_mod, "time", clock)
    depths = tuple(range(1, 9))
    spec = SeriesSpec("sim.py", "sim", "engine", "fixed", "traced", 8, depths=depths, required_depths=depths)
    cfg = MeasureConfig(
        cap=15, budget=60, started=0.0, predictor=predicted_growth, assess=assess_series, jumps=unconfirmed_jumps
    )
    worker = Busy(clock)
    s = run_series(spec, worker, cfg, allowance=60, hard_deadline=60)  # type: ignore[arg-type]
    assert worker.runs >= 2  # depth 8 jumped, and was re-measured
    (eight,) = [p for p in s.points if p.depth == 8]
    assert eight.times == pytest.approx(_healthy(8)) and len(eight.confirm_walls) == worker.runs
    report = build_report([s], {}, budget_seconds=60)
    assert report.results[0].verdict.kind == model.LINEAR and guard_checks(report, GuardLimits()).ok

    slow = [
        Point(6, times={**_healthy(6), "compile": 0.004 + i * 1e-4}, wall_seconds=0.01 - i * 1e-3) for i in range(3)
    ]
    kept = fastest_per_phase(slow)  # a phase slow in every run stays slow: a real jump is still confirmed
    assert kept.times["compile"] == pytest.approx(0.004) and kept.wall_seconds == pytest.approx(0.008)


# --------------------------------------------------------------------------- the fixture's depths


@pytest.mark.parametrize("depths", ["1,2,3", [0, 1], [1, 2.5, 3], (True, 2, 3), []])
def test_a_guards_depths_are_positive_integers(depths: Any) -> None:
    """guard/fixture-depths-*: ``depths="1,2,3"`` was measured at depths "1", ",", ... (an internal error in the
    worker, reported as the chain failing); ``[0, 1]`` and ``[1, 2.5, 3]`` were measured, ``(True, 2, 3)`` and
    ``[]`` passed. The guard's API (the fixture's path) says which depths it takes, in one line."""
    from adprof.guard import guard_depths
    from adprof.measure.plan import UsageError

    with pytest.raises(UsageError, match="depths: expected positive integers"):
        guard_depths(depths)
    assert guard_depths(None) is None and guard_depths([4, 1, 2, 2]) == (1, 2, 4)


def test_the_fixture_says_so_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        def test_depths(adprof_guard):
            adprof_guard.scaling("{REPO}/probes/chains.py::linear", mode="traced", depths="1,2,3")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "adprof guard: depths: expected positive integers, e.g. [1, 2, 4, 8], got '1,2,3'" in text
    assert "internal error" not in text and "Traceback" not in text


# --------------------------------------------------------------------------- dask: addresses and signals


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("local:", "local:N with N >= 1"),
        ("http://127.0.0.1:1", "cannot connect to http:// addresses"),
        ("inproc://nothing", "cannot connect to inproc:// addresses"),
        ("tcp://:8786", "HOST:PORT"),
        ("tcp://127.0.0.1:99999", "a port 1..65535"),
        ("tcp://host:port", "a port 1..65535"),
    ],
)
def test_a_scheduler_address_dask_cannot_use_is_bad_input(value: str, pattern: str, capsys) -> None:
    """dask/scheduler-http-scheme, scheduler-inproc: Dask's comms raised ValueError inside Client() (exit 3, a
    traceback, then a 40 s hang in Client.__del__); ``local:`` was read as ``local``. One line, before anything."""
    from adprof.measure.dask_executor import parse_scheduler

    with pytest.raises(ValueError, match=pattern):
        parse_scheduler(value)
    for good in ("local", "local:3", "tcp://10.0.0.7:8786", "10.0.0.7:8786", "tls://h:1", "tcp://[::1]:8786"):
        parse_scheduler(good)
    code = main(["check", f"{REPO}/probes/chains.py::mul", "--scheduler", value])
    _one_line_exit_2(code, capsys.readouterr().err, "--scheduler")


def test_a_stop_signal_while_the_cluster_starts_is_held_until_it_is_whole() -> None:
    """dask/local-sigterm-at-startup, local-sighup-at-startup: SIGTERM while the LocalCluster started left it half
    started; Dask's own exit handler then failed to close it (``AssertionError: Status.init``, a traceback after
    "interrupted by SIGTERM"). The start-up holds SIGTERM and SIGHUP (SIGINT is blocked for the children) and
    the executor closes the cluster before acting on them (the slow test below runs it)."""
    import os
    import signal

    from adprof.measure.dask_executor import _signals_held

    before = signal.getsignal(signal.SIGTERM)
    with _signals_held() as held:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGHUP)
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # blocked, not ignored (issue 39)
    assert held == [signal.SIGTERM, signal.SIGHUP] and signal.getsignal(signal.SIGTERM) is before


def test_a_spawned_worker_of_the_command_is_not_the_command(monkeypatch) -> None:
    """dask/local-sigterm-at-startup: the LocalCluster's spawned workers inherit ``sys.argv`` (``.../bin/adprof``),
    took themselves for the command and printed "adprof: interrupted by SIGTERM while starting" when adprof
    stopped them: two more lines after adprof's own."""
    import adprof

    monkeypatch.setattr(sys, "argv", ["/venv/bin/adprof", "check"])
    monkeypatch.setattr(sys, "orig_argv", ["/venv/bin/python", "/venv/bin/adprof", "check"])
    assert adprof._started_as_the_command()
    spawned = ["/venv/bin/python", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"]
    monkeypatch.setattr(sys, "orig_argv", [*spawned, "--multiprocessing-fork"])
    assert not adprof._started_as_the_command()


@pytest.mark.slow
def test_sigterm_while_the_local_cluster_starts_is_one_line(tmp_path: Path) -> None:
    """The whole path: ``adprof check --scheduler local:2`` stopped by SIGTERM at start-up times that land before,
    during and after the cluster's start: exit 143, one ``adprof:`` line, no traceback, nothing left running."""
    pytest.importorskip("distributed", reason="needs the dask extra (dask[distributed])")
    import signal
    import time

    from fault_helpers import describe, kill_tagged, leftovers, start_adprof

    for delay in (1.0, 1.6, 2.4):
        proc, tag = start_adprof(
            ["check", "probes/chains.py::mul", "--scheduler", "local:2", "--budget", "60"], REPO, None
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        left = describe(leftovers(tag, 5.0))
        kill_tagged(tag)
        lines = [ln for ln in err.splitlines() if ln.startswith("adprof")]
        assert proc.returncode == 143 and "Traceback" not in err and len(lines) == 1, (delay, err)
        assert not left, left
