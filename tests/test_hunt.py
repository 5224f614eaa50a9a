"""``adprof hunt``: fitness and the archive, shrinking (a planted finding shrinks to its known minimal chain),
confirmation (a planted one-off slow point is never reported), attribution, the search's reproducibility, the
command line (bad input, Ctrl-C), ``check --compare``, and a short hunt on the engine alone end to end. The
ten-minute hunt of the acceptance is ``slow``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fault_helpers import TRACEBACK, describe, kill_tagged, leftovers, run_adprof, scaled_budget, start_adprof

from adprof.cli import main
from adprof.hunt import evaluate as hunt_evaluate
from adprof.hunt.attribute import attribute, row_of
from adprof.hunt.checks import confirms
from adprof.hunt.evaluate import Evaluation, evaluation_of, evaluation_task
from adprof.hunt.fitness import (
    EXPONENTIAL,
    POWER,
    SAVED_BYTES_COMPONENT,
    Archive,
    Candidate,
    best_per_target,
    components,
    growth_of,
)
from adprof.hunt.gen import Generator, Node
from adprof.hunt.model import ENGINE_SPECIFIC, IN_THE_PROGRAM, UNDETERMINED, Row
from adprof.hunt.search import Search
from adprof.hunt.shrink import holds, shrink
from adprof.hunt.targets import Target, hunt_targets
from adprof.measure.pool import LanePool
from adprof.model import FINDINGS, Fit, MemoryVerdict, Point, Result, Series, Verdict

V08_TRACED = Target("engine", "v08", "traced")
MUL = Generator((Node("mul", (0, 0)),))


# --------------------------------------------------------------------------- fitness and the archive


def test_growth_of_reads_exponentials_power_laws_and_too_few_points():
    ds = list(range(1, 9))
    exp = growth_of(ds, [10 + 3.0**d for d in ds])
    assert exp is not None and exp.family == EXPONENTIAL and abs(exp.rate - 3.0) < 0.05 and exp.strong
    quad = growth_of([1, 2, 4, 8, 16, 32], [5 + d * d for d in (1, 2, 4, 8, 16, 32)])
    assert quad is not None and quad.family == POWER and abs(quad.rate - 2.0) < 0.1 and quad.strong
    lin = growth_of([1, 2, 4, 8, 16], [7 + 3 * d for d in (1, 2, 4, 8, 16)])
    assert lin is not None and lin.family == POWER and abs(lin.rate - 1.0) < 0.05 and not lin.strong
    assert growth_of([1, 2], [1.0, 4.0]) is None


def _evaluation(target: Target, values: dict[int, float]) -> Evaluation:
    """An engine evaluation whose transform counters are ``values`` (depth -> key comparisons)."""
    pts = [Point(depth=d, counters={"transform": {"key_comparisons": v}}) for d, v in values.items()]
    return Evaluation(target=target, points=pts)


def test_archive_keeps_the_best_and_smallest_per_cell_and_names_candidates():
    ds = range(1, 9)
    archive = Archive()
    cube = Generator((Node("mul", (0, 0)), Node("mul", (1, 0))))
    archive.offer(cube, _evaluation(V08_TRACED, {d: 3.0**d for d in ds}))
    cell = next(c for c in archive.elites if c.component == "counters:transform+drop")
    assert archive.elites[cell].gen == cube
    weak = Generator((Node("add", (0, 0)),))
    archive.offer(weak, _evaluation(V08_TRACED, {d: 1.5**d for d in ds}))  # smaller but below base 2: cube stays
    assert archive.elites[cell].gen == cube
    archive.offer(MUL, _evaluation(V08_TRACED, {d: 2.0**d for d in ds}))  # past base 2 too, and smaller: it wins
    assert archive.elites[cell].gen == MUL
    bigger = Generator((Node("mul", (0, 0)), Node("mul", (1, 1)), Node("sin", (2,))))
    archive.offer(bigger, _evaluation(V08_TRACED, {d: 4.0**d for d in ds}))  # faster, but larger: MUL stays
    assert archive.elites[cell].gen == MUL
    linear = Generator((Node("sin", (0,)),))
    archive.offer(linear, _evaluation(V08_TRACED, {d: d * d for d in (1, 2, 4, 8, 16, 32)}))  # another cell
    cands = archive.candidates()
    assert {c.gen.key for c in cands} == {MUL.key, linear.key}
    assert {c.expect for c in cands} == {"exponential", "superlinear"}
    assert archive.parents() == [MUL, linear]  # the elites (the displaced cube is none), in the order found


JAX_TRACED = Target("jax", None, "traced")
ORDER = Generator((Node("mul", (0, 0)), Node("sin", (1,))), scale="order")


def test_saved_bytes_are_a_component_of_their_own_and_nominate_memory_candidates():
    """Memory is a fitness component: saved bytes that grow x2 per order on a target whose deciding metric stays
    linear make a memory candidate (the confirmation will read the memory verdict), beside none for time; bytes
    that grow linearly nominate nothing; a memory candidate never displaces the time candidate of its cell."""
    ds = range(1, 7)
    pts = [
        Point(depth=d, metrics={"transform": {"python_calls": 100.0 * d}}, memory={"saved_bytes": 64.0 * 2**d})
        for d in ds
    ]
    ev = Evaluation(target=JAX_TRACED, points=pts)
    comps = components(ev)
    assert SAVED_BYTES_COMPONENT in comps and comps[SAVED_BYTES_COMPONENT][1] == [64.0 * 2**d for d in ds]
    archive = Archive()
    archive.offer(ORDER, ev)
    cands = archive.candidates()
    assert [(c.component, c.memory, c.expect) for c in cands] == [("saved_bytes:memory", True, "exponential")]
    linear = [
        Point(depth=d, metrics={"transform": {"python_calls": 100.0 * 3**d}}, memory={"saved_bytes": 72.0 * d})
        for d in ds
    ]
    archive.offer(MUL, Evaluation(target=JAX_TRACED, points=linear))
    cands = archive.candidates()
    assert {(c.gen.key, c.memory) for c in cands} == {(ORDER.key, True), (MUL.key, False)}
    best = best_per_target(cands, [JAX_TRACED])
    assert {(c.gen.key, c.memory) for c in best} == {(ORDER.key, True), (MUL.key, False)}  # one per cost


def test_a_saved_bytes_point_with_no_memory_measured_adds_nothing():
    ev = Evaluation(target=JAX_TRACED, points=[Point(depth=d, memory={"peak_bytes": 1e6}) for d in (1, 2, 3, 4)])
    assert SAVED_BYTES_COMPONENT not in components(ev)


# --------------------------------------------------------------------------- shrinking


def _evaluate_on(pool: LanePool, directory: Path, target: Target):
    def evaluate(gens):
        tasks = [evaluation_task(directory, g, [target], time.monotonic() + 60) for g in gens]
        return [evaluation_of(r[0]) if isinstance(r, list) else None for r in pool.run(tasks)]

    return evaluate


def _candidate(gen: Generator, ev: Evaluation) -> Candidate:
    comps = components(ev)
    comp = next(c for c in comps if c.name == "counters:transform+drop")
    growth = growth_of(*comps[comp])
    assert growth is not None and growth.strong
    return Candidate(gen, ev.target, comp.name, growth, 0.0)


def test_a_planted_finding_shrinks_to_its_known_minimal_chain(tmp_path):
    """``y*y`` buried in ops that carry no reuse: on v08's transform counters it shrinks to ``y = y * y``, and it is
    1-minimal (no reduction of it is still exponential)."""
    planted = Generator(
        (
            Node("mul", (0, 0)),  # a = y * y: the reuse
            Node("sin", (1,)),  # b = sin(a)
            Node("scale", (2,), 0.5),  # c = b * 0.5
            Node("tanh", (3,)),  # d = tanh(c)
        )
    )
    pool = LanePool(2)
    try:
        evaluate = _evaluate_on(pool, tmp_path, V08_TRACED)
        (ev,) = evaluate([planted])
        cand = _candidate(planted, ev)
        assert cand.growth.family == EXPONENTIAL
        res = shrink(cand, evaluate, time.monotonic() + 60)
    finally:
        pool.close()
    assert res.gen == MUL, res.gen.summary()
    assert res.minimal and len(res.steps) >= 3
    assert all(s.size < p.size for p, s in zip([planted, *res.steps], res.steps, strict=False))


def test_the_search_measures_saved_bytes_on_the_real_worker(tmp_path):
    """The search's own evaluation (a warm worker, the point request) carries the memory figures: ``y * y`` on the
    engine saves one residual per layer, so its saved bytes are a linear component, never a candidate."""
    pool = LanePool(1)
    try:
        (ev,) = _evaluate_on(pool, tmp_path, V08_TRACED)([MUL])
    finally:
        pool.close()
    assert ev is not None and not ev.error
    ds, vs = components(ev)[SAVED_BYTES_COMPONENT]
    assert len(ds) >= 5 and vs[0] > 0
    per_layer = (vs[1] - vs[0]) / (ds[1] - ds[0])
    assert per_layer > 0 and all(v == vs[0] + per_layer * (d - ds[0]) for d, v in zip(ds, vs, strict=True))
    growth = growth_of(ds, vs)
    assert growth is not None and growth.family == POWER and abs(growth.rate - 1.0) < 0.05 and not growth.strong


def test_an_unroll_never_shrinks_into_a_single_state_layer():
    fib = Generator((Node("mul", (0, 1)),), window=2)
    ds = range(1, 9)
    ev = _evaluation(V08_TRACED, {d: 2.0**d for d in ds})
    cand = _candidate(fib, ev)
    assert holds(cand, fib, ev)
    assert not holds(cand, MUL, ev)  # the same growth, another niche: not the same finding


# --------------------------------------------------------------------------- confirmation and attribution


def _result(kind: str, error: str | None = None) -> Result:
    series = Series(chain="c", backend="engine", profile="v08", mode="traced", error=error)
    return Result(series=series, verdict=Verdict(kind=kind))


def test_confirmation_needs_the_same_pathology():
    assert confirms(_result("exponential-transform"), "exponential")
    assert confirms(_result("exponential-backward"), "any")
    assert not confirms(_result("superlinear-transform"), "exponential")
    assert not confirms(_result("mildly-superlinear-transform"), "superlinear")
    assert not confirms(_result("inconclusive"), "any")
    assert not confirms(_result("linear"), "any")
    assert not confirms(_result("exponential-transform", error="depth 3: boom"), "exponential")
    assert not confirms(None, "any")


def _memory_result(time_kind: str, growth: str, kind: str | None = None) -> Result:
    fit = Fit(metric="saved_bytes: memory", kind="exponential", base=1.8, axis="order")
    mv = MemoryVerdict(kind=kind or growth, measured=True, growth=growth, decided_by="saved_bytes", fit=fit)
    series = Series(chain="c", backend="jax", profile=None, mode="traced", points=[Point(depth=d) for d in (1, 2, 3)])
    return Result(series=series, verdict=Verdict(kind=time_kind, memory=mv))


def test_a_memory_candidate_is_confirmed_by_the_memory_verdict_only():
    assert confirms(_memory_result("linear", "exponential-memory"), "exponential", memory=True)
    assert confirms(_memory_result("linear", "superlinear-memory"), "any", memory=True)
    assert not confirms(_memory_result("linear", "superlinear-memory"), "exponential", memory=True)
    assert not confirms(_memory_result("exponential-transform", "linear"), "exponential", memory=True)
    assert not confirms(_memory_result("exponential-transform", "flat"), "any", memory=True)
    assert not confirms(_memory_result("linear", "mildly-superlinear-memory"), "superlinear", memory=True)
    # a leak decides the memory verdict's kind; the growth in depth is what the search saw
    assert confirms(_memory_result("linear", "exponential-memory", "leak-per-call"), "exponential", memory=True)
    assert not confirms(_memory_result("linear", "linear", "leak-per-call"), "any", memory=True)
    assert not confirms(_memory_result("linear", "exponential-memory"), "exponential")  # the time verdict: linear
    unmeasured = Result(
        series=Series(chain="c", backend="jax", profile=None, mode="traced"), verdict=Verdict(kind="linear")
    )
    assert not confirms(unmeasured, "any", memory=True)


def test_a_memory_table_classes_each_engine_by_its_memory():
    jax = row_of(JAX_TRACED, _memory_result("exponential-transform", "exponential-memory"), memory=True)
    assert (jax.verdict, jax.figure, jax.decided_by) == ("exponential-memory", "x1.80/order", "saved_bytes")
    torch = row_of(Target("torch", None, "eager"), _memory_result("exponential-backward", "flat"), memory=True)
    assert torch.verdict == "flat"
    assert attribute([jax, torch])[0] == ENGINE_SPECIFIC
    assert row_of(JAX_TRACED, _result("linear"), memory=True).verdict == "not measured"


def _row(backend: str, profile: str | None, mode: str, verdict: str) -> Row:
    return Row(target=f"{backend} {mode}", backend=backend, profile=profile, mode=mode, verdict=verdict)


def test_attribution_engine_specific_in_the_program_undetermined():
    rows = [_row("engine", "v08", "traced", "exponential-transform"), _row("engine", "fixed", "traced", "linear")]
    label, text = attribute(rows)
    assert label == ENGINE_SPECIFIC and "linear on fixed" in text
    rows = [
        _row("engine", "v08", "traced", "n/a"),
        _row("jax", None, "traced", "exponential-transform"),
        _row("torch", None, "eager", "exponential-backward"),
        _row("jax", None, "compile", "inconclusive"),
    ]
    assert attribute(rows)[0] == IN_THE_PROGRAM
    assert attribute(rows[:2])[0] == UNDETERMINED  # one engine alone grows: nothing to compare with
    assert attribute([_row("jax", None, "traced", "linear")])[0] == UNDETERMINED


def test_a_planted_one_off_slow_point_is_never_reported(tmp_path, monkeypatch, capsys):
    """The search sees one point 200x too slow (time and counters) once per generator on the fixed engine: it
    nominates candidates, the check path (other workers, the real schedule) measures them linear, and the hunt
    reports nothing: 0 findings, every candidate rejected, exit 0."""
    real = hunt_evaluate._run_plan
    seen: set[str] = set()

    def blip(ctx, file, target, plan):
        res = real(ctx, file, target, plan)
        if file not in seen and len(res["points"]) >= 5:
            seen.add(file)
            last = res["points"][-1]
            last["times"] = {k: v * 200 for k, v in last["times"].items()}
            last["counters"] = {ph: {k: v * 200 for k, v in c.items()} for ph, c in last["counters"].items()}
        return res

    monkeypatch.setattr(hunt_evaluate, "_run_plan", blip)
    out = tmp_path / "found"
    report = tmp_path / "hunt.json"
    # 30 s: on a loaded machine a check's worker may not start in what 20 s leave (an 'error' row, not a finding)
    args = ["hunt", "--backend", "engine", "--profile", "fixed", "--budget", "30", "--seed", "3", "--tries", "16"]
    code = main([*args, "--out", str(out), "--json", str(report), "--no-color"])
    data = json.loads(report.read_text())
    assert data["stats"]["candidates"] >= 1 and data["stats"]["rejected"] >= 1, data["stats"]
    assert data["findings"] == [] and code == 0
    # linear, inconclusive, an error (an unroll of exp overflows deeper), not measured (a loaded machine): no finding
    verdicts = ("linear", "inconclusive", "error", "not measured")
    assert all(r["verdict"] in verdicts for r in data["rejected"]), data["rejected"]
    assert not list(out.glob("*.py"))
    assert "no confirmed finding" in capsys.readouterr().out


# --------------------------------------------------------------------------- the search


def test_the_same_seed_takes_the_same_path(tmp_path, monkeypatch):
    """The path depends only on the seed and on what is measured. What an evaluation measures must not depend on the
    load: its time limits (the plan's point cap, which stops a series on a noisy extrapolation of its points' times,
    and the timeout) are a safety net lifted here, so the deterministic work caps end every series, as they do
    quiet (a loaded machine stopped these at depths 6 to 9 where a quiet one went to 11)."""
    targets = hunt_targets(["engine"], "v08", "traced")
    plan_of = hunt_evaluate.search_plan
    monkeypatch.setattr(
        hunt_evaluate,
        "search_plan",
        lambda t, g: dataclasses.replace(
            plan_of(t, g), point_cap=math.inf, timeout=scaled_budget(plan_of(t, g).timeout)
        ),
    )
    pool = LanePool(2)

    def elites(seed: int, sub: str) -> list[tuple[str, str]]:
        (tmp_path / sub).mkdir()
        # max_tries ends the search; the deadline only bounds it (a loaded machine must not end it first)
        search = Search(targets, seed, pool, tmp_path / sub, time.monotonic() + scaled_budget(60.0), max_tries=14)
        archive = search.run()
        assert search.stats.tried == 14 and search.stats.generations == 2  # drawn, then mutated
        return sorted((c.label, e.gen.key) for c, e in archive.elites.items() if not e.growth.noisy)

    try:
        first = elites(7, "a")
        assert first and first == elites(7, "b")
        assert first != elites(8, "c")
    finally:
        pool.close()


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backend", "nosuch"], "unknown backend 'nosuch'"),
        (["--backend", "cmd"], "runs a program"),
        (["--budget", "0"], "expected a positive number"),
        (["--seed", "-1"], "--seed: expected a non-negative integer"),
        (["--backend", "engine", "--mode", "compile"], "unknown mode 'compile'"),
        (["--backend", "engine", "--profile", "v09"], "unknown profile 'v09'"),
        (["--html", "report.txt"], "unknown file type"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(["hunt", *args])
    except SystemExit as exc:  # argparse's own errors (a bad number)
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and TRACEBACK not in err
    assert len([ln for ln in err.splitlines() if "error:" in ln]) == 1  # (argparse prints its usage before)


def test_out_must_be_a_directory(tmp_path, capsys):
    path = tmp_path / "a_file"
    path.write_text("")
    assert main(["hunt", "--backend", "engine", "--out", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_prints_the_partial_report_and_leaves_no_process(tmp_path):
    args = ["hunt", "--backend", "engine", "--profile", "v08", "--mode", "traced", "--budget", "120", "--no-color"]
    proc, tag = start_adprof([*args, "--out", str(tmp_path / "found")], tmp_path, None)
    try:
        end = time.monotonic() + 60
        line = ""
        while "tried" not in line:  # the first generation is measured
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()
            line = proc.stderr.readline()
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        left = describe(leftovers(tag, 3.0))
    finally:
        kill_tagged(tag)
    assert proc.returncode == 130, err
    assert not left, left
    assert TRACEBACK not in out + err
    assert "interrupted by SIGINT" in out and "adprof hunt" in out  # the partial report
    assert "partial report" in err


def test_check_compare_tables_a_chain_across_engines(tmp_path, capsys):
    chain = tmp_path / "sq.py"
    chain.write_text(
        "import adprof\n\n\n@adprof.chain(input_shape=(3,), max_depth=10)\n"
        "def sq(xp, x, depth):\n    y = x\n    for _ in range(depth):\n        y = y * y\n    return xp.sum(y)\n"
    )
    code = main(["check", str(chain), "--backend", "engine", "--mode", "traced", "--compare", "--no-color"])
    out = capsys.readouterr().out
    assert code == 1
    assert "sq: engine-specific" in out and "grows on v08 (traced); linear on fixed (traced)" in out


# --------------------------------------------------------------------------- a hunt, end to end


def test_a_short_hunt_on_the_engine_finds_confirms_and_writes_v08s_pathologies(tmp_path):
    """The engine alone (its traced mode), 20 s, seed 1: v08's exponential transform (its base the layer's uses)
    and its superlinear bookkeeping, each confirmed, engine-specific (the fixed profile stays linear), written
    out; ``adprof check`` on the exponential's file gives the verdict the hunt reported."""
    out, report = tmp_path / "found", tmp_path / "hunt.json"
    # 20 s of a quiet machine: what confirms and attributes both findings there (scaled by the machine's slowdown, so
    # that a loaded machine gives the hunt the same work, not a fraction of it)
    budget = round(scaled_budget(20.0, most=200.0))
    args = ["hunt", "--backend", "engine", "--mode", "traced", "--budget", str(budget), "--seed", "1"]
    html = tmp_path / "hunt.html"
    args += ["--out", str(out)]
    run = run_adprof([*args, "--json", str(report), "--html", str(html), "--no-color"], tmp_path, budget + 70)
    assert run.code == 1, run.summary()
    assert not run.left and TRACEBACK not in run.text, run.summary()
    assert "tried" in run.err and "confirmed" in run.err  # the progress on stderr
    data = json.loads(report.read_text())
    findings = data["findings"]
    exp = [f for f in findings if f["profile"] == "v08" and f["verdict"].startswith("exponential")]
    sup = [f for f in findings if f["profile"] == "v08" and f["verdict"].startswith("superlinear")]
    assert exp and sup, [(f["target"], f["verdict"]) for f in findings]
    layer = [f for f in exp if f["axis"] == "layer"]
    assert layer and all(f"x{f['uses']}.00/layer" == f["figure"] for f in layer), [f["figure"] for f in layer]
    assert exp[0]["attribution"] == sup[0]["attribution"] == "engine-specific"  # the first ones: budget enough
    for f in findings:
        assert Path(f["file"]).is_file() and Path(f["file"]).read_text() == f["source"]
        # linear, or undecided where the budget ran out first (a loaded machine): never a finding
        fixed = [c for c in f["table"] if c["profile"] == "fixed"]
        assert fixed and all(c["verdict"] not in FINDINGS for c in fixed), [c["verdict"] for c in fixed]
        assert f["attribution"] != "in the program"
    assert "adprof hunt" in (tmp_path / "hunt.html").read_text()
    f = layer[0]
    check = subprocess.run(
        ["adprof", "check", f["file"], "--backend", "engine", "--mode", f["mode"], "--profile", "v08", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=scaled_budget(60.0),
        cwd=tmp_path,
    )
    (result,) = json.loads(check.stdout)["results"]
    assert (result["verdict"], result["interval_text"]) == (f["verdict"], f["figure"])


@pytest.mark.slow
def test_the_ten_minute_hunt_finds_the_five_pathologies(tmp_path):
    """The acceptance: every installed engine, seed 1, 600 s on this 2-core machine, no probes or zoo shapes as
    seeds. It finds and confirms v08's exponential transform (base = uses) and superlinear bookkeeping, JAX's
    exponential per derivative order, torch's exponential create_graph per order and torch.compile's exponential
    compile on a Fibonacci-like unroll; reports no unconfirmed finding; attributes v08's and torch.compile's
    findings to one engine and the order's to the program; each found file checks to the verdict reported."""
    pytest.importorskip("jax", reason="the acceptance hunt needs the peers extra")
    pytest.importorskip("torch", reason="the acceptance hunt needs the peers extra")
    out, report = tmp_path / "found", tmp_path / "hunt.json"
    t0 = time.monotonic()
    run = run_adprof(
        ["hunt", "--budget", "600", "--seed", "1", "--out", str(out), "--json", str(report), "--no-color"],
        tmp_path,
        timeout=720,
    )
    wall = time.monotonic() - t0
    print(run.out, f"\nwall {wall:.1f} s; load average {os.getloadavg()}")  # the figures, with -s
    assert run.code == 1 and not run.left and wall <= 620, run.summary()
    data = json.loads(report.read_text())
    findings = data["findings"]

    def covered(backend: str, mode: str, prefix: str, axis: str | None = None, profile: str | None = None):
        """Findings whose check path confirmed ``prefix`` on (backend, mode): found there, or in their table."""
        hits = []
        for f in findings:
            if f["memory"]:  # its table classes memory (exponential-memory), not time
                continue
            for c in f["table"]:
                ok = (c["backend"], c["mode"]) == (backend, mode) and c["verdict"].startswith(prefix)
                if ok and (profile is None or c["profile"] == profile) and (axis is None or f["axis"] == axis):
                    hits.append(f)
        return hits

    v08_exp = [
        f for f in covered("engine", "traced", "exponential", "layer", "v08") if f["target"].startswith("engine")
    ]
    assert v08_exp and all(f["figure"] == f"x{f['uses']}.00/layer" for f in v08_exp)
    assert covered("torch", "eager", "exponential", "order")
    order = [f for f in covered("jax", "traced", "exponential", "order") if f["attribution"] == "in the program"]
    assert order, "the derivative order's exponential is in the program: every engine that nests grads grows"
    assert [f for f in v08_exp if f["attribution"] == "engine-specific"]
    bookkeeping = covered("engine", "eager", "superlinear", "layer", "v08")
    assert [f for f in bookkeeping if f["attribution"] == "engine-specific"]
    fibonacci = [f for f in covered("torch", "compile", "exponential", "unroll") if f["predicted_base"] > 1.15]
    assert [f for f in fibonacci if f["attribution"] == "engine-specific"]
    assert "rejected:" not in run.out  # 0 unconfirmed findings printed
    for f in findings:
        check = subprocess.run(
            ["adprof", "check", f["file"], *f["reproduce"].split()[3:], "--json", "-"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        (result,) = json.loads(check.stdout)["results"]
        verdict = result["memory"]["growth"] if f["memory"] else result["verdict"]
        assert verdict == f["verdict"], (f["file"], verdict, f["verdict"])


@pytest.mark.slow  # the default run's representatives: the memory component's unit tests and the real worker's
def test_a_hunt_on_jax_finds_the_exponential_memory_of_nested_grads(tmp_path):
    """Memory as a fitness component, end to end: JAX traced alone, 90 s, seed 1. The bytes JAX saves for the
    backward of a nested grad grow exponentially with the order: found, confirmed by the check path's memory
    verdict, written out; ``adprof check`` on the file reads the same memory growth."""
    pytest.importorskip("jax", reason="the JAX hunt needs the peers extra")
    out, report = tmp_path / "found", tmp_path / "hunt.json"
    args = ["hunt", "--backend", "jax", "--mode", "traced", "--budget", "90", "--seed", "1", "--out", str(out)]
    run = run_adprof([*args, "--json", str(report), "--no-color"], tmp_path, 180)
    assert run.code == 1 and not run.left and TRACEBACK not in run.text, run.summary()
    findings = json.loads(report.read_text())["findings"]
    memory = [f for f in findings if f["memory"]]
    assert memory, [(f["verdict"], f["component"]) for f in findings]
    f = memory[0]
    assert f["verdict"] == "exponential-memory" and f["axis"] == "order" and f["decided_by"] == "saved_bytes"
    assert f["component"] == "saved_bytes:memory" and f["table"][0]["verdict"] == "exponential-memory"
    check = subprocess.run(
        ["adprof", "check", f["file"], "--backend", "jax", "--mode", "traced", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    (result,) = json.loads(check.stdout)["results"]
    assert result["memory"]["growth"] == "exponential-memory", result["memory"]


@pytest.mark.slow  # the default run's representative: test_a_short_hunt_on_the_engine_finds_...
def test_a_hunt_on_an_embedded_dask_cluster_finds_the_same(tmp_path):
    """``--scheduler local:2``: the search and the checks run on a LocalCluster's workers, and the engine's
    exponential transform is found, confirmed and written as on the local lanes."""
    pytest.importorskip("distributed", reason="--scheduler needs the dask extra: pip install 'adprof[dask]'")
    out, report = tmp_path / "found", tmp_path / "hunt.json"
    args = ["hunt", "--backend", "engine", "--profile", "v08", "--mode", "traced", "--budget", "40", "--seed", "1"]
    run = run_adprof([*args, "--scheduler", "local:2", "--out", str(out), "--json", str(report)], tmp_path, 150)
    assert run.code == 1 and not run.left and TRACEBACK not in run.text, run.summary()
    findings = json.loads(report.read_text())["findings"]
    assert any(f["verdict"] == "exponential-transform" for f in findings), findings
    assert all(Path(f["file"]).is_file() for f in findings)


def test_the_hunt_report_round_trips_through_json_and_renders():
    from rich.console import Console

    from adprof.hunt.model import Finding, HuntReport, Rejected, Shrunk
    from adprof.hunt.render import HuntSchemaError, hunt_text, load_hunt, render_hunt, render_hunt_html

    row = _row("engine", "fixed", "traced", "linear")
    finding = Finding(
        id=1, file="found/0001_v08_traced.py", chain="finding_0001", target="engine/v08 traced", backend="engine",
        profile="v08", mode="traced", verdict="exponential-transform", figure="x2.00/layer", decided_by="counters",
        axis="layer", summary="y = y * y", generator=MUL.to_dict(), uses=2, predicted_base=2.0,
        component="counters:transform+drop", search_figure="x2.01/layer", reproduce="adprof check ...",
        attribution="engine-specific", attribution_text="grows on v08 (traced); linear on fixed (traced)",
        table=[row], shrunk=Shrunk(3, 1, 2, 9, True, "a = y * y; y = xp.sin(a)"), also=["engine/v08 eager"],
    )  # fmt: skip
    report = HuntReport(seed=1, budget_seconds=60, findings=[finding], rejected=[Rejected("t", "s", "f", "c", "v")])
    text = hunt_text(report)
    assert load_hunt(text) == report
    with pytest.raises(HuntSchemaError):
        load_hunt(text.replace('"schema": 1', '"schema": 99'))
    console = Console(width=160, record=True, color_system=None)
    render_hunt(report, console)
    shown = console.export_text()
    assert "0001 engine/v08 traced: exponential-transform x2.00/layer" in shown and "engine-specific" in shown
    assert "rejected:" not in shown  # candidates the check path did not confirm are never printed as findings
    page = render_hunt_html(report)
    assert page.startswith("<!DOCTYPE html>") and "verdict-exponential-transform" in page and "<script" not in page
