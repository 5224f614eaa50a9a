"""Where a run's work executes: the interface both executors implement, and the unit of work.

A run is a list of :class:`Task`: a structure recording or one whole series. A task's ``run`` is a
module-level function taking a :class:`TaskContext` and plain data, so it can travel to another
machine; its ``claim``/``shortcut``/``release`` stay where the run is steered (they touch the shared
budget). Two executors:

* :class:`~adprof.measure.pool.LanePool` (the default): lanes of threads on this machine, each with
  its own worker subprocess;
* :class:`~adprof.measure.dask_executor.DaskExecutor`: a ``dask.distributed`` cluster; each Dask
  worker runs a task whole, in its own worker subprocess (same timeouts, process group and orphan
  guard as a lane).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from adprof.measure.client import Worker

#: ``status(slot, text)``: what the executor's slot (a lane, a task in flight) is doing now.
SlotStatus = Callable[[int, str], None]


@dataclass
class TaskContext:
    """What a task gets where it runs: its worker subprocess, its claim on the budget, its deadline
    (``time.monotonic()`` of *this* machine) and where to say what it is doing."""

    worker: Worker
    allowance: float = math.inf  # seconds of the budget this task may use
    deadline: float | None = None  # the run's end, on this machine's clock
    say: Callable[[str], None] = field(default=lambda text: None, repr=False)
    where: str = ""  # the executor's name for the worker ("lane 0", a Dask worker's address)
    paths: dict[str, str] = field(default_factory=dict)  # chain file as given -> its path on this machine

    def local_path(self, file: str) -> str:
        """The path to load the chain ``file`` from on this machine (itself unless it was materialized)."""
        return self.paths.get(file, file)


@dataclass
class Task:
    """One unit of a run: ``run(ctx, *args)`` on a worker; the rest where the run is steered.

    ``claim()`` is called just before the task starts (its allowance: a series' share of the budget),
    ``shortcut(allowance)`` may answer without running it (a series not measured because the budget is
    gone), ``release()`` once it is over. ``files``: chain files ``run`` loads (sent along when the worker
    is on another machine). ``affinity``: the worker that should run it (a resumed series stays on the
    machine that measured its first points), by :attr:`TaskContext.where`."""

    run: Callable[..., Any]
    args: tuple[Any, ...] = ()
    deadline: float | None = None  # time.monotonic() of the steering process
    claim: Callable[[], float] | None = None
    shortcut: Callable[[float], Any] | None = None
    release: Callable[[], None] | None = None
    files: tuple[str, ...] = ()
    affinity: str | None = None


class Executor(Protocol):
    """Runs tasks, at most ``lanes`` at once; what :func:`~adprof.measure.pool.measure_all` needs."""

    #: Tasks run at once (a series' share of the budget divides by it).
    lanes: int
    #: The interrupt (KeyboardInterrupt) that stopped the run, or None.
    interrupted: BaseException | None

    def run(
        self,
        tasks: Sequence[Task],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
        status: SlotStatus | None = None,
    ) -> list[Any]:
        """Results in task order, each passed to ``on_done(index, result)`` as it arrives; a task that
        raised gives its exception, one never started ``None`` (after an interrupt)."""
        ...

    def interrupt(self) -> None:
        """Kill the work in progress now (from the steering thread, between two ``run`` calls)."""
        ...

    def close(self) -> None:
        """Stop every worker this executor started."""
        ...


class WorkerLost(Exception):
    """The machine running a task went away (every retry) or the cluster dropped it: its result is lost.
    The message is the series' error ("worker lost: ...")."""


def run_task(task: Task, ctx: TaskContext) -> Any:
    """``task`` claimed, shortcut or run in ``ctx``, released: how a lane runs a task."""
    allowance = task.claim() if task.claim is not None else math.inf
    try:
        if task.shortcut is not None and (res := task.shortcut(allowance)) is not None:
            return res
        ctx.allowance = allowance
        return task.run(ctx, *task.args)
    finally:
        if task.release is not None:
            task.release()


__all__ = ["Executor", "SlotStatus", "Task", "TaskContext", "WorkerLost", "run_task"]
