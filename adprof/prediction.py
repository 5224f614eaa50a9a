"""The next point's cost, predicted in one place.

Four readers ask what a deeper point will cost: the depth schedule (:func:`predict_next`: seconds per phase at the
next depth, before the cap), the schedule's cap prediction from the deciding model
(:func:`adprof.analysis.costs.predicted_growth`, through :func:`cost_ratio`), hunt's search (:func:`extrapolate`:
its deterministic work and seconds, before its work caps and point cap) and the verdict's advice on what measuring
deeper costs (:func:`law_factor` with a generous quadratic). Each reads a growth law (an exponential's base per
step, a power law's exponent) and continues it with :func:`law_factor`; the counter cost they read is
:func:`adprof.model.counter_value`, summed there once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from adprof.backend_info import BackendInfo
from adprof.model import Point, counter_value

#: The schedule's bounds on a law read from two points: an exponential's base per step, a power law's exponent
#: (at least linear: a cost never predicted to shrink).
MAX_BASE = 50.0
MAX_EXPONENT = 6.0


def law_factor(d_from: float, d_to: float, *, base: float | None = None, exponent: float | None = None) -> float:
    """``v(d_to) / v(d_from)`` under an exponential of ``base`` per step, else a power law of ``exponent``."""
    if base is not None:
        return base ** (d_to - d_from)
    return (d_to / d_from) ** (exponent if exponent is not None else 1.0)


def growth_factor(
    v1: float,
    v2: float,
    d1: int,
    d2: int,
    d3: int,
    exponential: bool,
    *,
    max_base: float = MAX_BASE,
    max_exponent: float = MAX_EXPONENT,
) -> float:
    """``v(d3) / v(d2)`` continued from two points ``(d1, v1), (d2, v2)``: an exponential's base per step in
    ``[1, max_base]``, else a power law's exponent in ``[1, max_exponent]``; ``d3 / d2`` when the two cannot be
    read (a cost that is not positive, depths out of order)."""
    if v1 <= 0 or v2 <= 0 or d2 <= d1:
        return d3 / d2 if d2 > 0 else 1.0
    if exponential:
        return law_factor(d2, d3, base=min(max((v2 / v1) ** (1.0 / (d2 - d1)), 1.0), max_base))
    p = math.log(v2 / v1) / math.log(d2 / d1) if d1 > 0 else 1.0
    return law_factor(d2, d3, exponent=min(max(p, 1.0), max_exponent))


def extrapolate(costs: Sequence[tuple[int, float]], depth: int) -> float:
    """The cost at ``depth`` continued from the last two ``(depth, cost)`` pairs as an exponential (their growth
    per depth step, unbounded: a pessimistic guess that stops an exponential before it runs away); the last cost
    when they cannot be read; 0 with fewer than two."""
    if len(costs) < 2:
        return 0.0
    (d0, c0), (d1, c1) = costs[-2], costs[-1]
    if c0 <= 0 or d1 <= d0:
        return c1
    return c1 * growth_factor(c0, c1, d0, d1, depth, True, max_base=math.inf)


def cost_ratio(now: float | None, then: float | None) -> float | None:
    """A model's predicted cost at the next depth over its cost at the deepest (at least 1), or None when either
    cannot be read."""
    if not now or then is None or now <= 0 or not math.isfinite(then):
        return None
    return max(then / now, 1.0)


def _phase_counters(point: Point, phase: str, info: BackendInfo | None) -> float | None:
    """The counter cost of one phase of a point, None when it has no (non-zero) counters."""
    v = counter_value(point, (phase,), info)
    return v if v is not None and v > 0 else None


def predict_next(
    points: Sequence[Point], next_depth: int, exponential: bool, info: BackendInfo | None = None
) -> dict[str, float]:
    """Predicted seconds per phase at ``next_depth`` from the last two exact points.

    The growth factor comes from the phase's counters when it has some (exact; ``info``: the counters the backend
    declares deciding), else from its times; exponential extrapolation on unit steps, power law (at least linear)
    on doublings.
    """
    pts = [p for p in points if not p.censored]
    if len(pts) < 2:
        return {}
    p1, p2 = pts[-2], pts[-1]
    out: dict[str, float] = {}
    for phase, t2 in p2.times.items():
        t1 = p1.times.get(phase)
        if t1 is None or t2 is None:
            continue
        c1, c2 = _phase_counters(p1, phase, info), _phase_counters(p2, phase, info)
        v1, v2 = (c1, c2) if c1 and c2 else (t1, t2)
        out[phase] = t2 * growth_factor(v1, v2, p1.depth, p2.depth, next_depth, exponential)
    return out


__all__ = ["MAX_BASE", "MAX_EXPONENT", "cost_ratio", "extrapolate", "growth_factor", "law_factor", "predict_next"]
