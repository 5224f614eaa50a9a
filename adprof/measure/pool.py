"""A whole run: lanes of workers, the structure probes, then every series within the shared budget.

A series starting with ``n`` series left (itself included) on ``L`` lanes gets ``remaining * L / n``
of the budget (at most ``remaining``); series stopped by their share continue in a second pass
with what the others left over.

An interrupt (KeyboardInterrupt in the main thread: SIGINT, or SIGTERM turned into one by the CLI)
kills every worker's process group at once; the series in progress end "interrupted", the ones not
started are "not measured", and :func:`measure_all` returns what was measured (``Measured.interrupted``).
Structure recordings and series are keyed by (file, chain): chains of one name in two files are apart.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adprof.backends import backend_versions
from adprof.measure.budget import Budget
from adprof.measure.client import Worker, WorkerCrashed, WorkerTimeout, close_handed, take_handed
from adprof.measure.config import MeasureConfig
from adprof.measure.executor import Executor, SlotStatus, Task, TaskContext, WorkerLost, run_task
from adprof.measure.machine import LoadSampler, merged
from adprof.measure.series import SeriesSpec, budget_stopped, run_series
from adprof.measure.structure_probe import STRUCTURE_DEPTHS
from adprof.model import Series, Stop, StopReason


class LanePool:
    """The local executor: ``jobs`` lanes, each a thread with its own worker; runs callables
    ``job(worker, lane)`` (:meth:`map`) or :class:`~adprof.measure.executor.Task` (:meth:`run`)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        handed = take_handed()  # the worker that loaded the targets, kept within client.handing_over()
        self.workers = [handed or Worker()] + [Worker() for _ in range(self.jobs - 1)]
        self.interrupted: BaseException | None = None  # the interrupt that stopped the run

    @property
    def lanes(self) -> int:
        return self.jobs

    def run(
        self,
        tasks: Sequence[Task],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
        status: SlotStatus | None = None,
    ) -> list[Any]:
        """Run tasks on the lanes (claimed, run and released in the lane); see :meth:`map`."""

        def job_of(task: Task) -> Callable[[Worker, int], Any]:
            def job(worker: Worker, lane: int) -> Any:
                def say(text: str) -> None:
                    if status is not None:
                        status(lane, text)

                return run_task(task, TaskContext(worker=worker, deadline=task.deadline, say=say, where=f"lane {lane}"))

            return job

        return self.map([job_of(t) for t in tasks], on_done=on_done, poll=poll)

    def interrupt(self) -> None:
        for w in self.workers:
            w.interrupt()

    def map(
        self,
        jobs: Sequence[Callable[[Worker, int], Any]],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
    ) -> list[Any]:
        """Run all jobs (at most ``self.jobs`` at once); results in job order.

        On an interrupt the workers are killed, the lanes finish their job (it sees the worker die)
        and the results so far are returned (``None`` for jobs never started); ``self.interrupted``
        holds the interrupt."""
        results: list[Any] = [None] * len(jobs)
        if self.interrupted is not None:
            return results
        q: queue.Queue[int] = queue.Queue()
        for i in range(len(jobs)):
            q.put(i)
        done: queue.Queue[tuple[int, Any]] = queue.Queue()
        stop = threading.Event()

        def lane(k: int) -> None:
            while not stop.is_set():
                try:
                    i = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    res = jobs[i](self.workers[k], k)
                except BaseException as exc:  # reported to the caller
                    res = exc
                done.put((i, res))

        threads = [threading.Thread(target=lane, args=(k,), daemon=True) for k in range(min(self.jobs, len(jobs)))]
        for t in threads:
            t.start()
        try:
            _collect(done, results, len(jobs), on_done, poll)
        except KeyboardInterrupt as exc:
            self.interrupted = exc
            stop.set()  # lanes take no new job
            for w in self.workers:
                w.interrupt()
        for t in threads:
            t.join(timeout=10)
        _drain(done, results)  # jobs that ended while we were interrupted
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
        return results

    def close(self) -> None:
        for w in self.workers:
            w.close()


StructureKey = tuple[str, str]  # (file, chain variant)


def _collect(
    done: queue.Queue[tuple[int, Any]],
    results: list[Any],
    remaining: int,
    on_done: Callable[[int, Any], None] | None,
    poll: Callable[[], None] | None,
) -> None:
    while remaining:
        try:
            i, res = done.get(timeout=0.1)
        except queue.Empty:
            if poll is not None:
                poll()
            continue
        results[i] = res
        remaining -= 1
        if on_done is not None:
            on_done(i, res)


def _drain(done: queue.Queue[tuple[int, Any]], results: list[Any]) -> None:
    while True:
        try:
            i, res = done.get_nowait()
        except queue.Empty:
            return
        results[i] = res


@dataclass
class Measured:
    """Output of :func:`measure_all`: series in spec order, structure recordings by (file, chain), notes.

    ``interrupted``: the signal name ("SIGINT", "SIGTERM") when the run was interrupted, else None."""

    series: list[Series]
    structures: dict[StructureKey, dict[str, Any]]
    notes: list[str]
    elapsed: float
    interrupted: str | None = None


