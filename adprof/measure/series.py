"""One series measured point by point in a worker: the stop rules and the censored points.

A series stops when a phase exceeds the cap, when the next point is predicted to exceed it
(:func:`~adprof.measure.schedule.predict_next`), when its share of the budget is used, or at a
failure. ``Series.stop`` (a :class:`~adprof.model.Stop`) says which and where; its ``text()`` is the
sentence, e.g. "stopped after depth 25: transform 1.62 s > 1.5 s cap".
A point killed by the timeout or stopped by the counter budget is kept as a censored lower bound
(``Point.status``). A point killed at its *own* timeout (not by the budget's end) also stops the series
for good, with status ``killed`` and a ``TIMEOUT`` stop: a hang is a finding, never a healthy series cut
short. A point cut off by an interrupt ends the series with an ``error`` naming the signal.

A series that time decides (no counters, no deciding metric at its first point; no explicit depths) follows
:class:`~adprof.measure.time_schedule.TimeSchedule` instead: it stops deepening on a measured point over the
cap or on the prediction of a model that fits, never on an extrapolation; a point killed at its timeout
is bisected below (at most :data:`~adprof.measure.time_schedule.MAX_KILLS` kills), and sweeps repeat the
depths until the decision settles or the budget is spent. The budget charges every point the larger of its
wall time and the seconds it reports (a program may report costs it did not spend here).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from adprof.backends import backend_info, memory_asked, memory_notes, series_fields
from adprof.constants import DEFAULT_CALLS, NOMINAL_CLOCK
from adprof.measure import bounds
from adprof.measure.client import Worker, WorkerCrashed, WorkerTimeout
from adprof.measure.cmd_points import CommandPoints, CommandSettings
from adprof.measure.config import MeasureConfig
from adprof.measure.schedule import UNIT_UNTIL, Schedule, geometric_depths, over_cap, point_cost, predict_next
from adprof.measure.time_schedule import (
    AXIS_DEEPEST,
    DEEPEST,
    MAX_KILLS,
    MAX_PASSES,
    MAX_POINTS,
    MIN_PASSES,
    REPEAT,
    SWEEP,
    TIME_DEPTH,
    Deepening,
    Frontier,
    Step,
    TimeSchedule,
    open_reading,
    point_seconds,
    settled,
    time_decided,
)
from adprof.model import (
    RUNAWAY_FACTOR,
    WARMUP_PHASE,
    CensorReason,
    Fit,
    Point,
    PointStatus,
    ScheduleEnd,
    Series,
    Stop,
    StopReason,
    classified_phases,
    series_label,
    time_value,
)
from adprof.prediction import law_factor
from adprof.words import fit_figure

MIN_CALLS = 3
#: Rounds of re-measuring the depths that jumped, at the end of a series (a burst of load over several points
#: shows as a jump at each of them in turn).
CONFIRM_ROUNDS = 3
CONFIRM_PAUSE = 0.25  # seconds before each re-run (load comes in bursts of tens to hundreds of ms)
CONFIRM_RUNS = 3  # re-runs of a depth per round when it is cheap (under CONFIRM_CHEAP seconds) and still jumps
CONFIRM_CHEAP = 1.0
#: How the times of a counted series (a chain under --metric instructions) are taken.
COUNTED_FIELDS = {"statistic": "one counted run per phase after a warm-up (callgrind)", "clock": NOMINAL_CLOCK}
PREDICT_MARGIN = 1.2  # a point predicted within 20 % of the cap is not run (timing noise)
REFIT_AFTER = 3  # time schedule: new depths (not deeper than the deepest) before the quick fit is redone
#: Time schedule: an open decision goes deeper, then gets up to MAX_OPEN_PASSES passes, while more than this share
#: of the series' budget is left.
OPEN_SHARE = 0.5
#: ... and deeper still, with less left, while this many points of the next doubling fit in what is left: under
#: a heavy overhead a point costs about the same at any depth, and the deepest depths tell the most
DEEPER_POINTS = 8
MAX_OPEN_PASSES = 12
ESTIMATE_MARGIN = 1.5  # time schedule: a point's budget estimate over its expected cost (a burst of load)


@dataclass
class SeriesSpec:
    """What to measure: one chain variant on one backend, profile and mode."""

    file: str
    chain: str
    backend: str
    profile: str | None
    mode: str
    max_depth: int
    declared_reuse: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    depths: tuple[int, ...] | None = None  # this series' explicit depths (guards), else cfg.depths
    cmd: CommandSettings | None = None  # a --cmd series: points run the program (measure/cmd_points.py)
    deciding_metrics: tuple[str, ...] = ()  # Series.deciding_metrics of the measured series
    #: (lo, hi) of a backend measured on time only (no counters): time-decided series are scheduled over it
    #: by :class:`~adprof.measure.time_schedule.TimeSchedule`; series a deterministic metric decides get the
    #: geometric depths of that range (2^(1/3) steps). None: 1..max_depth, adaptive.
    time_range: tuple[int, int] | None = None
    #: "instructions": counted under valgrind (--cmd: callgrind runs after a native run; a chain: one
    #: valgrind'd worker for the series), and they alone decide (Series.required_metric)
    metric: str = "time"
    axis: str = "layer"  # what a depth counts (the chain's axis)
    cap: float | None = None  # the chain's own per-phase cap (used when --cap is not given)
    cost_phases: tuple[str, ...] = ()  # the chain's classified phases (empty: the mode's)
    repeats: int | None = None  # the chain's exact repeats per timed phase (None: the repeat policy)
    #: Depths the series must measure, each one (a guard's fixed depths: Series.planned_depths).
    required_depths: tuple[int, ...] = ()
    #: Where time decides, the schedule may go deeper than the range's top (neither the chain nor --max-depth
    #: gave one): the top is where it starts, at least :data:`TIME_DEPTH`, and a safety, not a stop.
    deepen: bool = False
    #: The chain runs on adprof's engine (declared for no backend, or for ``engine`` among others): its structure
    #: is recorded there before timing. A chain declared for JAX or torch only is not run on the engine.
    on_engine: bool = True

    @property
    def phases(self) -> tuple[str, ...]:
        """The phases whose cost is classified and watched by the schedule."""
        return self.cost_phases or backend_info(self.backend, self.mode).cost_phases

    @property
    def label(self) -> str:
        return series_label(self.chain, self.backend, self.profile, self.mode, self.params)

    def new_series(self, **fields: Any) -> Series:
        """An empty :class:`Series` of this spec (``fields``: e.g. ``error`` or ``stopped``)."""
        return Series(
            file=self.file,
            chain=self.chain,
            backend=self.backend,
            profile=self.profile,
            mode=self.mode,
            declared_reuse=self.declared_reuse,
            params=dict(self.params),
            axis=self.axis,
            classified_phases=list(self.cost_phases),
            planned_depths=list(self.required_depths),
            backend_info=backend_info(self.backend, self.mode),
            **{
                **series_fields(self.backend, self.mode),
                **({"deciding_metrics": list(self.deciding_metrics)} if self.deciding_metrics else {}),
                **({"required_metric": self.metric} if self.metric != "time" else {}),
                **(COUNTED_FIELDS if self.metric == "instructions" and self.cmd is None else {}),
                **fields,
            },
        )


StatusCallback = Callable[[str], None]


def _censored_point(
    depth: int,
    phase: str | None,
    seconds: float,
    reason: CensorReason,
    partial: dict[str, Any] | None = None,
    status: PointStatus = PointStatus.CENSORED,
) -> Point:
    """A lower bound: the point (or its partial measurement) with ``phase`` at least ``seconds``."""
    pt = point_from_dict(partial) if partial else Point(depth=depth)
    if phase:
        pt.times[phase] = max(seconds, pt.times.get(phase, 0.0))
    pt.status, pt.censor_reason, pt.censored_phase = status, reason, phase
    return pt


def budget_stopped(series: Series) -> bool:
    """True if the series stopped only because its share of the budget ran out."""
    return series.stop is not None and not series.error and series.stop.reason is StopReason.BUDGET_SHARE


def fastest_per_phase(runs: Sequence[Point]) -> Point:
    """Runs of one point as one: the fastest run, with each phase's time (and its repeats) taken from the run where
    that phase was fastest. Interference only slows a run, in whichever phase it lands: a jump is confirmed only
    where every run shows it (three runs each preempted in a different sub-millisecond phase are no jump)."""
    kept = copy.deepcopy(min(runs, key=lambda p: time_value(p, list(p.times)) or math.inf))
    for phase in kept.times:
        timed = [r for r in runs if r.times.get(phase) is not None]
        best = min(timed, key=lambda r: r.times[phase])
        kept.times[phase] = best.times[phase]
        if phase in best.samples:
            kept.samples[phase] = list(best.samples[phase])
        if phase in best.cpu_samples:  # the CPU time of the same runs
            kept.cpu_samples[phase] = list(best.cpu_samples[phase])
    for phase in kept.cpu_times:  # the CPU time too, where the backend read it
        kept.cpu_times[phase] = min(r.cpu_times[phase] for r in runs if phase in r.cpu_times)
    walls = [r.wall_seconds for r in runs if r.wall_seconds is not None]
    kept.wall_seconds = min(walls) if walls else kept.wall_seconds
    return kept


def compiles_per_shape(pt: Point) -> bool:
    """The point compiled at its depth's shapes (:attr:`Point.warmup`), and that compile cost more than the point's
    own phases: every new depth will pay one, so the series spends its budget on fewer, wider-spaced depths."""
    own = sum(t for t in pt.times.values() if t is not None)
    return bool(pt.warmup.get("compiles")) and float(pt.warmup.get("seconds") or 0.0) > own


def doublings(depths: Sequence[int], first: int) -> list[int]:
    """``depths`` thinned to doublings from ``first`` (each kept depth at least twice the previous), the deepest
    kept: a power-law fit wants the span, not the density."""
    out = [first]
    rest = sorted(d for d in depths if d > first)
    for d in rest:
        if d >= 2 * out[-1]:
            out.append(d)
    if rest and out[-1] != rest[-1]:
        out.append(rest[-1])
    return out


#: Fewest depths a series thinned for its compiles per shape keeps past its first (an exact metric reads its law
#: from two ratios of marginal costs: four depths).
MIN_SHAPES = 3


def shapes_within(depths: Sequence[int], first: int, count: int) -> list[int]:
    """``depths`` thinned to doublings from ``first`` (:func:`doublings`), and to at most ``count`` of them (never
    under :data:`MIN_SHAPES`) where the budget cannot afford every doubling's compile: spread geometrically from
    ``first`` to the deepest over the planned depths, the deepest always kept (the span is what a fit reads; every new
    shape compiles)."""
    dbl = doublings(depths, first)
    count = max(MIN_SHAPES, count)
    if len(dbl) <= count:
        return dbl
    top = dbl[-1]
    planned = sorted({first, *(d for d in depths if first < d <= top)})
    out: list[int] = []
    for k in range(count):
        target = first * (top / first) ** (k / (count - 1))
        near = min(planned, key=lambda d: abs(math.log(d / target)))
        if near not in out:
            out.append(near)
    return sorted(out)


def warmup_seconds(pt: Point) -> float:
    """The seconds of a point's warm-up per shape (:attr:`Point.warmup`: a compile at each new depth), 0 without."""
    return float(pt.warmup.get("seconds") or 0.0) if pt.warmup.get("compiles") else 0.0


