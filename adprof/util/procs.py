"""Every process adprof starts, supervised, so that nothing it starts outlives it.

A process group cannot hold a child that makes its own session (``setsid``, ``start_new_session``, a
daemon's double fork). So, on Linux, three mechanisms, from the one that knows most:

* The starting process becomes a **child subreaper** (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant
  whose parent dies is re-parented to it instead of init, so it is still ours to find and kill.
* Everything :func:`spawn` starts carries two environment markers that its descendants inherit: the
  run's id (``ADPROF_RUN``) and its own token (``ADPROF_OWNER``). :func:`kill_family` kills a process,
  its descendants (by parent links, while they are attached), its process group, and the orphans it left
  (children of ours that we did not start, carrying its token, or carrying no token at all but in a session
  of their own and born during the run: :func:`strays`), and reaps those orphans.
* A **guardian** (:mod:`adprof.util.guardian`, standard library only, in its own session) reads a pipe
  whose write end only this process holds. When this process dies, even by SIGKILL, the guardian kills
  every process group still registered and every process carrying the run's marker, and removes the
  temporary directories still registered (:func:`temp_dir`).

:func:`run` runs one program to completion (bounded outputs, a timeout, a cancel check) on top of it:
it waits for the exit status (a program may close its pipes and keep working), and stops reading a
short while after the exit (a detached child may hold the pipes open). :class:`BoundedSink` keeps the
head and the tail of what a process writes to a pipe, whatever the amount.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_VAR = "ADPROF_RUN"
OWNER_VAR = "ADPROF_OWNER"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: Seconds of silence on the pipes, after the program exited, before they are given up (a detached
#: descendant may hold them open); the exit status is what ends a run, not end-of-file.
EXIT_GRACE = 0.1

_lock = threading.RLock()
_own: dict[int, str] = {}  # pid -> owner token of every process spawn() started and nobody reaped yet
_born: dict[int, int] = {}  # pid -> start time (clock ticks) of every process spawned since the last sweep()
_dirs: set[str] = set()  # temporary directories of this process (temp_dir), removed by the guardian if it dies
#: Every temporary directory adprof makes starts with this (the guardian removes nothing else).
TEMP_PREFIX = "adprof-"
_state: dict[str, Any] = {
    "pid": None,
    "run": "",
    "subreaper": False,
    "guardian": None,
    "pipe": None,
    "supervised": False,
}
_HAVE_PROC = os.path.isdir("/proc")
#: ``/proc/PID/task/TID/children`` (CONFIG_PROC_CHILDREN); without it the children are found by a scan.
_HAVE_CHILDREN_FILES = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


# --------------------------------------------------------------------------- this process


def _prctl() -> Any:
    """libc's ``prctl`` (None off Linux); looked up before any fork (the child must not import)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - no libc
        return None


_PRCTL = _prctl()


