"""A whole run: lanes of workers, the structure probes, then every series within the shared budget.

A series starting with ``n`` series left (itself included) on ``L`` lanes gets ``remaining * L / n``
of the budget (at most ``remaining``); series stopped by their share continue in a second pass
with what the others left over.
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
from adprof.model import Series


class LanePool:
    """``jobs`` lanes, each a thread with its own worker; runs callables ``job(worker, lane)``."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.workers = [Worker() for _ in range(self.jobs)]

    def map(
        self,
        jobs: Sequence[Callable[[Worker, int], Any]],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
    ) -> list[Any]:
        """Run all jobs (at most ``self.jobs`` at once); results in job order."""
        results: list[Any] = [None] * len(jobs)
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
        remaining = len(jobs)
        try:
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
        except BaseException:
            stop.set()  # interrupted: lanes take no new job; the caller closes the workers
            raise
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
        return results

    def close(self) -> None:
        for w in self.workers:
            w.close()


@dataclass
class Measured:
    """Output of :func:`measure_all`: series in spec order, structures by chain name, notes."""

    series: list[Series]
    structures: dict[str, dict[str, Any]]
    notes: list[str]
    elapsed: float


def _structure_job(
    file: str, chain: str, cfg: MeasureConfig, budget: Budget, max_depth: int, status: Callable[[int, str], None]
) -> Callable[[Worker, int], dict[str, Any]]:
    depths = [d for d in STRUCTURE_DEPTHS if d <= max(max_depth, 3)]

    def job(worker: Worker, lane: int) -> dict[str, Any]:
        status(lane, f"{chain}: structure")
        req = {"op": "structure", "file": file, "chain": chain, "depths": depths}
        try:
            ans = worker.request(req, cfg.timeout, None, budget.deadline + cfg.timeout)
        except WorkerTimeout as to:
            return {
                "hang": f"recording the chain did not finish within {to.limit:.1f} s (killed): "
                "the chain hangs or is far too slow"
            }
        except WorkerCrashed as cr:
            return {"crash": f"recording the chain: {cr.message}"}
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
) -> dict[str, dict[str, Any]]:
    """One structure recording per chain (the first spec of each chain gives its file and depth)."""
    chains: dict[str, SeriesSpec] = {}
    for s in specs:
        chains.setdefault(s.chain, s)
    names = list(chains)
    jobs = [_structure_job(chains[n].file, n, cfg, budget, chains[n].max_depth, status) for n in names]
    return {
        n: res if isinstance(res, dict) else {"error": f"internal: {res}"}
        for n, res in zip(names, pool.map(jobs, poll=poll), strict=True)
    }


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
        blocked = structure.get("hang") or structure.get("crash")
        allowance = budget.claim()
        try:
            if resume is not None:
                if allowance <= 0.5:
                    return resume
            elif blocked:  # recording the chain hung or crashed its worker: the points would too
                return spec.new_series(error=blocked)
            elif allowance <= 0:
                return spec.new_series(stopped=f"not measured: the {cfg.budget:g} s budget was used up")
            more = " (more)" if resume is not None else ""

            def say(text: str) -> None:
                status(lane, f"{spec.label}{more} {text}")

            return run_series(spec, worker, cfg, allowance, budget.deadline, say, resume=resume)
        finally:
            budget.release()

    return job


def measure_all(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    status: LaneStatus | None = None,
    on_series: Callable[[Series], None] | None = None,
    poll: Callable[[], None] | None = None,
    on_structures: Callable[[dict[str, dict[str, Any]]], None] | None = None,
) -> Measured:
    """Structure recordings (one per chain), then every series, on ``cfg.jobs`` lanes within the budget.

    ``structures`` of the result are the raw recordings (:mod:`adprof.measure.structure_probe`), or
    ``{"hang" | "crash" | "error": message}`` for a chain whose recording failed.
    """
    lanes = max(1, min(cfg.jobs, len(specs) or 1))
    reserve = cfg.reserve if cfg.reserve is not None else 0.5 + 0.03 * len(specs)
    budget = Budget(cfg.budget, lanes, cfg.started, reserve)
    pool = LanePool(lanes)

    def st(lane: int, text: str) -> None:
        if status is not None:
            status(lane, text)

    def done(i: int, res: Any) -> None:
        if on_series is not None and isinstance(res, Series):
            on_series(res)

    try:
        structures: dict[str, dict[str, Any]] = {}
        if cfg.structure and specs:
            structures = _probe_structures(specs, cfg, budget, pool, st, poll)
            if on_structures is not None:
                on_structures(structures)
        budget.add(len(specs))
        jobs = [_series_job(s, cfg, budget, structures.get(s.chain, {}), st) for s in specs]
        results = pool.map(jobs, on_done=done, poll=poll)
        # second pass: series stopped by their share continue with what the others left over
        again = [i for i, r in enumerate(results) if isinstance(r, Series) and budget_stopped(r)]
        if again and budget.remaining() > 1.0:
            budget.add(len(again))
            jobs = [_series_job(specs[i], cfg, budget, {}, st, resume=results[i]) for i in again]
            for i, res in zip(again, pool.map(jobs, poll=poll), strict=True):
                if isinstance(res, Series):
                    results[i] = res
    finally:
        pool.close()
    # an exception in a job is a bug of ours: keep the run going, report it on the series
    series = [
        res if isinstance(res, Series) else spec.new_series(error=f"internal error: {type(res).__name__}: {res}")
        for spec, res in zip(specs, results, strict=True)
    ]
    notes: list[str] = []
    unmeasured = [s for s in series if not s.points and not s.error]
    if unmeasured:
        notes.append(f"{len(unmeasured)} series not measured: the {cfg.budget:g} s budget was used up")
    return Measured(series=series, structures=structures, notes=notes, elapsed=budget.elapsed())