def without_warmup(pt: Point, wall: float) -> float:
    """A point's wall seconds without its warm-ups (:attr:`Point.warmup`): what the schedule extrapolates and the
    series is charged for is the point's own cost, never a one-time warm-up or a compile per shape."""
    warm = sum(float(pt.warmup.get(k) or 0.0) for k in ("once", "seconds"))
    return max(0.0, wall - warm)


def point_from_dict(d: dict[str, Any]) -> Point:
    names = {f.name for f in dataclasses.fields(Point)}
    return Point(**{k: v for k, v in d.items() if k in names})


class _SeriesRun:
    """One series being measured: the stop rules before a point, the point request, its outcome."""

    def __init__(
        self,
        spec: SeriesSpec,
        worker: Worker,
        cfg: MeasureConfig,
        allowance: float,
        hard_deadline: float | None,
        status: StatusCallback | None,
        series: Series,
    ) -> None:
        if spec.cap is not None and not cfg.cap_given:  # the chain's own cap (compiles of seconds per point)
            cfg = dataclasses.replace(cfg, cap=spec.cap)
        self.spec, self.worker, self.cfg, self.series = spec, worker, cfg, series
        self.allowance, self.hard_deadline, self.status = allowance, hard_deadline, status
        self.start = time.monotonic()
        self.walls: list[float] = [p.wall_seconds for p in series.points if p.wall_seconds is not None]
        #: Seconds the points reported beyond their wall time (a program that reports its costs rather than
        #: spending them, as the accuracy benchmark's): the budget charges a point the larger of the two.
        self.unspent = sum(self._unspent(p) for p in series.points)
        self.calls = cfg.calls
        self.post_seconds = 0.0  # kept for classifying this series after it (the time schedule measures it)
        self.requests: dict[int, dict[str, Any]] = {}  # the point request of each measured depth (to re-measure)
        #: Memory measured (--memory, else the backend's default; never under --metric instructions).
        self.memory = memory_asked(spec.backend, cfg.memory) and spec.metric == "time"
        if not series.points:  # a new series (a resumed one keeps its notes)
            series.memory_notes = memory_notes(spec.backend, spec.mode, self.memory)

    def say(self, text: str) -> None:
        if self.status is not None:
            self.status(text)

    def _unspent(self, p: Point) -> float:
        if p.wall_seconds is None or p.censored:
            return 0.0
        return max(0.0, point_cost(p.times, self.spec.mode, p.calls or self.cfg.calls) - p.wall_seconds)

    def left(self) -> float:
        """Seconds left of this series' share, charging each point the larger of its wall time and its cost
        (less what the verdict's fit will take, when the time schedule has measured that)."""
        return self.allowance - (time.monotonic() - self.start) - self.unspent - self.post_seconds

    def room(self) -> float | None:
        """About how many more points this series' share has room for: what is left over the charged cost of
        the recent points (their median); None before any point."""
        charged = [
            max(p.wall_seconds or 0.0, point_seconds(p, self.spec.mode, self.spec.phases) or 0.0)
            for p in self.series.points
        ]
        recent = sorted(charged[-8:])
        per_point = recent[len(recent) // 2] if recent else 0.0
        return self.left() / per_point if per_point > 0 else None

    def deadline_passed(self) -> bool:
        return self.hard_deadline is not None and time.monotonic() + self.unspent >= self.hard_deadline

    def budget_stop(self, step: Step, top: int) -> Stop | None:
        """Why the time schedule's next point is not run (the budget), else None."""
        if self.deadline_passed():
            return Stop(StopReason.BUDGET, after=top)
        left = self.left()
        if left <= 0:
            return Stop(StopReason.BUDGET_SHARE, after=top, limit=self.allowance)
        est = self._charged_estimate(step)
        measured = {p.depth for p in self.series.points if not p.censored and p.wall_seconds is not None}
        if len(measured) < 2:  # a prediction never comes from one point: what it took is all that is known
            est = min(est, max(p.wall_seconds or 0.0 for p in self.series.points) if self.series.points else 0.0)
        if est > left:
            return Stop(StopReason.BUDGET_SHARE, after=top, depth=step.depth, seconds=est, limit=left)
        return None

    def _charged_estimate(self, step: Step) -> float:
        """Seconds the budget will be charged for ``step``: the slowest measured point of the nearest depth,
        scaled by the step's expected cost, with a margin for the noise (a run may be slower than any so far)."""
        mode = self.spec.mode
        best: tuple[float, float, float, float] | None = None  # (distance, -cost, overhead, cost / seconds)
        for p in self.series.points:
            secs = point_seconds(p, mode, self.spec.phases)
            if p.wall_seconds is None or not secs or p.censored:
                continue
            cost = point_cost(p.times, mode, p.calls or self.calls)
            key = (abs(math.log(step.depth / max(p.depth, 1))), -cost)
            if best is None or key < best[:2]:
                best = (*key, max(0.0, p.wall_seconds - cost), cost / secs)
        if best is None:
            return 0.0
        dist, neg_cost, overhead, per_second = best
        expected = step.expected if step.expected is not None else None
        if dist == 0.0 or expected is None:  # measured here before (a sweep): its slowest run so far
            return overhead + ESTIMATE_MARGIN * -neg_cost
        return overhead + ESTIMATE_MARGIN * per_second * expected if math.isfinite(expected) else math.inf

    def stop_before(self, depth: int, last: int, exponential: bool) -> Stop | None:
        """Why the point at ``depth`` is not run (predicted over the cap or the budget), else None.

        May lower ``self.calls`` (eager) so that the point fits in what is left of the share."""
        cfg, points = self.cfg, self.series.points
        left = self.left()
        try:
            pred = predict_next(points, depth, exponential, self.series.backend_info)
        except OverflowError:  # a growth extrapolated over a huge depth step: far past any cap
            pred = {"cost": math.inf}
        by_model = cfg.predictor(self.series, depth) if cfg.predictor is not None and len(points) >= 3 else None
        if by_model is not None:  # the deciding model's growth for the classified phases
            growth, figure = by_model
            for ph in self.spec.phases:
                if points[-1].times.get(ph) is not None:
                    pred[ph] = points[-1].times[ph] * growth
        pred = {ph: _bounded(points, ph, t, depth) for ph, t in pred.items()}  # never past the points' own law
        big = {k: v for k, v in pred.items() if v * PREDICT_MARGIN > cfg.cap}
        if big:
            ph, t = max(big.items(), key=lambda kv: kv[1])
            model = figure if by_model is not None and ph in self.spec.phases else ""
            return Stop(
                StopReason.PREDICTED_CAP, after=last, depth=depth, phase=ph, seconds=t, limit=cfg.cap, by_model=model
            )
        if self.deadline_passed():
            return Stop(StopReason.BUDGET, after=last)
        if left <= 0:
            return Stop(StopReason.BUDGET_SHARE, after=last, limit=self.allowance)
        mode, prev = self.spec.mode, points[-1]
        ratio = depth / max(prev.depth, 1)
        if mode == "eager" and self.walls and len(points) == 1:
            # one point: size the calls from its wall time per call (a huge --calls must not eat the budget)
            per_call = self.walls[-1] / max(int(prev.calls or self.calls), 1) * ratio
            fit = int(0.5 * left / per_call) if per_call > 0 else cfg.calls
            self.calls = max(MIN_CALLS, min(cfg.calls, fit))
        if not (self.walls and len(points) >= 2 and pred):
            return None
        prev_calls = prev.calls if prev.calls is not None else self.calls
        overhead = max(0.0, self.walls[-1] - point_cost(prev.times, mode, prev_calls))
        # a new shape compiles again (a warm-up per shape: outside the point's wall, inside the budget's)
        warm = warmup_seconds(prev) if depth != prev.depth else 0.0
        wall_pred = warm + overhead * ratio + point_cost(pred, mode, self.calls)
        counting = self.spec.metric == "instructions"
        if counting:  # under valgrind the wall grows with the counted cost, not with the depth
            wall_pred = counted_wall(points, self.walls, pred, mode, self.calls)
        if mode == "eager" and wall_pred > left and not counting:
            k = self.calls
            while k > MIN_CALLS and wall_pred > left:  # geometric steps: --calls may be huge
                k = max(MIN_CALLS, min(k - 1, int(k * 0.8)))
                self.calls = k
                wall_pred = warm + overhead * ratio + point_cost(pred, mode, self.calls)
        if wall_pred > left:
            return Stop(StopReason.BUDGET_SHARE, after=last, depth=depth, seconds=wall_pred, limit=left)
        return None

    def measure(self, depth: int, last: int | None, stop_at_cap: bool = True) -> bool:
        """Measure the point at ``depth``; False when the series ends here (stopped or failed).

        ``stop_at_cap``: a point over the cap stops the series (else the time schedule sees it: no deeper)."""
        spec, cfg = self.spec, self.cfg
        if spec.mode == "eager" and not self.series.points:  # nothing known yet: the default calls at most
            self.calls = min(self.calls, DEFAULT_CALLS)
        req = {
            "op": "point",
            "file": spec.file,
            "chain": spec.chain,
            "backend": spec.backend,
            "profile": spec.profile,
            "mode": spec.mode,
            "depth": depth,
            "calls": self.calls,
            "counter_budget": cfg.counter_budget,
            **({"metric": spec.metric} if spec.metric != "time" and spec.cmd is None else {}),
            **({"repeats": spec.repeats} if spec.repeats else {}),
            **({"memory": True} if self.memory else {}),
        }

        def on_event(ev: dict[str, Any]) -> None:
            if ev.get("event") == "phase":
                call = ev.get("call")
                self.say(f"depth {depth} {ev.get('phase')}" + (f" (call {call})" if call is not None else ""))

        t0 = time.monotonic()
        try:
            ans = self.worker.request(req, cfg.timeout, on_event, self.hard_deadline)
        except WorkerTimeout as to:
            self.timed_out(depth, last, to)
            return False
        except WorkerCrashed as cr:
            if cr.interrupted:
                where = f" in {cr.phase}" if cr.phase else ""
                secs = time.monotonic() - t0
                self.series.error = f"depth {depth}: interrupted{where} after {secs:.1f} s (the point did not finish)"
            else:
                self.series.error = f"depth {depth}: {cr.message}"
            return False
        wall = time.monotonic() - t0
        if not ans.get("ok"):
            self.walls.append(wall)
            self.failed(depth, last, ans)
            return False
        pt = point_from_dict(ans["point"])
        pt.wall_seconds = without_warmup(pt, wall)
        self.walls.append(pt.wall_seconds)
        self.requests[depth] = req
        self.unspent += self._unspent(pt)
        self.series.points.append(pt)
        oc = over_cap(pt, cfg.cap)
        if oc is not None and stop_at_cap:
            self.series.stop = Stop(StopReason.CAP, after=depth, phase=oc[0], seconds=oc[1], limit=cfg.cap)
            return False
        return True

    def confirm_jumps(self) -> None:
        """Re-measure the depths where a phase jumped far over what the depths below predict, once the series is
        measured and after a pause (a burst of load is over by then: a jump repeats, a burst does not): the fastest
        run of a depth is kept, with every run's wall time in ``confirm_walls``; a cheap point gets up to
        :data:`CONFIRM_RUNS` re-runs while it still jumps. A few rounds: a burst over several points shows as a jump
        at each in turn. Only while the budget allows; a re-run that fails leaves the point as it was."""
        if self.cfg.jumps is None:
            return
        for _ in range(CONFIRM_ROUNDS):
            todo = [d for d in self.cfg.jumps(self.series) if d in self.requests]
            if not todo:
                return
            for i, depth in enumerate(todo):
                for run in range(CONFIRM_RUNS):
                    if not self._remeasure(depth):
                        if not run:  # not re-measured at all: the verdict cannot rule the jump out
                            self.series.unconfirmed_depths = sorted(set(self.series.unconfirmed_depths) | {*todo[i:]})
                        return
                    at = [p for p in self.series.points if p.depth == depth and not p.censored]
                    cheap = all((p.wall_seconds or 0.0) < CONFIRM_CHEAP for p in at)
                    if not cheap or depth not in self.cfg.jumps(self.series, confirmed=True):
                        break

    def _remeasure(self, depth: int) -> bool:
        """One more run of the point at ``depth``, after :data:`CONFIRM_PAUSE`; False when it could not run (the
        budget, a failure, an interrupt)."""
        series, at = self.series, [p for p in self.series.points if p.depth == depth and not p.censored]
        wall = max((p.wall_seconds or 0.0 for p in at), default=0.0)
        if not at or self.deadline_passed() or self.left() < ESTIMATE_MARGIN * wall + CONFIRM_PAUSE:
            return False
        self.say(f"depth {depth} (confirming a jump)")
        time.sleep(CONFIRM_PAUSE)
        t0 = time.monotonic()
        try:
            ans = self.worker.request(self.requests[depth], self.cfg.timeout, None, self.hard_deadline)
        except (WorkerTimeout, WorkerCrashed):  # the first run stands; the worker restarts for the next request
            return False
        if not ans.get("ok"):
            return False
        again = point_from_dict(ans["point"])
        again.wall_seconds = without_warmup(again, time.monotonic() - t0)
        walls = [w for p in at for w in (p.confirm_walls or [p.wall_seconds or 0.0])] + [again.wall_seconds]
        kept = fastest_per_phase([*at, again])  # a phase jumps only where every run shows it
        kept.confirm_walls = walls
        series.points = [p for p in series.points if not any(p is q for q in at)] + [kept]
        return True

    def timed_out(self, depth: int, last: int | None, to: WorkerTimeout) -> None:
        """The worker was killed: at its own timeout (a hang: a ``killed`` point, a finding), or at the
        budget's end (censored if it already ran past the cap, else just stopped: nothing is known about
        that depth, and a budget that runs out is never a hang)."""
        series, cap = self.series, self.cfg.cap
        exact = any(not p.censored for p in series.points)
        where = {"depth": depth, "phase": to.phase, "call": to.call}
        if to.phase == WARMUP_PHASE and to.by_deadline:  # a warm-up is no cost of the point: nothing known there
            series.stop = Stop(StopReason.BUDGET, after=last if exact else None, seconds=to.total, **where)
            return
        if to.counting:  # killed under valgrind: its wall time says nothing of the program's own cost (no hang)
            after = last if exact else None
            if to.by_deadline:
                series.stop = Stop(StopReason.BUDGET, after=after, seconds=to.total, **where)
            else:
                series.stop = Stop(StopReason.COUNT_TIMEOUT, after=after, seconds=to.total, limit=to.limit, **where)
            return
        if to.by_deadline and to.limit < self.cfg.timeout:
            runaway = exact and to.elapsed < cap and self._far_over_prediction(depth, to)
            if to.elapsed < cap and not runaway:  # not over the cap: a lower bound, which the verdict reads
                if exact:
                    series.points.append(self._bound(depth, to, CensorReason.BUDGET))
                series.stop = Stop(StopReason.BUDGET, after=last if exact else None, seconds=to.total, **where)
                return
            if runaway:
                series.points.append(self._bound(depth, to, CensorReason.BUDGET, PointStatus.KILLED))
                series.stop = Stop(StopReason.RUNAWAY, after=last, seconds=to.total, **where)
                return
            series.points.append(self._bound(depth, to, CensorReason.BUDGET))
            series.stop = Stop(StopReason.CENSORED, after=last, seconds=to.total, limit=cap, **where)
            return
        if not exact:
            why = f"depth {depth} killed" + (f" in {to.phase}" if to.phase else "")
            call = f" (call {to.call})" if to.phase and to.call is not None else ""
            hang = "no depth finished (the chain hangs or is far too slow)"
            series.error = f"{why}{call} after the {to.limit:.1f} s timeout; {hang}"
            return
        series.points.append(self._bound(depth, to, CensorReason.TIMEOUT, PointStatus.KILLED))
        series.stop = Stop(StopReason.TIMEOUT, after=last, seconds=to.elapsed, limit=to.limit, **where)

    def _bound(
        self, depth: int, to: WorkerTimeout, reason: CensorReason, status: PointStatus = PointStatus.CENSORED
    ) -> Point:
        """The lower bound left by a point that was stopped: its phase's seconds, the wall time of the whole
        request until then, and the calls it was asked for (eager: its wall per call is a lower bound too)."""
        pt = _censored_point(depth, to.phase, to.elapsed, reason, status=status)
        pt.wall_seconds = to.total
        exact = [p for p in self.series.points if not p.censored]
        pt.calls = self.calls if self.spec.mode == "eager" else (exact[-1].calls if exact else None)
        return pt

    def _far_over_prediction(self, depth: int, to: WorkerTimeout) -> bool:
        """The killed point ran at least a second and RUNAWAY_FACTOR times what its depth predicts
        (exponential extrapolation, the larger one): a runaway, even with a cap too large to say so."""
        exact = [p for p in self.series.points if not p.censored]
        try:
            pred = predict_next(exact, depth, True, self.series.backend_info)
        except OverflowError:
            return False
        if not pred and exact and exact[-1].times:  # one point: a generous quadratic extrapolation
            grow = law_factor(max(exact[-1].depth, 1), depth, exponent=2.0)
            pred = {k: t * grow for k, t in exact[-1].times.items()}
        expected = max(pred.values(), default=0.0)
        return to.elapsed >= 1.0 and 0.0 < expected * RUNAWAY_FACTOR <= to.elapsed

    def failed(self, depth: int, last: int | None, ans: dict[str, Any]) -> None:
        """The worker answered a failure: the counter budget (censored), a resource, or a chain error."""
        series = self.series
        kind = ans.get("kind")
        msg = ans.get("error") or "failed"
        if kind == "budget":
            phase = ans.get("phase")
            series.points.append(_censored_point(depth, phase, 0.0, CensorReason.COUNTER_BUDGET, ans.get("point")))
            series.stop = Stop(
                StopReason.COUNTER_BUDGET, after=last, depth=depth, phase=phase, limit=self.cfg.counter_budget
            )
            if not any(not p.censored for p in series.points):
                series.error = f"depth {depth}: key-comparison budget exceeded in {phase}"
        elif kind == "resource":
            series.error = f"depth {depth}: worker ran out of a resource: {msg}"
        elif kind == "usage":  # the program's output cannot be measured in this mode: bad input, not a finding
            series.error, series.bad_input = msg, True
        else:
            # formatting only: the backends' messages name the depth where they say where in the chain it failed
            series.error = msg if msg.startswith(f"depth {depth}") else f"depth {depth}: {msg}"


def _bounded(points: list[Point], phase: str, predicted: float, depth: int) -> float:
    """A phase's predicted seconds at ``depth``, no more than the steepest law through its measured times allows
    (:func:`adprof.measure.bounds.capped`); the classified cost (``cost``) is bounded by the points' own costs."""
    exact = [p for p in points if not p.censored]
    if phase in ("cost", "process") and not any(phase in p.times for p in exact):
        pairs = [(p.depth, sum(t for t in p.times.values() if t is not None)) for p in exact]
    else:
        pairs = [(p.depth, p.times[phase]) for p in exact if p.times.get(phase) is not None]
    return bounds.capped(predicted, [d for d, _ in pairs], [v for _, v in pairs], depth)


def _time_stop(front: Frontier, series: Series, fit: Fit | None, cap: float) -> Stop | None:
    """Why a time-decided series went no deeper: a point over the cap, or the deciding model's prediction."""
    top = front.depth
    if front.reason is Deepening.CAP:
        deeper = [p for p in series.points if top is None or p.depth > top]
        if deeper:
            p = min(deeper, key=lambda q: q.depth)
            if p.censored:
                return None  # the kill (or the budget) said why
            ph, t = max(((k, v) for k, v in p.times.items() if v is not None), key=lambda kv: kv[1])
            return Stop(StopReason.CAP, after=p.depth, phase=ph, seconds=t, limit=cap)
        return None
    if front.reason is Deepening.PREDICTED and front.predicted is not None:
        return Stop(
            StopReason.PREDICTED_CAP,
            after=top,
            depth=(top or 0) + 1,
            phase="+".join(classified_phases(series)),
            seconds=front.predicted,
            limit=cap,
            by_model=fit_figure(fit, interval=False) if fit is not None else "",
        )
    return None


def _time_range(spec: SeriesSpec, cfg: MeasureConfig) -> tuple[int, int]:
    hi = cfg.max_depth or spec.max_depth
    if spec.time_range is not None:
        lo, top = spec.time_range
        return lo, min(top, hi) if cfg.max_depth else top
    return 1, hi


def time_schedule(spec: SeriesSpec, cfg: MeasureConfig) -> TimeSchedule:
    """The time schedule of a series: over its range, deeper (to :data:`DEEPEST`) while the verdict is open when
    neither the chain nor ``--max-depth`` gave a deepest depth."""
    lo, hi = _time_range(spec, cfg)
    deepen = spec.deepen and not cfg.max_depth
    deepest = DEEPEST if spec.axis == "layer" else max(AXIS_DEEPEST, hi)
    top = min(max(hi, TIME_DEPTH), deepest) if deepen else hi
    return TimeSchedule(lo, top, spec.mode, cfg.cap, cfg.timeout, limit=deepest if deepen else top, phases=spec.phases)


def _run_time_series(run: _SeriesRun, sched: TimeSchedule) -> None:
    """The loop of a time-decided series (see :mod:`~adprof.measure.time_schedule`). While the decision is open
    it goes deeper (the schedule's deepest depth is a safety, :meth:`TimeSchedule.extend`) and then spends more
    passes, as long as the series' share of the budget is at least half left; ``Series.schedule_end`` says why it
    ended."""
    series, cfg = run.series, run.cfg
    last: Fit | None = None  # the full assessment after the previous pass
    fit: Fit | None = None
    fitted: set[int] = set()  # depths the quick fit saw: refit for a deeper depth or a few new ones (not repeats)
    assessed = -1  # points the last full assessment saw
    kill: Stop | None = None  # the first point killed at its timeout (the series goes on below it)
    end = ScheduleEnd.POINTS
    while len(series.points) < MAX_POINTS:
        depths = {p.depth for p in series.points}
        if cfg.assess is not None and (max(depths) > max(fitted, default=0) or len(depths - fitted) >= REFIT_AFTER):
            fit, fitted = cfg.assess(series, False), depths
        sched.room = run.room()
        step = sched.next_step(series.points, fit)
        if step is None:
            end = _end_of(sched, series, fit)
            break
        if step.why in (SWEEP, REPEAT) and _deeper_first(run, sched, fit):
            continue  # open, and nothing left but repeats: deeper first while cheap (the repeats tell more there)
        done = sched.passes(series.points, fit) if step.why == SWEEP else 0
        if done and len(series.points) != assessed:  # a pass is complete: has the decision settled?
            t0 = time.monotonic()
            full = cfg.assess(series, True) if cfg.assess is not None else None
            run.post_seconds = 2.5 * (time.monotonic() - t0) + 1.0  # the verdict's own fit, and rendering
            assessed, fit = len(series.points), full if full is not None else fit
            same = full is not None and last is not None and full.kind == last.kind
            roomy = run.left() > OPEN_SHARE * run.allowance  # more than half of the share left
            # open: undecided, or flat (a growth under the overhead shows deeper, and a flat cost is cheap there)
            if open_reading(full) and sched.extend(series.points, full, _afford(run, sched)):
                last = full  # one doubling deeper first, then the passes go on there
                step = sched.next_step(series.points, fit) or step
            elif (done >= MIN_PASSES and settled(full) and same) or cfg.assess is None:
                end = ScheduleEnd.SETTLED
                break
            elif done >= (MAX_OPEN_PASSES if roomy and not settled(full) else MAX_PASSES):
                end = ScheduleEnd.PASSES
                break
            else:
                last = full
                step = sched.next_step(series.points, fit) or step
        top = max((p.depth for p in series.points if not p.censored), default=step.depth)
        stop = run.budget_stop(step, top)
        if stop is not None:
            series.stop, end = stop, ScheduleEnd.BUDGET
            break
        run.say(f"depth {step.depth}" + (f" ({step.why})" if step.why in (SWEEP, REPEAT) else ""))
        if not _measure_step(run, step, top):
            ended = _after_a_kill(series, sched)
            if ended is not None:
                end = ended
                break
            kill = kill or series.killed
            series.stop = None  # killed at the timeout: the depths below it are measured (bisected) still
    series.schedule_end, series.deepest_allowed = end, sched.hi
    if series.error:
        return
    if kill is not None and (series.stop is None or series.stop.reason is not StopReason.TIMEOUT):
        series.stop = kill  # the finding: a point killed at its timeout (the verdict reads it)
    if series.stop is None:
        series.stop = _time_stop(sched.frontier(series.points, fit), series, fit, cfg.cap)


def _after_a_kill(series: Series, sched: TimeSchedule) -> ScheduleEnd | None:
    """A point that did not finish: how the series ends (KILLS; BUDGET where nothing was killed), or None when the
    depths below go on being measured (past MAX_KILLS kills: refined and swept, not bisected towards them)."""
    killed = series.killed
    kills = sum(p.status is PointStatus.KILLED for p in series.points)
    spent = sched.kills_spent  # a kill among the depths below the spent kills: no more timeouts paid for them
    if series.error or killed is None or spent or (kills > MAX_KILLS and not _below_the_kills(series)):
        return ScheduleEnd.KILLS if killed is not None else ScheduleEnd.BUDGET
    sched.kills_spent = kills > MAX_KILLS
    return None


def _below_the_kills(series: Series) -> bool:
    """Depths under the kills that a reading can use: at least three exact depths below the shallowest kill (a
    chain that hangs from its first depths has nothing to refine)."""
    killed = [p.depth for p in series.points if p.status is PointStatus.KILLED]
    exact = {p.depth for p in series.points if not p.censored}
    return bool(killed) and sum(d < min(killed) for d in exact) >= 3


def pass_order(depths: Sequence[int], passes_done: int) -> list[int]:
    """The depths of the next pass over fixed depths, round-robin: every depth once, alternately from the deepest
    down (after an odd number of passes: the first pass went up) and from the shallowest up, so that a burst of
    load, or a drift of the machine, lands on every depth and not on the deepest ones, and never looks like
    growth."""
    ordered = sorted(set(depths))
    return ordered[::-1] if passes_done % 2 == 1 else ordered


def time_passes(run: _SeriesRun) -> None:
    """Fixed depths (a guard's, ``--depths``, the chain's) that time decides: passes over the measured depths,
    round-robin (:func:`pass_order`), each point a few repeats as the first pass took them; the fit reads the
    lower envelope of all of them (the least run of each depth, :mod:`adprof.analysis.models`). After
    :data:`MIN_PASSES` passes, passes end once the decision holds over two passes (``settled``), else at
    :data:`MAX_PASSES` (:data:`MAX_OPEN_PASSES` while the reading is open and over :data:`OPEN_SHARE` of the
    share is left), or when the next point does not fit in the budget. A series that stopped at a failure, a
    kill or the budget gets none; ``Series.schedule_end`` says why they ended."""
    series, cfg = run.series, run.cfg
    if series.error or not series.points or cfg.assess is None:
        return
    if series.stop is not None and series.stop.reason not in (StopReason.CAP, StopReason.PREDICTED_CAP):
        return
    if any(p.censored for p in series.points):
        return
    first = series.points[0]
    if not time_decided(first, run.spec.mode, series.deciding_metrics, run.spec.phases):
        return
    over = {p.depth for p in series.points if over_cap(p, cfg.cap) is not None}
    depths = sorted({p.depth for p in series.points} - over)
    if len(depths) < 2:
        return
    kept_stop, last, done = series.stop, None, 1
    end = ScheduleEnd.PASSES
    while True:
        if done >= MIN_PASSES:
            t0 = time.monotonic()
            full = cfg.assess(series, True)
            run.post_seconds = 2.5 * (time.monotonic() - t0) + 1.0  # the verdict's own fit, and rendering
            same = full is not None and last is not None and full.kind == last.kind
            if full is not None and same and settled(full) and not open_reading(full):
                end = ScheduleEnd.SETTLED
                break
            roomy = run.left() > OPEN_SHARE * run.allowance
            if done >= (MAX_OPEN_PASSES if roomy and not settled(full) else MAX_PASSES):
                break
            last = full
        measured = 0
        for depth in pass_order(depths, done):
            step = Step(depth, SWEEP)
            if run.budget_stop(step, depths[-1]) is not None or len(series.points) >= MAX_POINTS:
                end = ScheduleEnd.BUDGET
                break
            run.say(f"depth {depth} (pass {done + 1})")
            if not _measure_step(run, step, depths[-1]):  # a failure, a kill: what it set is the evidence
                if series.stop is None:
                    series.stop = kept_stop
                series.schedule_end = ScheduleEnd.BUDGET
                return
            measured += 1
        if end is ScheduleEnd.BUDGET or not measured:
            end = ScheduleEnd.BUDGET
            break
        done += 1
    series.stop = kept_stop
    series.schedule_end = end


def _measure_step(run: _SeriesRun, step: Step, top: int) -> bool:
    """Measure ``step`` (:meth:`_SeriesRun.measure`), marking the points it adds with why it was scheduled."""
    before = len(run.series.points)
    measured = run.measure(step.depth, top, stop_at_cap=False)
    for p in run.series.points[before:]:
        p.scheduled = step.why
    return measured


def _deeper_first(run: _SeriesRun, sched: TimeSchedule, fit: Fit | None) -> bool:
    """An open reading (undecided, or flat) with more than half of the share left moves the deepest depth one
    doubling deeper when the next doubling is cheap (:meth:`TimeSchedule.extend`)."""
    if fit is None or not open_reading(fit):
        return False
    return sched.extend(run.series.points, fit, _afford(run, sched))


def _afford(run: _SeriesRun, sched: TimeSchedule) -> Callable[[float], bool]:
    """Whether the budget has room for a deeper depth whose one point costs ``cost`` (pessimistically): more than
    half of the share left, or room for :data:`DEEPER_POINTS` such points (charged as the last points were)."""
    left = run.left()
    if left > OPEN_SHARE * run.allowance:
        return lambda cost: True
    # the budget charges a point its wall time when that is larger (a process's start-up, a JIT's warm-up)
    mode = run.spec.mode
    walls = [
        p.wall_seconds / secs
        for p in run.series.points[-3:]
        if p.wall_seconds and not p.censored and (secs := point_seconds(p, mode, run.spec.phases))
    ]
    charge = max(1.0, statistics.median(walls)) if walls else 1.0
    return lambda cost: left > DEEPER_POINTS * charge * cost


def _end_of(sched: TimeSchedule, series: Series, fit: Fit | None) -> ScheduleEnd:
    """Why deepening cannot go on: the cap (a deeper depth over it), or the deepest depth allowed."""
    front = sched.frontier(series.points, fit)
    return ScheduleEnd.DEEPEST if front.reason is Deepening.MAX_DEPTH else ScheduleEnd.CAP


def counted_wall(points: list[Point], walls: list[float], pred: dict[str, float], mode: str, calls: int) -> float:
    """Predicted wall seconds of the next point of an instruction series: the wall of the last two points
    as fixed + slope x native cost (valgrind's start-up, then its slowdown of the counted work), else the
    last wall scaled by the predicted cost growth."""
    costs = [point_cost(p.times, mode, p.calls if p.calls is not None else calls) for p in points[-2:]]
    last_calls = points[-1].calls if points[-1].calls is not None else calls  # the calls the last point made
    nxt = point_cost(pred, mode, last_calls)
    if len(costs) == 2 and len(walls) >= 2 and costs[1] > costs[0] > 0:
        slope = (walls[-1] - walls[-2]) / (costs[1] - costs[0])
        fixed = walls[-1] - slope * costs[1]
        if slope > 0 and fixed >= 0:
            return fixed + slope * nxt
    return walls[-1] * max(nxt / costs[-1], 1.0) if costs and costs[-1] > 0 else walls[-1]


def fill_depth(depths: Sequence[int]) -> int | None:
    """The next depth that fills the exact schedule's gaps past its unit steps: the middle of the widest gap
    between measured depths (the deepest of the widest: an exponential's tail is read over its deepest steps),
    None when no gap is left."""
    ds = sorted(set(depths))
    gaps = [(b - a, b, a) for a, b in zip(ds, ds[1:], strict=False) if b - a > 1 and b > UNIT_UNTIL]
    if not gaps:
        return None
    _, hi, lo = max(gaps)
    return (lo + hi + 1) // 2


def _fill_open(run: _SeriesRun) -> None:
    """While the exact reading is open (:attr:`MeasureConfig.open_exact`: undecided, or a knee with too few depths
    past it), measure the depths the schedule skipped below its deepest (:func:`fill_depth`), as the budget allows:
    each is cheaper than the deepest, which was measured. A series that runs out of budget here says so (a budget
    stop: the verdict asks for a larger budget, never a larger cap, while depths below the deepest are unmeasured)."""
    series, cfg = run.series, run.cfg
    if cfg.open_exact is None or series.error:
        return
    if series.stop is not None and series.stop.reason is not StopReason.PREDICTED_CAP:
        return
    while cfg.open_exact(series):
        exact = [p for p in series.points if not p.censored]
        depth = fill_depth([p.depth for p in exact])
        if depth is None:
            return
        above = min((p for p in exact if p.depth > depth), key=lambda p: p.depth)
        est = ESTIMATE_MARGIN * (above.wall_seconds or 0.0)
        left, top = run.left(), max(p.depth for p in exact)
        if run.deadline_passed() or est > left:
            if series.stop is None:
                series.stop = Stop(StopReason.BUDGET_SHARE, after=top, depth=depth, seconds=est, limit=max(left, 0.0))
            return
        run.say(f"depth {depth} (filling in below depth {top})")
        kept_stop = series.stop
        ok = run.measure(depth, top)
        series.points.sort(key=lambda p: p.depth)
        if not ok:
            return
        series.stop = kept_stop


def run_series(
    spec: SeriesSpec,
    worker: Worker,
    cfg: MeasureConfig,
    allowance: float,
    hard_deadline: float | None = None,
    status: StatusCallback | None = None,
    resume: Series | None = None,
) -> Series:
    """Measure one series point by point in ``worker`` (see the module docstring for the rules).

    ``resume``: a series stopped by its budget share, continued where it stopped.
    """
    series = resume if resume is not None else spec.new_series()
    series.stop = None
    # explicit --depths win over the depths planned for the series (a chain's declared depths, a mode's)
    explicit = cfg.depths or spec.depths
    if explicit is None and spec.time_range is not None and not cfg.unit_steps:
        lo, hi = _time_range(spec, cfg)
        explicit = geometric_depths(lo, hi, step=2 ** (1 / 3))  # unless time decides (below)
    spaced = explicit is not None and not (cfg.depths or spec.depths)  # our spacing: thinned where shapes compile
    sched = Schedule(cfg.max_depth or spec.max_depth, spec.mode, explicit, cfg.unit_steps, phases=spec.phases)
    if resume is not None and len(series.points) > UNIT_UNTIL and not sched.growing_fast(series.points):
        sched.doubling = True
    counting = spec.metric == "instructions" and spec.cmd is None  # one valgrind'd worker for the series
    if spec.cmd is not None:
        worker = CommandPoints(spec.cmd, worker, spec.phases)  # type: ignore[assignment]  # same request interface
    else:
        worker.count_instructions(counting)  # a fresh valgrind'd worker, or back to a native one
    run = _SeriesRun(spec, worker, cfg, allowance, hard_deadline, status, series)
    adaptive = not (spec.depths or cfg.depths or cfg.unit_steps)
    while (depth := sched.next_depth(series.points)) is not None:
        last = series.points[-1].depth if series.points else None
        counted = spec.metric != "time"  # instructions asked for decide: never the time schedule
        if (
            adaptive
            and not counted
            and series.points
            and time_decided(series.points[0], spec.mode, series.deciding_metrics, spec.phases)
        ):
            _run_time_series(run, time_schedule(spec, run.cfg))  # run.cfg: the chain's own cap
            run.confirm_jumps()
            return series
        if last is not None:
            # exponential extrapolation over unit steps only: explicit geometric depths grow like a power law
            exponential = not sched.doubling and (sched.explicit is None or depth - last == 1)
            stop = run.stop_before(depth, last, exponential=exponential)
            if stop is not None:
                series.stop = stop
                break
        run.say(f"depth {depth}" + (" (counting under valgrind)" if counting else ""))
        if not run.measure(depth, last):
            break
        if spaced and len(series.points) == 1 and compiles_per_shape(series.points[0]):
            sched.explicit = doublings(sched.explicit or [], series.points[0].depth)
        elif spaced and len(series.points) == 2 and compiles_per_shape(series.points[1]):
            # every new depth compiles (JAX eager): no more depths than the share affords, each charged the second
            # point's warm-up and wall (the first carries the process's one-time costs); the deepest is kept
            first, second = series.points
            per_shape = ESTIMATE_MARGIN * (warmup_seconds(second) + (second.wall_seconds or 0.0))
            count = 1 + int(max(run.left(), 0.0) / per_shape) if per_shape > 0 else len(sched.explicit or [])
            sched.explicit = [first.depth, *shapes_within(sched.explicit or [], second.depth, count)]
    if adaptive and sched.explicit is None:
        _fill_open(run)
    if not adaptive and spec.metric == "time" and spec.cmd is None:
        time_passes(run)
    if counting:
        worker.count_instructions(False)  # its memory back now, not at the next series
    elif spec.metric == "time":  # counted times are counts at a nominal speed: nothing to confirm
        run.confirm_jumps()
    return series