def run_id() -> str:
    """This process's run marker (a fresh one in a forked child)."""
    if _state["pid"] != os.getpid():
        _state.update(
            pid=os.getpid(), run=uuid.uuid4().hex, subreaper=False, guardian=None, pipe=None, supervised=False
        )
        _dirs.clear()  # a forked child's guardian must not remove its parent's directories
        _born.clear()
    return str(_state["run"])


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (Linux); True when it is one."""
    run_id()
    if not _state["subreaper"] and _PRCTL is not None:
        _state["subreaper"] = _PRCTL(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return bool(_state["subreaper"])


def _start_guardian() -> None:
    """The guardian, once per process (see the module docstring); best effort."""
    if _state["guardian"] is not None or not _HAVE_PROC:
        return
    read, write = os.pipe()
    env = {k: v for k, v in os.environ.items() if k not in (RUN_VAR, OWNER_VAR)}
    try:
        guardian = subprocess.Popen(
            [sys.executable, "-S", "-I", str(Path(__file__).with_name("guardian.py")), run_id()],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    except OSError:  # pragma: no cover - no interpreter to start: the other mechanisms remain
        os.close(write)
        return
    finally:
        os.close(read)
    os.set_blocking(write, False)
    # The guardian outlives this process by design: its Popen's "subprocess N is still running" at exit is no
    # error (under PYTHONWARNINGS=error it printed "Exception ignored in: Popen.__del__" and a traceback).
    warnings.filterwarnings("ignore", category=ResourceWarning, module="subprocess")
    with _lock:
        _own[guardian.pid] = ""
        _state.update(guardian=guardian, pipe=write)
        for pid, token in list(_own.items()):  # the groups started before it was up
            if token:
                _tell_guardian(f"+{pid}")
        for path in _dirs:
            _tell_guardian(_dir_line("D", path))


def _tell_guardian(line: str) -> None:
    fd = _state["pipe"]
    if fd is not None:
        with contextlib.suppress(OSError):  # a full pipe or a dead guardian: the other mechanisms remain
            os.write(fd, (line + "\n").encode())


def _supervise() -> None:
    """Subreaper, guardian and the exit hook: once per process (a forked child starts its own)."""
    run_id()
    if not _state["supervised"]:
        _state["supervised"] = True
        become_subreaper()
        # started beside the first process, not before it: a run's first worker does not wait for it
        threading.Thread(target=_start_guardian, daemon=True, name="adprof-guardian").start()
        atexit.register(sweep)


def _dir_line(op: str, path: str) -> str:
    """The guardian's line for a directory: ``D`` (remove it if adprof dies) or ``d`` (forget it), hex path."""
    return op + os.fsencode(path).hex()


def temp_dir(prefix: str) -> str:
    """``tempfile.mkdtemp(prefix=...)`` that the guardian removes if this process dies before
    :func:`remove_dir` (a SIGKILL leaves nothing in ``/tmp``); ``prefix`` starts with :data:`TEMP_PREFIX`."""
    if not prefix.startswith(TEMP_PREFIX):
        raise ValueError(f"temporary directory prefix {prefix!r} must start with {TEMP_PREFIX!r}")
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _supervise()
        _dirs.add(path)
        _tell_guardian(_dir_line("D", path))
    return path


def remove_dir(path: str) -> None:
    """Remove a :func:`temp_dir` (whatever it holds) and tell the guardian it is gone."""
    shutil.rmtree(path, ignore_errors=True)
    with _lock:
        if path in _dirs:
            _dirs.discard(path)
            _tell_guardian(_dir_line("d", path))


@contextlib.contextmanager
def temporary_dir(prefix: str) -> Iterator[str]:
    """A :func:`temp_dir` for the ``with`` block (as ``tempfile.TemporaryDirectory``)."""
    path = temp_dir(prefix)
    try:
        yield path
    finally:
        remove_dir(path)