def structure_task(ctx: TaskContext, file: str, chain: str, cfg: MeasureConfig, depths: list[int]) -> dict[str, Any]:
    """Record one chain's structure in ``ctx.worker`` (runs where the worker is)."""
    ctx.say(f"{chain}: structure")
    req = {"op": "structure", "file": ctx.local_path(file), "chain": chain, "depths": depths}
    at: list[int] = []

    def on_event(ev: dict[str, Any]) -> None:
        if ev.get("event") == "depth":
            at.append(int(ev.get("depth", 0)))

    try:
        ans = ctx.worker.request(req, cfg.timeout, on_event, ctx.deadline)
    except WorkerTimeout as to:
        where = f" at depth {at[-1]}" if at else ""
        why = "the budget ran out" if to.by_deadline else "killed"
        return {
            "hang": f"recording the chain{where} did not finish within {to.elapsed:.1f} s ({why}): "
            "the chain hangs or is far too slow",
            "hang_depth": at[-1] if at else None,
        }
    except WorkerCrashed as cr:
        if cr.interrupted:
            return {"interrupted": True}
        where = f" at depth {at[-1]}" if at else ""
        return {"crash": f"recording the chain{where}: {cr.message}", "crash_depth": at[-1] if at else None}
    if not ans.get("ok"):
        return {"error": ans.get("error") or "structure analysis failed"}
    return dict(ans["structure"])


def _structure_job(file: str, chain: str, cfg: MeasureConfig, budget: Budget, max_depth: int) -> Task:
    depths = [d for d in STRUCTURE_DEPTHS if d <= max(max_depth, 3)]
    return Task(structure_task, (file, chain, _portable(cfg), depths), deadline=budget.deadline, files=(file,))


def _portable(cfg: MeasureConfig) -> MeasureConfig:
    """``cfg`` without the steering process's clock (a task gets its deadline in its context)."""
    return dataclasses.replace(cfg, started=None)


LaneStatus = Callable[[int, str], None]


def _probe_structures(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    budget: Budget,
    pool: Executor,
    status: LaneStatus,
    poll: Callable[[], None] | None,
) -> dict[StructureKey, dict[str, Any]]:
    """One structure recording per (file, chain) that runs on the engine (its first spec gives the depth)."""
    chains: dict[StructureKey, SeriesSpec] = {}
    for s in specs:
        if s.on_engine:
            chains.setdefault((s.file, s.chain), s)
    keys = list(chains)
    tasks = [_structure_job(f, n, cfg, budget, chains[f, n].max_depth) for f, n in keys]
    return {
        k: res if isinstance(res, dict) else {"error": str(res) if isinstance(res, WorkerLost) else f"internal: {res}"}
        for k, res in zip(keys, pool.run(tasks, poll=poll, status=status), strict=True)
        if res is not None
    }


def _budget_note(budget: Budget, cfg: MeasureConfig) -> str:
    return (
        f"the budget ran out after {budget.elapsed():.1f} s of {cfg.budget:g} s "
        f"({cfg.budget - budget.seconds:.1f} s kept for classifying and the report)"
    )


def series_task(
    ctx: TaskContext, spec: SeriesSpec, cfg: MeasureConfig, structure: dict[str, Any], resume: Series | None
) -> Series:
    """Measure (or, with ``resume``, continue) one series in ``ctx.worker``, noting the machine and its
    load (runs where the worker is)."""
    more = " (more)" if resume is not None else ""

    def say(text: str) -> None:
        ctx.say(f"{spec.label}{more} {text}")

    local = spec.file if spec.cmd is not None else ctx.local_path(spec.file)
    run_spec = spec if local == spec.file else dataclasses.replace(spec, file=local)
    before = resume.machine if resume is not None else None
    with LoadSampler() as load:
        series = run_series(run_spec, ctx.worker, cfg, ctx.allowance, ctx.deadline, say, resume=resume)
    series.machine = merged(before, load.machine(ctx.where))
    series.versions = backend_versions("cmd" if spec.cmd is not None else spec.backend)  # read where it ran
    if local != spec.file:  # materialized from the sent source: the report names the file as given
        series.file = spec.file
        series.error = series.error.replace(local, spec.file) if series.error else series.error
    failure = structure.get("crash") or structure.get("hang")
    if failure and not series.points and not series.error:  # the budget cut it short
        series.error = failure
    return series


