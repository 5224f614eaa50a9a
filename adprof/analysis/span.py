"""Verdicts need a span (pure): a time-decided reading claims a growth only over depths that span it.

Time is noisy: three depths read ``x2.01/step`` from repeats of depths 1-3 only (a JAX compile of an RK4 solver
whose cost at 16 steps was 1,200 times less than that law predicts), and a power law read over depths 8-16 is a
slope between two noisy clouds. A time-decided ``exponential`` needs at least :data:`MIN_EXPONENTIAL_DEPTHS`
distinct depths; ``superlinear`` (and ``mild``) a depth span (deepest / shallowest) of at least :data:`MIN_SPAN`.
Short of that the reading is ``inconclusive`` with the reason, predicts nothing (the schedule goes deeper) and
keeps its figure in the notes. Exact readings (counters, deterministic metrics) are not held to it: they have no
noise to span.

Imports only the model.
"""

from __future__ import annotations

import math

from adprof.model import Fit

#: Distinct depths a time-decided exponential reading needs.
MIN_EXPONENTIAL_DEPTHS = 5
#: Deepest over shallowest depth a time-decided power-law pathology (superlinear, mild) needs.
MIN_SPAN = 4.0
#: The growing part of ``a + c*d^p`` shows at a depth where it is at least this share of the overhead ``a``: below,
#: it is within the noise of the constant (a load burst moves a point by more).
VISIBLE_SHARE = 0.25


def span_shortfall(kind: str, depths: list[int]) -> str:
    """Why ``depths`` are too few or too close for a reading of ``kind`` ("" when they span it)."""
    distinct = sorted(set(depths))
    if not distinct:
        return ""
    if kind == "exponential" and len(distinct) < MIN_EXPONENTIAL_DEPTHS:
        return (
            f"an exponential read from {len(distinct)} distinct depths ({distinct[0]}..{distinct[-1]}): time needs "
            f"{MIN_EXPONENTIAL_DEPTHS} to tell it from noise; add depths (raise --cap or --budget)"
        )
    lo = max(distinct[0], 1)
    if kind in ("superlinear", "mild") and distinct[-1] < MIN_SPAN * lo:
        return (
            f"a power law read over depths {distinct[0]}..{distinct[-1]} (x{distinct[-1] / lo:.2g}): time needs a "
            f"span of x{MIN_SPAN:g} to tell it from noise; add depths (raise --cap or --budget)"
        )
    return ""


def visible_span(fit: Fit) -> tuple[int, int] | None:
    """The depths of a time-decided power law ``a + c*d^p`` over which its growing part shows above the overhead
    (at least :data:`VISIBLE_SHARE` of ``a``): (shallowest, deepest) measured depth there; None for another model,
    or no fitted parts. A growth that emerges from a large constant only at the last depths is read from those."""
    if fit.model != "a + c*d^p" or fit.exponent is None or fit.overhead is None or fit.scale is None:
        return None
    depths = sorted(set(fit.depths))
    if not depths or fit.exponent <= 0:
        return None
    a, c, top = max(fit.overhead, 0.0), fit.scale, float(depths[-1])
    shown = [d for d in depths if c * (d / top) ** fit.exponent >= VISIBLE_SHARE * a]
    if not shown or not math.isfinite(c):
        return None
    return shown[0], shown[-1]


def visible_shortfall(fit: Fit) -> str:
    """Why a time-decided power law's growth shows over too short a span to read a pathology ("" when it does):
    the growing part over the overhead must itself span :data:`MIN_SPAN`."""
    if fit.source != "time":
        return ""
    span = visible_span(fit)
    if span is None:
        return ""
    lo, hi = span
    if hi >= MIN_SPAN * max(lo, 1):
        return ""
    return (
        f"its growth shows above the overhead only over depths {lo}..{hi} (x{hi / max(lo, 1):.2g}): time needs a "
        f"span of x{MIN_SPAN:g} to tell its rate from noise"
    )


def require_span(fit: Fit) -> Fit:
    """``fit`` (time) made ``inconclusive`` with the reason where its depths do not span the growth it reads."""
    if fit.source != "time":
        return fit
    why = span_shortfall(fit.kind, list(fit.depths))
    if why:
        figure = f"x{fit.base:.2f}/layer" if fit.kind == "exponential" and fit.base else f"d^{fit.exponent or 0:.2f}"
        fit.notes.append(f"read {fit.kind} {figure} before the span rule")
        fit.kind, fit.reason, fit.predicts = "inconclusive", why, False
    return fit


__all__ = [
    "MIN_EXPONENTIAL_DEPTHS",
    "MIN_SPAN",
    "VISIBLE_SHARE",
    "require_span",
    "span_shortfall",
    "visible_shortfall",
    "visible_span",
]
