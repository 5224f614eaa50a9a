"""The parent's side of a worker: ``python -m adprof.measure.worker`` started, spoken to and killed.

Every piece of user code runs in a worker (see :mod:`adprof.measure.worker` for the protocol). A
request has a phase timeout, reset whenever the worker reports that a new phase starts, and an
absolute deadline (the budget's end) that no event extends; a worker that overruns either is killed
and restarted on the next request. A worker that dies (segfault) raises :class:`WorkerCrashed`.

A worker runs in its own session, supervised by :mod:`adprof.util.procs`: it is always killed with
everything a chain started (``subprocess``, ``fork``, detached sessions: its descendants, its process
group and the orphans it left); the worker's watchdog thread kills its own family when adprof dies (its
parent pid changes), and the guardian the rest, so nothing outlives adprof even after a SIGKILL. Its
stderr goes through a pipe of which only the last 64 kB are kept (a chain may write gigabytes there).
``python -P``: modules in the current directory do not shadow the worker's imports.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.backends.instructions import COUNT_ENV, CountingUnavailable, fill_counts
from adprof.chain.frames import crash_frame
from adprof.measure.config import LOAD_TIMEOUT, STARTUP_TIMEOUT, WARMUP_TIMEOUT
from adprof.model import WARMUP_PHASE
from adprof.util import procs

_REPO_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerTimeout(Exception):
    """No answer (nor a new phase) within the timeout; the worker was killed."""

    def __init__(self, phase: str | None, call: int | None, elapsed: float, limit: float) -> None:
        super().__init__(f"no answer within {limit:.1f} s")
        self.phase, self.call, self.elapsed, self.limit = phase, call, elapsed, limit
        self.total = elapsed  # seconds since the request was sent
        self.by_deadline = False  # killed by the absolute deadline (the budget's end), not its own timeout
        #: killed while counting instructions under valgrind: its wall time says nothing of the native cost
        self.counting = False


class WorkerCrashed(Exception):
    """The worker died (signal or exit) before answering; ``interrupted``: adprof itself killed it."""

    def __init__(self, message: str, phase: str | None = None, interrupted: bool = False) -> None:
        super().__init__(message)
        self.message, self.phase, self.interrupted = message, phase, interrupted


def worker_env() -> dict[str, str]:
    """The worker's environment: the repo root on PYTHONPATH, single-threaded BLAS."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = _REPO_ROOT + (os.pathsep + path if path else "")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


#: A worker counting instructions runs under callgrind: its timeouts are this many times the usual ones
#: (uninstrumented imports run ~5x slower, instrumented phases 20-100x); the budget's end still bounds them.
COUNTING_TIMEOUT_FACTOR = 100.0


def callgrind_argv(out_file: str) -> list[str]:
    """The worker's command line under callgrind (see :mod:`adprof.backends.instructions`): no instrumentation
    until the first counted phase, then every thread's instructions between the worker's zero/dump requests."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise WorkerCrashed("--metric instructions needs valgrind (not found on PATH)")
    return [
        valgrind,
        "--tool=callgrind",
        "-q",
        "--instr-atstart=no",
        "--collect-atstart=yes",
        f"--callgrind-out-file={out_file}",
        sys.executable,
        "-P",
        "-m",
        "adprof.measure.worker",
    ]


#: The environment a counting worker keeps (names, and prefixes ending in ``_``); the rest is dropped.
COUNTING_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")
COUNTING_ENV_PREFIXES = ("XLA_", "JAX_", "TF_", "TORCH_", "PYTORCH_", "OMP_", "OPENBLAS_", "MKL_", "ADPROF_")


def counting_env(env: dict[str, str]) -> dict[str, str]:
    """A canonical environment for a worker under callgrind: the environment is copied onto the initial
    stack, so its size shifts every address, and with them the order of pointer-keyed tables and the
    instruction counts (~1% between two shells); ``PYTHONHASHSEED=0`` fixes the hashing.

    Bytecode: the worker reads it where :func:`compile_bytecode` wrote it (this process's ``sys.pycache_prefix``,
    e.g. from ``PYTHONPYCACHEPREFIX``) and writes none (``PYTHONDONTWRITEBYTECODE``): a worker that compiles a module
    lays out its heap differently from one that loads it, so two counting workers at once must not find the cache
    in different states, one writing what the other then reads."""
    kept = {k: v for k, v in env.items() if k in COUNTING_ENV or k.startswith(COUNTING_ENV_PREFIXES)}
    if sys.pycache_prefix:
        kept["PYTHONPYCACHEPREFIX"] = sys.pycache_prefix
    return {**dict(sorted(kept.items())), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


#: ``personality(2)``'s flag that turns address-space randomization off for the next exec.
ADDR_NO_RANDOMIZE = 0x0040000
_PERSONALITY: Any = None


def _personality() -> Any:
    """libc's ``personality``, loaded in the parent (the child between fork and exec must not import), or False."""
    global _PERSONALITY
    if _PERSONALITY is None:
        try:
            import ctypes

            _PERSONALITY = ctypes.CDLL(None, use_errno=True).personality
        except (OSError, AttributeError):
            _PERSONALITY = False
    return _PERSONALITY


