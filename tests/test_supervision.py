"""Issue 20, N1, N4, N8-N11: nothing a chain or a ``--cmd`` program starts outlives adprof, and a program that
exited is never called a hang or killed before its exit status is known.

Each CLI test runs ``python -P -m adprof`` as a user does (tests/fault_helpers.py) and asserts that no process
carrying the run's marker is left: detached children (``start_new_session``), double-forked daemons and
children in the program's own group, for chains and for ``--cmd``, with adprof ending normally, by SIGTERM
and by SIGKILL. The in-process tests drive :mod:`adprof.util.procs` and the ``--cmd`` runner directly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fault_helpers import (
    FAULTS,
    assert_clean,
    describe,
    kill_tagged,
    leftovers,
    load_json,
    rows,
    run_adprof,
    start_adprof,
    tagged_pids,
)

from adprof.backends.cmd import run_command_point

REPO = Path(__file__).resolve().parents[1]
MISBEHAVE = REPO / "tests" / "cmds" / "misbehave.py"
FAST = ["--profile", "fixed", "--mode", "traced", "--no-color", "--no-structure"]


def misbehave(behaviour: str) -> str:
    return f"{sys.executable} {MISBEHAVE} {behaviour} {{depth}}"


def _marked(var: str, value: str) -> set[int]:
    needle = f"{var}={value}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and needle in env:
            found.add(int(entry))
    return found


@pytest.fixture
def tag(monkeypatch: pytest.MonkeyPatch):
    """A marker in this process's environment (inherited by what the in-process tests start); every process
    carrying it is killed afterwards, and the test asserts none was left."""
    value = uuid.uuid4().hex
    monkeypatch.setenv("ADPROF_TEST_TAG", value)
    yield value
    for pid in _marked("ADPROF_TEST_TAG", value):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _gone(tag: str, seconds: float = 3.0) -> set[int]:
    end = time.monotonic() + seconds
    while (left := _marked("ADPROF_TEST_TAG", tag)) and time.monotonic() < end:
        time.sleep(0.05)
    return left


# --------------------------------------------------------------------------- N1: the exit status decides


def test_a_program_that_closes_its_pipes_is_waited_for(tag: str) -> None:
    """N1: a program that closes stdout and stderr and works 50 ms more exits 0: not 'killed by signal 9'."""
    pt = run_command_point(misbehave("closed"), 2, "traced", timeout=10)
    assert pt.times["transform"] == pytest.approx(2e-4)
    for template in ("true {depth}", "echo {depth}"):
        pt = run_command_point(template, 3, "traced", timeout=10)
        assert pt.times == {"process": pt.extra["process_seconds"]}
    from adprof.util import procs

    done = procs.run(["sh", "-c", "echo '{}'; exec >&- 2>&-; sleep 0.05; exit 0"], timeout=10, output_limit=1 << 20)
    assert done.returncode == 0 and not done.timed_out
    assert done.seconds >= 0.05


def test_check_and_guard_on_true_are_healthy(tmp_path: Path) -> None:
    """N1 end to end: `check --cmd 'true {depth}'` has no error row; `guard --cmd 'echo {depth}'` holds no error.
    (And, a minor item: `--verbose` names the series `true [cmd, traced]`, never `cmd/None`.)"""
    out = tmp_path / "r.json"
    args = ["check", "--cmd", "true {depth}", "--depths", "1,2,3,4", "-v", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)
    (row,) = rows(load_json(out))
    assert not row["error"], row["error"]
    assert "killed" not in run.text and run.code == 0, run.summary()
    assert "measured true [cmd, traced]" in run.err and "None" not in run.err, run.summary()

    from adprof.cli import main

    assert main(["guard", "--cmd", "echo {depth}", "--depths", "1,2,3", "--json", str(out)]) in (0, 1)
    (row,) = rows(load_json(out))
    assert not row["error"] and len(row["points"]) == 3, row


# --------------------------------------------------------------------------- N4, N9: detached children of a program


def test_a_program_with_a_detached_child_is_not_a_hang(tag: str) -> None:
    """N4: the program printed its JSON and exited; its detached child holds stdout open. The point is
    measured at once, and the child (own session) and the one in its group are killed."""
    t0 = time.monotonic()
    pt = run_command_point(misbehave("detach"), 3, "traced", timeout=8)
    assert time.monotonic() - t0 < 4, "the exit, not end-of-file on a pipe a child holds, ends the point"
    assert pt.times["transform"] == pytest.approx(3e-4)
    assert not _gone(tag), "the detached child and the child in the program's group must be killed"


def test_cmd_detached_grandchildren_do_not_outlive_adprof(tmp_path: Path) -> None:
    """N9 end to end: every point of a `--cmd` series leaves a detached child: none is left afterwards."""
    out = tmp_path / "r.json"
    args = ["check", "--cmd", misbehave("detach"), "--depths", "1,2,3", "--json", str(out)]
    run = run_adprof(args, tmp_path, timeout=60)
    assert_clean(run)  # includes: nothing left running
    (row,) = rows(load_json(out))
    assert not row["error"] and len(row["points"]) == 3, run.summary()


# --------------------------------------------------------------------------- N8: detached children of a chain


def test_chain_detached_grandchildren_do_not_outlive_adprof(tmp_path: Path) -> None:
    """N8: a chain starting a `start_new_session` sleep and a double-forked daemon on every call: exit 0 and
    no orphan (main left 12 `sleep 40` with PPID 1)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    run = run_adprof(
        ["check", str(FAULTS / "detach.py"), *FAST, "--budget", "20"], tmp_path, timeout=60, mark_dir=marks
    )
    assert run.marked("detacher"), "the chain never ran (test set-up)"
    assert_clean(run)
    assert run.code == 0, run.summary()


