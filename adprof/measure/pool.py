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

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from adprof.measure.budget import Budget
from adprof.measure.client import Worker, WorkerCrashed, WorkerTimeout
from adprof.measure.config import MeasureConfig
from adprof.measure.series import SeriesSpec, budget_stopped, run_series
from adprof.measure.structure_probe import STRUCTURE_DEPTHS
from adprof.model import Series, Stop, StopReason


class LanePool:
    """``jobs`` lanes, each a thread with its own worker; runs callables ``job(worker, lane)``."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.workers = [Worker() for _ in range(self.jobs)]
        self.interrupted: BaseException | None = None  # the interrupt that stopped the run

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


def _structure_job(
    file: str, chain: str, cfg: MeasureConfig, budget: Budget, max_depth: int, status: Callable[[int, str], None]
) -> Callable[[Worker, int], dict[str, Any]]:
    depths = [d for d in STRUCTURE_DEPTHS if d <= max(max_depth, 3)]

    def job(worker: Worker, lane: int) -> dict[str, Any]:
        status(lane, f"{chain}: structure")
        req = {"op": "structure", "file": file, "chain": chain, "depths": depths}
        at: list[int] = []

        def on_event(ev: dict[str, Any]) -> None:
            if ev.get("event") == "depth":
                at.append(int(ev.get("depth", 0)))

        try:
            ans = worker.request(req, cfg.timeout, on_event, budget.deadline)
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

    return job


LaneStatus = Callable[[int, str], None]


def _probe_structures(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    budget: Budget,
    pool: LanePool,
    status: LaneStatus,
    poll: Callable[[], None] | None,
) -> dict[StructureKey, dict[str, Any]]:
    """One structure recording per (file, chain) (its first spec gives the depth)."""
    chains: dict[StructureKey, SeriesSpec] = {}
    for s in specs:
        chains.setdefault((s.file, s.chain), s)
    keys = list(chains)
    jobs = [_structure_job(f, n, cfg, budget, chains[f, n].max_depth, status) for f, n in keys]
    return {
        k: res if isinstance(res, dict) else {"error": f"internal: {res}"}
        for k, res in zip(keys, pool.map(jobs, poll=poll), strict=True)
        if res is not None
    }


def _budget_note(budget: Budget, cfg: MeasureConfig) -> str:
    return (
        f"the budget ran out after {budget.elapsed():.1f} s of {cfg.budget:g} s "
        f"({cfg.budget - budget.seconds:.1f} s kept for classifying and the report)"
    )


def _series_job(
    spec: SeriesSpec,
    cfg: MeasureConfig,
    budget: Budget,
    structure: dict[str, Any],
    status: LaneStatus,
    resume: Series | None = None,
) -> Callable[[Worker, int], Series]:
    """Measure (or, with ``resume``, continue) one series on a lane with its claim on the budget."""

    def job(worker: Worker, lane: int) -> Series:
        # a recording that hung or crashed at its first depth: the points would too (a hang or crash at a
        # deeper depth is measured: the depths before it are kept, and the point that hangs is killed at
        # its own timeout, a runaway)
        first = min(STRUCTURE_DEPTHS)
        blocked = (structure.get("hang") if structure.get("hang_depth") in (None, first) else None) or (
            structure.get("crash") if structure.get("crash_depth") in (None, first) else None
        )
        allowance = budget.claim()
        try:
            if resume is not None:
                if allowance <= 0.5:
                    return resume
            elif blocked:
                return spec.new_series(error=blocked)
            elif allowance <= 0:
                return spec.new_series(stop=Stop(StopReason.NOT_MEASURED, seconds=budget.elapsed(), limit=cfg.budget))
            more = " (more)" if resume is not None else ""

            def say(text: str) -> None:
                status(lane, f"{spec.label}{more} {text}")

            series = run_series(spec, worker, cfg, allowance, budget.deadline, say, resume=resume)
            failure = structure.get("crash") or structure.get("hang")
            if failure and not series.points and not series.error:  # the budget cut it short
                series.error = failure
            return series
        finally:
            budget.release()

    return job


def measure_all(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    status: LaneStatus | None = None,
    on_series: Callable[[Series], None] | None = None,
    poll: Callable[[], None] | None = None,
    on_structures: Callable[[dict[StructureKey, dict[str, Any]]], None] | None = None,
) -> Measured:
    """Structure recordings (one per chain), then every series, on ``cfg.jobs`` lanes within the budget.

    ``structures`` of the result are the raw recordings (:mod:`adprof.measure.structure_probe`), or
    ``{"hang" | "crash" | "error": message}`` for a chain whose recording failed.
    """
    lanes = max(1, min(cfg.jobs, len(specs) or 1))
    budget = Budget(cfg.budget, lanes, cfg.started, cfg.reserve_for(len(specs)))
    pool = LanePool(lanes)

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
        jobs = [_series_job(s, cfg, budget, structures.get((s.file, s.chain), {}), st) for s in specs]
        results = pool.map(jobs, on_done=done, poll=poll)
        # second pass: series stopped by their share continue with what the others left over
        again = [i for i, r in enumerate(results) if isinstance(r, Series) and budget_stopped(r)]
        if again and budget.remaining() > 1.0 and pool.interrupted is None:
            budget.add(len(again))
            jobs = [_series_job(specs[i], cfg, budget, {}, st, resume=results[i]) for i in again]
            for i, res in zip(again, pool.map(jobs, poll=poll), strict=True):
                if isinstance(res, Series):
                    results[i] = res
    except KeyboardInterrupt as exc:  # between two maps
        pool.interrupted = exc
    finally:
        for w in pool.workers if pool.interrupted is not None else ():
            w.interrupt()
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
    # an exception in a job is a bug of ours: keep the run going, report it on the series
    return spec.new_series(error=f"internal error: {type(res).__name__}: {res}")
