"""Points far over what the deciding model predicts from the depths below them (pure).

A point stopped by the budget or a timeout has a lower bound on its cost (its wall time until it was stopped); a
point that was measured may still jump far over what the depths below it predict (a cliff, or work the deciding
metric does not see). Both are evidence, never fitted. The prediction (:func:`expected`) scales the time of the
deepest measured depths below the point by the deciding model's growth between them (a generous quadratic when the
model predicts nothing), and takes the smallest of those scalings: a run is only ever slowed (by load, by a series'
first point loading the chain), so the least inflated scaling is the best estimate.

Stopped points compare their wall time (per call: eager points' calls may differ) with the wall time the model
predicts; measured points each phase's time (a statistic of repeats where there are repeats): a jump in any phase
is a jump. The decision (:mod:`~adprof.analysis.classify`) reads :func:`time_jumps`: a bound :data:`BEYOND_FACTOR`
times its prediction is inconclusive, or a runaway when it ran past its own timeout or :data:`RUNAWAY_FACTOR`
times its prediction; a measured phase :data:`JUMP_FACTOR` times its prediction (by more than :data:`JUMP_FLOOR`
seconds, confirmed) is inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from adprof.analysis.costs import quick_deciding_fit
from adprof.analysis.models import predict
from adprof.model import RUNAWAY_FACTOR, Fit, Point, Series, TimeJump, point_wall

__all__ = [
    "BEYOND_FACTOR",
    "JUMP_FACTOR",
    "JUMP_FLOOR",
    "RUNAWAY_FACTOR",
    "SCALE_FROM",
    "expected",
    "is_jump",
    "point_time",
    "suspect_jump",
    "time_jumps",
]

#: A lower bound this many times its prediction contradicts the model (below it, timing noise or load could
#: explain it: a point killed by the budget's end at an ordinary moment is below its prediction).
BEYOND_FACTOR = 2.0
#: A measured point whose time is this many times its prediction jumped (one run in a loaded machine may be 2-3x
#: slower; a re-measured jump is the fastest of its runs).
JUMP_FACTOR = 5.0
#: Seconds a measured phase must exceed its prediction by to be a jump (below: the timer and the scheduler).
JUMP_FLOOR = 0.0005
#: The prediction is the smallest of the scalings from this many of the deepest measured depths below the point.
SCALE_FROM = 3
#: The exponent of the scaling when the deciding model predicts nothing (too few depths, no model).
FALLBACK_POWER = 2.0


def point_time(point: Point) -> float | None:
    """The summed time of a measured point's phases (each a statistic of its repeats), or None."""
    timed = [t for t in point.times.values() if t is not None and math.isfinite(t)]
    return float(sum(timed)) if timed else None


def _growth(fit: Fit | None) -> Callable[[float, float], float]:
    """The deciding model's cost ratio between two depths (a generous power law when it predicts nothing)."""

    def fallback(d: float, d0: float) -> float:
        return (max(d, 1.0) / max(d0, 1.0)) ** FALLBACK_POWER

    if fit is None or fit.kind == "inconclusive" or not fit.depths:
        return fallback

    def ratio(d: float, d0: float) -> float:
        now, then = predict(fit, d0), predict(fit, d)
        if now is None or then is None or now <= 0 or then < 0:
            return fallback(d, d0)
        return then / now if math.isfinite(then) else math.inf

    return ratio


def expected(
    series: Series,
    depth: int,
    fit: Fit | None,
    value: Callable[[Point], float | None],
    under: int | None = None,
    largest: bool = False,
) -> tuple[float, list[int]] | None:
    """What the deciding model predicts for ``value`` of a point at ``depth``, scaled from the deepest measured
    depths below it (or below ``under``; the fastest point of each), and those depths; None without one.
    ``largest``: the largest of the scalings (a budget estimate), not the smallest."""
    limit = depth if under is None else under
    below: dict[int, float] = {}
    for p in series.points:
        v = value(p) if not p.censored and p.depth < limit else None
        if v is not None and v > 0:
            below[p.depth] = min(v, below.get(p.depth, math.inf))
    if not below:
        return None
    growth = _growth(fit)
    froms = sorted(below)[-SCALE_FROM:]
    scaled = [below[d0] * growth(float(depth), float(d0)) for d0 in froms]
    return (max(scaled) if largest else min(scaled)), froms


