"""Running one command: its own session and process group, stdin closed, outputs captured up to a limit;
killed with everything it started past the timeout, on a flood, on an interrupt, and once it exited
(and, on Linux, when adprof dies): :mod:`adprof.util.procs` supervises it."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from adprof.constants import DEFAULT_CALLS
from adprof.util import procs

MODES: tuple[str, ...] = ("traced", "eager")
METRICS: tuple[str, ...] = ("time", "instructions")
DEFAULT_OUTPUT_LIMIT = 1 << 20
#: The environment variable set for runs under callgrind.
METRIC_ENV = "ADPROF_METRIC"
STDERR_TAIL = 300
_VALGRIND_LINE = re.compile(r"^==\d+==")


class CommandFailure(Exception):
    """A point of a ``--cmd`` series could not be measured; ``message`` is one line.

    Kinds: ``template``, ``missing``, ``not-executable``, ``exit``, ``no-json``, ``malformed``,
    ``negative``, ``timeout``, ``flood``, ``valgrind``, ``baseline``, ``interrupted``.
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
    """Raise :class:`CommandFailure` (``missing``, ``not-executable``) unless ``prog`` can be run: it
    exists, is executable, and is not a text file without a ``#!`` line (the kernel refuses to run one)."""
    if os.sep in prog:
        path = Path(prog)
        if not path.exists():
            raise CommandFailure("missing", f"command not found: {prog}")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise CommandFailure("not-executable", f"command is not executable: {prog}")
    else:
        found = shutil.which(prog)
        if found is None:
            raise CommandFailure("missing", f"command not found on PATH: {prog}")
        path = Path(found)
    if _script_without_shebang(path):
        raise CommandFailure(
            "not-executable", f"command cannot be executed: {prog} is a script without a #! line (e.g. #!/bin/sh)"
        )


def _script_without_shebang(path: Path) -> bool:
    """A text file (its first bytes printable) that does not start with ``#!``: execve fails (ENOEXEC).
    Binaries of any format are left to the kernel."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    if head.startswith(b"#!"):
        return False
    return all(32 <= b < 127 or b in (9, 10, 13) for b in head)


#: Per thread: a check that, when true, stops the command in progress (``cancel_when``).
_CANCEL = threading.local()


@contextlib.contextmanager
def cancel_when(check: Callable[[], bool]) -> Iterator[None]:
    """Within the block, commands run by this thread are killed as soon as ``check()`` is true (an
    interrupt of the run): :func:`run_process` then raises ``CommandFailure("interrupted")``."""
    previous = getattr(_CANCEL, "check", None)
    _CANCEL.check = check
    try:
        yield
    finally:
        _CANCEL.check = previous


def run_process(
    argv: list[str],
    *,
    timeout: float,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    env: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Completed:
    """Run ``argv`` in its own session with stdin closed and both outputs captured (each up to
    ``output_limit`` bytes), supervised by :mod:`adprof.util.procs`: its exit status is waited for (a
    program may close its pipes and still work), and once it is gone everything it left (its group,
    detached children) is killed; past the timeout, on a flood, or on an interrupt, all of it at once.

    ``env``: extra environment variables on top of adprof's own; ``name``: the program the messages name (default
    ``argv[0]``: a wrapper such as valgrind names the program it runs). On Linux the program also gets
    ``PR_SET_PDEATHSIG``, sent when the *thread* that started it ends: call this from a thread that
    outlives it.
    """
    check_program(argv[0])
    try:
        done = procs.run(
            argv,
            timeout=timeout,
            output_limit=output_limit,
            env={**os.environ, **(env or {})},
            cancel=getattr(_CANCEL, "check", None),
            die_with_parent=True,
        )
    except FileNotFoundError:
        raise CommandFailure("missing", f"command not found: {argv[0]}") from None
    except PermissionError:
        raise CommandFailure("not-executable", f"command is not executable: {argv[0]}") from None
    except OSError as exc:  # e.g. ENOEXEC: a script without a #! line
        raise CommandFailure("not-executable", f"command cannot be executed: {argv[0]} ({exc.strerror})") from None
    prog = name or argv[0]
    if done.cancelled:
        raise CommandFailure("interrupted", f"{prog} was killed with its process group: adprof was interrupted")
    if done.timed_out:
        raise CommandFailure(
            "timeout",
            f"{prog} did not finish within {timeout:g} s (killed with its process group after {done.seconds:.1f} s)",
        )
    if done.flooded:
        raise CommandFailure(
            "flood",
            f"{prog} wrote more than {output_limit:,} bytes to {done.flooded} (output limit); "
            "stopped reading and killed it",
        )
    assert done.returncode is not None
    return Completed(argv, done.returncode, done.stdout, done.stderr, done.seconds)


def _one_line(text: str, limit: int = STDERR_TAIL) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail if len(tail) <= limit else "..." + tail[-limit:]


def _signal_label(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def check_exit(done: Completed) -> None:
    """Raise ``CommandFailure("exit")`` naming the program, unless it exited 0. valgrind's own lines
    (``==PID== ...``) are left out of the stderr tail: the program's lines say what went wrong."""
    if done.returncode == 0:
        return
    rc = done.returncode
    how = f"was killed by {_signal_label(-rc)}" if rc < 0 else f"exited with status {rc}"
    text = done.stderr.decode("utf-8", "replace")
    tail = _one_line("\n".join(ln for ln in text.splitlines() if not _VALGRIND_LINE.match(ln)))
    raise CommandFailure("exit", f"{done.argv[0]} {how}" + (f": {tail}" if tail else " (no stderr)"))
