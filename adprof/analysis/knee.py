"""A change of regime (a knee): a cost that follows a straight line up to a depth, then grows over it (pure).

One law cannot read such a series: over the whole range the exact reading says "emerging" and the noisy one an
exponent with a wide interval. The knee is the deepest depth ``K`` up to which the series follows a straight line
(:func:`_line`: at least :data:`MIN_BEFORE` depths, growing at most like ``d^1.3`` end to end) while every deeper
depth costs more than that line extrapolates, increasingly (exact values: any excess; noisy: the deepest at least
:data:`KNEE_EXCESS` over it). The law after the knee is the reading of that excess against the steps past ``K``
(``d - K``), by the same fit as any series: exponential, superlinear, mild; linear (a steeper line: its slope over
the line's is :attr:`Knee.slope_ratio`); or undecided, with fewer than :data:`MIN_AFTER` depths past the knee
(exact values only: noisy values need that many to tell a knee from a slowed depth or two).
"""

from __future__ import annotations

import math

import numpy as np

from adprof.analysis.bands import SUPERLINEAR_MIN
from adprof.analysis.growth import fit_growth
from adprof.analysis.models import predict
from adprof.model import Fit, Knee

__all__ = ["KNEE_EXCESS", "MIN_AFTER", "MIN_BEFORE", "find_knee", "one_law_suffices"]

MIN_BEFORE = 4  # depths up to the knee (inclusive) that read linear
MIN_AFTER = 3  # depths past the knee that read the law after it
KNEE_EXCESS = 0.2  # noisy values: the deepest depth at least this share over the linear model's extrapolation
EXACT_EXCESS = 1e-6  # exact values: an excess above rounding
LINE_RESIDUAL = 0.1  # noisy values: the straight line up to the knee misses no depth by more than this share
EXACT_RESIDUAL = 0.03  # exact values: a compiler's counts wobble a little about a line
REFINE_SPLITS = 12  # noisy values: the splits tried below the deepest that holds
#: A knee (two laws) is read only where it misses the depths this many times less than one law over all of them
#: (root mean square of the relative misses): the knee's line and law have more freedom, and fit a little better
#: even where one law is the whole truth (an overhead plus a power law reads "flat, then growing").
KNEE_BETTER = 2.0
#: Misses below this (relative, root mean square) are rounding: one law that close is the whole truth.
FIT_ROUNDING = 1e-3


def _line(depths: list[int], values: list[float], fit: Fit) -> Fit | None:
    """The straight line (least squares, ``a + b*d``) through the depths up to the knee when they follow one: the
    cost over them grows at most like ``d^SUPERLINEAR_MIN`` end to end and the line misses no depth by more than
    :data:`LINE_RESIDUAL` (exact values: :data:`EXACT_RESIDUAL`); None otherwise."""
    d, v = np.asarray(depths, float), np.asarray(values, float)
    if len(d) < MIN_BEFORE or v.min() <= 0 or d.min() <= 0:
        return None
    if (math.log(v[-1]) - math.log(v[0])) / math.log(d[-1] / d[0]) >= SUPERLINEAR_MIN:
        return None
    b, a = np.polyfit(d, v, 1)
    if b < 0:
        return None
    worst = float(np.max(np.abs(a + b * d - v) / v))
    if worst > (EXACT_RESIDUAL if fit.source != "time" else LINE_RESIDUAL):
        return None
    line = Fit(metric=f"{fit.metric} up to {int(d[-1])}", kind="linear", source=fit.source, axis=fit.axis)
    line.metric_name = fit.metric_name
    line.model, line.exponent, line.overhead, line.scale = "a + c*d^p", 1.0, float(a), float(b * d[-1])
    line.depths, line.values = [int(x) for x in d], [float(x) for x in v]
    line.interval = [1.0, 1.0]
    line.method = "straight line (least squares) up to the knee"
    return line


def _excess(before: Fit, depths: list[int], values: list[float]) -> list[float] | None:
    """What each depth costs over the linear model's extrapolation (None when the model predicts nothing)."""
    out = []
    for d, v in zip(depths, values, strict=True):
        p = predict(before, d)
        if p is None or not math.isfinite(p) or p <= 0:
            return None
        out.append(v - p)
    return out


def _split(d: list[int], v: list[float], i: int, fit: Fit, exact: bool) -> tuple[Fit, list[float], float] | None:
    """The straight line up to ``d[i]``, the excess past it (rising, over the floor), and the relative misfit of
    the line and a quick law of the excess together (None when the split does not hold)."""
    before = _line(d[: i + 1], v[: i + 1], fit)
    if before is None:
        return None
    past_d, past_v = d[i + 1 :], v[i + 1 :]
    if not exact and len(past_d) < MIN_AFTER:  # noise: one or two slowed depths past a line are no knee
        return None
    excess = _excess(before, past_d, past_v)
    if excess is None:
        return None
    scale = max((abs(x) for x in v), default=0.0) or 1.0
    rising = all(b > a for a, b in zip(excess, excess[1:], strict=False))
    floor = EXACT_EXCESS * scale if exact else KNEE_EXCESS * (past_v[-1] - excess[-1])
    if not (rising and excess[0] > 0 and excess[-1] > floor):
        return None
    miss = sum(((predict(before, x) or 0.0) / y - 1) ** 2 for x, y in zip(d[: i + 1], v[: i + 1], strict=True))
    if len(past_d) >= MIN_AFTER:
        quick = fit_growth([x - d[i] for x in past_d], excess, exact=exact, source=fit.source, bootstrap=False)
        if quick.depths:
            for x, y, e in zip(past_d, past_v, excess, strict=True):
                m = predict(quick, x - d[i])
                miss += (((y - e) + (m if m is not None and math.isfinite(m) else e)) / y - 1) ** 2
    return before, excess, miss


