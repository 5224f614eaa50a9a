"""One series measured point by point in a worker: the stop rules and the censored points.

A series stops when a phase exceeds the cap, when the next point is predicted to exceed it
(:func:`~adprof.measure.schedule.predict_next`), when its share of the budget is used, or at a
failure. ``Series.stopped`` says which, e.g. "stopped after depth 25: transform 1.62 s > 1.5 s cap".
A point killed by the timeout or stopped by the counter budget is kept as a censored lower bound.
A point killed at its *own* timeout (not by the budget's end) also stops the series for good and
carries ``extra["killed"]`` (the message): a hang is a finding, never a healthy series cut short.
A point cut off by an interrupt ends the series with an ``error`` naming the signal.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adprof.backends import series_fields
from adprof.constants import DEFAULT_CALLS, NOMINAL_CLOCK
from adprof.measure.client import Worker, WorkerCrashed, WorkerTimeout
from adprof.measure.cmd_points import CommandPoints, CommandSettings
from adprof.measure.config import MeasureConfig
from adprof.measure.schedule import UNIT_UNTIL, Schedule, over_cap, point_cost, predict_next
from adprof.model import Point, Series, cost_phases, fmt_seconds

MIN_CALLS = 3
#: How the times of a counted series (a chain under --metric instructions) are taken.
COUNTED_FIELDS = {"statistic": "one counted run per phase after a warm-up (callgrind)", "clock": NOMINAL_CLOCK}
RUNAWAY_FACTOR = 20.0  # a point killed by the budget after 20x its predicted time is a runaway
PREDICT_MARGIN = 1.2  # a point predicted within 20 % of the cap is not run (timing noise)


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
    #: "instructions": counted under valgrind (--cmd: callgrind runs after a native run; a chain: one
    #: valgrind'd worker for the series), and they alone decide (Series.required_metric)
    metric: str = "time"

    @property
    def label(self) -> str:
        prof = f"/{self.profile}" if self.profile else ""
        return f"{self.chain} [{self.backend}{prof}, {self.mode}]"

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
    depth: int, phase: str | None, seconds: float, reason: str, partial: dict[str, Any] | None = None
) -> Point:
    """A lower bound: the point (or its partial measurement) with ``phase`` at least ``seconds``."""
    pt = point_from_dict(partial) if partial else Point(depth=depth)
    if phase:
        pt.times[phase] = max(seconds, pt.times.get(phase, 0.0))
    pt.extra["censored"] = True
    pt.extra["censor_reason"] = reason
    pt.extra["censored_phase"] = phase
    return pt


def budget_stopped(series: Series) -> bool:
    """True if the series stopped only because its share of the budget ran out."""
    return bool(series.stopped) and not series.error and "budget share" in (series.stopped or "")


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
        self.spec, self.worker, self.cfg, self.series = spec, worker, cfg, series
        self.allowance, self.hard_deadline, self.status = allowance, hard_deadline, status
        self.start = time.monotonic()
        self.walls: list[float] = [p.extra["wall_seconds"] for p in series.points if "wall_seconds" in p.extra]
        self.calls = cfg.calls
        self.cap_s = f"{cfg.cap:g} s cap"

    def say(self, text: str) -> None:
        if self.status is not None:
            self.status(text)

    def stop_before(self, depth: int, last: int, exponential: bool) -> str | None:
        """Why the point at ``depth`` is not run (predicted over the cap or the budget), else None.

        May lower ``self.calls`` (eager) so that the point fits in what is left of the share."""
        cfg, points = self.cfg, self.series.points
        left = self.allowance - (time.monotonic() - self.start)
        try:
            pred = predict_next(points, depth, exponential)
        except OverflowError:  # a growth extrapolated over a huge depth step: far past any cap
            pred = {"cost": math.inf}
        by_model = cfg.predictor(self.series, depth) if cfg.predictor is not None and len(points) >= 3 else None
        if by_model is not None:  # the deciding model's growth for the classified phases
            growth, figure = by_model
            for ph in cost_phases(self.spec.mode):
                if points[-1].times.get(ph) is not None:
                    pred[ph] = points[-1].times[ph] * growth
        big = {k: v for k, v in pred.items() if v * PREDICT_MARGIN > cfg.cap}
        if big:
            ph, t = max(big.items(), key=lambda kv: kv[1])
            rel = ">" if t > cfg.cap else f"within {PREDICT_MARGIN - 1:.0%} of the"
            said = fmt_seconds(t, 0) if math.isfinite(t) else "far"
            how = (
                f" by the deciding model ({figure})"
                if by_model is not None and ph in cost_phases(self.spec.mode)
                else ""
            )
            return (
                f"stopped after depth {last}: next point (depth {depth}) predicted{how} {ph} {said} {rel} {self.cap_s}"
            )
        if self.hard_deadline is not None and time.monotonic() >= self.hard_deadline:
            return f"stopped after depth {last}: the budget ran out"
        if left <= 0:
            return f"stopped after depth {last}: this series' budget share ({self.allowance:.1f} s) is used up"
        mode, prev = self.spec.mode, points[-1]
        ratio = depth / max(prev.depth, 1)
        if mode == "eager" and self.walls and len(points) == 1:
            # one point: size the calls from its wall time per call (a huge --calls must not eat the budget)
            per_call = self.walls[-1] / max(int(prev.extra.get("calls") or self.calls), 1) * ratio
            fit = int(0.5 * left / per_call) if per_call > 0 else cfg.calls
            self.calls = max(MIN_CALLS, min(cfg.calls, fit))
        if not (self.walls and len(points) >= 2 and pred):
            return None
        overhead = max(0.0, self.walls[-1] - point_cost(prev.times, mode, prev.extra.get("calls", self.calls)))
        wall_pred = overhead * ratio + point_cost(pred, mode, self.calls)
        counting = self.spec.metric == "instructions"
        if counting:  # under valgrind the wall grows with the counted cost, not with the depth
            wall_pred = counted_wall(points, self.walls, pred, mode, self.calls)
        if mode == "eager" and wall_pred > left and not counting:
            k = self.calls
            while k > MIN_CALLS and wall_pred > left:  # geometric steps: --calls may be huge
                k = max(MIN_CALLS, min(k - 1, int(k * 0.8)))
                self.calls = k
                wall_pred = overhead * ratio + point_cost(pred, mode, self.calls)
        if wall_pred > left:
            return (
                f"stopped after depth {last}: next point (depth {depth}) predicted "
                f"{fmt_seconds(wall_pred, 0)} > {fmt_seconds(max(left, 0), 0)} left of this series' budget share"
            )
        return None

    def measure(self, depth: int, last: int | None) -> bool:
        """Measure the point at ``depth``; False when the series ends here (stopped or failed)."""
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
        self.walls.append(time.monotonic() - t0)
        if not ans.get("ok"):
            self.failed(depth, last, ans)
            return False
        pt = point_from_dict(ans["point"])
        pt.extra["wall_seconds"] = self.walls[-1]
        self.series.points.append(pt)
        oc = over_cap(pt, cfg.cap)
        if oc is not None:
            self.series.stopped = f"stopped after depth {depth}: {oc[0]} {fmt_seconds(oc[1], 0)} > {self.cap_s}"
            return False
        return True

    def timed_out(self, depth: int, last: int | None, to: WorkerTimeout) -> None:
        """The worker was killed: at its own timeout (a hang: marked ``killed``, a finding), or at the
        budget's end (censored if it already ran past the cap, else just stopped)."""
        series, cap = self.series, self.cfg.cap
        if to.counting:
            # killed under valgrind: its wall time says nothing of the program's own cost
            why = f"depth {depth} not counted: the budget ran out after {to.total:.1f} s under valgrind"
            if not to.by_deadline:
                why = f"depth {depth} not counted: valgrind ran {to.total:.1f} s, past its {to.limit:.0f} s limit"
            if any(not p.extra.get("censored") for p in series.points):
                series.stopped = f"stopped after depth {last}: {why}"
            else:
                series.error = f"{why}; no depth was counted (raise --budget: counting runs 20-100x slower)"
            return
        where = ""
        if to.phase:
            where = f" in {to.phase}" + (f" (call {to.call})" if to.call is not None else "")
        exact = any(not p.extra.get("censored") for p in series.points)
        if to.by_deadline and to.limit < self.cfg.timeout:
            why = f"depth {depth} killed{where} after {to.total:.1f} s: the budget ran out"
            if not exact and to.elapsed >= min(cap, 0.5 * self.allowance):  # it had its fair share
                series.error = f"{why}; no depth finished (the chain hangs or is far too slow)"
                return
            runaway = exact and to.elapsed < cap and self._far_over_prediction(depth, to)
            if to.elapsed < cap and not runaway:  # not over the cap: nothing known about this depth
                series.stopped = f"stopped after depth {last}: {why}" if exact else f"not measured: {why}"
                return
            if runaway:
                pt = _censored_point(depth, to.phase, to.elapsed, "budget")
                pt.extra["killed"] = (
                    f"{why}, {RUNAWAY_FACTOR:g}x past its prediction: the chain hangs or is far too slow"
                )
                series.points.append(pt)
                series.stopped = f"stopped after depth {last}: {pt.extra['killed']} (censored)"
                return
            series.points.append(_censored_point(depth, to.phase, to.elapsed, "budget"))
            series.stopped = f"stopped after depth {last}: {why}, past the {cap:g} s cap (censored)"
            return
        why = f"depth {depth} killed{where} after the {to.limit:.1f} s timeout"
        killed = f"{why}: the chain hangs or is far too slow"
        if not exact:
            series.error = f"{why}; no depth finished (the chain hangs or is far too slow)"
            return
        pt = _censored_point(depth, to.phase, to.elapsed, "timeout")
        pt.extra["killed"] = killed
        series.points.append(pt)
        series.stopped = f"stopped after depth {last}: {killed} (censored; no deeper depth measured)"

    def _far_over_prediction(self, depth: int, to: WorkerTimeout) -> bool:
        """The killed point ran at least a second and RUNAWAY_FACTOR times what its depth predicts
        (exponential extrapolation, the larger one): a runaway, even with a cap too large to say so."""
        exact = [p for p in self.series.points if not p.extra.get("censored")]
        try:
            pred = predict_next(exact, depth, True)
        except OverflowError:
            return False
        if not pred and exact and exact[-1].times:  # one point: a generous quadratic extrapolation
            pred = {k: t * (depth / max(exact[-1].depth, 1)) ** 2 for k, t in exact[-1].times.items()}
        expected = max(pred.values(), default=0.0)
        return to.elapsed >= 1.0 and 0.0 < expected * RUNAWAY_FACTOR <= to.elapsed

    def failed(self, depth: int, last: int | None, ans: dict[str, Any]) -> None:
        """The worker answered a failure: the counter budget (censored), a resource, or a chain error."""
        series = self.series
        kind = ans.get("kind")
        msg = ans.get("error") or "failed"
        if kind == "budget":
            phase = ans.get("phase")
            series.points.append(_censored_point(depth, phase, 0.0, "counter budget", ans.get("point")))
            series.stopped = (
                f"stopped after depth {last}: depth {depth} exceeded the key-comparison "
                f"budget ({self.cfg.counter_budget:,}) in {phase} (censored)"
            )
            if not any(not p.extra.get("censored") for p in series.points):
                series.error = f"depth {depth}: key-comparison budget exceeded in {phase}"
        elif kind == "resource":
            series.error = f"depth {depth}: worker ran out of a resource: {msg}"
        else:
            series.error = msg if msg.startswith("depth") else f"depth {depth}: {msg}"