def _fixed_addresses(personality: Any) -> None:  # runs in the child between fork and exec
    """No address randomization: under ASLR the counts of torch's backward differ by ~1% from run to run
    (pointer-keyed tables are walked in address order); with it off they are identical."""
    if personality:
        personality(personality(0xFFFFFFFF) | ADDR_NO_RANDOMIZE)


def compile_bytecode(files: Sequence[str | None] = ()) -> None:
    """Bring the bytecode of adprof and its sibling packages (``engine``, ``probes``: a worker may import them)
    and of ``files`` (e.g. the chain file) up to date before a counting worker starts: a worker that compiles
    a stale module lays out its heap differently from one that loads it, and its counts differ by ~0.1%
    (unwritable directories are skipped)."""
    import compileall
    import importlib.util
    import py_compile

    compileall.compile_dir(str(Path(__file__).resolve().parents[1]), quiet=2)
    for name in ("engine", "probes"):  # installed with adprof (pyproject's packages)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for where in spec.submodule_search_locations:
                compileall.compile_dir(where, quiet=2)
    for f in files:
        if f and f.endswith(".py") and os.path.isfile(f):
            try:
                py_compile.compile(f, doraise=True)
            except (py_compile.PyCompileError, OSError):
                pass  # a syntax error is the worker's to report


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _how(end: procs.Exited) -> str:
    """How a worker ended: killed by adprof (it closed its protocol stream but lived on), its signal, its exit code."""
    if end.killed or end.code is None:
        return "it closed its pipe to adprof and kept running: killed"
    return _signal_name(end.code) if end.code < 0 else f"exit code {end.code}"