def find_knee(fit: Fit) -> Knee | None:
    """The change of regime of a series (its deciding fit's depths and values), or None (see the module docstring):
    the deepest split that holds shows there is one, and is the knee of exact values; for noisy values, among the
    splits that hold at or below it, the knee is where the line and the law past it miss the depths least."""
    exact = fit.source != "time"
    pairs = sorted(zip(fit.depths, fit.values, strict=True))
    d, v = [int(x) for x, _ in pairs], [float(y) for _, y in pairs]
    deepest = next((i for i in range(len(d) - 2, MIN_BEFORE - 2, -1) if _split(d, v, i, fit, exact)), None)
    if deepest is None:
        return None
    if exact:  # exact values follow the line up to the knee: the deepest split is it
        i = deepest
        before, excess, _ = _split(d, v, i, fit, exact) or (None, [], 0.0)
    else:  # noise lets the line reach past the knee: the split that misses least, among the last few
        lo = max(MIN_BEFORE - 1, deepest - REFINE_SPLITS)
        splits = {i: got for i in range(lo, deepest + 1) if (got := _split(d, v, i, fit, exact))}
        enough = {i: got for i, got in splits.items() if len(d) - 1 - i >= MIN_AFTER} or splits
        i = min(enough, key=lambda k: enough[k][2])
        before, excess, _ = enough[i]
    assert before is not None
    past_d, past_v = d[i + 1 :], v[i + 1 :]
    slope = (past_v[-1] - v[i]) / (past_d[-1] - d[i])  # the slope past the knee, over the line's
    line_slope = (before.scale or 0.0) / max(d[i], 1)
    # a flat line (its rise over its depths within rounding): any growth past it is infinitely steeper
    flat_line = (before.scale or 0.0) <= EXACT_EXCESS * max(abs(x) for x in v)
    ratio = math.inf if flat_line and slope > 0 else slope / line_slope if line_slope > 0 else None
    knee = Knee(d[i], past_d[0], before, past_d, excess, slope_ratio=ratio)
    if len(past_d) >= MIN_AFTER:
        after = fit_growth(
            [x - d[i] for x in past_d], excess, exact=exact, source=fit.source, metric=f"{fit.metric} past {d[i]}"
        )
        after.axis, after.metric_name = fit.axis, fit.metric_name
        knee.after = after if after.kind != "inconclusive" else None
        knee.after_reason = after.reason if after.kind == "inconclusive" else ""
    else:
        knee.after_reason = f"{len(past_d)} depth{'s' if len(past_d) > 1 else ''} past it (need {MIN_AFTER})"
    return knee


def _rms(misses: list[float]) -> float:
    return math.sqrt(sum(x * x for x in misses) / len(misses)) if misses else math.inf


def _law_misses(fit: Fit) -> list[float]:
    """The relative miss of one law (the whole series' fit) at each of its depths."""
    out = []
    for d, y in zip(fit.depths, fit.values, strict=True):
        m = predict(fit, d)
        if m is None or not math.isfinite(m) or y <= 0:
            return []
        out.append(m / y - 1)
    return out


def _knee_misses(fit: Fit, knee: Knee) -> list[float]:
    """The relative miss of the knee's two laws (its line up to it, the line plus the law of the excess past it)."""
    out = []
    for d, y in zip(fit.depths, fit.values, strict=True):
        line = predict(knee.before, d)
        if line is None or not math.isfinite(line) or y <= 0:
            return []
        if d > knee.depth:
            if knee.after is None:
                return []
            extra = predict(knee.after, d - knee.depth)
            if extra is None or not math.isfinite(extra):
                return []
            line += extra
        out.append(line / y - 1)
    return out


def one_law_suffices(fit: Fit, knee: Knee) -> bool:
    """One law over every depth (``fit``) explains the series about as well as the knee's two laws: it misses no
    more than rounding, or no more than :data:`KNEE_BETTER` times what the knee misses. Then there is no change of
    regime to read: an overhead plus a power law is flat, then grows, and its whole reading is the truth."""
    whole = _rms(_law_misses(fit))
    if whole <= FIT_ROUNDING:
        return True
    two = _rms(_knee_misses(fit, knee))
    return math.isfinite(two) and whole <= KNEE_BETTER * two