def counted_wall(points: list[Point], walls: list[float], pred: dict[str, float], mode: str, calls: int) -> float:
    """Predicted wall seconds of the next point of an instruction series: the wall of the last two points
    as fixed + slope x native cost (valgrind's start-up, then its slowdown of the counted work), else the
    last wall scaled by the predicted cost growth."""
    costs = [point_cost(p.times, mode, p.extra.get("calls", calls)) for p in points[-2:]]
    nxt = point_cost(pred, mode, points[-1].extra.get("calls", calls))  # the calls the last point made
    if len(costs) == 2 and len(walls) >= 2 and costs[1] > costs[0] > 0:
        slope = (walls[-1] - walls[-2]) / (costs[1] - costs[0])
        fixed = walls[-1] - slope * costs[1]
        if slope > 0 and fixed >= 0:
            return fixed + slope * nxt
    return walls[-1] * max(nxt / costs[-1], 1.0) if costs and costs[-1] > 0 else walls[-1]


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
    series.stopped = None
    sched = Schedule(cfg.max_depth or spec.max_depth, spec.mode, spec.depths or cfg.depths, cfg.unit_steps)
    if resume is not None and len(series.points) > UNIT_UNTIL and not sched.growing_fast(series.points):
        sched.doubling = True
    counting = spec.metric == "instructions" and spec.cmd is None  # one valgrind'd worker for the series
    if spec.cmd is not None:
        worker = CommandPoints(spec.cmd)  # type: ignore[assignment]  # same request interface
    else:
        worker.count_instructions(counting)  # a fresh valgrind'd worker, or back to a native one
    run = _SeriesRun(spec, worker, cfg, allowance, hard_deadline, status, series)
    while (depth := sched.next_depth(series.points)) is not None:
        last = series.points[-1].depth if series.points else None
        if last is not None:
            # exponential extrapolation over unit steps only: explicit geometric depths grow like a power law
            exponential = not sched.doubling and (sched.explicit is None or depth - last == 1)
            stop = run.stop_before(depth, last, exponential=exponential)
            if stop is not None:
                series.stopped = stop
                break
        run.say(f"depth {depth}" + (" (counting under valgrind)" if counting else ""))
        if not run.measure(depth, last):
            break
    if counting:
        worker.count_instructions(False)  # its memory back now, not at the next series
    return series
