"""Running one command: its own session and process group, stdin closed, outputs captured up to a limit,
killed with its group past the timeout, on a flood, and when it exits (and, on Linux, when adprof dies)."""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adprof.constants import DEFAULT_CALLS

MODES: tuple[str, ...] = ("traced", "eager")
METRICS: tuple[str, ...] = ("time", "instructions")
DEFAULT_OUTPUT_LIMIT = 1 << 20
#: The environment variable set for runs under callgrind.
METRIC_ENV = "ADPROF_METRIC"
STDERR_TAIL = 300


class CommandFailure(Exception):
    """A point of a ``--cmd`` series could not be measured; ``message`` is one line.

    Kinds: ``template``, ``missing``, ``not-executable``, ``exit``, ``no-json``, ``malformed``,
    ``negative``, ``timeout``, ``flood``, ``valgrind``, ``baseline``.
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class Completed:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float


def _prctl() -> Any:
    """libc's ``prctl``, loaded in the parent (the child between fork and exec must not import)."""
    global _PRCTL
    if _PRCTL is None:
        try:
            import ctypes

            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _PRCTL = False
    return _PRCTL


_PRCTL: Any = None


def _die_with_parent(prctl: Any, parent: int) -> None:  # runs in the child between fork and exec
    if prctl:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def expand(template: str, depth: int, calls: int | None = None) -> list[str]:
    """The argv of ``template`` at ``depth``: ``{depth}`` (required) and ``{calls}`` replaced."""
    if "{depth}" not in template:
        raise CommandFailure("template", f"the command {template!r} has no {{depth}} placeholder")
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise CommandFailure("template", f"the command {template!r} does not parse: {exc}") from None
    if not parts:
        raise CommandFailure("template", "the command is empty")
    n = DEFAULT_CALLS if calls is None else int(calls)
    return [p.replace("{depth}", str(int(depth))).replace("{calls}", str(n)) for p in parts]


def check_program(prog: str) -> None:
    """Raise :class:`CommandFailure` (``missing``, ``not-executable``) unless ``prog`` can be run."""
    if os.sep in prog:
        path = Path(prog)
        if not path.exists():
            raise CommandFailure("missing", f"command not found: {prog}")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise CommandFailure("not-executable", f"command is not executable: {prog}")
    elif shutil.which(prog) is None:
        raise CommandFailure("missing", f"command not found on PATH: {prog}")


def _spawn(argv: list[str], env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session, stdin closed, both outputs piped; one-line failures."""
    check_program(argv[0])
    full_env = {**os.environ, **(env or {})}
    preexec = None
    if sys.platform.startswith("linux"):
        parent, prctl = os.getpid(), _prctl()

        def preexec() -> None:
            _die_with_parent(prctl, parent)

    try:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec,
            env=full_env,
        )
    except FileNotFoundError:
        raise CommandFailure("missing", f"command not found: {argv[0]}") from None
    except PermissionError:
        raise CommandFailure("not-executable", f"command is not executable: {argv[0]}") from None
    except OSError as exc:  # e.g. ENOEXEC: a script without a #! line
        raise CommandFailure("not-executable", f"command cannot be executed: {argv[0]} ({exc.strerror})") from None


def _pump(
    proc: subprocess.Popen[bytes], prog: str, t0: float, timeout: float, output_limit: int
) -> tuple[dict[str, bytearray], CommandFailure | None]:
    """Read both pipes until they close; stop at the timeout or past the output limit."""
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        while sel.get_map():
            elapsed = time.perf_counter() - t0
            if elapsed > timeout:
                return buffers, CommandFailure(
                    "timeout",
                    f"{prog} did not finish within {timeout:g} s (killed with its process group after {elapsed:.1f} s)",
                )
            if proc.poll() is not None:
                # the program is done: whatever it left in its group must not outlive the point (and
                # must not hold our pipes open)
                _kill_group(proc.pid)
            for sk, _ in sel.select(timeout=min(0.05, max(0.0, timeout - elapsed))):
                chunk = os.read(sk.fd, 65536)
                if not chunk:
                    sel.unregister(sk.fileobj)
                    continue
                buf = buffers[sk.data]
                buf.extend(chunk)
                if len(buf) > output_limit:
                    return buffers, CommandFailure(
                        "flood",
                        f"{prog} wrote more than {output_limit:,} bytes to {sk.data} (output limit); "
                        "stopped reading and killed it",
                    )
    return buffers, None


def run_process(
    argv: list[str], *, timeout: float, output_limit: int = DEFAULT_OUTPUT_LIMIT, env: Mapping[str, str] | None = None
) -> Completed:
    """Run ``argv`` in its own process group with stdin closed and both outputs captured (each up to
    ``output_limit`` bytes); kill the group on timeout, on a flood, and when the program exits.

    ``env``: extra environment variables on top of adprof's own. Linux delivers the parent-death
    signal when the *thread* that started the child ends: call this from a thread that outlives it.
    """
    t0 = time.perf_counter()
    proc = _spawn(argv, env)
    try:
        buffers, failure = _pump(proc, argv[0], t0, timeout, output_limit)
    finally:
        _kill_group(proc.pid)  # start_new_session: the child leads its own group
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    if failure:
        raise failure
    seconds = time.perf_counter() - t0
    return Completed(argv, proc.returncode, bytes(buffers["stdout"]), bytes(buffers["stderr"]), seconds)


def _one_line(text: str, limit: int = STDERR_TAIL) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail if len(tail) <= limit else "..." + tail[-limit:]


def check_exit(done: Completed) -> None:
    if done.returncode == 0:
        return
    rc = done.returncode
    how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
    tail = _one_line(done.stderr.decode("utf-8", "replace"))
    raise CommandFailure("exit", f"{done.argv[0]} {how}" + (f": {tail}" if tail else " (no stderr)"))
