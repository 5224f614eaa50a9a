"""Issue 20, N7, N20, N29: whatever signals arrive and whenever, the report of what was measured is written.

The CLI tests run ``adprof check`` on tests/faults/spin.py (a healthy chain, then one that spins from depth 2)
with ``--jobs 1``, wait until the spinning point runs, and deliver the signals as a terminal or a supervisor
would: the JSON holds the healthy chain's points, the exit status names the first signal, no traceback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_helpers import FAULTS, TRACEBACK, describe, kill_tagged, leftovers, load_json, rows, start_adprof

ARGS = ["--profile", "fixed", "--mode", "traced", "--no-color", "--no-structure", "--jobs", "1", "--cap", "5"]


#: A ``--cmd`` program that hangs from depth 2 (with a child in its group).
CMD_HANG = ["--cmd", f"{sys.executable} {Path(__file__).parent / 'cmds' / 'misbehave.py'} hang {{depth}}", "--cap", "5"]


def _signalled(
    tmp_path: Path, signals: list[tuple[float, int, bool]], cmd: bool = False
) -> tuple[int | None, str, str, list[str]]:
    """Run check on spin.py (``cmd``: on a hanging program); once it hangs, send each ``(delay, signal,
    to_group)``; return (code, out, err, left)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    target = CMD_HANG if cmd else [str(FAULTS / "spin.py"), *ARGS]
    args = ["check", *target, "--budget", "60", "--json", str(tmp_path / "r.json")]
    proc, tag = start_adprof(args, tmp_path, marks)
    try:
        end = time.monotonic() + 40
        while not (marks / ("hang" if cmd else "spin")).exists():
            assert proc.poll() is None, f"adprof ended early: {proc.communicate()}"
            assert time.monotonic() < end, "the chain never started spinning"
            time.sleep(0.05)
        time.sleep(0.3)
        for delay, sig, to_group in signals:
            time.sleep(delay)
            try:
                (os.killpg if to_group else os.kill)(proc.pid, sig)
            except ProcessLookupError:
                pass
        try:
            out, err = proc.communicate(timeout=20)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            code = None
        left = describe(leftovers(tag, 3.0))
    finally:
        kill_tagged(tag)
    return code, out, err, left


def _assert_partial_report(
    tmp_path: Path, code: int | None, expected: int | set[int], out: str, err: str, left: list[str]
) -> dict:
    summary = f"exit {code}, left {left}\nstderr:\n{err[-2500:]}"
    assert code in (expected if isinstance(expected, set) else {expected}), summary
    assert not left, summary
    assert TRACEBACK not in out + err and "Exception ignored" not in err, summary
    assert "internal error" not in out + err, summary
    assert "adprof summary" in out, f"the partial report is printed\n{summary}"
    report = load_json(tmp_path / "r.json")
    assert report["results"] and not any("before measuring" in n for n in report.get("notes", [])), summary
    assert [ln for ln in err.splitlines() if ln.startswith("adprof") and re.search("interrupt|SIG", ln)], summary
    return report


def _assert_good_kept(
    tmp_path: Path, code: int | None, expected: int | set[int], out: str, err: str, left: list[str]
) -> None:
    report = _assert_partial_report(tmp_path, code, expected, out, err, left)
    (good,) = rows(report, "good")
    assert good["points"] and not good["error"], "the healthy chain's results are kept"


def test_two_quick_sigints_keep_the_results(tmp_path: Path) -> None:
    """N7: Ctrl-C twice, 50 ms apart: exit 130 and the JSON of what was measured (main: 0 results)."""
    code, out, err, left = _signalled(tmp_path, [(0.0, signal.SIGINT, True), (0.05, signal.SIGINT, True)])
    _assert_good_kept(tmp_path, code, 130, out, err, left)


