"""Fault injection: nothing a chain or a user does makes adprof lie, hang, crash or leave
processes behind.

Every test runs the CLI as a user does (``python -P -m adprof ...`` in a subprocess with a timeout, a
controlled cwd and environment, see ``fault_helpers``) on a chain of ``tests/faults/`` or a bad command, and
asserts the exit code, the one line naming the cause, no traceback, valid JSON with the other chains intact,
the wall-time bound (budget + one cap + a few seconds) and that no process the run started is left.
One representative per numbered item of the issue runs by default; the other variants are ``slow``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from extras import require
from fault_helpers import (
    FAULTS,
    TRACEBACK,
    assert_cause,
    assert_clean,
    assert_within,
    describe,
    kill_tagged,
    leftovers,
    load_json,
    rows,
    run_adprof,
    scaled_budget,
    slack,
    start_adprof,
    stated_seconds,
)

from adprof.measure import MeasureConfig

# Fast settings for the engine: one profile, one mode, short caps.
FAST = ["--profile", "fixed", "--mode", "traced", "--no-color"]
NOSTRUCT = [*FAST, "--no-structure"]


def fault(name: str) -> str:
    return str(FAULTS / name)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    d = tmp_path / "marks"
    d.mkdir()
    return d


def _finding_kinds() -> set[str]:
    return {"linear", "inconclusive"}


# =========================================================================== 1. a hang is a finding


def _check_hang(tmp_path: Path, marks: Path, structure: bool) -> None:
    out = tmp_path / "r.json"
    cap, budget = 0.3, 20.0
    opts = FAST if structure else NOSTRUCT
    args = ["check", fault("hang_at7.py"), *opts, "--cap", str(cap), "--budget", str(budget), "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=budget + cap + slack() + 20, mark_dir=marks)
    assert_clean(run)
    assert run.marked("hang7"), "the chain never reached its hanging depth (test set-up)"
    assert run.code == 1, f"a chain killed at its timeout must be a finding (exit 1)\n{run.summary()}"
    assert_cause(run, r"hang7.*(timeout|killed|hang)")
    report = load_json(out)
    (hang,) = rows(report, "hang7")
    assert hang["verdict"] not in _finding_kinds(), f"hang7 reported {hang['verdict']}: a hang is not healthy"
    (good,) = rows(report, "good")
    assert good["verdict"] == "linear" and not good["error"], "the healthy chain next to the hang is intact"
    assert_within(run, budget, cap)


@pytest.mark.slow  # the default run's representative: test_cli's hanging chain beside a healthy one
def test_hang_is_a_finding_check(tmp_path: Path, marks: Path) -> None:
    _check_hang(tmp_path, marks, structure=False)


@pytest.mark.slow
def test_hang_is_a_finding_check_with_structure(tmp_path: Path, marks: Path) -> None:
    _check_hang(tmp_path, marks, structure=True)


@pytest.mark.slow
def test_hang_fails_the_guard(tmp_path: Path, marks: Path) -> None:
    args = ["guard", fault("hang_at7.py") + "::hang7", "--cap", "0.3", "--budget", "20", "--no-color"]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.marked("hang7")
    assert run.code == 1, f"a CI guard must not pass an infinite loop\n{run.summary()}"
    assert "1 of 1 held" not in run.out
    assert_cause(run, r"hang7.*(timeout|killed|hang)", stdout_too=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["halve", "--depth", "8"],
        ["ratio", "--max-depth", "8"],
    ],
    ids=["halve", "ratio"],
)
def test_hang_fails_halve_and_ratio(tmp_path: Path, marks: Path, command: list[str]) -> None:
    out = tmp_path / "r.json"
    args = [command[0], fault("hang_at7.py") + "::hang7", *command[1:], "--mode", "traced", "--profile", "fixed"]
    args += ["--cap", "0.3", "--budget", "20", "--no-color", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.marked("hang7")
    assert run.code == 1, f"{command[0]} on a hang must exit 1\n{run.summary()}"
    assert "verdict: inconclusive" not in run.out and "verdict: linear" not in run.out
    assert_cause(run, r"hang7.*(timeout|killed|hang)")
    (hang,) = rows(load_json(out), "hang7")
    assert hang["verdict"] not in _finding_kinds()


# =========================================================================== 2. same chain name in two files


def test_same_chain_name_in_two_files(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["check", fault("dup_a.py") + "::bad", fault("dup_b.py"), *FAST, "--cap", "0.3", "--budget", "30"]
    run = run_adprof([*args, "--json", str(out)], tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 1, run.summary()
    assert_cause(run, r"bad.*SIGSEGV")
    report = load_json(out)
    a_row, b_row = rows(report, "bad")  # spec order follows the targets
    # the healthy `bad` of dup_b.py must not inherit dup_a.py's crash (structure results keyed by name today)
    assert not b_row["error"], f"dup_b.py::bad reported {b_row['error']!r}"
    assert b_row["verdict"] == "linear"
    assert a_row["error"] and "SIGSEGV" in a_row["error"]
    # rows are told apart by their file (issue: "JSON rows gain `file`")
    assert a_row.get("file", "").endswith("dup_a.py"), "JSON rows carry the chain's file"
    assert b_row.get("file", "").endswith("dup_b.py")


# =========================================================================== 3. flame on a segfaulting chain


def test_flame_on_a_segfaulting_chain(tmp_path: Path) -> None:
    if shutil.which("py-spy") is None and not (Path(sys.executable).parent / "py-spy").exists():
        pytest.skip("py-spy not installed")
    svg = tmp_path / "f.svg"
    args = ["flame", fault("segv.py") + "::segv", "--depth", "5", "--seconds", "1", "-o", str(svg)]
    run = run_adprof(args, tmp_path, timeout=40)
    assert_clean(run)
    assert run.code == 1, f"a chain that crashes is a finding, not a success\n{run.summary()}"
    assert "cap stopped" not in run.text, "the worker crashed; no cap stopped it"
    assert_cause(run, r"SIGSEGV|segfault|crash")


# =========================================================================== 4. side effects do not leak


@pytest.mark.parametrize("mode", ["traced", pytest.param("eager", marks=pytest.mark.slow)])
def test_patched_clock_does_not_leak_into_the_next_chain(tmp_path: Path, mode: str) -> None:
    out = tmp_path / "r.json"
    # --jobs 1: patcher and victim run in the same worker, patcher first
    args = ["check", fault("clock.py"), "--profile", "fixed", "--mode", mode, "--no-structure", "--no-color"]
    args += ["--jobs", "1", "--cap", "0.5", "--budget", "30", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)
    (victim,) = rows(load_json(out), "victim")
    assert victim["points"], run.summary()
    zero = [(p["depth"], k) for p in victim["points"] for k, t in p["times"].items() if not t or t <= 0]
    assert not zero, f"the patcher's frozen clock reached the victim: zero times at {zero}"
    assert victim["verdict"] == "linear"


# =========================================================================== 5. markup in user strings


@pytest.mark.parametrize("structure", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_markup_in_messages_is_printed_verbatim(tmp_path: Path, structure: bool) -> None:
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    opts = FAST if structure else NOSTRUCT
    args = ["check", fault("markup.py"), *opts, "--cap", "0.5", "--budget", "30", "--json", str(out)]
    run = run_adprof([*args, "--html", str(html)], tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 1, run.summary()
    line = assert_cause(run, r"weights")
    assert "[/data/weights.npy]" in line, "the message is printed as the user wrote it"
    assert "adprof summary" in run.out, "the table is printed"
    assert "[/data/weights.npy]" in run.out, "the error row shows the message verbatim"
    report = load_json(out)
    (good,) = rows(report, "good")
    assert good["verdict"] == "linear"
    (bad,) = rows(report, "weights")
    assert "[/data/weights.npy]" in (bad["error"] or "")
    assert html.is_file()


# =========================================================================== 6. the budget is a bound


def test_budget_bounds_a_hanging_structure_probe(tmp_path: Path) -> None:
    cap, budget = 2.5, scaled_budget(1.0)  # a worker must start within it, and a loaded machine starts one slower
    args = ["check", fault("stuck.py"), *FAST, "--cap", str(cap), "--budget", str(budget)]
    run = run_adprof(args, tmp_path, timeout=budget + cap + slack() + 30)
    assert_clean(run)
    assert run.code == 1, run.summary()
    line = assert_cause(run, r"stuck")
    for s in stated_seconds(line):  # the message states the real times
        assert s <= run.wall + 0.5, f"message states {s} s, the run took {run.wall:.1f} s: {line}"
    assert_within(run, budget, cap)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cap", "budget", "extra", "chain"),
    [
        (20.0, 5.0, [], "stuck.py"),  # the measurement: 80.7 s today
        # a cap larger than the budget: the budget wins (a user expects --budget to bound the run whatever the cap)
        (1e9, 4.0, [], "stuck.py"),
        (0.5, 3.0, ["--calls", "1000000", "--mode", "eager", "--no-structure"], "calm.py"),
    ],
    ids=["cap20-budget5", "cap1e9-budget4", "calls1e6-budget3"],
)
def test_budget_bounds_the_run(tmp_path: Path, cap: float, budget: float, extra: list[str], chain: str) -> None:
    opts = ["--profile", "fixed", "--no-color"] + (extra or ["--mode", "traced"])
    args = ["check", fault(chain), *opts, "--cap", f"{cap:g}", "--budget", str(budget)]
    bound_cap = min(cap, budget)
    run = run_adprof(args, tmp_path, timeout=budget + bound_cap + slack() + 40)
    assert_clean(run)
    assert_within(run, budget, bound_cap)
    for line in run.adprof_lines():
        for s in stated_seconds(line):
            assert s <= run.wall + 0.5, f"message states {s} s, the run took {run.wall:.1f} s: {line}"


@pytest.mark.slow
def test_budget_bounds_a_sleeping_import(tmp_path: Path) -> None:
    cap, budget = 0.5, 3.0
    args = ["check", fault("slow_import.py"), *FAST, "--cap", str(cap), "--budget", str(budget)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 2, f"a chain file that cannot be loaded in the budget is bad input\n{run.summary()}"
    line = assert_cause(run, r"slow_import\.py")
    for s in stated_seconds(line):
        assert s <= run.wall + 0.5, f"message states {s} s, the run took {run.wall:.1f} s: {line}"
    assert_within(run, budget, cap)


# =========================================================================== 7. signals and orphans


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"adprof ended (exit {proc.returncode}) before the chain started hanging"
        assert time.monotonic() < end, "the chain never started hanging"
        time.sleep(0.05)


def _signal_run(tmp_path: Path, marks: Path, how: str) -> tuple[int | None, str, str, list[str], Path]:
    """Start adprof on spin.py, wait until a point hangs, deliver ``how``; return (code, out, err, left, json)."""
    out = tmp_path / "r.json"
    args = ["check", fault("spin.py"), *NOSTRUCT, "--jobs", "1", "--cap", "5", "--budget", "60", "--json", str(out)]
    proc, tag = start_adprof(args, tmp_path, marks)
    try:
        _wait_for(marks / "spin", proc, 40)
        time.sleep(0.3)
        if how == "SIGTERM":
            os.kill(proc.pid, signal.SIGTERM)
        elif how == "SIGINT":  # Ctrl-C: the terminal signals the whole foreground process group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGKILL)
        try:
            o, e = proc.communicate(timeout=15)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            o, e = proc.communicate()
            code = None
        left = describe(leftovers(tag, 3.0))
    finally:
        kill_tagged(tag)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, o, e, left, out


@pytest.mark.parametrize(("how", "expected"), [("SIGTERM", 143), pytest.param("SIGINT", 130, marks=pytest.mark.slow)])
def test_signal_stops_with_a_partial_report(tmp_path: Path, marks: Path, how: str, expected: int) -> None:
    code, out, err, left, json_path = _signal_run(tmp_path, marks, how)
    summary = f"exit {code}, left {left}\nstderr:\n{err[-2000:]}"
    assert not left, f"processes left behind after {how}: {left}"
    assert code == expected, f"{how} must exit {expected}\n{summary}"
    assert TRACEBACK not in out + err, summary
    assert "internal error" not in out + err, summary
    said = [ln for ln in err.splitlines() if ln.startswith("adprof") and re.search(r"interrupt|terminat|SIG", ln, re.I)]
    assert said, f"one line says adprof was stopped by {how}\n{summary}"
    assert "adprof summary" in out, f"the partial report is printed\n{summary}"
    report = load_json(json_path)  # JSON of what was measured
    (good,) = rows(report, "good")
    assert good["verdict"] == "linear" and good["points"], "the chain measured before the signal is kept"
    (spin,) = rows(report, "spin")
    assert spin["verdict"] not in _finding_kinds()


@pytest.mark.slow
def test_sigkill_of_adprof_takes_the_workers_along(tmp_path: Path, marks: Path) -> None:
    code, _, _, left, _ = _signal_run(tmp_path, marks, "SIGKILL")
    assert code == -signal.SIGKILL
    assert not left, f"workers outlived a SIGKILLed adprof: {left}"


@pytest.mark.slow
def test_chains_that_start_processes_leave_no_orphans(tmp_path: Path) -> None:
    args = ["check", fault("spawns.py"), *NOSTRUCT, "--cap", "0.5", "--budget", "20"]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)  # includes: nothing left running (the sleeps, the forked children)
    assert run.code == 0, run.summary()


# =========================================================================== 8. output paths checked first


def _output_case(tmp_path: Path, marks: Path, option: list[str]) -> None:
    args = ["check", fault("calm.py"), *NOSTRUCT, "--cap", "0.3", "--budget", "20", *option]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.code == 2, f"a bad output path is bad input\n{run.summary()}"
    assert not run.marked("calm"), "the output path must be checked before anything is measured"
    assert_cause(run, re.escape(option[1]))  # the line names the path


def test_unwritable_json_path_is_bad_input(tmp_path: Path, marks: Path) -> None:
    _output_case(tmp_path, marks, ["--json", "/proc/x.json"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind",
    ["json-dir", "json-missing-parent", "json-dev-full", "html-proc", "html-dir", "plot-dir", "plot-bad-ext"],
)
def test_bad_output_paths_are_bad_input(tmp_path: Path, marks: Path, kind: str) -> None:
    d = tmp_path / "outdir"
    d.mkdir()
    option = {
        "json-dir": ["--json", str(d)],
        "json-missing-parent": ["--json", str(tmp_path / "missing" / "x.json")],
        "json-dev-full": ["--json", "/dev/full"],
        "html-proc": ["--html", "/proc/x.html"],
        "html-dir": ["--html", str(d)],
        "plot-dir": ["--plot", str(d)],  # today: exit 0 and writes outdir.png next to the directory
        "plot-bad-ext": ["--plot", str(tmp_path / "x.bmp")],  # an unknown extension is an error
    }[kind]
    _output_case(tmp_path, marks, option)
    assert not (tmp_path / "outdir.png").exists()


@pytest.mark.slow
def test_flame_unwritable_output_is_bad_input(tmp_path: Path) -> None:
    args = ["flame", fault("calm.py") + "::calm", "--depth", "3", "--seconds", "0.5", "-o", "/proc/x.svg"]
    run = run_adprof(args, tmp_path, timeout=40)
    assert_clean(run)
    assert run.code == 2, run.summary()
    assert_cause(run, r"/proc/x\.svg")


# =========================================================================== 9. modules shadowed by the cwd


def test_modules_in_the_cwd_do_not_shadow_the_workers(tmp_path: Path) -> None:
    for mod in ("numpy", "json", "random"):
        (tmp_path / f"{mod}.py").write_text(f"raise ImportError('the cwd shadow {mod}.py was imported')\n")
    out = tmp_path / "r.json"
    args = ["check", fault("calm.py"), *NOSTRUCT, "--cap", "0.3", "--budget", "20", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)
    assert "shadow" not in run.text, run.summary()
    assert run.code == 0, run.summary()
    (calm,) = rows(load_json(out), "calm")
    assert calm["verdict"] == "linear"


# =========================================================================== 10. smaller ones


def test_empty_backend_is_bad_input(tmp_path: Path, marks: Path) -> None:
    args = ["check", fault("calm.py"), *NOSTRUCT, "--backend", "", "--cap", "0.3", "--budget", "20"]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.code == 2, f'--backend "" must not silently become the default\n{run.summary()}'
    assert_cause(run, r"backend")
    assert not run.marked("calm")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["ratio", "--mode", "traced"], ["--max-depth", "-3"]),
        (["ratio", "--mode", "traced"], ["--max-depth", "0"]),
        (["halve", "--mode", "traced"], ["--depth", "0"]),
    ],
    ids=["ratio-max-depth-neg", "ratio-max-depth-0", "halve-depth-0"],
)
def test_out_of_range_depth_options_are_bad_input(tmp_path: Path, marks: Path, command, option) -> None:
    args = [command[0], fault("calm.py") + "::calm", *command[1:], *option, "--profile", "fixed", "--no-color"]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.code == 2, f"{' '.join(option)} must not silently become the default\n{run.summary()}"
    assert_cause(run, option[0])
    assert not run.marked("calm")


@pytest.mark.slow
def test_huge_explicit_depth_is_stopped_not_an_internal_error(tmp_path: Path) -> None:
    # What a user expects: depth 100000000 is predicted far past the cap, so the series stops there and says so
    # (exit 0 on this healthy chain); not an internal OverflowError.
    out = tmp_path / "r.json"
    args = ["check", fault("calm.py"), *NOSTRUCT, "--depths", "1,2,100000000", "--cap", "0.3", "--budget", "20"]
    run = run_adprof([*args, "--json", str(out)], tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 0, run.summary()
    (calm,) = rows(load_json(out), "calm")
    assert "100000000" in (calm["stopped"] or ""), calm["stopped"]
    assert [p["depth"] for p in calm["points"]] == [1, 2]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("toml", "names"),
    [
        ('[tool.adprof.guard]\nmax_base = "abc"\n', "max_base"),
        ("[tool.adprof.guard\nmax_base = 1.1\n", "pyproject.toml"),  # malformed: not silently ignored
        ("[tool.adprof.guard]\nmax_base = -5\n", "max_base"),
    ],
    ids=["string", "malformed", "negative"],
)
def test_bad_guard_config_is_bad_input(tmp_path: Path, marks: Path, toml: str, names: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    args = ["guard", fault("calm.py"), "--cap", "0.3", "--budget", "20", "--no-color"]
    run = run_adprof(args, tmp_path, timeout=60, mark_dir=marks)
    assert_clean(run)
    assert run.code == 2, run.summary()
    line = assert_cause(run, names)
    assert "pyproject.toml" in line, "the line says where the bad value is"
    assert not run.marked("calm")


@pytest.mark.slow
def test_structure_probe_crash_keeps_depth_points_and_chain_frame(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["check", fault("segv.py"), *FAST, "--cap", "0.5", "--budget", "30", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 1
    line = assert_cause(run, r"segv.*SIGSEGV")
    assert "depth 4" in line, f"the line names the depth that crashed: {line}"
    assert "segv.py" in line, f"the line names the chain's frame, not numpy's module list: {line}"
    assert "Extension modules" not in line
    (row,) = rows(load_json(out), "segv")
    assert [p["depth"] for p in row["points"] if not p.get("extra", {}).get("censored")] == [1, 2, 3], (
        "the depths before the crash are measured"
    )


@pytest.mark.slow
def test_decorator_error_names_the_chain(tmp_path: Path) -> None:
    run = run_adprof(["check", fault("bad_decorator.py"), "--no-color"], tmp_path, timeout=60)
    assert_clean(run)
    assert run.code == 2
    line = assert_cause(run, "broken_shape")
    assert "input_shape" in line, line


@pytest.mark.slow
def test_wrong_tensor_type_message_is_meaningful(tmp_path: Path) -> None:
    require("torch")
    args = ["check", fault("torch_const.py"), *FAST, "--cap", "0.5", "--budget", "60"]
    run = run_adprof(args, tmp_path, timeout=120)
    assert_clean(run)
    assert run.code == 1
    line = assert_cause(run, "const")
    assert "returned Tensor, not a tensor" not in line, line
    assert "torch" in line, f"the line names what the chain returned (a torch tensor, not one of xp): {line}"


@pytest.mark.slow
def test_budget_message_matches_the_time_spent(tmp_path: Path) -> None:
    """240 healthy variants, a 10 s budget: the ones the budget did not reach are "not measured" (inconclusive,
    exit 0), never an error or a hang (N2); and a series says the budget ran out only when about 10 s were used."""
    out = tmp_path / "r.json"
    budget = 10.0
    args = ["check", fault("sweep240.py"), *NOSTRUCT, "--cap", "0.3", "--budget", str(budget), "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=budget + 0.3 + slack() + 30)
    assert_clean(run)
    assert_within(run, budget, 0.3)
    report = load_json(out)
    results = report["results"]
    assert len(results) == 240
    assert not [r["chain"] for r in results if r["verdict"] == "error"], "a healthy variant reported as broken"
    assert run.code == 0, run.summary()
    budget_reasons = ("budget share", "budget", "not measured", "censored")
    by_budget = [r for r in results if r["stop"] and r["stop"]["reason"] in budget_reasons]
    assert by_budget, "240 variants in 10 s: the budget must cut series short"
    assert all(r["verdict"] in ("inconclusive", "linear") for r in by_budget)  # stopped, never a finding
    # "the budget ran out" is only true when the measuring used what the budget leaves after the reserve
    # kept for classifying and rendering 240 series
    measuring = budget - MeasureConfig(budget=budget).reserve_for(len(results))
    assert report["elapsed_seconds"] >= 0.8 * measuring, (
        f"stopped by the budget after {report['elapsed_seconds']:.1f} s"
    )
