"""``--metric instructions`` on a program (``--cmd``), end to end through the CLI: instruction counts decide
whenever they are asked for, the cap sees the program's native time (never valgrind's), and where
instructions cannot be counted the run is one line and exit 2.

The probe's ``--seconds-only`` prints only ``transform_seconds``/``drop_seconds``, as a user's own program
would: no counters, so before this the decision fell back to the times taken under valgrind.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from fault_helpers import scaled_budget
from test_cmd_cli import INSTRUCTIONS, TRACED_PHASES, instruction_counts, only_result, probe, run
from test_cmd_runner import PROBE, needs_probe, needs_valgrind

from adprof.cli import main


def _check(tmp_path: Path, template: str, *argv: str) -> dict:
    """``adprof check --cmd TEMPLATE --metric instructions ARGV``: the only result (no error)."""
    out_json = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    main(["check", "--cmd", template, *INSTRUCTIONS, *argv, "--no-color", "--json", str(out_json)])
    r = only_result(json.loads(out_json.read_text()))
    assert not r["error"], r["error"]
    return r


def _decided_by_instructions(r: dict) -> None:
    assert r["fit"]["source"] == "metric" and r["metric"].startswith("instructions")
    assert r["required_metric"] == "instructions"
    assert not any("no deterministic metric decides" in line for line in r["evidence"])


def _script(tmp_path: Path, name: str, body: str) -> str:
    """A /bin/sh program (valgrind runs sh in a fraction of a second: cheap fault programs)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ---------------------------------------------------------------------------------------------------
# the native probe printing only its seconds: instructions decide, identical in two runs


@needs_probe
@needs_valgrind
def test_seconds_only_probe_mul_x2_decided_by_instructions_identical_in_two_runs(tmp_path):
    """The default run's representative: the whole process minus depth 0 is transform+drop, and decides."""
    runs = [_check(tmp_path, probe("mul", "--seconds-only"), "--depths", "12,13,14,15") for _ in range(2)]
    for r in runs:
        assert r["verdict"] == "exponential-transform"
        assert r["base"] == pytest.approx(2.0, abs=0.02)
        _decided_by_instructions(r)
        assert all(set(p["metrics"]) == {"transform"} for p in r["points"])
        assert "minus the same command at depth 0" in r["points"][0]["extra"]["counted"]
    assert instruction_counts(runs[0]) == instruction_counts(runs[1])  # equality, not closeness


@needs_probe
@needs_valgrind
@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "verdict", "base"),
    [("mul", "exponential-transform", 2.0), ("svd3", "exponential-transform", 3.0), ("fixed", "linear", None)],
)
def test_seconds_only_probe_adaptive_schedule(tmp_path, kind, verdict, base):
    """The adaptive schedule, the default budget: mul x2.00, svd3 x3.00, fixed linear; the counts of the
    depths both runs measured are equal, and no series stopped at the cap on valgrind's wall time."""
    runs = [_check(tmp_path, probe(kind, "--seconds-only")) for _ in range(2)]
    for r in runs:
        assert r["verdict"] == verdict
        if base is not None:
            assert r["base"] == pytest.approx(base, abs=0.01)
        _decided_by_instructions(r)
        assert "cap" not in (r["stopped"] or "") or "predicted" in r["stopped"]
        assert all(p["times"]["transform"] < 1.5 for p in r["points"])  # native seconds, below the cap
    first, second = (instruction_counts(r) for r in runs)
    common = sorted(set(first) & set(second))
    assert len(common) >= 8
    assert {d: first[d] for d in common} == {d: second[d] for d in common}


# ---------------------------------------------------------------------------------------------------
# the cap sees the program's native time


@needs_valgrind
def test_cap_applies_to_native_seconds_not_to_the_run_under_valgrind(tmp_path):
    """A program whose own seconds under valgrind are far over the cap (as a slow valgrind'd program's
    would be) and small natively: the points carry the native seconds and the series is not capped."""
    prog = _script(
        tmp_path,
        "slow_under_valgrind.sh",
        'i=0; while [ "$i" -lt $(($1 * 50)) ]; do i=$((i + 1)); done\n'
        'if [ "$ADPROF_METRIC" = instructions ]; then t=5.0; else t=0.00$1; fi\n'
        'echo "{\\"transform_seconds\\": $t, \\"drop_seconds\\": 0}"\n',
    )
    r = _check(tmp_path, f"{prog} {{depth}}", "--depths", "1,2,4,8")
    assert [p["depth"] for p in r["points"]] == [1, 2, 4, 8] and r["stopped"] is None
    assert [p["times"]["transform"] for p in r["points"]] == [0.001, 0.002, 0.004, 0.008]
    assert all(p["extra"]["count_seconds"] > 0 for p in r["points"])
    _decided_by_instructions(r)
    assert r["verdict"] == "linear"  # the shell loop: 50 iterations per depth


