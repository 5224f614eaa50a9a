"""Where the growth is: self time per point of each function at two depths (pure).

Both runs measure whole points (the backend's point runner, the same phases), so dividing a function's self
seconds by the points measured puts the two depths on the same footing: the same number of samples per call
(a point), whatever the two runs' lengths. :func:`growth` ranks functions by how much their self time per point
grew, as the depth-halving report does for a whole phase (ranked by a conservative bound of the ratio: a
function seen in a handful of samples does not outrank one seen in hundreds); the flame graph of the deeper
run is coloured by the change of each frame's share (:func:`adprof.flame.svg.render_flame_svg` with ``base``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from adprof.flame.collapse import Stack

#: A function must hold this share of the deeper run's samples (self) to be ranked: below it, noise.
MIN_SHARE = 0.02


@dataclass(frozen=True)
class Growth:
    """One function's self time per point at the two depths (seconds), and its share of each run's samples."""

    function: str
    base: float
    new: float
    base_share: float
    new_share: float
    ratio: float  # new / base (base floored at half a sample per point when the function was not seen)
    per_layer: float  # ratio ** (1 / (depth difference))
    seen_at_base: bool
    low: float = 0.0  # the ratio's conservative bound: both counts moved two Poisson deviations against growth


def self_per_point(stacks: Sequence[tuple[str, Stack, float]], points: int) -> dict[str, float]:
    """Function (``name (file)`` of the leaf frame) -> self seconds per point."""
    out: dict[str, float] = defaultdict(float)
    for _phase, frames, w in stacks:
        if frames:
            out[frames[-1].function] += w
    return {k: v / max(points, 1) for k, v in out.items()}


def growth(
    base: Sequence[tuple[str, Stack, float]],
    base_points: int,
    new: Sequence[tuple[str, Stack, float]],
    new_points: int,
    depth_delta: int,
    rate: float,
    min_share: float = MIN_SHARE,
) -> list[Growth]:
    """Functions of the deeper run holding at least ``min_share`` of its self time, fastest-growing first.

    ``base``/``new``: (phase, frames, seconds) of the shallower and the deeper run; ``rate``: samples per second
    (a function absent from the base run is given half a sample there, so its ratio is a lower bound).
    """
    b = self_per_point(base, base_points)
    n = self_per_point(new, new_points)
    btotal, ntotal = sum(b.values()) or 1.0, sum(n.values()) or 1.0
    floor = 0.5 / rate / max(base_points, 1)
    out = []
    for fn, v in n.items():
        if v / ntotal < min_share:
            continue
        was = b.get(fn, 0.0)
        ratio = v / max(was, floor)
        per_layer = ratio ** (1.0 / depth_delta) if depth_delta > 0 and ratio > 0 else math.nan
        k_new, k_base = v * rate * new_points, was * rate * base_points  # samples
        lo_new = max(k_new - 2.0 * math.sqrt(k_new), 0.0) / new_points
        hi_base = (k_base + 2.0 * math.sqrt(k_base) + 1.0) / max(base_points, 1)
        out.append(Growth(fn, was, v, was / btotal, v / ntotal, ratio, per_layer, fn in b, lo_new / hi_base))
    return sorted(out, key=lambda g: (-g.low, -g.ratio, g.function))


def render_growth(rows: Sequence[Growth], depth: int, vs: int, top: int = 8) -> str:
    """The text of the differential: which functions' self time grows fastest from ``depth`` to ``vs``."""
    lines = [f"self time per point, depth {depth} -> {vs} (fastest-growing first; >= {MIN_SHARE:.0%} of depth {vs}):"]
    if not rows:
        lines.append("  no function holds enough of the samples to rank")
        return "\n".join(lines)
    for g in rows[:top]:
        mark = "" if g.seen_at_base else " (not sampled at the shallower depth: a lower bound)"
        lines.append(
            f"  x{g.ratio:<7.2f} (x{g.per_layer:.2f}/layer)  {_ms(g.base):>9} -> {_ms(g.new):>9}  "
            f"{g.base_share:>4.0%} -> {g.new_share:>4.0%} of self time  {g.function}{mark}"
        )
    first = rows[0]
    lines.append(
        f"fastest-growing: {first.function} (self time per point x{first.ratio:.2f} from depth {depth} to {vs})"
    )
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


__all__ = ["MIN_SHARE", "Growth", "growth", "render_growth", "self_per_point"]
