"""Where the growth is: self time per point of each function at two depths (pure).

Both runs measure whole points with the backend's point runner, in the same phases. A function's self time per
point is its share of a run's samples times the worker's own time in the phases per point
(:meth:`~adprof.flame.timeline.PhasedProfile.seconds_per_point`, by the worker's clock: py-spy falling behind on
a loaded machine loses samples, not time). So the two depths compare per call, whatever the two runs' lengths.
:func:`growth` ranks functions by how fast their self time per point grows: the seconds it adds per point per
layer, as the depth-halving report does for a whole phase (the ratio and its per-layer factor are shown beside).
The ranking uses a conservative bound: both sample counts move two Poisson deviations against growth, so a
function seen in a handful of samples, whose ratio may be huge on a tiny base, does not outrank one seen in
hundreds.
The flame graph of the deeper run is coloured by the change of each frame's share
(:func:`adprof.flame.svg.render_flame_svg` with ``base``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from adprof.flame.timeline import PhasedProfile

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
    ratio: float  # new / base (the base taken as one sample when the function was not seen there)
    per_layer: float  # ratio ** (1 / (depth difference))
    seen_at_base: bool
    low: float = 0.0  # the ranking's conservative bound of the seconds added per point per layer


def self_samples(prof: PhasedProfile) -> dict[str, float]:
    """Function (``name (file)`` of the leaf frame) -> samples (fractional) in which it was the leaf."""
    out: dict[str, float] = defaultdict(float)
    for (_phase, frames), w in prof.weights().items():
        if frames:
            out[frames[-1].function] += w * prof.rate
    return dict(out)


def growth(base: PhasedProfile, new: PhasedProfile, depth_delta: int, min_share: float = MIN_SHARE) -> list[Growth]:
    """Functions holding at least ``min_share`` of the deeper run's self samples, fastest-growing first."""
    b, n = self_samples(base), self_samples(new)
    nb, nn = sum(b.values()), sum(n.values())
    if not nn:
        return []
    tb, tn = base.seconds_per_point(), new.seconds_per_point()
    out = []
    for fn, k in n.items():
        if k / nn < min_share:
            continue
        kb = b.get(fn, 0.0)
        new_s = k / nn * tn
        base_s = kb / nb * tb if nb else 0.0
        ratio = new_s / (max(kb, 1.0) / nb * tb) if nb and tb else math.inf
        lo_new = max(k - 2.0 * math.sqrt(k), 0.0) / nn * tn
        hi_base = (kb + 2.0 * math.sqrt(kb + 1.0) + 1.0) / nb * tb if nb else 0.0
        per_layer = ratio ** (1.0 / depth_delta) if depth_delta > 0 and 0 < ratio < math.inf else math.nan
        low = (lo_new - hi_base) / max(depth_delta, 1)
        out.append(Growth(fn, base_s, new_s, kb / nb if nb else 0.0, k / nn, ratio, per_layer, kb > 0, low))
    return sorted(out, key=lambda g: (-g.low, -g.ratio, g.function))


def render_growth(rows: Sequence[Growth], depth: int, vs: int, top: int = 8) -> str:
    """The text of the differential: which functions' self time grows fastest from ``depth`` to ``vs``."""
    lines = [
        f"self time per point, depth {depth} -> {vs} (fastest-growing first: time added per layer; "
        f">= {MIN_SHARE:.0%} of depth {vs}):"
    ]
    if not rows:
        lines.append("  no function holds enough of the samples to rank")
        return "\n".join(lines)
    for g in rows[:top]:
        mark = "" if g.seen_at_base else " (not sampled at the shallower depth: its ratio is a lower bound)"
        added = (g.new - g.base) / max(vs - depth, 1)
        lines.append(
            f"  +{_ms(added):>10}/layer  {_ms(g.base):>9} -> {_ms(g.new):>9} "
            f"(x{g.ratio:.1f}, x{g.per_layer:.2f}/layer)  {g.base_share:>4.0%} -> {g.new_share:>4.0%} of self time  "
            f"{g.function}{mark}"
        )
    first = rows[0]
    lines.append(
        f"fastest-growing: {first.function} (self time per point {_ms(first.base)} -> {_ms(first.new)}, "
        f"x{first.ratio:.1f} from depth {depth} to {vs})"
    )
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


__all__ = ["MIN_SHARE", "Growth", "growth", "render_growth", "self_samples"]