def test_nominal_speed_where_the_program_times_zero():
    """A phase the native run timed 0 gets its instructions at the nominal native speed (1e10/s)."""
    from adprof.backends.cmd.point import _time_if_missing
    from adprof.constants import NOMINAL_INSTRUCTION_RATE
    from adprof.model import Point

    pt = Point(depth=3, times={"transform": 0.0, "drop": 0.25}, metrics={"transform": {"instructions": 6e9}})
    _time_if_missing(pt, "transform")
    _time_if_missing(pt, "drop")
    assert pt.times == {"transform": 6e9 / NOMINAL_INSTRUCTION_RATE, "drop": 0.25}


# ---------------------------------------------------------------------------------------------------
# where instructions cannot be counted: one line, exit 2


def _usage_error(capsys, tmp_path: Path, *argv: str) -> str:
    rc, _, err, report = run(capsys, tmp_path, "check", *argv)
    assert rc == 2 and report is None
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adprof: error: "), err
    return lines[0]


@needs_valgrind
def test_program_valgrind_cannot_run_is_exit_2(capsys, tmp_path):
    prog = _script(
        tmp_path,
        "no_valgrind.sh",
        'if [ "$ADPROF_METRIC" = instructions ]; then echo "illegal instruction" >&2; exit 7; fi\n'
        'echo "{\\"transform_seconds\\": 0.001}"\n',
    )
    line = _usage_error(capsys, tmp_path, "--cmd", f"{prog} {{depth}}", *INSTRUCTIONS)
    assert f"valgrind cannot run {prog}" in line and "illegal instruction" in line


@needs_valgrind
def test_program_without_depth_0_needs_phases_exit_2(capsys, tmp_path):
    prog = _script(
        tmp_path,
        "no_depth_0.sh",
        'if [ "$1" -eq 0 ]; then echo "depth must be >= 1" >&2; exit 3; fi\necho "{\\"transform_seconds\\": 0.001}"\n',
    )
    line = _usage_error(capsys, tmp_path, "--cmd", f"{prog} {{depth}}", *INSTRUCTIONS)
    assert "subtracts a run at depth 0, and it fails" in line and "--phase" in line


@needs_probe
@needs_valgrind
@pytest.mark.skipif(shutil.which("strip") is None, reason="strip (binutils) not installed")
def test_stripped_binary_with_phases_exit_2(capsys, tmp_path):
    stripped = tmp_path / "stripped-probe"
    shutil.copy(PROBE, stripped)
    os.system(f"strip {stripped}")
    line = _usage_error(capsys, tmp_path, "--cmd", f"{stripped} mul {{depth}}", *INSTRUCTIONS, *TRACED_PHASES)
    assert "--phase transform='*phase_transform*': no function matching it ran" in line


def test_no_valgrind_is_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind here
    line = _usage_error(capsys, tmp_path, "--cmd", f"{shutil.which('true') or '/bin/true'} {{depth}}", *INSTRUCTIONS)
    assert line == "adprof: error: --metric instructions needs valgrind (not found on PATH)"


@needs_valgrind
def test_count_run_killed_by_the_budget_is_a_stop_not_a_hang(capsys, tmp_path):
    """A callgrind run past the budget's end: the series stops there (its wall time under valgrind is not
    the program's cost: no censored point, no 'hangs' finding, exit 0)."""
    prog = _script(
        tmp_path,
        "slow_count.sh",
        'if [ "$ADPROF_METRIC" = instructions ] && [ "$1" -ge 3 ]; then sleep 600; fi\n'
        'echo "{\\"transform_seconds\\": 0.00$1}"\n',
    )
    # depths 1 and 2 under callgrind fit in it on a loaded machine too; depth 3 (600 s) never does
    budget = scaled_budget(6.0, most=120.0)
    rc, _, _, report = run(
        capsys,
        tmp_path,
        "check",
        "--cmd",
        f"{prog} {{depth}}",
        *INSTRUCTIONS,
        "--depths",
        "1,2,3",
        "--budget",
        str(budget),
    )
    r = only_result(report)
    assert rc == 0 and not r["error"]
    assert [p["depth"] for p in r["points"]] == [1, 2]
    assert r["stop"]["reason"] == "budget" and (r["stop"]["after"], r["stop"]["depth"]) == (2, 3)
    assert r["stopped"].startswith("stopped after depth 2: depth 3 killed in process after")
    assert all(p["status"] == "exact" for p in r["points"])  # no censored point, no hang
