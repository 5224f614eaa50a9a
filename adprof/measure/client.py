"""The parent's side of a worker: ``python -m adprof.measure.worker`` started, spoken to and killed.

Every piece of user code runs in a worker (see :mod:`adprof.measure.worker` for the protocol). A
request has a hard timeout, reset whenever the worker reports that a new phase starts; a worker
that overruns it is killed (by its pid) and restarted on the next request. A worker that dies
(segfault) raises :class:`WorkerCrashed`.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from adprof.measure.config import LOAD_TIMEOUT, STARTUP_TIMEOUT

_REPO_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerTimeout(Exception):
    """No answer (nor a new phase) within the timeout; the worker was killed."""

    def __init__(self, phase: str | None, call: int | None, elapsed: float, limit: float) -> None:
        super().__init__(f"no answer within {limit:.1f} s")
        self.phase, self.call, self.elapsed, self.limit = phase, call, elapsed, limit


class WorkerCrashed(Exception):
    """The worker died (signal or exit) before answering."""

    def __init__(self, message: str, phase: str | None = None) -> None:
        super().__init__(message)
        self.message, self.phase = message, phase


def worker_env() -> dict[str, str]:
    """The worker's environment: the repo root on PYTHONPATH, single-threaded BLAS."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = _REPO_ROOT + (os.pathsep + path if path else "")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Worker:
    """One ``python -m adprof.measure.worker`` child; started lazily, killed (by pid) on timeout."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._err: Any = None

    def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Spawn the worker and wait for its ``ready`` line (imports done)."""
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "adprof.measure.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=worker_env(),
        )
        self._buf = b""
        try:
            line = self._readline(time.monotonic() + timeout)
        except EOFError:
            code = self.proc.wait()
            tail = self.stderr_tail()
            self.kill()
            msg = f"worker failed to start (exit code {code})" + (f": {tail}" if tail else "")
            raise WorkerCrashed(msg) from None
        if line is None:
            self.kill()
            raise WorkerCrashed(f"worker did not start within {timeout:g} s")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill this worker (SIGKILL to its own pid) and reap it."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
        self.proc = None
        if self._err is not None:
            self._err.close()
            self._err = None

    def close(self) -> None:
        """Ask the worker to exit, then make sure it did."""
        if self.alive:
            try:
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def stderr_tail(self, lines: int = 3) -> str:
        if self._err is None:
            return ""
        try:
            self._err.seek(0, os.SEEK_END)
            size = self._err.tell()
            self._err.seek(max(0, size - 4000))
            text = self._err.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip())

    def _readline(self, deadline: float) -> bytes | None:
        """One protocol line, or None at the deadline; raises EOFError if the worker died."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.25))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

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
        larger. Raises :class:`WorkerTimeout` (worker killed) or :class:`WorkerCrashed`.
        """
        if not self.alive:
            self.kill()
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            self.kill()
            raise WorkerCrashed(f"worker unavailable ({exc})") from None
        phase: str | None = None
        call: int | None = None
        phase_start = time.monotonic()
        first = True
        while True:
            limit = max(timeout, first_timeout or 0.0) if first else timeout
            deadline = phase_start + limit
            if hard_deadline is not None:
                deadline = min(deadline, max(hard_deadline, phase_start + min(timeout, 1.0)))
            try:
                line = self._readline(deadline)
            except EOFError:
                code = self.proc.wait()
                tail = self.stderr_tail()
                self.kill()
                how = _signal_name(code) if code < 0 else f"exit code {code}"
                where = f" in {phase}" if phase else ""
                raise WorkerCrashed(f"worker crashed{where} ({how})" + (f": {tail}" if tail else ""), phase) from None
            if line is None:
                elapsed = time.monotonic() - phase_start
                self.kill()
                raise WorkerTimeout(phase, call, elapsed, deadline - phase_start)
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
            return data


class LoadError(Exception):
    """The target itself is unusable (missing file, syntax error, no chains, ...): one line, exit 2."""

    def __init__(self, message: str, error_type: str = "ChainError") -> None:
        super().__init__(message)
        self.message, self.error_type = message, error_type


def list_chains(
    file: str, names: Sequence[str] | None, worker: Worker, timeout: float = LOAD_TIMEOUT
) -> list[dict[str, Any]]:
    """Chain metadata (sweeps expanded) of ``file``, loaded in ``worker``; raises :class:`LoadError`."""
    try:
        ans = worker.request({"op": "list", "file": file, "names": list(names) if names else None}, timeout)
    except WorkerTimeout:
        raise LoadError(f"loading {file} did not finish within {timeout:g} s (killed)") from None
    except WorkerCrashed as cr:
        raise LoadError(f"loading {file}: {cr.message}") from None
    if not ans.get("ok"):
        kind = ans.get("error_type") or ans.get("kind", "")
        raise LoadError(ans.get("error") or f"cannot load {file}", kind)
    return list(ans["chains"])
