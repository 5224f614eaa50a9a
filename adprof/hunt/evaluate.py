"""The search's measurements: a generator written to a chain file, run at the search depths of each of its
targets, in a worker the executor reuses for every task it runs (one warm process per lane: imports and the
engines' one-time set-up are paid once per lane, not once per candidate).

An evaluation is a :class:`~adprof.measure.executor.Task` (a module-level function on plain data), so it runs
on the local lanes or on a Dask cluster like a series of ``adprof check``. Each point is the backend's own
``measure_point`` (the worker's ``point`` request, as ``check`` sends it); a series goes no deeper once a
point's wall time passes the target's point cap, and a point that fails or is killed ends it (the points before
it are kept: a blowup is information, not a waste).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.hunt.gen import ChainOptions, Generator, chain_source
from adprof.hunt.targets import WORK_CAPS, SearchPlan, Target, search_plan
from adprof.measure.client import WorkerCrashed, WorkerTimeout
from adprof.measure.executor import Task, TaskContext
from adprof.measure.series import point_from_dict
from adprof.model import Point
from adprof.prediction import extrapolate
from adprof.util.files import write_atomic

#: The chain name of a candidate in its file.
CANDIDATE_CHAIN = "candidate"
#: The engine's key-comparison budget per search point (the check path's is 50 M): a blowup is seen long
#: before, and a point past it is not worth its seconds.
SEARCH_COUNTER_BUDGET = 5_000_000


@dataclass
class Evaluation:
    """One generator on one target at the search depths: the exact points measured, and why it stopped."""

    target: Target
    points: list[Point] = field(default_factory=list)
    error: str = ""  # the chain failed (at the depth after the last point)
    stopped: str = ""  # why no deeper: "point cap", "timeout", "interrupted"
    seconds: float = 0.0

    @property
    def depths(self) -> list[int]:
        return [p.depth for p in self.points]


def candidate_file(directory: Path, gen: Generator) -> Path:
    """The chain file of ``gen`` in the hunt's work directory (written once, named by the generator's key)."""
    path = directory / f"c_{gen.key}.py"
    if not path.exists():
        write_atomic(str(path), chain_source([(gen, ChainOptions(name=CANDIDATE_CHAIN))]))
    return path


def evaluate_task(ctx: TaskContext, file: str, jobs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run the candidate of ``file`` on each job's target at its plan's depths, in ``ctx.worker`` (runs where the
    worker is). A job: ``{"target": {...}, "plan": {...}}``; a result per job, plain data."""
    local = ctx.local_path(file)
    out: list[dict[str, Any]] = []
    for job in jobs:
        target = Target.from_dict(job["target"])
        plan = SearchPlan(**job["plan"])
        ctx.say(f"{Path(file).stem} on {target.label}")
        res = _run_plan(ctx, local, target, plan)
        out.append(res)
        if res.get("stopped") == "interrupted":
            break
    return out


def _run_plan(ctx: TaskContext, file: str, target: Target, plan: SearchPlan) -> dict[str, Any]:
    points: list[dict[str, Any]] = []
    res: dict[str, Any] = {"target": target.to_dict(), "points": points, "error": "", "stopped": ""}
    t0 = time.monotonic()
    costs: list[tuple[int, float]] = []
    works: dict[str, list[tuple[int, float]]] = {}
    for depth in plan.depths:
        if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
            res["stopped"] = "budget"
            break
        over = [k for k, w in works.items() if predicted_cost(w, depth) > WORK_CAPS[k]]
        if over:
            res["stopped"] = f"predicted {over[0]}"
            break
        if predicted_cost(costs, depth) > plan.point_cap:
            res["stopped"] = "predicted cap"
            break
        req = {
            "op": "point",
            "file": file,
            "chain": CANDIDATE_CHAIN,
            "backend": target.backend,
            "profile": target.profile,
            "mode": target.mode,
            "depth": depth,
            "calls": plan.calls,
            "counter_budget": SEARCH_COUNTER_BUDGET,
            "repeats": 1,  # one timed run per phase: the search reads the deterministic metrics
            **({"memory": True} if plan.memory else {}),  # saved-for-backward bytes: a component of its own
        }
        started = time.monotonic()
        try:
            ans = ctx.worker.request(req, plan.timeout, hard_deadline=ctx.deadline)
        except WorkerTimeout:
            res["stopped"] = "timeout"
            break
        except WorkerCrashed as cr:
            if cr.interrupted:
                res["stopped"] = "interrupted"
            else:
                res["error"] = f"depth {depth}: {cr.message}"
            break
        wall = time.monotonic() - started
        if not ans.get("ok"):
            if ans.get("kind") == "budget":  # the engine's counter budget: a blowup, go no deeper
                res["stopped"] = "counter budget"
            else:
                res["error"] = str(ans.get("error") or "failed")
            break
        point = dict(ans["point"])
        point["wall_seconds"] = wall
        points.append(point)
        cost = sum(float(v) for v in (point.get("times") or {}).values() if v is not None)
        costs.append((depth, cost))
        for name, value in point_work(point).items():
            works.setdefault(name, []).append((depth, value))
        if any(works[k][-1][1] > WORK_CAPS[k] for k in works):
            res["stopped"] = "work cap"
            break
        if cost > plan.point_cap:
            res["stopped"] = "point cap"
            break
    res["seconds"] = time.monotonic() - t0
    return res


def point_work(point: dict[str, Any]) -> dict[str, float]:
    """The deterministic work of a point, per :data:`~adprof.hunt.targets.WORK_CAPS` name: the engine's counters
    summed over its phases, and the largest value of each capped metric over the phases."""
    out: dict[str, float] = {}
    counters = point.get("counters") or {}
    if counters:
        out["counters"] = float(
            sum(float(v or 0) for c in counters.values() if isinstance(c, dict) for v in c.values())
        )
    for metrics in (point.get("metrics") or {}).values():
        for name, value in metrics.items():
            if name in WORK_CAPS and value is not None:
                out[name] = max(out.get(name, 0.0), float(value))
    return out


#: The next point's cost from the last two (see :func:`adprof.prediction.extrapolate`).
predicted_cost = extrapolate


def evaluation_of(result: dict[str, Any]) -> Evaluation:
    """The parent's :class:`Evaluation` of one job's plain result."""
    return Evaluation(
        target=Target.from_dict(result["target"]),
        points=[point_from_dict(p) for p in result.get("points") or []],
        error=str(result.get("error") or ""),
        stopped=str(result.get("stopped") or ""),
        seconds=float(result.get("seconds") or 0.0),
    )


def evaluation_task(
    directory: Path,
    gen: Generator,
    targets: Sequence[Target],
    deadline: float | None,
    plans: dict[Target, SearchPlan] | None = None,
) -> Task:
    """The task that evaluates ``gen`` on ``targets`` (one worker, one after the other)."""
    file = str(candidate_file(directory, gen))
    jobs = [
        {"target": t.to_dict(), "plan": dataclasses.asdict((plans or {}).get(t) or search_plan(t, gen))}
        for t in targets
    ]
    return Task(evaluate_task, (file, jobs), deadline=deadline, files=(file,))


__all__ = [
    "CANDIDATE_CHAIN",
    "Evaluation",
    "candidate_file",
    "evaluate_task",
    "evaluation_of",
    "evaluation_task",
]
