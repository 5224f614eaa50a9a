"""Predictions that cannot run away (pure): the most the measured points' own worst plausible law allows.

A next-point prediction comes from a model (the deciding fit, a two-point extrapolation). A model fitted with an
overhead, or a steep exact metric standing in for the cost, can predict 80 times the last point one doubling
deeper, or 1,300 times it one layer deeper, and stop a series that had plenty of room. The measured costs
themselves bound what is plausible: :func:`law_bound` is the steepest law through the deepest points (the per-layer
rate of an exponential through the deepest depth and each of the few below it, on the lower envelope: the least
cost measured at each depth, which load only raises), times :data:`MARGIN`. A prediction over it is capped to it
(:func:`capped`). Two points at least; one point bounds nothing (the caller's own rule applies).

Imports only the standard library and the model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: The bound is this many times the steepest law's value (a run may be slower than any so far).
MARGIN = 2.0
#: The deepest depths the steepest law is read over (the top against each of the others).
DEEPEST = 4
#: Depths at least this ratio apart are read (depths a few layers apart read their noise as a rate).
THIN = 1.5


def lower_envelope(pairs: Iterable[tuple[int, float]]) -> tuple[list[int], list[float]]:
    """The least positive finite value measured at each depth, in depth order."""
    best: dict[int, float] = {}
    for d, v in pairs:
        if v is None or not math.isfinite(v) or v <= 0 or d < 0:
            continue
        best[d] = min(v, best.get(d, math.inf))
    depths = sorted(best)
    return depths, [best[d] for d in depths]


def _thinned(depths: Sequence[int], values: Sequence[float]) -> tuple[list[int], list[float]]:
    """From the deepest down, the depths at least :data:`THIN` times apart (1, 2, 3 all kept; of 63, 64 only 64)."""
    keep: list[int] = []
    for i in range(len(depths) - 1, -1, -1):
        if not keep or depths[keep[-1]] >= THIN * depths[i]:
            keep.append(i)
    keep.reverse()
    return [depths[i] for i in keep], [values[i] for i in keep]


def steepest_rate(depths: Sequence[int], values: Sequence[float]) -> float | None:
    """The steepest per-layer rate (>= 1) of an exponential through the deepest depth and each of the
    :data:`DEEPEST` - 1 depths below it (lower envelope, thinned); None with fewer than two depths."""
    full = lower_envelope(zip(depths, values, strict=True))
    if len(full[0]) < 2:
        return None
    d, v = _thinned(*full)
    if len(d) < 2:  # the deepest two are closer than THIN: they are all there is to read
        d, v = full[0][-2:], full[1][-2:]
    top, vt = d[-1], v[-1]
    rate = 1.0
    for dj, vj in zip(d[-DEEPEST:-1], v[-DEEPEST:-1], strict=True):
        if vt > vj > 0 and top > dj:
            rate = max(rate, (vt / vj) ** (1.0 / (top - dj)))
    return rate


def law_bound(depths: Sequence[int], values: Sequence[float], x: int, margin: float = MARGIN) -> float | None:
    """The most a point at depth ``x`` may be predicted to cost: :data:`MARGIN` x the steepest law through the
    deepest points, extrapolated from the deepest one (its lower envelope); at or below the deepest depth, the
    margin times the deepest depth's value. None with fewer than two depths (nothing bounds one point)."""
    d, v = lower_envelope(zip(depths, values, strict=True))
    rate = steepest_rate(d, v)
    if rate is None:
        return None
    top, vt = d[-1], v[-1]
    if x <= top:
        return margin * vt
    try:
        return margin * vt * rate ** (x - top)
    except OverflowError:
        return math.inf


def capped(prediction: float, depths: Sequence[int], values: Sequence[float], x: int) -> float:
    """``prediction`` at depth ``x``, no more than :func:`law_bound` allows (unchanged where nothing bounds it)."""
    bound = law_bound(depths, values, x)
    return prediction if bound is None or not prediction > bound else bound


def capped_growth(growth: float, depths: Sequence[int], values: Sequence[float], x: int) -> float:
    """A predicted cost ratio between depth ``x`` and the deepest measured depth (``values`` at ``depths``), no more
    than the bound's ratio to the deepest depth's least value."""
    d, v = lower_envelope(zip(depths, values, strict=True))
    bound = law_bound(d, v, x)
    if bound is None or not v:
        return growth
    return min(growth, bound / v[-1])


__all__ = ["DEEPEST", "MARGIN", "capped", "capped_growth", "law_bound", "lower_envelope", "steepest_rate"]
