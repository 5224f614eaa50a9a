"""Eager mode: amortization of the warm calls by the cache, and call 0 (the cache miss) when only it grows
(pure)."""

from __future__ import annotations

import numpy as np

from adprof import model
from adprof.analysis.costs import counter_cost, cpu_check, fit_cost, phases_of
from adprof.analysis.growth import fit_growth
from adprof.model import Fit, Point, Series, Verdict
from adprof.util.text import range_text

AMORTIZED_BELOW = 0.5  # warm calls cheaper than this fraction of call 1 => amortized
EXPONENT_DROP = 0.15  # warm calls' exponent this much below call 1's => amortized in growth


def _per_call(point: Point) -> tuple[list[float], str] | None:
    """Per-call backward costs of a point: counters if present and non-zero, else seconds."""
    cc = point.extra.get("backward_call_counters")
    if isinstance(cc, list) and len(cc) >= 3:
        vals = [counter_cost(c) for c in cc]
        if vals[1] > 0:
            return vals, "counters"
    bc = point.extra.get("backward_calls")
    if isinstance(bc, list) and len(bc) >= 3 and bc[1]:
        return [float(x) for x in bc], "seconds"
    return None


def amortization(series: Series) -> tuple[bool | None, float | None, list[str]]:
    """Eager: do warm calls (2..5) get cheaper than call 1, at the deepest point and in growth?"""
    pts = sorted((p for p in series.points if not p.censored and _per_call(p)), key=lambda p: p.depth)
    if not pts:
        return None, None, []
    calls, unit = _per_call(pts[-1])  # type: ignore[misc]
    warm = calls[2:6]
    ratio = float(np.median(warm)) / calls[1]
    cheaper_now = ratio < AMORTIZED_BELOW
    growth_line, cheaper_growth = None, False
    if len(pts) >= 4:
        per = [_per_call(p)[0] for p in pts]  # type: ignore[index]
        d = [p.depth for p in pts]
        exact = unit == "counters"
        f1 = fit_growth(d, [v[1] for v in per], exact=exact)
        fw = fit_growth(d, [float(np.median(v[2:6])) for v in per], exact=exact)
        if f1.exponent is not None and fw.exponent is not None:
            growth_line = f"growth exponent of warm calls {fw.exponent:.2f} vs call 1 {f1.exponent:.2f}"
            cheaper_growth = fw.exponent < f1.exponent - EXPONENT_DROP
        elif f1.base is not None and fw.base is not None:
            growth_line = f"per-layer ratio of warm calls {fw.base:.2f} vs call 1 {f1.base:.2f}"
            cheaper_growth = fw.base < f1.base - EXPONENT_DROP
    amortized = cheaper_now or cheaper_growth
    verdict = "amortized by the warm cache" if amortized else "not amortized by the cache"
    calls = range_text("call", "calls", 2, 1 + len(warm))
    lines = [f"{calls} cost {ratio:.2f}x call 1 at depth {pts[-1].depth} ({unit}): {verdict}"]
    if growth_line:
        lines.append(growth_line + ("; warm calls grow slower" if cheaper_growth else ""))
    return amortized, ratio, lines


def call0_fit(series: Series, has_counters: bool) -> Fit | None:
    """Eager call 0 (the cache miss) when it grows while the steady calls do not."""
    call0 = fit_cost(series, ("backward0",), "counters") if has_counters else None
    if call0 is not None:
        return call0
    timed = fit_cost(series, ("backward0",), "time")
    if timed is not None:
        cpu_check(series, ("backward0",), timed)  # a loaded machine's preemptions are no cache miss
    return timed


CALL0_NOTE = "steady calls are linear; only call 0 grows (the cache miss: transform + first backward)"


def eager_decision(v: Verdict, series: Series, fit: Fit, label: str) -> tuple[Fit, str, bool, str]:
    """(deciding fit, its label, whether its kind names the backward, call-0 note). Eager only: when the steady
    calls are linear and call 0 (the cache miss) grows, call 0 decides and the kind names the transform."""
    if series.mode != "eager":
        return fit, label, False, ""
    if fit.kind != "linear" or phases_of(series) != ("backward",):  # call 0 is the backward's cache miss
        return fit, label, True, ""
    call0 = call0_fit(series, v.counter_fit is not None)
    v.call0_fit = call0
    if call0 is not None and call0.kind in ("exponential", "superlinear"):
        return call0, "call 0 backward (cache miss)", False, CALL0_NOTE
    return fit, label, True, ""


def amortization_evidence(v: Verdict, series: Series) -> None:
    """The amortization lines; the first is key evidence of a superlinear or exponential backward."""
    v.amortized, v.warm_to_call1, ev = amortization(series)
    v.evidence.extend(ev)
    if ev and v.kind in (model.SUPERLINEAR_BACKWARD, model.EXPONENTIAL_BACKWARD):
        v.key_evidence.append(ev[0])  # seed 000: warm calls as slow as call 1
