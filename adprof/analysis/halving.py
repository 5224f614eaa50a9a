"""The depth-halving table of ``adprof halve`` (seed 000's check): cost at the deepest depth d, at d/2 and
at d/4 (nearest measured), and the ratios between them, with their reading (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from adprof.analysis.growth import band
from adprof.model import HalvingRow, Point, counter_value, time_value

_READING = {
    "linear": "about 1/2 when halved: linear",
    "mild": "between 1/3 and 1/2 when halved: mildly superlinear",
    "superlinear": "below 1/3 when halved: superlinear cost of graph size, not arithmetic",
}


def halving_reading(ratio: float, depth: float, half: float) -> str:
    """The reading of a cost ratio between two depths, as the exponent band it implies."""
    import math

    if ratio <= 0 or depth <= half:
        return ""
    return _READING[band(math.log(ratio) / math.log(depth / half))]


def _nearest(points: list[Point], depth: float) -> Point | None:
    cands = [p for p in points if depth / 1.5 <= p.depth <= depth * 1.5]
    return min(cands, key=lambda p: abs(p.depth - depth)) if cands else None


def halving_rows(points: Sequence[Point], phases: Sequence[str]) -> list[HalvingRow]:
    """Rows for the deepest exact depth and its nearest halvings (counters decide the ratio when present)."""
    pts = sorted((p for p in points if not p.censored), key=lambda q: q.depth)
    if not pts:
        return []
    chosen: list[Point] = [pts[-1]]
    for _ in range(2):
        nxt = _nearest([p for p in pts if p.depth < chosen[-1].depth], chosen[-1].depth / 2)
        if nxt is None:
            break
        chosen.append(nxt)
    rows = [HalvingRow(p.depth, time_value(p, phases), counter_value(p, phases)) for p in chosen]
    for row, nxt in zip(rows, rows[1:], strict=False):
        num, den = (row.counters, nxt.counters) if row.counters and nxt.counters else (row.seconds, nxt.seconds)
        if num and den:
            row.ratio, row.vs_depth = num / den, nxt.depth
            row.reading = halving_reading(row.ratio, row.depth, nxt.depth)
    return rows