class Worker:
    """One ``python -P -m adprof.measure.worker`` child in its own process group; started lazily,
    killed as a group on timeout. Thread-safe against :meth:`interrupt` from another thread."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._err: procs.BoundedSink | None = None
        self._lock = threading.RLock()
        self.interrupted = False  # set by interrupt(): every later request fails at once
        #: --metric instructions: the next worker starts under callgrind (:meth:`count_instructions`)
        self.counting = False
        self._count_dir: str | None = None  # procs.temp_dir: removed by the guardian if adprof is killed

    @property
    def count_file(self) -> str:
        """callgrind's ``--callgrind-out-file`` of this counting worker (its dumps are ``<file>.<n>``)."""
        assert self._count_dir is not None
        return os.path.join(self._count_dir, "callgrind.out")

    def _answer(self, data: dict[str, Any]) -> dict[str, Any]:
        """A counted point's dumps read into its metrics (here, not in the worker: see fill_counts)."""
        if self.counting and data.get("ok") and isinstance(data.get("point"), dict) and self._count_dir is not None:
            try:
                fill_counts(data["point"], self.count_file)
            except CountingUnavailable as exc:
                return {"ok": False, "kind": "metric", "error": str(exc)}
        return data

    def count_instructions(self, on: bool) -> None:
        """Start the next worker under callgrind (``on``: the running one is killed, so a series that counts
        gets a valgrind'd worker of its own, whose heap no earlier series shaped) or natively (the running
        one is kept unless it counts)."""
        if on or self.counting:
            self.kill()
        self.counting = on

    def start(self, timeout: float = STARTUP_TIMEOUT, scaled: bool = False) -> None:
        """Spawn the worker and wait for its ``ready`` line (imports done); a counting worker gets 10x the
        ``timeout`` unless it is ``scaled`` already."""
        with self._lock:
            if self.interrupted:
                raise WorkerCrashed("interrupted", interrupted=True)
            argv, env = [sys.executable, "-P", "-m", "adprof.measure.worker"], worker_env()
            preexec = None
            if self.counting:
                self._count_dir = procs.temp_dir("adprof-callgrind-")
                argv = callgrind_argv(self.count_file)
                env = counting_env({**env, COUNT_ENV: "callgrind"})  # the (random) path stays out of it
                if not scaled:
                    timeout *= COUNTING_TIMEOUT_FACTOR / 10  # imports without instrumentation: ~5x slower
                personality = _personality() if sys.platform.startswith("linux") else None
                if personality:

                    def preexec() -> None:
                        _fixed_addresses(personality)

            err_read, err_write = os.pipe()
            try:
                self.proc = procs.spawn(  # its own session: killed with everything the chain starts
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err_write,
                    env=env,
                    preexec=preexec,
                )
            except BaseException:
                os.close(err_read)
                raise
            finally:
                os.close(err_write)
            self._err = procs.BoundedSink(err_read)
            proc = self.proc
        self._buf = b""
        try:
            line = self._readline(proc, time.monotonic() + timeout)
        except EOFError:
            end = procs.wait_exit(proc, time.monotonic() + timeout)
            tail = self.stderr_tail()
            self.kill()
            if self.interrupted:
                raise WorkerCrashed("interrupted", interrupted=True) from None
            msg = f"worker failed to start ({_how(end)})" + (f": {tail}" if tail else "")
            raise WorkerCrashed(msg) from None
        if line is None:
            self.kill()
            raise WorkerCrashed(f"worker did not start within {timeout:g} s")

    @property
    def alive(self) -> bool:
        proc = self.proc
        return proc is not None and proc.poll() is None

    def _kill_group(self, proc: subprocess.Popen[bytes]) -> None:
        procs.kill_family(proc)  # the worker, its descendants, its group, the orphans it left

    def kill(self) -> None:
        """Kill this worker and its process group (SIGKILL) and reap it."""
        with self._lock:
            proc, self.proc = self.proc, None
            if proc is not None:
                self._kill_group(proc)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover
                    pass
                self._kill_group(proc)  # anything the chain forked after the first kill
                procs.release(proc)
                for f in (proc.stdin, proc.stdout):
                    try:
                        if f is not None:
                            f.close()
                    except OSError:
                        pass
            self._err = None  # its thread ends at end of file: every writer is dead
            if self._count_dir is not None:
                procs.remove_dir(self._count_dir)
                self._count_dir = None

    def interrupt(self) -> None:
        """From another thread: kill the worker now; the request in progress raises WorkerCrashed."""
        self.interrupted = True
        with self._lock:
            proc = self.proc
            if proc is not None:
                self._kill_group(proc)

    def close(self) -> None:
        """Ask the worker to exit, then kill its group (what the chains started dies with it)."""
        proc = self.proc
        if proc is not None and proc.poll() is None and not self.interrupted:
            try:
                assert proc.stdin is not None
                proc.stdin.write(b'{"op": "exit"}\n')
                proc.stdin.flush()
                proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def stderr_text(self) -> str:
        """The last 8 kB the worker wrote to stderr (once it is dead: all of them, after a short wait)."""
        sink = self._err
        if sink is None:
            return ""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            sink.settle()
        return sink.text(8000)

    def stderr_tail(self, lines: int = 3, chain_file: str | None = None) -> str:
        """What a crash left on stderr: the chain's frame of a faulthandler dump, else the last lines."""
        text = self.stderr_text()
        frame = crash_frame(text, chain_file)
        if frame:
            return frame
        kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("Extension modules")]
        return " | ".join(kept[-lines:])

    def _readline(self, proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        """One protocol line, or None at the deadline; raises EOFError if the worker died."""
        assert proc.stdout is not None
        try:
            fd = proc.stdout.fileno()
        except ValueError:  # closed by kill() in another thread
            raise EOFError from None
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                ready, _, _ = select.select([fd], [], [], min(left, 0.25))
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
            except (OSError, ValueError):  # fd closed under us (interrupted)
                raise EOFError from None
            if not chunk:
                raise EOFError
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def _crashed(
        self, proc: subprocess.Popen[bytes], phase: str | None, chain_file: str | None, deadline: float
    ) -> WorkerCrashed:
        """The worker closed its protocol stream during a request: it died (its exit status and the chain's
        frame of the crash), or it lives on without answering (a chain that turns into another program by ``os.execv``):
        it is given until ``deadline`` (the point's) and at most :data:`procs.EXIT_WAIT` s, then killed."""
        end = procs.wait_exit(proc, deadline)
        tail = self.stderr_tail(chain_file=chain_file)
        self.kill()
        if self.interrupted:
            return WorkerCrashed("interrupted", phase, interrupted=True)
        where = f" in {phase}" if phase else ""
        sep = " " if tail.startswith("in ") else ": "
        what = "stopped answering" if end.killed else "crashed"
        return WorkerCrashed(f"worker {what}{where} ({_how(end)})" + (sep + tail if tail else ""), phase)

    def _limits(self, timeout: float, first_timeout: float | None) -> tuple[float, float | None]:
        """The request's timeouts: under callgrind scaled up (valgrind's slowdown is not the chain's cost)."""
        if not self.counting:
            return timeout, first_timeout
        return timeout * COUNTING_TIMEOUT_FACTOR, first_timeout * COUNTING_TIMEOUT_FACTOR if first_timeout else None

    def _restart(self, hard_deadline: float | None, chain_file: str | None) -> None:
        self.kill()
        if self.counting:
            compile_bytecode([chain_file])
        startup = STARTUP_TIMEOUT * (COUNTING_TIMEOUT_FACTOR / 10 if self.counting else 1)
        if hard_deadline is not None:
            startup = min(startup, max(hard_deadline - time.monotonic(), 1.0))
        self.start(startup, scaled=True)

    def request(
        self,
        msg: dict[str, Any],
        timeout: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        hard_deadline: float | None = None,
        first_timeout: float | None = LOAD_TIMEOUT,
    ) -> dict[str, Any]:
        """Send ``msg``; return the final answer. ``timeout`` restarts at every event line.

        Until the first event (the worker loading the chain file) ``first_timeout`` applies, if
        larger. ``hard_deadline`` (``time.monotonic()``) is absolute: no event extends it. Raises
        :class:`WorkerTimeout` (worker killed) or :class:`WorkerCrashed`.
        """
        if self.interrupted:
            raise WorkerCrashed("interrupted", interrupted=True)
        timeout, first_timeout = self._limits(timeout, first_timeout)
        if not self.alive:
            self._restart(hard_deadline, msg.get("file"))
        proc = self.proc
        if proc is None or proc.stdin is None:
            raise WorkerCrashed("interrupted", interrupted=True)
        try:
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            proc.stdin.flush()
        except (OSError, ValueError) as exc:
            self.kill()
            if self.interrupted:
                raise WorkerCrashed("interrupted", interrupted=True) from None
            raise WorkerCrashed(f"worker unavailable ({exc})") from None
        phase: str | None = None
        call: int | None = None
        started = phase_start = time.monotonic()
        first = True
        while True:
            limit = _phase_limit(phase, max(timeout, first_timeout or 0.0) if first else timeout)
            deadline = phase_start + limit
            if hard_deadline is not None:
                deadline = min(deadline, hard_deadline)
            try:
                line = self._readline(proc, deadline)
            except EOFError:
                raise self._crashed(proc, phase, msg.get("file"), deadline) from None
            if line is None:
                now = time.monotonic()
                self.kill()
                if self.interrupted:
                    raise WorkerCrashed("interrupted", phase, interrupted=True)
                to = WorkerTimeout(phase, call, now - phase_start, deadline - phase_start)
                to.total = now - started
                to.by_deadline = hard_deadline is not None and deadline >= hard_deadline
                to.counting = self.counting
                raise to
            try:
                data = json.loads(line)
            except ValueError:
                continue  # not ours (cannot happen: fd 1 is redirected in the worker)
            if "event" in data:
                first = False
                if data.get("event") == "phase":
                    phase, call = data.get("phase"), data.get("call")
                phase_start = time.monotonic()
                if on_event is not None:
                    on_event(data)
                continue
            return self._answer(data)


@dataclass
class _Handoff:
    """The scope of :func:`handing_over`: the worker kept for the next lane pool, and every worker handed out."""

    kept: list[Worker] = field(default_factory=list)
    handed: list[Worker] = field(default_factory=list)


#: The scope of :func:`handing_over` (None: outside it, a worker that loaded the targets is closed).
_HANDOFF: contextvars.ContextVar[_Handoff | None] = contextvars.ContextVar("adprof_handoff", default=None)


@contextlib.contextmanager
def handing_over() -> Iterator[None]:
    """Within the block, the worker that loaded the targets becomes a lane's worker in the next
    :class:`~adprof.measure.pool.LanePool` instead of being closed: one start-up (an interpreter, numpy, the chain
    file's own imports) less per command. Every worker handed over is closed when the block ends, taken or not (a
    pool closes its own first; closing twice is harmless): an interrupt between the hand-over and the pool's
    ``try`` leaves none behind."""
    scope = _Handoff()
    token = _HANDOFF.set(scope)
    try:
        yield
    finally:
        _HANDOFF.reset(token)
        for worker in [*scope.kept, *scope.handed]:
            worker.close()


def hand_over(worker: Worker) -> None:
    """Keep ``worker`` for the next lane pool (within :func:`handing_over`, one at most), else close it."""
    scope = _HANDOFF.get(None)
    if scope is None or scope.kept or not worker.alive or worker.interrupted or worker.counting:
        worker.close()
    else:
        scope.kept.append(worker)


def take_handed() -> Worker | None:
    """The worker :func:`hand_over` kept, if any (the caller's to close; the scope closes it too at its end)."""
    scope = _HANDOFF.get(None)
    if scope is None or not scope.kept:
        return None
    worker = scope.kept.pop()
    scope.handed.append(worker)
    return worker


def close_handed() -> None:
    """Close the worker :func:`hand_over` kept, if any: what measures this run is not a lane pool (a Dask cluster),
    and a worker holding the chain file's imports must not idle through it."""
    worker = take_handed()
    if worker is not None:
        worker.close()


def _phase_limit(phase: str | None, timeout: float) -> float:
    """The timeout of a phase: a warm-up (first use of each primitive, a compile per shape) is no point's cost and
    has :data:`WARMUP_TIMEOUT` at least."""
    return max(timeout, WARMUP_TIMEOUT) if phase == WARMUP_PHASE else timeout


class LoadError(Exception):
    """The target itself is unusable (missing file, syntax error, no chains, ...): one line, exit 2."""

    def __init__(self, message: str, error_type: str = "ChainError") -> None:
        super().__init__(message)
        self.message, self.error_type = message, error_type


def list_chains(
    file: str,
    names: Sequence[str] | None,
    worker: Worker,
    timeout: float = LOAD_TIMEOUT,
    hard_deadline: float | None = None,
) -> list[dict[str, Any]]:
    """Chain metadata (sweeps expanded) of ``file``, loaded in ``worker``; raises :class:`LoadError`.

    ``timeout`` bounds the import, ``hard_deadline`` (the budget's end) too."""
    req = {"op": "list", "file": file, "names": list(names) if names else None}
    try:
        ans = worker.request(req, timeout, hard_deadline=hard_deadline, first_timeout=None)
    except WorkerTimeout as to:
        why = "the budget ran out" if to.by_deadline else "killed"
        raise LoadError(f"loading {file} did not finish within {to.total:.1f} s ({why})") from None
    except WorkerCrashed as cr:
        raise LoadError(f"loading {file}: {cr.message}") from None
    if not ans.get("ok"):
        kind = ans.get("error_type") or ans.get("kind", "")
        raise LoadError(ans.get("error") or f"cannot load {file}", kind)
    return list(ans["chains"])
