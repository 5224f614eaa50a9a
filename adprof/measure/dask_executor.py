"""The Dask executor: a run's tasks on a ``dask.distributed`` cluster (``adprof check --scheduler``).

``--scheduler tcp://host:8786`` connects to a running scheduler; ``--scheduler local[:N]`` starts an
embedded ``LocalCluster`` of N worker processes with one thread each (N: ``--jobs``). Each task (one
structure recording, one whole series) runs on one Dask worker thread, which supervises it in its own
adprof worker subprocess (:class:`~adprof.measure.client.Worker`: the same phase timeouts, process
group and orphan guard as a local lane; the subprocess is kept for the worker thread's next task of
the same run, and closed at the run's end).

* **Budget.** At most :attr:`DaskExecutor.lanes` tasks (the cluster's threads) are in flight; each
  series claims its share when it is submitted, like a lane does when it starts one. The run's
  deadline travels with the task as wall-clock time (clocks in sync, as Dask assumes) and as seconds
  left, the earlier of the two on the worker's clock; a series past it stops as it does locally.
* **Chain files.** The file's bytes travel with each task (in its arguments, not scattered: scattered data dies
  with the worker that holds it, and the scheduler then cancels the task instead of rerunning it); a worker loads the
  file at its own path when the same bytes are there (a shared filesystem, a local cluster), else from
  a copy in a temporary directory of this run; the report keeps the path as given.
* **Streaming.** Results come back as they finish; what each task is doing is sent as Dask events
  (at most 5 a second per task) and shown in the progress display.
* **Lost workers.** A Dask worker that dies mid-task: the scheduler reruns the task elsewhere (up to
  ``distributed.scheduler.allowed-failures`` times), then its series is an ``error`` ("worker lost").
  Its adprof subprocess dies with it (the subprocess' watchdog sees its parent go).
* **Interrupts.** Ctrl-C or SIGTERM kills every adprof subprocess of the run on every worker at once;
  the series in progress come back "interrupted", the others are not measured.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import queue
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.constants import __version__
from adprof.measure.client import Worker
from adprof.measure.executor import SlotStatus, Task, TaskContext, WorkerLost
from adprof.util import procs
from adprof.util.bounded import CallTimeout, call_within

#: Seconds after the run's deadline after which a task that has not answered is given up on: a task ends at the
#: deadline (its worker's start-up and every request are bounded by it), then kills its worker and sends its
#: result; past this the Dask worker is not answering.
LATE_GRACE = 30.0
#: Seconds the steering process gives everything after an interrupt (telling the workers, the tasks in progress
#: coming back, closing the client): a signal ends adprof at once, whatever Dask is doing.
INTERRUPT_WAIT = 5.0
#: Seconds any other call to the scheduler may take (a scheduler that stops answering cannot hang adprof).
CALL_TIMEOUT = 15.0
#: Seconds between two status events of one task.
STATUS_INTERVAL = 0.2
#: A run's subprocesses on a worker are closed this long after its deadline when no task of it is left
#: (the steering process died without ending the run), or after this long idle without a deadline.
REAP_AFTER = 120.0


class SchedulerError(Exception):
    """The cluster cannot be used (bad address, no workers, adprof missing there): one line, exit 2."""


#: Address schemes a Dask scheduler listens on across machines (``inproc://`` is within one process only).
REMOTE_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def parse_scheduler(value: str) -> tuple[str, int | None]:
    """``("local", N | None)`` for ``local[:N]``, else ``("address", None)``; raises ValueError (one line) for
    anything else: an N that is not a positive integer, a scheme Dask cannot connect to, no host, a bad port."""
    if value == "local" or value.startswith("local:"):
        n = value.partition(":")[2]
        if value != "local" and (not n.isdigit() or int(n) < 1):
            raise ValueError(f"--scheduler {value}: expected local or local:N with N >= 1 workers")
        return "local", int(n) if n else None
    if "://" not in value and ":" not in value:
        raise ValueError(f"--scheduler {value}: expected a scheduler address (tcp://host:8786) or local[:N]")
    scheme, sep, where = value.partition("://")
    if not sep:
        scheme, where = "tcp", value
    if scheme not in REMOTE_SCHEMES:
        known = ", ".join(f"{s}://" for s in REMOTE_SCHEMES)
        raise ValueError(f"--scheduler {value}: Dask cannot connect to {scheme}:// addresses (known: {known})")
    host, colon, port = where.rpartition(":") if not where.endswith("]") else (where, "", "")
    if not colon:
        host, port = where, ""
    if not host or (colon and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(f"--scheduler {value}: expected {scheme}://HOST:PORT (a port 1..65535)")
    return value, None


@contextlib.contextmanager
def _signals_held() -> Iterator[list[int]]:
    """While the LocalCluster's processes start: SIGINT, SIGTERM and SIGHUP remembered, not raised (raised inside
    Dask's start-up, they leave a half-started cluster that Dask's own exit handler cannot close: an AssertionError
    traceback). SIGINT is also blocked in this thread, and the threads and processes Dask starts meanwhile inherit
    the block: Ctrl-C reaches only adprof, which then ends the run in order (the processes would otherwise die with
    tracebacks); adprof itself still sees it, when it is unblocked (an ignored SIGINT would be lost: the run went
    on to its end). Yields the signals remembered: the caller closes the cluster, whole, then sends the first one
    again."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def remember(signum: int, frame: Any) -> None:
        held.append(signum)

    previous = {sig: signal.signal(sig, remember) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield held
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending SIGINT is remembered here, on unblocking
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class DaskExecutor:
    """Runs tasks on a Dask cluster (see the module docstring); a context manager."""

    def __init__(
        self,
        scheduler: str,
        workers: int = 2,
        connect_timeout: float = 20.0,
        most: int | None = None,
        deadline: float | None = None,
    ) -> None:
        """``workers``: an embedded cluster's size without ``local:N``; ``most``: the tasks of the run, an embedded
        cluster's largest size (``local:100000`` for 3 series starts 3 workers, as the local lanes do);
        ``deadline``: the run's end (``time.monotonic()``): connecting takes at most the connect timeout and at
        most what is left of the budget, and ends in :class:`SchedulerError` (one line) past it."""
        try:
            from dask import config as dask_config
            from distributed import Client, LocalCluster
        except ImportError as exc:
            raise SchedulerError(f"--scheduler needs dask.distributed: pip install 'adprof[dask]' ({exc})") from None
        kind, n = parse_scheduler(scheduler)
        self.scheduler = scheduler
        self.cluster: Any = None
        self.interrupted: BaseException | None = None
        self.run_id = uuid.uuid4().hex[:12]
        self._sources: dict[str, Any] = {}
        self._hurry: float | None = None  # after an interrupt: the end of every wait (INTERRUPT_WAIT)
        self._nthreads: dict[str, int] = {}
        self.deadline = deadline
        self.allowed_failures = int(dask_config.get("distributed.scheduler.allowed-failures", 3))
        try:
            if kind == "local":
                with _signals_held() as held:
                    self.cluster = LocalCluster(
                        n_workers=max(1, min(n or workers, most or n or workers)),
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=None,
                        silence_logs=50,  # logging.CRITICAL: a worker lost is reported on its series
                    )
                if held:  # stopped while it started: close it whole, then stop as the signal says
                    self.close()
                    signal.raise_signal(held[0])
                cluster = self.cluster
                self.client = self._call(lambda: Client(cluster, set_as_default=False), "connecting to it", 60.0)
            else:
                self.client = self._connect(kind, connect_timeout)
        except CallTimeout as exc:
            self.close()
            raise SchedulerError(f"--scheduler {scheduler}: no answer ({exc})") from None
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: an address Dask's comms refuse
            self.close()
            raise SchedulerError(f"--scheduler {scheduler}: cannot connect ({_one_line(exc)})") from None
        except RuntimeError as exc:  # a LocalCluster whose worker processes did not start
            self.close()
            raise SchedulerError(
                f"--scheduler {scheduler}: the local cluster did not start ({exc}); a script that runs adprof "
                "in-process needs an `if __name__ == '__main__':` guard (its workers are spawned processes)"
            ) from None
        try:
            self.address = self.client.scheduler.address
            self._check_workers()
        except BaseException:  # an interrupt while waiting for the workers: nothing of the cluster is left
            self.close()
            raise

    def _left(self, seconds: float) -> float:
        """``seconds``, or less: what is left of the budget (after an interrupt, of :data:`INTERRUPT_WAIT`)."""
        ends = [e for e in (self.deadline, self._hurry) if e is not None]
        if ends:
            seconds = min(seconds, max(0.5, min(ends) - time.monotonic()))
        return seconds

    def _call(self, fn: Callable[[], Any], what: str, seconds: float = CALL_TIMEOUT) -> Any:
        """``fn()`` (a call to the scheduler) bounded by ``seconds`` and the budget; raises CallTimeout past it."""
        return call_within(fn, self._left(seconds), what)

    def _connect(self, address: str, connect_timeout: float) -> Any:
        """A client of the scheduler at ``address``, within min(``connect_timeout``, the budget left).

        First a probe on a private event loop: a handshake and an ``identity`` call; a server that accepts and
        never answers, or answers garbage or HTTP, fails here (one line) and leaves no client behind to clean up.
        Then the client, bounded the same way (given up on: closed in its own thread if it ever connects)."""
        from distributed import Client

        seconds = self._left(connect_timeout)
        limit = "the connect timeout" if seconds >= connect_timeout else "what was left of the budget"
        call_within(lambda: _probe(address, seconds, limit), seconds + 1.0, f"connecting ({limit})")
        seconds = self._left(connect_timeout)
        return call_within(
            lambda: Client(address, timeout=seconds, set_as_default=False),
            seconds + 1.0,
            f"starting the client within {seconds:.1f} s",
            on_late=_close_quietly,
        )

    def _check_workers(self) -> None:
        wait = self._left(30.0)
        try:
            self._call(lambda: self.client.wait_for_workers(1, timeout=wait), "waiting for a worker", wait + 1.0)
        except (OSError, TimeoutError):  # CallTimeout is a TimeoutError
            self.close()
            raise SchedulerError(f"--scheduler {self.scheduler}: no worker joined within {wait:.0f} s") from None
        try:
            versions = self._call(lambda: self.client.run(worker_identity), "asking the workers for adprof")
            self._nthreads = dict(self._call(self.client.nthreads, "asking for the workers' threads"))
        except CallTimeout as exc:
            self.close()
            raise SchedulerError(f"--scheduler {self.scheduler}: no answer ({exc})") from None
        except Exception as exc:  # the workers cannot import adprof: the function does not unpickle there
            self.close()
            raise SchedulerError(
                f"--scheduler {self.scheduler}: the Dask workers cannot run adprof "
                f"(install this adprof on them): {type(exc).__name__}: {exc}"
            ) from None
        other = sorted({v for v in versions.values() if v != __version__})
        self.notes = [f"Dask workers run adprof {', '.join(other)}, this is {__version__}"] if other else []

    @property
    def lanes(self) -> int:
        """Threads of the cluster's workers (tasks in flight at once): asked again, bounded (the last answer if
        the scheduler does not give one in time)."""
        with contextlib.suppress(Exception):
            self._nthreads = dict(self._call(self.client.nthreads, "asking for the workers' threads", 5.0))
        return max(1, sum(self._nthreads.values()))

    def describe(self) -> str:
        """The cluster in one line, from the last answer about its workers (no call to the scheduler)."""
        n, threads = len(self._nthreads), max(1, sum(self._nthreads.values()))
        where = "an embedded LocalCluster" if self.cluster is not None else self.address
        return f"dask: {where}, {n} worker{'s' if n != 1 else ''}, {threads} thread{'s' if threads != 1 else ''}"

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- one run -------------------------------------------------------------------------------------
    def _source(self, file: str) -> Any:
        """The file's (absolute path, sha256, bytes), read once; None when it cannot be read here. Sent inside each
        task's arguments: a task rerun after its worker died finds them in its own specification."""
        if file not in self._sources:
            try:
                data = Path(file).read_bytes()
            except OSError:
                self._sources[file] = None
            else:
                src = (os.path.abspath(file), hashlib.sha256(data).hexdigest(), data)
                self._sources[file] = src
        return self._sources[file]

    def _submit(self, i: int, task: Task, allowance: float, slot: int, topic: str) -> Any:
        remaining = None if task.deadline is None else task.deadline - time.monotonic()
        wall = None if remaining is None else time.time() + remaining
        sources = {f: s for f in task.files if (s := self._source(f)) is not None}
        spec = RemoteCall(self.run_id, topic, i, slot, allowance, remaining, wall)
        return self.client.submit(
            run_remote,
            spec,
            task.run,
            task.args,
            sources,
            key=f"adprof-{getattr(task.run, '__name__', 'task')}-{self.run_id}-{i}-{uuid.uuid4().hex[:6]}",
            pure=False,
            workers=[task.affinity] if task.affinity else None,
            allow_other_workers=False,
        )

    def run(
        self,
        tasks: Sequence[Task],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
        status: SlotStatus | None = None,
    ) -> list[Any]:
        """Run ``tasks`` on the cluster, at most :attr:`lanes` at once; results in task order (see
        :class:`~adprof.measure.executor.Executor`)."""
        return _Run(self, tasks, on_done, poll, status).go()

    def _on_workers(self, fn: Callable[[str], None], timeout: float = CALL_TIMEOUT) -> None:
        """``fn(run_id)`` on every worker, waited for at most ``timeout`` (a lost scheduler cannot hang adprof)."""
        client = getattr(self, "client", None)
        if client is None:
            return
        with contextlib.suppress(Exception):  # CallTimeout included: given up on
            self._call(lambda: client.run(fn, self.run_id, on_error="ignore"), f"{fn.__name__} on the workers", timeout)

    def interrupt(self) -> None:
        """Kill every adprof subprocess of this run on every worker (they answer "interrupted"); from now on every
        wait of this executor ends within :data:`INTERRUPT_WAIT` s."""
        if self._hurry is None:
            self._hurry = time.monotonic() + INTERRUPT_WAIT
        self._on_workers(interrupt_run)

    def cancel(self, fut: Any) -> None:
        """Cancel a future (a call to the scheduler: bounded, and its failure ignored)."""
        with contextlib.suppress(Exception):
            self._call(fut.cancel, "cancelling a task", 5.0)

    def close(self) -> None:
        """End the run on the workers (subprocesses, copied files), then the client and any LocalCluster; each step
        bounded (after an interrupt, all of them together by :data:`INTERRUPT_WAIT`)."""
        client = getattr(self, "client", None)
        if client is not None:
            self._on_workers(end_run)
            with contextlib.suppress(Exception):
                self._call(lambda: client.close(timeout=self._left(10.0)), "closing the client", 12.0)
        if self.cluster is not None:
            cluster = self.cluster
            with contextlib.suppress(Exception):
                self._call(lambda: cluster.close(timeout=self._left(20.0)), "closing the local cluster", 25.0)
            self.cluster = None


class _Run:
    """One ``DaskExecutor.run``: submits as slots free up, collects results as they finish."""

    def __init__(
        self,
        ex: DaskExecutor,
        tasks: Sequence[Task],
        on_done: Callable[[int, Any], None] | None,
        poll: Callable[[], None] | None,
        status: SlotStatus | None,
    ) -> None:
        self.ex, self.tasks, self.on_done, self.poll, self.status = ex, tasks, on_done, poll, status
        self.results: list[Any] = [None] * len(tasks)
        self.pending = list(range(len(tasks)))
        self.inflight: dict[Any, tuple[int, int]] = {}  # future -> (task index, slot)
        self.slot_task: dict[int, int] = {}  # slot -> task index in it (status events of others are late)
        self.free = list(range(ex.lanes))[::-1]
        self.done: queue.Queue[Any] = queue.Queue()
        self.topic = f"adprof-status-{ex.run_id}"

    def _on_status(self, event: Any) -> None:
        _, msg = event
        i, slot, text = msg
        if self.status is not None and self.slot_task.get(slot) == i:
            self.status(slot, text)

    def _fill(self) -> None:
        while self.pending and self.free:
            i = self.pending.pop(0)
            task = self.tasks[i]
            allowance = task.claim() if task.claim is not None else math.inf
            res = task.shortcut(allowance) if task.shortcut is not None else None
            if res is not None:
                if task.release is not None:
                    task.release()
                self._finish(i, res)
                continue
            slot = self.free.pop()
            try:
                fut = self.ex._submit(i, task, allowance, slot, self.topic)
            except Exception as exc:  # the scheduler is gone: this series (and the next) cannot be sent
                self.free.append(slot)
                if task.release is not None:
                    task.release()
                self._finish(i, WorkerLost(f"worker lost: cannot send it to the cluster ({type(exc).__name__}: {exc})"))
                continue
            self.inflight[fut] = (i, slot)
            self.slot_task[slot] = i
            fut.add_done_callback(self.done.put)

    def _finish(self, i: int, res: Any) -> None:
        self.results[i] = res
        if self.on_done is not None:
            self.on_done(i, res)

    def _settle(self, fut: Any, res: Any) -> None:
        i, slot = self.inflight.pop(fut)
        task = self.tasks[i]
        if task.release is not None:
            task.release()
        self.slot_task.pop(slot, None)
        self.free.append(slot)
        if self.status is not None:
            self.status(slot, "")
        self._finish(i, res)

    def _late(self) -> bool:
        """True once every in-flight task is past its deadline by :data:`LATE_GRACE`."""
        now = time.monotonic()
        ends = [self.tasks[i].deadline for i, _ in self.inflight.values()]
        return bool(ends) and all(d is not None and now > d + LATE_GRACE for d in ends)

    def go(self) -> list[Any]:
        if self.ex.interrupted is not None:
            return self.results
        with contextlib.suppress(Exception):
            self.ex.client.subscribe_topic(self.topic, self._on_status)
        try:
            self._loop()
        except KeyboardInterrupt as exc:
            self.ex.interrupted = exc
            self.ex.interrupt()
            self._drain(time.monotonic() + self.ex._left(INTERRUPT_WAIT))
        finally:
            with contextlib.suppress(Exception):
                self.ex.client.unsubscribe_topic(self.topic)
        for fut, (i, _) in list(self.inflight.items()):  # never answered: given up on
            self._settle(fut, self.results[i])
            self.ex.cancel(fut)
        return self.results

    def _loop(self) -> None:
        while self.pending or self.inflight:
            self._fill()
            if not self.inflight:
                continue
            try:
                fut = self.done.get(timeout=0.1)
            except queue.Empty:
                if self.poll is not None:
                    self.poll()
                if self._late():
                    self._give_up("no answer from the cluster within the budget")
                continue
            self._settle(fut, _outcome(fut, self.ex.allowed_failures))

    def _give_up(self, why: str) -> None:
        for fut in list(self.inflight):
            self._settle(fut, WorkerLost(why))
            self.ex.cancel(fut)

    def _drain(self, until: float) -> None:
        """After an interrupt: the tasks in progress come back (interrupted) until ``until``."""
        while self.inflight and time.monotonic() < until:
            try:
                fut = self.done.get(timeout=0.1)
            except queue.Empty:
                continue
            except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
                return
            if fut in self.inflight:
                self._settle(fut, _outcome(fut, self.ex.allowed_failures))


def _one_line(exc: BaseException) -> str:
    """An exception as one line: its first line, else its class name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _probe(address: str, seconds: float, limit: str = "the connect timeout") -> None:
    """Connect to the scheduler at ``address`` (Dask's handshake) and ask for its ``identity`` on a private event
    loop, all within ``seconds``; raises OSError (one line) for anything but a scheduler's answer."""
    import asyncio

    from distributed.comm import connect

    async def ask() -> Any:
        comm = await connect(address, timeout=seconds)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        answer = asyncio.run(asyncio.wait_for(ask(), seconds))
    except TimeoutError:
        raise OSError(f"no answer within {seconds:.1f} s, {limit}") from None
    except Exception as exc:  # garbage, HTTP, a reset: whatever the comms raise (MemoryError included)
        raise OSError(f"not a Dask scheduler ({type(exc).__name__}: {_one_line(exc)})") from None
    if not isinstance(answer, dict):
        raise OSError(f"not a Dask scheduler (it answered a {type(answer).__name__})")
    if answer.get("type") in ("Worker", "Nanny"):
        raise OSError(f"a Dask {answer['type'].lower()}, not the scheduler")


def _close_quietly(client: Any) -> None:
    """Close a client that connected after adprof gave up on it (in the thread that made it)."""
    with contextlib.suppress(Exception):
        client.close(timeout=2)


def _outcome(fut: Any, allowed_failures: int) -> Any:
    """A finished future's result, or what became of it (:class:`WorkerLost`, the task's exception)."""
    from distributed.scheduler import KilledWorker

    try:
        return fut.result(timeout=10)
    except KilledWorker as exc:
        last = getattr(getattr(exc, "last_worker", None), "address", "?")
        return WorkerLost(
            f"worker lost: the Dask worker running it died, {allowed_failures + 1} times (the last: {last})"
        )
    except Exception as exc:  # the task raised (a bug of ours), or the cluster dropped it
        if type(exc).__name__ in ("CancelledError", "FutureCancelledError"):
            return WorkerLost(
                "worker lost: the cluster cancelled the task (the scheduler dropped it: the connection to it, "
                "or something the task needed, was lost)"
            )
        return exc


# ------------------------------------------------------------------------------------------ worker side


def worker_identity() -> str:
    """Run on each Dask worker when connecting: proves adprof imports there; its version."""
    return __version__


@dataclass
class RemoteCall:
    """What a task needs to know about the run, besides its function and data."""

    run_id: str
    topic: str
    index: int
    slot: int
    allowance: float
    remaining: float | None  # seconds left of the run when submitted
    wall_deadline: float | None  # the run's end, time.time()


@dataclass
class _RunOnWorker:
    """One run's state in a Dask worker process: an adprof subprocess per worker thread, copied files."""

    workers: dict[int, Worker] = field(default_factory=dict)
    deadline: float | None = None  # latest deadline seen, time.monotonic()
    active: int = 0
    last_end: float = field(default_factory=time.monotonic)
    temp: str | None = None


_RUNS: dict[str, _RunOnWorker] = {}
_RUNS_LOCK = threading.Lock()
_REAPER: list[threading.Thread] = []


def _reap_forever() -> None:
    while True:
        time.sleep(5.0)
        now = time.monotonic()
        with _RUNS_LOCK:
            stale = [
                rid
                for rid, r in _RUNS.items()
                if r.active == 0 and now > (r.deadline if r.deadline is not None else r.last_end) + REAP_AFTER
            ]
        for rid in stale:
            end_run(rid)


def _enter(call: RemoteCall, deadline: float | None) -> tuple[_RunOnWorker, Worker]:
    with _RUNS_LOCK:
        if not _REAPER:
            _REAPER.append(threading.Thread(target=_reap_forever, name="adprof-reaper", daemon=True))
            _REAPER[0].start()
        run = _RUNS.setdefault(call.run_id, _RunOnWorker())
        run.active += 1
        if deadline is not None:
            run.deadline = max(run.deadline or deadline, deadline)
        me = threading.get_ident()
        worker = run.workers.get(me)
        if worker is None or worker.interrupted:
            if worker is not None:
                worker.kill()  # reap the subprocess the interrupt killed
            worker = run.workers[me] = Worker()
    return run, worker


def _materialize(run: _RunOnWorker, run_id: str, file: str, source: tuple[str, str, bytes]) -> str:
    """Where to load ``file`` from here: its own path (or the absolute one) with the same bytes, else a copy."""
    absolute, digest, data = source
    for candidate in dict.fromkeys((file, absolute)):
        try:
            if hashlib.sha256(Path(candidate).read_bytes()).hexdigest() == digest:
                return candidate
        except OSError:
            continue
    with _RUNS_LOCK:
        if run.temp is None:
            run.temp = procs.temp_dir(f"adprof-{run_id}-")
    target = Path(run.temp) / digest[:16] / Path(file).name
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.{threading.get_ident()}")
        part.write_bytes(data)
        os.replace(part, target)
    return str(target)


def run_remote(call: RemoteCall, fn: Callable[..., Any], args: tuple[Any, ...], sources: dict[str, Any]) -> Any:
    """A task on a Dask worker: its subprocess, its deadline on this clock, its files, its status events."""
    from distributed import get_worker

    dw = get_worker()
    now = time.monotonic()
    deadline = None
    if call.remaining is not None and call.wall_deadline is not None:
        deadline = now + min(call.remaining, call.wall_deadline - time.time())
    run, worker = _enter(call, deadline)
    last = [0.0]

    def say(text: str) -> None:
        t = time.monotonic()
        if t - last[0] >= STATUS_INTERVAL:
            last[0] = t
            with contextlib.suppress(Exception):
                dw.log_event(call.topic, [call.index, call.slot, text])

    try:
        paths = {f: _materialize(run, call.run_id, f, src) for f, src in sources.items()}
        ctx = TaskContext(worker, call.allowance, deadline, say, where=dw.address, paths=paths)
        return fn(ctx, *args)
    finally:
        with _RUNS_LOCK:
            run.active -= 1
            run.last_end = time.monotonic()


def interrupt_run(run_id: str) -> None:
    """On a worker: kill every adprof subprocess of the run now (their requests fail "interrupted")."""
    with _RUNS_LOCK:
        workers = list(_RUNS[run_id].workers.values()) if run_id in _RUNS else []
    for w in workers:
        w.interrupt()


def end_run(run_id: str) -> None:
    """On a worker: close the run's adprof subprocesses (with what they started) and its copied files."""
    with _RUNS_LOCK:
        run = _RUNS.pop(run_id, None)
    if run is None:
        return
    for w in run.workers.values():
        w.interrupt()  # the subprocess is idle (or its task is being given up on): kill, no goodbye
        w.kill()
    if run.temp is not None:
        procs.remove_dir(run.temp)


__all__ = ["DaskExecutor", "SchedulerError", "parse_scheduler"]