def _series_job(
    spec: SeriesSpec,
    cfg: MeasureConfig,
    budget: Budget,
    structure: dict[str, Any],
    resume: Series | None = None,
) -> Task:
    """One series (or, with ``resume``, its continuation) with its claim on the budget."""
    # a recording that hung or crashed at its first depth: the points would too (a hang or crash at a
    # deeper depth is measured: the depths before it are kept, and the point that hangs is killed at its
    # own timeout, a runaway)
    first = min(STRUCTURE_DEPTHS)
    blocked = (structure.get("hang") if structure.get("hang_depth") in (None, first) else None) or (
        structure.get("crash") if structure.get("crash_depth") in (None, first) else None
    )

    def shortcut(allowance: float) -> Series | None:
        if resume is not None:
            return resume if allowance <= 0.5 else None
        if blocked:
            return spec.new_series(error=blocked)
        if allowance <= 0:
            return spec.new_series(stop=Stop(StopReason.NOT_MEASURED, seconds=budget.elapsed(), limit=cfg.budget))
        return None

    kept = {k: v for k, v in structure.items() if k in ("crash", "hang")}  # all the task reads of the recording
    return Task(
        series_task,
        (spec, _portable(cfg), kept, resume),
        deadline=budget.deadline,
        claim=budget.claim,
        shortcut=shortcut,
        release=budget.release,
        files=() if spec.cmd is not None else (spec.file,),
        affinity=resume.machine.worker if resume is not None and resume.machine is not None else None,
    )


def _second_pass(
    specs: Sequence[SeriesSpec],
    results: list[Any],
    cfg: MeasureConfig,
    budget: Budget,
    pool: Executor,
    status: LaneStatus,
    poll: Callable[[], None] | None,
) -> None:
    """Series stopped by their share continue with what the others left over (``results`` updated)."""
    again = [i for i, r in enumerate(results) if isinstance(r, Series) and budget_stopped(r)]
    if again and budget.remaining() > 1.0 and pool.interrupted is None:
        budget.add(len(again))
        tasks = [_series_job(specs[i], cfg, budget, {}, resume=results[i]) for i in again]
        for i, res in zip(again, pool.run(tasks, poll=poll, status=status), strict=True):
            if isinstance(res, Series):
                results[i] = res


def measure_all(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    status: LaneStatus | None = None,
    on_series: Callable[[Series], None] | None = None,
    poll: Callable[[], None] | None = None,
    on_structures: Callable[[dict[StructureKey, dict[str, Any]]], None] | None = None,
    executor: Executor | None = None,
) -> Measured:
    """Structure recordings (one per chain), then every series, within the budget: on ``cfg.jobs`` local
    lanes, or on ``executor`` (its ``lanes`` at once; the caller closes it).

    ``structures`` of the result are the raw recordings (:mod:`adprof.measure.structure_probe`), or
    ``{"hang" | "crash" | "error": message}`` for a chain whose recording failed.
    """
    lanes = max(1, min(cfg.jobs if executor is None else executor.lanes, len(specs) or 1))
    budget = Budget(cfg.budget, lanes, cfg.started, cfg.reserve_for(len(specs)))
    if executor is not None:
        close_handed()  # the targets' loading worker: a cluster measures this run
    pool: Executor = LanePool(lanes) if executor is None else executor

    def st(lane: int, text: str) -> None:
        if status is not None:
            status(lane, text)

    def done(i: int, res: Any) -> None:
        if on_series is not None and isinstance(res, Series):
            on_series(res)

    results: list[Any] = [None] * len(specs)
    structures: dict[StructureKey, dict[str, Any]] = {}
    try:
        if cfg.structure and specs:
            structures = _probe_structures(specs, cfg, budget, pool, st, poll)
            if on_structures is not None and pool.interrupted is None:
                on_structures(structures)
        budget.add(len(specs))
        tasks = [_series_job(s, cfg, budget, structures.get((s.file, s.chain), {})) for s in specs]
        results = pool.run(tasks, on_done=done, poll=poll, status=st)
        _second_pass(specs, results, cfg, budget, pool, st, poll)
    except KeyboardInterrupt as exc:  # between two runs
        pool.interrupted = exc
    finally:
        if pool.interrupted is not None:
            pool.interrupt()
        if executor is None:
            pool.close()
    interrupted = None
    if pool.interrupted is not None:
        interrupted = getattr(pool.interrupted, "signal_name", None) or "SIGINT"
    series = [_final_series(spec, res, interrupted) for spec, res in zip(specs, results, strict=True)]
    notes: list[str] = []
    unmeasured = [s for s in series if not s.points and not s.error]
    if unmeasured and interrupted is None:
        notes.append(f"{len(unmeasured)} series not measured: {_budget_note(budget, cfg)}")
    elif interrupted is not None:
        notes.append(f"interrupted by {interrupted} after {budget.elapsed():.1f} s: partial report")
    return Measured(
        series=series, structures=structures, notes=notes, elapsed=budget.elapsed(), interrupted=interrupted
    )


def _final_series(spec: SeriesSpec, res: Any, interrupted: str | None) -> Series:
    if isinstance(res, Series):
        return res
    if res is None:  # never started (interrupted)
        return spec.new_series(stop=Stop(StopReason.NOT_MEASURED, interrupt=interrupted or "SIGINT"))
    if isinstance(res, WorkerLost):  # the machine measuring it went away
        return spec.new_series(error=str(res))
    # an exception in a job is a bug of ours: keep the run going, report it on the series
    return spec.new_series(error=f"internal error: {type(res).__name__}: {res}")
