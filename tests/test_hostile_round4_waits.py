"""Issue 39, "every wait has a deadline" and "processes left behind": each test injects the fault (a chain that
turns into ``sleep``, a scheduler that never answers, a slow pickle, a detached environment-cleared child, a hunt
killed by SIGKILL, a Dask worker killed mid-task) and asserts on exit codes, fields and processes, never on wall
time (the machine is shared); each fault has a bounded timeout of its own so that a regression fails, not hangs.
"""

from __future__ import annotations

import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fault_helpers import assert_clean, load_json, rows, run_adprof

FAST = ["--profile", "fixed", "--mode", "traced", "--no-color", "--no-structure"]


def _chain_file(tmp_path: Path, name: str, body: str) -> Path:
    """A chain file ``name``.py whose chain runs ``body`` (indented, with ``depth`` in scope) before a healthy
    computation."""
    src = textwrap.dedent(
        """\
        import os
        import subprocess
        import sys
        import time

        import adprof


        @adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4))
        def {name}(xp, x, depth):
            \"\"\"A fault injected into a healthy chain.\"\"\"
        {body}
            y = x
            for _ in range(depth):
                y = xp.sin(y)
            return xp.sum(y)
        """
    ).format(name=name, body=textwrap.indent(textwrap.dedent(body), "    "))
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    return path


# --------------------------------------------------------------------------- item 1: Popen.wait() in Worker._crashed


@pytest.mark.slow
def test_item1_chain_that_execs_into_sleep_is_killed_within_the_budget(tmp_path: Path) -> None:
    """Item 1: a chain that `os.execv`s into `sleep 1000` at depth 3 closed the worker's protocol pipe but lives
    on; fc6d0bb waited for it in `Worker._crashed` with no timeout (still running at 90 s). Now: the point's
    deadline, then the group is killed: exit 1, the depths before it kept, nothing left running."""
    chain = _chain_file(tmp_path, "execs", 'if depth >= 3:\n    os.execv("/bin/sleep", ["sleep", "1000"])\n')
    out = tmp_path / "r.json"
    run = run_adprof(["check", str(chain), *FAST, "--budget", "20", "--cap", "1", "--json", str(out)], tmp_path, 90)
    assert_clean(run)
    assert run.code == 1, run.summary()
    (row,) = rows(load_json(out))
    assert [p["depth"] for p in row["points"]] == [1, 2]
    assert "depth 3" in row["error"] and "kept running: killed" in row["error"], row["error"]


@pytest.mark.slow
def test_item1_class_a_chain_that_closes_every_fd_and_sleeps(tmp_path: Path) -> None:
    """Item 1's class, a case nobody listed: the chain closes every descriptor above stderr (the protocol pipe
    among them) and sleeps, in the same process: the same bounded wait, then the kill."""
    chain = _chain_file(tmp_path, "closes", "if depth >= 2:\n    os.closerange(3, 4096)\n    time.sleep(1000)\n")
    out = tmp_path / "r.json"
    run = run_adprof(["check", str(chain), *FAST, "--budget", "20", "--cap", "1", "--json", str(out)], tmp_path, 90)
    assert_clean(run)
    assert run.code == 1, run.summary()
    (row,) = rows(load_json(out))
    assert [p["depth"] for p in row["points"]] == [1]
    assert "kept running: killed" in row["error"], row["error"]


def test_item1_wait_exit_kills_at_the_deadline() -> None:
    """The one bounded wait every caller shares: a process that does not exit is killed at the deadline (and
    reaped), one that exits is not."""
    from adprof.util import procs

    proc = procs.spawn(["sleep", "1000"])
    try:
        end = procs.wait_exit(proc, time.monotonic() + 0.2)
    finally:
        procs.stop(proc)
    assert end.killed and end.code == -signal.SIGKILL
    quick = procs.spawn([sys.executable, "-c", "raise SystemExit(7)"])
    try:
        end = procs.wait_exit(quick, time.monotonic() + 30)
    finally:
        procs.stop(quick)
    assert (end.code, end.killed) == (7, False)
