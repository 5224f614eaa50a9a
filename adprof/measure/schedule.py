"""The adaptive depth schedule and the predictions that stop a series before it overruns.

Unless explicit depths are given (:class:`Schedule`): unit steps 1..8, continued while the
per-layer marginal cost ratio stays >= :data:`~adprof.constants.EXPONENTIAL_RATIO` (exponential
chains need consecutive depths), then doublings down from the chain's largest declared depth
(..., D/4, D/2, D: >= 8x span for a power-law fit and a halving pair at the deepest point).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from adprof.constants import EXPONENTIAL_RATIO, RUN_REPEATS
from adprof.model import Point, cost_phases, counter_value, time_value
from adprof.prediction import predict_next as predict_next  # the schedule's prediction lives there

UNIT_UNTIL = 8


def point_metric(point: Point, mode: str, phases: Sequence[str] | None = None) -> float | None:
    """The cost the schedule watches: counters over the classified phases (default: the mode's), else their
    instruction counts (``--metric instructions``: exact, and what decides), else their time."""
    phases = tuple(phases) if phases else cost_phases(mode)
    v = counter_value(point, phases)
    if v is None or v <= 0:
        counted = [point.metrics[p]["instructions"] for p in phases if "instructions" in point.metrics.get(p, {})]
        v = float(sum(counted)) if counted else None
    if v is None or v <= 0:
        v = time_value(point, phases)
    return v


def halving_depths(max_depth: int, above: int) -> list[int]:
    """``max_depth, max_depth/2, ...`` (rounded) down to depths > ``above``, ascending."""
    out: list[int] = []
    d = float(max_depth)
    while round(d) > above:
        out.append(int(round(d)))
        d /= 2
    return sorted(set(out))


def geometric_depths(lo: int, hi: int, step: float = 2**0.5) -> tuple[int, ...]:
    """``lo, lo*step, ...`` (rounded, distinct) up to ``hi``."""
    out, d = [], float(lo)
    while round(d) <= hi:
        out.append(int(round(d)))
        d *= step
    return tuple(sorted(set(out)))


class Schedule:
    """Decides the next depth from the points so far (adaptive, unit steps, or explicit)."""

    def __init__(
        self,
        max_depth: int,
        mode: str,
        explicit: Sequence[int] | None = None,
        unit_steps: bool = False,
        phases: Sequence[str] | None = None,
    ) -> None:
        self.max_depth = max(1, int(max_depth))
        self.mode = mode
        self.phases = tuple(phases) if phases else cost_phases(mode)
        self.explicit = sorted(set(int(d) for d in explicit)) if explicit else None
        self.unit_steps = unit_steps
        self.doubling = False  # switched to doublings (never back)

    def growing_fast(self, points: Sequence[Point]) -> bool:
        """Marginal per-layer cost ratio >= EXPONENTIAL_RATIO over the last consecutive depths, and not decaying."""
        pts = [p for p in points if not p.censored]
        if len(pts) < 3:
            return True
        d = [p.depth for p in pts[-4:]]
        v = [point_metric(p, self.mode, self.phases) for p in pts[-4:]]
        if any(x is None for x in v) or any(b - a != 1 for a, b in zip(d, d[1:], strict=False)):
            return False
        m = [b - a for a, b in zip(v, v[1:], strict=False)]  # type: ignore[operator]
        if m[-1] <= 0 or m[-2] <= 0:
            return False
        r = m[-1] / m[-2]
        if r < EXPONENTIAL_RATIO:
            return False
        if len(m) >= 3 and m[-3] > 0:
            r_prev = m[-2] / m[-3]
            # a power law's marginal ratio decays like (d/(d-1))^(p-1): its log shrinks ~2/d per step
            # (0.87x at d = 8); an exponential's stays put (or rises when linear work fades out)
            if r_prev > 1 and math.log(r) < 0.93 * math.log(r_prev):
                return False
        return True

    def next_depth(self, points: Sequence[Point]) -> int | None:
        """The next depth to measure, or None when the schedule is exhausted."""
        done = {p.depth for p in points}
        last = max(done) if done else 0
        if self.explicit is not None:
            rest = [d for d in self.explicit if d not in done and d > last]
            return rest[0] if rest else None
        if last >= self.max_depth:
            return None
        if self.unit_steps:
            return last + 1
        if not self.doubling:
            if last < min(UNIT_UNTIL, self.max_depth):
                return last + 1
            if self.growing_fast(points):
                return last + 1
            self.doubling = True
        rest = halving_depths(self.max_depth, last)
        return rest[0] if rest else None


def point_cost(times: dict[str, float], mode: str, calls: int) -> float:
    """Seconds a point with these phase times takes (eager: call 0 plus ``calls - 1`` warm calls)."""
    if mode == "eager":
        warm = times.get("forward", 0.0) + times.get("backward", 0.0)
        return times.get("forward0", 0.0) + times.get("backward0", 0.0) + max(calls - 1, 0) * warm
    return sum(t for k, t in times.items() if k != "run") + (1 + RUN_REPEATS) * times.get("run", 0.0)


def over_cap(point: Point, cap: float) -> tuple[str, float] | None:
    """The slowest phase of ``point`` if it exceeds ``cap``."""
    if not point.times:
        return None
    phase, t = max(point.times.items(), key=lambda kv: kv[1])
    return (phase, t) if t > cap else None
