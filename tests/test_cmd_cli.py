"""``--cmd`` through the command line, as a user runs it: verdicts on the native probe, instruction counts,
guard, flame, and bad commands (one line, the series reported, nothing left behind).

Most runs call :func:`adprof.cli.main` in this process (the same argv a user types; it saves the
start-up of a fresh Python per run); one test runs ``python -m adprof`` for the real exit code.
Scaling facts come from the probe's deterministic counters or callgrind's instruction counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fault_helpers import scaled_budget
from test_cmd_runner import FAKE, PROBE, _pids_with, needs_probe, needs_valgrind, unique_marker

from adprof.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRACED_PHASES = ["--phase", "transform=*phase_transform*", "--phase", "drop=*phase_drop*"]
EAGER_PHASES = ["--phase", "forward=*phase_forward*", "--phase", "backward=*phase_backward*"]
INSTRUCTIONS = ["--metric", "instructions"]
#: A unique token in the argv of every process a test starts; none may be left afterwards.
marker = pytest.fixture(name="marker")(unique_marker)


def run(capsys, tmp_path: Path, *argv: str) -> tuple[int, str, str, dict | None]:
    """``adprof ARGV --json FILE --no-color``: (exit code, stdout, stderr, the JSON report if written)."""
    out_json = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    rc = main([*argv, "--no-color", "--json", str(out_json)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, json.loads(out_json.read_text()) if out_json.exists() else None


def probe(kind: str, *args: str) -> str:
    return " ".join([str(PROBE), kind, "{depth}", *args])


def fake(behaviour: str, marker: str) -> str:
    return f"{sys.executable} {FAKE} {behaviour} {{depth}} {marker}"


def only_result(report: dict) -> dict:
    assert len(report["results"]) == 1
    r = report["results"][0]
    assert r["backend"] == "cmd" and r["profile"] is None
    return r


def instruction_counts(result: dict) -> dict[int, dict]:
    return {p["depth"]: p["metrics"] for p in result["points"] if p["status"] == "exact"}


# ---------------------------------------------------------------------------------------------------
# verdicts on the native probe (time metric: the probe's counters decide, as the engine's)


@needs_probe
@pytest.mark.parametrize(
    ("kind", "extra", "verdict", "base"),
    [
        ("mul", ["--cap", "0.2"], "exponential-transform", 2.0),
        ("svd3", ["--cap", "0.2"], "exponential-transform", 3.0),
        ("fixed", ["--max-depth", "64"], "linear", None),
    ],
)
def test_check_traced_kinds(capsys, tmp_path, kind, extra, verdict, base):
    rc, out, err, report = run(capsys, tmp_path, "check", "--cmd", probe(kind), *extra)
    r = only_result(report)
    assert (r["verdict"], r["chain"], r["mode"]) == (verdict, "adprof-native-probe", "traced")
    assert rc == (1 if base else 0)
    depths = [p["depth"] for p in r["points"]]
    assert depths[:8] == list(range(1, 9))  # adprof's schedule: unit steps first
    if base is not None:
        assert r["base"] == pytest.approx(base, abs=0.1)
        assert r["stopped"] and "cap" in r["stopped"]  # the cap stopped the exponential series
    else:
        assert depths[-1] == 64
    assert "adprof-native-probe" in out and verdict in out


@needs_probe
def test_check_eager_single_use_is_superlinear_backward(capsys, tmp_path):
    template = probe("sin", "--calls", "{calls}")
    rc, out, _, report = run(capsys, tmp_path, "check", "--cmd", template, "--mode", "eager", "--max-depth", "128")
    r = only_result(report)
    assert rc == 1 and r["verdict"] == "superlinear-backward" and r["mode"] == "eager"
    deep = r["points"][-1]
    assert len(deep["extra"]["backward_calls"]) == 6  # {calls}: adprof's eager calls per point


@needs_probe
def test_name_sets_the_chain(capsys, tmp_path):
    rc, _, _, report = run(capsys, tmp_path, "check", "--cmd", probe("fixed"), "--name", "my-engine", "--depths", "4,8")
    assert only_result(report)["chain"] == "my-engine"


# ---------------------------------------------------------------------------------------------------
# --metric instructions: the same verdicts, counts identical run to run


def _instructions_run(tmp_path: Path, kind: str, depths: str, *extra: str) -> dict:
    """``adprof check --cmd PROBE --metric instructions --depths DEPTHS``: the only result.

    ``extra``: two probe arguments (or empty strings), then adprof options."""
    out_json = tmp_path / f"instructions-{len(list(tmp_path.iterdir()))}.json"
    argv = ["check", "--cmd", probe(kind, *extra[:2]), *INSTRUCTIONS, "--depths", depths, *extra[2:]]
    main([*argv, "--no-color", "--json", str(out_json)])
    r = only_result(json.loads(out_json.read_text()))
    assert not r["error"], r["error"]
    return r


@pytest.fixture(scope="module")
def mul_instructions(tmp_path_factory) -> tuple[dict, dict]:
    """Two runs of ``check --cmd '<probe> mul {depth}' --metric instructions`` at depths 7..11."""
    tmp = tmp_path_factory.mktemp("mul-instructions")
    return tuple(_instructions_run(tmp, "mul", "7,8,9,10,11", "", "", *TRACED_PHASES) for _ in range(2))


@needs_probe
@needs_valgrind
@pytest.mark.slow  # the default run's representative: test_instructions_cmd's seconds-only probe
def test_instructions_mul_x2_identical_in_two_runs(mul_instructions):
    first, second = mul_instructions
    assert first["verdict"] == second["verdict"] == "exponential-transform"
    assert first["base"] == pytest.approx(2.0, abs=0.1)
    counts = instruction_counts(first)
    assert sorted(counts) == [7, 8, 9, 10, 11]
    assert counts == instruction_counts(second)  # equality, not closeness
    totals = [counts[d]["transform"]["instructions"] + counts[d]["drop"]["instructions"] for d in sorted(counts)]
    diffs = [b - a for a, b in zip(totals, totals[1:], strict=False)]
    assert diffs[-1] / diffs[-2] == pytest.approx(2.0, abs=0.1)
    assert "--toggle-collect" in first["points"][0]["extra"]["counted"]


@needs_probe
@needs_valgrind
@pytest.mark.slow
def test_instructions_decide_the_verdict(mul_instructions):
    """Series.deciding_metrics = ["instructions"]: the classifier decides on Point.metrics, not the counters."""
    r = mul_instructions[0]
    assert r["verdict"] == "exponential-transform" and "instructions" in r["metric"]


@needs_probe
@needs_valgrind
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "depths", "mode_args", "verdict"),
    [
        ("svd3", "5,6,7,8,9", ["", "", *TRACED_PHASES], "exponential-transform"),
        ("fixed", "8,16,32,64", ["", "", *TRACED_PHASES], "linear"),
        (
            "sin",
            "25,50,100,200",
            ["--calls", "{calls}", "--mode", "eager", "--cap", "5", *EAGER_PHASES],
            "superlinear-backward",
        ),
    ],
)
def test_instructions_other_kinds(tmp_path, kind, depths, mode_args, verdict):
    first = _instructions_run(tmp_path, kind, depths, *mode_args)
    second = _instructions_run(tmp_path, kind, depths, *mode_args)
    assert first["verdict"] == second["verdict"] == verdict
    if kind == "svd3":
        assert first["base"] == pytest.approx(3.0, abs=0.1)
    assert instruction_counts(first) == instruction_counts(second)


# ---------------------------------------------------------------------------------------------------
# guard and flame


#: Guard depths: unit steps for the exponential kind, doublings for the linear one (its marginal cost is
#: flat only past the hash tables' small sizes).
GUARD_DEPTHS = {"mul": "6,7,8,9", "fixed": "16,32,64,128"}


def _guard(capsys, tmp_path, kind: str) -> tuple[int, dict]:
    rc, out, _, report = run(
        capsys,
        tmp_path,
        "guard",
        "--cmd",
        probe(kind),
        *INSTRUCTIONS,
        *TRACED_PHASES[:2],
        "--depths",
        GUARD_DEPTHS[kind],
    )
    assert "adprof guard:" in out
    return rc, report


@needs_probe
@needs_valgrind
@pytest.mark.slow
def test_guard_mul_fails_fixed_holds_same_under_load(capsys, tmp_path):
    """Guard under --metric instructions: verdicts and counts identical with and without a busy loop on
    another core."""
    quiet_rc, quiet = _guard(capsys, tmp_path, "mul")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # a busy loop on another core
    try:
        loaded_rc, loaded = _guard(capsys, tmp_path, "mul")
    finally:
        busy.kill()
        busy.wait()
    assert quiet_rc == loaded_rc == 1
    assert only_result(quiet)["verdict"] == only_result(loaded)["verdict"] == "exponential-transform"
    assert instruction_counts(only_result(quiet)) == instruction_counts(only_result(loaded))
    fixed_rc, fixed = _guard(capsys, tmp_path, "fixed")
    assert fixed_rc == 0 and only_result(fixed)["verdict"] == "linear"


@needs_probe
@needs_valgrind
def test_flame_shows_the_share_in_value_key_eq(capsys, tmp_path):
    svg = tmp_path / "mul.svg"
    rc = main(["flame", "--cmd", probe("mul"), "--depth", "12", *TRACED_PHASES, "-o", str(svg)])
    out = capsys.readouterr().out
    assert rc == 0
    share_line = next(ln for ln in out.splitlines() if "in ValueKey::eq" in ln)
    share = float(share_line.split("%")[0]) / 100
    assert share > 0.9  # seed 001: the structural key comparison is the blowup
    assert "phase_transform" in out and "phase_drop" in out
    root = ET.fromstring(svg.read_text())
    assert root.tag.endswith("svg")
    reds = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("fill") == "#e0413a"]
    assert len(reds) == 1  # the ValueKey::eq bar


def test_flame_bad_command_one_line(capsys, tmp_path):
    rc = main(["flame", "--cmd", "/nonexistent/prog {depth}", "--depth", "3", "-o", str(tmp_path / "x.svg")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == "adprof flame: command not found: /nonexistent/prog"


# ---------------------------------------------------------------------------------------------------
# bad commands: one line, the series reported, nothing left behind, exit codes as for chains


def test_missing_program_is_bad_input(capsys, tmp_path, marker):
    rc, _, err, report = run(capsys, tmp_path, "check", "--cmd", f"/nonexistent/{marker} {{depth}}")
    assert rc == 2 and report is None
    assert err.strip() == f"adprof: error: command not found: /nonexistent/{marker}"


def test_not_executable_is_bad_input(capsys, tmp_path, marker):
    path = ROOT / "tests" / "cmds" / "not_executable"
    rc, _, err, _ = run(capsys, tmp_path, "check", "--cmd", f"{path} {{depth}} {marker}")
    assert rc == 2 and err.strip() == f"adprof: error: command is not executable: {path}"


def test_template_needs_depth_and_one_target(capsys, tmp_path):
    rc, _, err, _ = run(capsys, tmp_path, "check", "--cmd", f"{sys.executable} {FAKE} ok 3")
    assert rc == 2 and "no {depth} placeholder" in err and len(err.strip().splitlines()) == 1
    rc, _, err, _ = run(capsys, tmp_path, "check", "some_chains.py", "--cmd", f"{sys.executable} {FAKE} ok {{depth}}")
    assert rc == 2 and err.strip() == "adprof: error: --cmd replaces FILE[::CHAIN]: give one or the other"
    rc, _, err, _ = run(capsys, tmp_path, "check", "--cmd", fake("ok", "x"), "--phase", "transform=*t*")
    assert rc == 2 and err.strip() == "adprof: error: --phase applies to --metric instructions only"
    rc, _, err, _ = run(capsys, tmp_path, "check", "--cmd", fake("ok", "x"), "--backend", "jax")
    assert rc == 2 and err.strip() == "adprof: error: --cmd runs on backend cmd only (drop --backend)"
    rc, _, err, _ = run(capsys, tmp_path, "check", "--backend", "cmd")
    assert rc == 2 and err.strip() == "adprof: error: --backend cmd measures a program: give --cmd 'PROG ARGS {depth}'"


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("fail", "depth 1: {exe} exited with status 3: something went wrong | panicked at depth 1"),
        ("malformed", 'depth 1: transform_seconds is "fast", not a number'),
        ("negative", "depth 1: drop_seconds is negative (-0.5)"),
        (
            "flood",
            "depth 1: {exe} wrote more than 1,048,576 bytes to stdout (output limit); stopped reading and killed it",
        ),
        # time decides (no counters): the time schedule's third depth is 4 (doublings while the cost is flat)
        ("json-then-plain", "depth 4: {exe} printed no JSON object on stdout (phases were expected)"),
    ],
)
def test_bad_command_is_an_error_series(capsys, tmp_path, marker, behaviour, message):
    rc, out, err, report = run(capsys, tmp_path, "check", "--cmd", fake(behaviour, marker), "--name", "bad")
    r = only_result(report)
    expected = message.format(exe=sys.executable, kill="killed it")
    assert rc == 1 and r["verdict"] == "error" and r["error"] == expected
    # (a point that rose above the first one's cost may be run twice: a slow run is confirmed before it is read)
    assert sorted({p["depth"] for p in r["points"]}) == ([1, 2] if behaviour == "json-then-plain" else [])
    assert err.strip().splitlines()[-1] == f"adprof: chain bad: {expected} [cmd/- traced]"
    assert "adprof summary" in out and "bad" in out  # the report is rendered around it


def test_hang_is_killed_and_the_series_stopped(capsys, tmp_path, marker):
    # the timeout (4 x cap) must cover a healthy depth's interpreter start: scaled by the machine's slowdown, so that
    # a loaded machine tests the same property (healthy depths finish, the hanging one is killed at its timeout)
    cap = round(scaled_budget(0.25), 2)
    rc, out, err, report = run(capsys, tmp_path, "check", "--cmd", fake("hang-deep", marker), "--cap", str(cap))
    r = only_result(report)
    depths = [p["depth"] for p in r["points"]]
    assert depths == [1, 2, 3, 4, 5] and r["points"][-1]["status"] == "killed"
    assert r["stop"]["reason"] == "timeout" and r["stop"]["depth"] == 5 and r["finding"]
    killed = f"stopped after depth 4: depth 5 killed after the {4 * cap:.1f} s timeout"
    assert not r["error"] and r["stopped"].startswith(killed), r["stopped"]
    assert r["verdict"] == "runaway"  # a hang after healthy depths is a finding, never linear
    assert r["verdict"] != "error"  # the finished depths are still classified
    # the marker fixture asserts that no process of the command is left


def test_hang_at_the_first_depth_is_an_error(capsys, tmp_path, marker):
    rc, _, err, report = run(capsys, tmp_path, "check", "--cmd", fake("hang", marker), "--cap", "0.25", "--name", "h")
    r = only_result(report)
    assert rc == 1 and r["verdict"] == "error"
    assert (
        r["error"] == "depth 1 killed after the 1.0 s timeout; no depth finished (the chain hangs or is far too slow)"
    )


def test_exit_code_of_the_real_command_line(marker, tmp_path):
    """``python -m adprof`` as a user runs it: a failing command is exit 1 with one line, nothing left."""
    done = subprocess.run(
        [sys.executable, "-m", "adprof", "check", "--cmd", fake("fail", marker), "--name", "f", "--no-color"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"adprof: chain f: depth 1: {sys.executable} exited with status 3: something went wrong | panicked at "
        "depth 1 [cmd/- traced]"
    ]
    assert "Traceback" not in done.stderr
    assert _pids_with(marker) == []