# --------------------------------------------------------------------------- N10, N11: adprof killed or stopped


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"adprof ended (exit {proc.returncode}) before the program hung"
        assert time.monotonic() < end, "the program never hung"
        time.sleep(0.05)


def _hang_run(tmp_path: Path, sig: int) -> tuple[int | None, float, list[str], str]:
    """A `--cmd` program that starts `sleep 50` in its group and hangs from depth 2; ``sig`` once it hangs."""
    marks = tmp_path / "marks"
    marks.mkdir()
    args = ["check", "--cmd", misbehave("hang"), "--cap", "5", "--budget", "60", "--json", str(tmp_path / "r.json")]
    proc, tag = start_adprof(args, tmp_path, marks)
    try:
        _wait_for(marks / "hang", proc, 30)
        time.sleep(0.3)
        os.kill(proc.pid, sig)
        t0 = time.monotonic()
        try:
            _, err = proc.communicate(timeout=20)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
            code = None
        after = time.monotonic() - t0
        left = describe(leftovers(tag, 3.0))
    finally:
        kill_tagged(tag)
    return code, after, left, err


def test_sigkill_of_adprof_during_a_cmd_point_kills_its_group(tmp_path: Path) -> None:
    """N10: `kill -9` of adprof while the program (and the `sleep 50` in its group) runs: the guardian kills both."""
    code, _, left, _ = _hang_run(tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert not left, f"processes outlived a SIGKILLed adprof: {left}"


@pytest.mark.slow
def test_sigterm_during_a_hanging_cmd_point_is_prompt(tmp_path: Path) -> None:
    """N11: SIGTERM 0.3 s into a hanging point (--cap 5, so a 20 s timeout): exit 143 at once (main: 10 s
    later), the program and its child killed, the depth-1 point kept."""
    code, after, left, err = _hang_run(tmp_path, signal.SIGTERM)
    assert code == 143, err[-2000:]
    assert after < 4, f"exit {after:.1f} s after SIGTERM"
    assert not left, f"processes outlived adprof: {left}"
    (row,) = rows(load_json(tmp_path / "r.json"))
    assert [p["depth"] for p in row["points"]] == [1]


@pytest.mark.slow
def test_sigkill_of_adprof_takes_detached_chain_children_along(tmp_path: Path) -> None:
    """N8 under SIGKILL: the detacher's children live on in its worker while spin.py hangs; SIGKILL of adprof:
    the worker's watchdog and the guardian kill them all."""
    marks = tmp_path / "marks"
    marks.mkdir()
    args = ["check", str(FAULTS / "detach.py"), str(FAULTS / "spin.py"), *FAST, "--budget", "60", "--jobs", "1"]
    proc, tag = start_adprof([*args, "--cap", "5"], tmp_path, marks)
    try:
        _wait_for(marks / "spin", proc, 30)
        time.sleep(0.2)
        assert marks.joinpath("detacher").exists() and len(tagged_pids(tag)) > 4, "children run (test set-up)"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        left = describe(leftovers(tag, 4.0))
    finally:
        kill_tagged(tag)
    assert not left, f"processes outlived a SIGKILLed adprof: {left}"


# --------------------------------------------------------------------------- the mechanism


def test_kill_family_finds_detached_descendants(tag: str) -> None:
    """A process, a child in its own session and a double-forked daemon: kill_family kills all three while
    the first is alive (parent links), and the orphans once it is gone (the subreaper)."""
    script = (
        "import os, subprocess, time\n"
        "subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(30)\n"
        "    os._exit(0)\n"
        "time.sleep(float(os.environ['LIFE']))\n"
    )
    from adprof.util import procs

    for life in ("30", "0.2"):  # killed alive; killed after it exited and left orphans
        proc = procs.spawn([sys.executable, "-c", script], env={**os.environ, "LIFE": life})
        end = time.monotonic() + 5
        while len(_marked("ADPROF_TEST_TAG", tag)) < 3 and time.monotonic() < end:
            time.sleep(0.02)
        if life != "30":
            proc.wait(timeout=10)
        assert procs.become_subreaper()
        procs.stop(proc)
        assert not _gone(tag), f"left alive after kill_family (life {life} s)"


def test_a_killed_workers_temporary_directory_is_removed_by_its_guardian(tmp_path: Path) -> None:
    """A first hour: Ctrl-C during a torch.compile point left ``/tmp/adprof-inductor-*`` behind. The worker was
    killed with its family, its guardian (a child of the worker, in a session of its own) too, before it could
    remove the worker's directories; or, reparented to adprof (the subreaper), adprof's sweep took it for a stray.
    Now both spare it: it removes the directory, then exits."""
    from adprof.util import procs

    child = (
        "import sys, time\n"
        "from adprof.util import procs\n"
        "d = procs.temp_dir('adprof-test-')\n"
        "deadline = time.monotonic() + 10\n"
        "while procs._state['guardian'] is None and time.monotonic() < deadline:\n"  # its guardian is up
        "    time.sleep(0.01)\n"
        "print(d, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = procs.spawn([sys.executable, "-c", child], env=env, stdout=subprocess.PIPE, text=True)
    try:
        directory = Path(proc.stdout.readline().strip())
        assert directory.is_dir() and directory.name.startswith("adprof-test-")
        procs.kill_family(proc)
        proc.wait(timeout=10)
        procs.sweep()  # what adprof does at its end: the guardian, reparented to it, is no stray
        deadline = time.monotonic() + 10
        while directory.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not directory.exists()
    finally:
        procs.kill_family(proc)
        procs.release(proc)
