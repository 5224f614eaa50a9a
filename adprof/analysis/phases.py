"""Which phase grows, in modes with several cost phases (compile: trace, lower, backend compile; torch.compile:
Dynamo, AOTAutograd, Inductor codegen, C++ compile) (pure).

Each phase's share of the cost's growth is its increase of time between the shallowest and the deepest exact
depth over the sum of the increases; the growing phase is the one holding most of it (at least
:data:`GROWING_SHARE`), or the phase whose deterministic metric decided the verdict (the metric counts that
phase's work). Each phase's own time fit (no bootstrap) is evidence beside the deciding model.
"""

from __future__ import annotations

from adprof.analysis.costs import fit_cost
from adprof.model import Fit, Point, Series
from adprof.verdicts import Source

#: The share of the growth a phase must hold to be named the growing phase.
GROWING_SHARE = 0.5


def _exact(series: Series) -> list[Point]:
    return sorted((p for p in series.points if not p.extra.get("censored")), key=lambda p: p.depth)


def phase_shares(series: Series, phases: tuple[str, ...]) -> dict[str, float]:
    """Phase -> its share of the time increase between the shallowest and the deepest exact point that both
    carry it (empty with fewer than two timed phases or no increase)."""
    pts = _exact(series)
    present = [ph for ph in phases if sum(1 for p in pts if p.times.get(ph) is not None) >= 2]
    if len(present) < 2:
        return {}
    rise: dict[str, float] = {}
    for ph in present:
        timed = [p for p in pts if p.times.get(ph) is not None]
        rise[ph] = max(0.0, float(timed[-1].times[ph]) - float(timed[0].times[ph]))
    total = sum(rise.values())
    return {ph: r / total for ph, r in rise.items()} if total > 0 else {}


def metric_phase(series: Series, metric: str, phases: tuple[str, ...]) -> str | None:
    """The one phase whose points carry ``metric`` (None when several or none do)."""
    where = {ph for p in series.points for ph in phases if metric in p.metrics.get(ph, {})}
    return next(iter(where)) if len(where) == 1 else None


def growing_phase(
    series: Series, phases: tuple[str, ...], decided_by: Fit | None
) -> tuple[str, dict[str, float], dict[str, Fit]]:
    """``(growing phase or "", shares, per-phase time fits)`` of a multi-phase series."""
    shares = phase_shares(series, phases)
    if not shares:
        return "", {}, {}
    fits = {ph: f for ph in shares if (f := fit_cost(series, (ph,), "time", bootstrap=False)) is not None}
    if decided_by is not None and decided_by.source == Source.METRIC:
        where = metric_phase(series, decided_by.metric_name, phases)
        if where is not None and where in shares:  # a phase with a time of its own
            return where, shares, fits
    top = max(shares, key=shares.__getitem__)
    return (top if shares[top] >= GROWING_SHARE else ""), shares, fits