def is_jump(seconds: float, predicted: float) -> bool:
    """A measured time far over its prediction (:data:`JUMP_FACTOR` times, by more than :data:`JUMP_FLOOR`)."""
    return seconds >= JUMP_FACTOR * predicted and seconds - predicted >= JUMP_FLOOR


def _phase_time(phase: str) -> Callable[[Point], float | None]:
    def value(p: Point) -> float | None:
        t = p.times.get(phase)
        return float(t) if t is not None and math.isfinite(t) else None

    return value


def _timed_phases(series: Series) -> list[str]:
    seen: dict[str, None] = {}
    for p in series.points:
        if not p.censored:
            seen.update(dict.fromkeys(ph for ph, t in p.times.items() if t is not None))
    return list(seen)


def _phase_jump(series: Series, point: Point, fit: Fit | None, phases: list[str]) -> TimeJump | None:
    """The phase of a measured ``point`` that jumped most over its prediction (:func:`is_jump`), else None."""
    best: TimeJump | None = None
    for ph in phases:
        value = _phase_time(ph)
        t = value(point)
        got = expected(series, point.depth, fit, value) if t is not None else None
        if t is None or got is None or not is_jump(t, got[0]):
            continue
        j = TimeJump(point.depth, t, got[0], got[1], phase=ph)
        if best is None or j.ratio > best.ratio:
            best = j
    return best


def time_jumps(series: Series, fit: Fit | None) -> list[TimeJump]:
    """The stopped points whose wall time is over :data:`BEYOND_FACTOR` times its prediction, and the measured
    points with a phase that jumped (:func:`is_jump`: confirmed by a re-measurement, or shown by the next deeper
    depth too), in depth order."""
    out: list[TimeJump] = []
    for p in series.points:
        if not p.censored:
            continue
        wall = point_wall(p)
        got = expected(series, p.depth, fit, point_wall) if wall is not None else None
        if wall is None or got is None or wall < BEYOND_FACTOR * got[0]:
            continue
        reason = p.censor_reason.value if p.censor_reason is not None else ""
        out.append(TimeJump(p.depth, wall, got[0], got[1], bound=True, stopped_by=reason, phase=p.censored_phase))
    phases = _timed_phases(series)
    fastest: dict[int, Point] = {}
    for p in series.points:
        t = point_time(p) if not p.censored else None
        if t is not None and (p.depth not in fastest or t < (point_time(fastest[p.depth]) or math.inf)):
            fastest[p.depth] = p
    for depth in sorted(fastest):
        p = fastest[depth]
        j = _phase_jump(series, p, fit, phases)
        if j is not None and (p.confirm_walls or _persists(series, fastest, j, fit)):
            out.append(j)
    return sorted(out, key=lambda j: (j.depth, not j.bound))


def _persists(series: Series, fastest: dict[int, Point], jump: TimeJump, fit: Fit | None) -> bool:
    """A jump that the next deeper measured depth shows too, in the same phase and against the same depths below
    it: not one slow run. (A jump that was re-measured is confirmed by that; the measuring layer re-measures.)"""
    deeper = [d for d in sorted(fastest) if d > jump.depth]
    if not deeper or jump.phase is None:
        return False
    value = _phase_time(jump.phase)
    t = value(fastest[deeper[0]])
    got = expected(series, deeper[0], fit, value, under=jump.depth)
    return t is not None and got is not None and is_jump(t, got[0])


def suspect_jump(series: Series, point: Point) -> bool:
    """Whether a point just measured (not yet in ``series``) has a phase that jumped far over what the deciding
    model predicts from the series so far: the measuring layer then re-measures it (a one-off slow run does not
    repeat)."""
    if point.censored:
        return False
    candidates = []
    for ph, t in point.times.items():
        value = _phase_time(ph)
        below = {p.depth: v for p in series.points if not p.censored and p.depth < point.depth and (v := value(p))}
        deepest = [below[d] for d in sorted(below)[-SCALE_FROM:]]
        # the model's growth to a deeper depth is at least 1: no jump is possible under this (no fit needed)
        if t is not None and deepest and is_jump(t, min(deepest)):
            candidates.append(ph)
    if not candidates:
        return False
    return _phase_jump(series, point, quick_deciding_fit(series), candidates) is not None