@pytest.mark.slow
def test_sighup_is_a_stop_like_sigterm(tmp_path: Path) -> None:
    """N20: a hang-up (terminal closed): exit 129 with the partial report and JSON (main: no report at all)."""
    code, out, err, left = _signalled(tmp_path, [(0.0, signal.SIGHUP, False)])
    _assert_good_kept(tmp_path, code, 129, out, err, left)


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [False, True])
def test_sigint_sigint_sigterm_print_no_ignored_exception(tmp_path: Path, cmd: bool) -> None:
    """N29: SIGINT, SIGINT, SIGTERM 0.3 s apart (on a chain, and on a hanging program): the first decides (130),
    the report is whole, no "Exception ignored" traceback."""
    sigs = [(0.0, signal.SIGINT, True), (0.3, signal.SIGINT, True), (0.3, signal.SIGTERM, False)]
    code, out, err, left = _signalled(tmp_path, sigs, cmd=cmd)
    _assert_partial_report(tmp_path, code, 130, out, err, left)


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.0, 0.01, 0.2])
def test_a_burst_of_signals_keeps_the_results(tmp_path: Path, gap: float) -> None:
    """N7: SIGTERM then SIGINTs at any spacing: the results stay; the first signal decides the status (signals
    pending together are handled by Python in signal-number order: SIGINT first)."""
    sigs = [(0.0, signal.SIGTERM, False), *[(gap, signal.SIGINT, True) for _ in range(4)]]
    code, out, err, left = _signalled(tmp_path, sigs)
    _assert_good_kept(tmp_path, code, 143 if gap >= 0.2 else {130, 143}, out, err, left)


# --------------------------------------------------------------------------- the mechanism, in-process


def test_only_the_first_signal_is_raised() -> None:
    from adprof.cli.common import StopSignals, Terminated, exit_status_of

    s = StopSignals()
    with pytest.raises(Terminated) as info:
        s.handler(signal.SIGHUP, None)
    assert info.value.signal_name == "SIGHUP" and exit_status_of("SIGHUP") == 129
    s.handler(signal.SIGINT, None)  # remembered only: never cuts the partial report short
    s.handler(signal.SIGTERM, None)
    assert s.received == "SIGHUP"
    s.reset()
    s.defer()  # measured: a signal now waits for the report
    s.handler(signal.SIGINT, None)
    s.poll()
    assert s.received == "SIGINT" and exit_status_of("SIGINT") == 130
    s.reset()
    s.received = "SIGTERM"  # received, but its KeyboardInterrupt was swallowed (a weakref callback)
    with pytest.raises(Terminated):
        s.poll()  # the lanes' poll raises it again where the pool handles it


def test_a_swallowed_interrupt_prints_no_ignored_exception() -> None:
    """N29: a KeyboardInterrupt raised inside a weakref callback is "Exception ignored" by Python; during a run it
    is not printed (the lanes' poll raises the remembered signal again), anything else still is."""
    import types

    from adprof.cli import _unraisable

    seen = []
    hook = _unraisable(seen.append)
    hook(types.SimpleNamespace(exc_value=KeyboardInterrupt()))
    assert seen == []
    other = types.SimpleNamespace(exc_value=ValueError("x"))
    hook(other)
    assert seen == [other]


@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGHUP, marks=pytest.mark.slow)])
def test_a_signal_during_the_start_up_is_one_line(tmp_path: Path, sig: int) -> None:
    """A Ctrl-C while adprof's own imports run (the fault suite's random moments): one line and the shell's
    status, never a traceback from inside an import (main: a KeyboardInterrupt traceback, death by SIGINT)."""
    for delay in (0.2, 0.35, 0.5):
        proc, tag = start_adprof(["check", str(FAULTS / "calm.py"), *ARGS, "--budget", "20"], tmp_path, None)
        try:
            time.sleep(delay)
            (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
            out, err = proc.communicate(timeout=30)
        finally:
            kill_tagged(tag)
        if "init_import_site" in err:  # still the interpreter's own start-up (its site module): before adprof
            continue
        assert proc.returncode in (128 + sig, 0), f"exit {proc.returncode} after {delay} s\n{err[-1500:]}"
        assert TRACEBACK not in out + err and "Exception ignored" not in err, err[-1500:]