# --------------------------------------------------------------------------- the process tree


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (``/proc/PID/task/*/children``, else a scan of ``/proc``)."""
    if _HAVE_CHILDREN_FILES:
        found: list[int] = []
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    found.extend(int(x) for x in f.read().split())
            except OSError:  # the thread ended meanwhile
                continue
        return found
    out = []
    for entry in os.listdir("/proc") if _HAVE_PROC else ():
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` that is still attached to it by parent links (breadth first)."""
    seen: set[int] = {pid}
    order: list[int] = []
    todo = [pid]
    while todo:
        for child in children(todo.pop()):
            if child not in seen:
                seen.add(child)
                order.append(child)
                todo.append(child)
    return order


def _environ(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _carries(pid: int, var: str, value: str) -> bool:
    return f"{var}={value}".encode() in _environ(pid)


def orphans(token: str | None = None) -> list[int]:
    """Children of this process that it did not start (re-parented to it, the subreaper), carrying the
    owner ``token`` (None: this run's marker). Without the subreaper they went to init: then all of
    ``/proc`` is searched."""
    var, value = (OWNER_VAR, token) if token else (RUN_VAR, run_id())
    with _lock:
        own = set(_own)
    if _state["subreaper"]:
        pool: Sequence[int] = children(os.getpid())
    else:
        pool = [int(e) for e in os.listdir("/proc") if e.isdigit()] if os.path.isdir("/proc") else []
    me = os.getpid()
    return [p for p in pool if p not in own and p != me and _carries(p, var, value)]


def _stat(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command name (state first), or [] when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None."""
    fields = _stat(pid)
    return int(fields[19]) if len(fields) > 19 else None


def strays(since: int | None) -> list[int]:
    """Orphans that shed every marker: children of this process (the subreaper) it did not start, in a session of
    their own (a process adprof starts runs in its own session, and so does anything it detaches), with no owner
    token in their environment (``env -i``), started at or after ``since`` (clock ticks: the first process spawned
    since the last :func:`sweep`). A child this process started itself shares its session (or is in ``_own``);
    only a child it started in a new session during a run is mistaken for one. Without the subreaper: none."""
    if since is None or not _state["subreaper"] or not _HAVE_PROC:
        return []
    me, session = os.getpid(), os.getsid(0)
    found = []
    # The lock is held for the whole scan: spawn holds it from fork to registration, so a lane's worker that is
    # between its setsid and its exec (no token in its environment yet) is never taken for a stray.
    with _lock:
        for pid in children(me):
            fields = _stat(pid)
            if pid in _own or len(fields) <= 19 or fields[0] in (b"Z", b"X"):
                continue
            if int(fields[3]) == session or int(fields[19]) < since:
                continue
            if any(entry.startswith(OWNER_VAR.encode() + b"=") for entry in _environ(pid)):
                continue  # carries a token: its owner's kill_family finds it
            if _is_guardian(pid):
                continue  # a killed worker's guardian: removing the worker's directories, then exiting
            found.append(pid)
    return found


def _since() -> int | None:
    with _lock:
        return min(_born.values(), default=None)


def _alive(pid: int) -> bool:
    """Running or sleeping (not a zombie, not gone)."""
    if not _HAVE_PROC:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _signal(pid: int, sig: int = signal.SIGKILL) -> bool:
    """Send ``sig`` to a live process (a zombie does not count); True when it was sent."""
    if not _alive(pid):
        return False
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def _reap(pids: set[int], seconds: float = 1.0) -> None:
    """Wait for the orphans we killed (our children now: nobody else waits for them)."""
    end = time.monotonic() + seconds
    left = set(pids)
    while left and time.monotonic() < end:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child (no subreaper): init reaps it
                left.discard(pid)
                continue
            if done:
                left.discard(pid)
        if left:
            time.sleep(0.005)


#: The guardian's script: a killed worker's guardian is spared, so that it removes the worker's temporary
#: directories (torch.compile's cache) once the worker is gone, then exits.
_GUARDIAN = str(Path(__file__).with_name("guardian.py")).encode()


def _is_guardian(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return _GUARDIAN in f.read().split(b"\0")
    except OSError:
        return False


def kill_family(proc: subprocess.Popen[Any], token: str | None = None) -> None:
    """SIGKILL ``proc``, its descendants, its process group and the orphans carrying its token; not ``proc``'s
    guardian (in a session of its own: it removes the directories ``proc`` registered, then exits).

    The orphans are reaped here; ``proc`` itself is left for its Popen to wait for."""
    token = token if token is not None else _own.get(proc.pid)
    killed: set[int] = set()
    for _ in range(50):  # a forking tree grows while we kill it: until a round finds nothing
        alive = proc.poll() is None
        victims = [pid for pid in descendants(proc.pid) if not _is_guardian(pid)] if alive else []
        if token:
            for pid in [*orphans(token), *strays(_born.get(proc.pid))]:
                victims.append(pid)
                victims.extend(descendants(pid))
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # a session leader: its group has its pid
        if alive:
            _signal(proc.pid)
        fresh = [p for p in victims if _signal(p)]
        killed.update(p for p in fresh if p != proc.pid)
        if not fresh:
            break
        time.sleep(0.002)
    _reap({p for p in killed if p not in _own})


#: Seconds a process that stopped talking to us (closed its pipes) gets to exit before it is killed: it
#: will not answer any more, whatever it does (e.g. a chain that turns into ``sleep`` by ``os.execv``).
EXIT_WAIT = 5.0
#: Seconds to reap a process once SIGKILL was sent (only a process in uninterruptible sleep takes longer).
REAP_WAIT = 5.0


@dataclass
class Exited:
    """How :func:`wait_exit` ended: the exit status (None: not even reaped), and whether adprof killed it."""

    code: int | None
    killed: bool = False


def wait_exit(proc: subprocess.Popen[Any], deadline: float | None = None, grace: float = EXIT_WAIT) -> Exited:
    """Wait for ``proc`` to exit until ``deadline`` (``time.monotonic()``) or ``grace`` seconds, whichever
    comes first; past that, kill its family (:func:`kill_family`) and reap it. Every wait on a process
    adprof started goes through here or has its own timeout: none waits forever."""
    end = time.monotonic() + grace
    if deadline is not None:
        end = min(end, deadline)
    try:
        return Exited(proc.wait(timeout=max(0.0, end - time.monotonic())))
    except subprocess.TimeoutExpired:
        pass
    kill_family(proc)
    try:
        return Exited(proc.wait(timeout=REAP_WAIT), killed=True)
    except subprocess.TimeoutExpired:  # pragma: no cover - uninterruptible sleep
        return Exited(None, killed=True)


def release(proc: subprocess.Popen[Any]) -> None:
    """Forget ``proc`` (reaped by its Popen): its group is no longer the guardian's business."""
    with _lock:
        if _own.pop(proc.pid, None) is not None:
            _tell_guardian(f"-{proc.pid}")


def sweep() -> None:
    """Kill every orphan of this run, with or without its markers (:func:`strays`): an atexit hook, and a backstop
    at the end of a command."""
    if _state["pid"] != os.getpid():
        return
    since = _since()
    for _ in range(20):
        found = [*orphans(), *strays(since)]
        victims = [p for pid in found for p in (pid, *descendants(pid))]
        hit = {p for p in victims if _signal(p)}
        if not hit:
            break
        _reap(hit & set(found))
    with _lock:  # the next run's strays are the ones born after its own first process
        for pid in [p for p in _born if p not in _own]:
            del _born[pid]


# --------------------------------------------------------------------------- starting and running


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = False,
    preexec: Callable[[], None] | None = None,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv)`` in its own session, supervised (see the module docstring).

    ``env``: the whole environment (default: this process's); the markers are added to it.
    ``die_with_parent``: ``PR_SET_PDEATHSIG`` (SIGKILL) on Linux; the signal comes when the *thread*
    that started the child ends, so only from a thread that outlives it. ``preexec``: also run in the
    child between fork and exec (no imports, no locks; e.g. a ``personality`` call). Raises OSError as
    Popen does.
    """
    token = uuid.uuid4().hex
    full = dict(os.environ if env is None else env)
    with _lock:
        _supervise()
        full[RUN_VAR], full[OWNER_VAR] = run_id(), token
        child_setup = preexec
        if die_with_parent and _PRCTL is not None:
            parent, prctl = os.getpid(), _PRCTL

            def child_setup() -> None:  # between fork and exec: no imports, no locks
                if preexec is not None:
                    preexec()
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)

        proc = subprocess.Popen(list(argv), env=full, start_new_session=True, preexec_fn=child_setup, **popen)
        _own[proc.pid] = token
        ticks = _start_ticks(proc.pid) if _HAVE_PROC else None
        if ticks is not None:
            _born[proc.pid] = ticks
        _tell_guardian(f"+{proc.pid}")
    return proc


def stop(proc: subprocess.Popen[Any]) -> int | None:
    """Kill ``proc`` with its family, reap it, forget it; its exit status."""
    kill_family(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=REAP_WAIT)
    kill_family(proc)  # anything it forked between the first kill and its death
    release(proc)
    return proc.returncode


@dataclass
class Finished:
    """How a :func:`run` ended: the exit status (None when killed by us), outputs, seconds to the exit."""

    argv: list[str]
    returncode: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False
    cancelled: bool = False
    flooded: str | None = None  # "stdout" / "stderr": past the output limit


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    output_limit: int,
    env: Mapping[str, str] | None = None,
    cancel: Callable[[], bool] | None = None,
    die_with_parent: bool = False,
    keep_tail: bool = False,
) -> Finished:
    """Run ``argv`` (stdin closed, both outputs captured up to ``output_limit`` bytes each) until it
    exits, past ``timeout`` seconds, past the output limit, or when ``cancel()`` turns true; then kill
    its family (:func:`kill_family`). ``keep_tail``: past the output limit keep reading and keep the
    last ``output_limit`` bytes instead. Raises OSError when it cannot be started."""
    t0 = time.perf_counter()
    proc = spawn(
        argv,
        env=env,
        die_with_parent=die_with_parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    done = Finished(list(argv), None, b"", b"", 0.0)
    try:
        buffers = _pump(proc, done, t0, timeout, output_limit, cancel, keep_tail)
    finally:
        kill_family(proc)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed: only uninterruptible sleep delays it
            proc.wait(timeout=REAP_WAIT)
        kill_family(proc)
        release(proc)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    done.stdout, done.stderr = bytes(buffers["stdout"]), bytes(buffers["stderr"])
    if not (done.timed_out or done.cancelled or done.flooded):
        done.returncode = proc.returncode
    if not done.seconds:
        done.seconds = time.perf_counter() - t0
    return done


def _pump(
    proc: subprocess.Popen[bytes],
    done: Finished,
    t0: float,
    timeout: float,
    limit: int,
    cancel: Callable[[], bool] | None,
    keep_tail: bool = False,
) -> dict[str, bytearray]:
    """Read both pipes until the program has exited and they are quiet; set ``done``'s flags."""
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    assert proc.stdout is not None and proc.stderr is not None
    pidfd = _pidfd(proc.pid)
    exited: float | None = None
    quiet_since = 0.0
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        try:
            while True:
                now = time.perf_counter()
                if exited is None and proc.poll() is not None:
                    exited = quiet_since = now
                    done.seconds = now - t0
                    if pidfd is not None:
                        sel.unregister(pidfd)
                streams = [k for k in sel.get_map().values() if k.data != "exit"]
                if exited is not None and (not streams or now - quiet_since > EXIT_GRACE):
                    return buffers  # exited, and its pipes are closed or quiet (a detached child holds them)
                if cancel is not None and cancel():
                    done.cancelled = True
                    return buffers
                if now - t0 > timeout:
                    done.timed_out = True
                    return buffers
                wait = min(0.05, max(0.0, timeout - (now - t0)))
                if not streams and pidfd is None:  # pipes closed, still running: poll its exit
                    time.sleep(min(wait, 0.005))
                    continue
                for key, _ in sel.select(timeout=wait):
                    if key.data == "exit":
                        continue  # seen by poll() on the next turn
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    quiet_since = time.perf_counter()
                    buf = buffers[key.data]
                    buf.extend(chunk)
                    if len(buf) > limit:
                        if keep_tail:
                            del buf[: len(buf) - limit]
                            continue
                        done.flooded = key.data
                        return buffers
        finally:
            if pidfd is not None:
                os.close(pidfd)


class BoundedSink:
    """A thread that drains ``fd`` (a pipe's read end) and keeps the last ``keep`` bytes: a process may
    write gigabytes to it, adprof keeps kilobytes (``total`` counts them all)."""

    def __init__(self, fd: int, keep: int = 65_536) -> None:
        self.fd, self.keep = fd, keep
        self.tail = bytearray()
        self.total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True, name="adprof-sink")
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError as exc:
                if exc.errno == errno.EINTR:  # pragma: no cover - PEP 475 retries
                    continue
                break
            if not chunk:
                break
            with self._lock:
                self.total += len(chunk)
                self.tail.extend(chunk)
                if len(self.tail) > 2 * self.keep:
                    del self.tail[: len(self.tail) - self.keep]
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def settle(self, seconds: float = 0.3) -> None:
        """Wait until every writer is gone (end of file) or ``seconds`` have passed."""
        self._thread.join(timeout=seconds)

    def text(self, last: int = 8000) -> str:
        """The last ``last`` bytes written, decoded."""
        with self._lock:
            data = bytes(self.tail[-last:])
        return data.decode(errors="replace")
