"""A guard that cannot decide in its budget: the rule that tells a noisy time reading from a pathology, the measured
noise of a series, and the budget that would decide it.

Where time decides (no deterministic counter or metric), a rate's interval measures the machine's noise. The rule
(:func:`time_outcome`) against the limit (widened by the time tolerance):

- the rate at or under the limit: the limit holds (as before);
- the whole interval above the limit (or the rate above it and the whole interval above the limit before the
  tolerance): a pathology, clearly decided (exit 1);
- an inconclusive time reading (no class) whose whole interval is at or under the limit: the limit holds;
- the rate above the limit with the interval's bottom under it (the interval spans the limit), or an inconclusive
  time reading whose interval spans the limit: undecided. The guard re-measures it first
  (:func:`adprof.guard.plan.settle_noisy`: more repeats of its depths, within the budget); still undecided, it is
  reported apart, with its noise and the budget that would decide (exit 4, never 1).

A reading decided by a deterministic counter or metric is never undecided: the rule reads time-decided fits only,
and only where noise may be all that keeps them from deciding (:func:`noise_may_explain`: repeats measured, no
jump, no change of regime, not at a model grid's edge, depths that span the growth).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from adprof import model
from adprof.analysis.span import span_shortfall
from adprof.guard.outcome import Noise, Outcome, Reading
from adprof.model import Result, Series
from adprof.verdicts import Source

#: How many times the guard re-measures an undecided series (each time with more repeats) before it says so.
REMEASURE_ROUNDS = 2
#: Each re-measure multiplies the repeats at least by this (the interval's width shrinks like 1/sqrt(repeats):
#: x4 halves it) ...
REMEASURE_FACTOR = 4
#: ... up to this many repeats per phase and depth.
MAX_REPEATS = 64
#: The fewest repeats per depth a re-measure cut down to the budget still makes (fewer: not worth a new worker).
MIN_REMEASURE_REPEATS = 8
#: A re-measure is started only when its estimated seconds, times this, fit in what is left of the budget.
BUDGET_SAFETY = 1.5


def time_outcome(rate: float, low: float, high: float, bound: float, limit: float | None = None) -> Outcome:
    """The decision of a time-decided rate against its limit ``bound`` (widened by the time tolerance), by its
    interval ``[low, high]``: held when the rate is at or under the limit, failed when the whole interval is above
    it, or when the rate is over it and the whole interval above ``limit`` itself (the limit before the tolerance:
    the interval already measures the noise that the tolerance is for), else undecided. A rate over ``limit``
    itself but under the widened ``bound`` holds only when its whole interval is under ``bound``: the tolerance
    is for noise, and an interval that reaches over it says the noise may hide a pathology (torch eager `hooked`,
    quadratic, read d^1.43 [1.16, 1.72] under a busy loop and passed, 1 run of 20)."""
    if rate <= bound:
        over_limit = limit is not None and rate > limit and high > bound
        return Outcome.UNDECIDED if over_limit else Outcome.HELD
    if low > bound or (limit is not None and low > limit):
        return Outcome.FAILED
    return Outcome.UNDECIDED


def inconclusive_outcome(low: float, high: float, bound: float) -> Outcome:
    """The decision of an inconclusive time reading (its class undecided) with an interval: held when the whole
    interval is at or under the limit (every plausible rate holds it, whatever the class), failed when it is all
    above (as an inconclusive reading fails a guard), else undecided (it spans the limit: more repeats may decide)."""
    if high <= bound:
        return Outcome.HELD
    return Outcome.UNDECIDED if low <= bound else Outcome.FAILED


def repeats_to_decide(rate: float, low: float, high: float, bound: float, repeats: int) -> float | None:
    """The repeats at which the interval (its width shrinking like 1/sqrt(repeats), around ``rate``) would leave the
    limit on one side: the side ``rate`` is on. None when the rate sits on the limit (no finite count decides)."""
    gap = abs(rate - bound)
    half = (rate - low) if rate > bound else (high - rate)
    if gap <= 1e-9 * max(1.0, abs(bound)) or not math.isfinite(half):
        return None
    if half <= gap:  # already decided on that side
        return float(repeats)
    return repeats * (half / gap) ** 2


def time_decided(fit: model.Fit | None) -> bool:
    """The reading is decided on time (no deterministic counter or metric decided it)."""
    return fit is not None and fit.source is Source.TIME


def noise_may_explain(result: Result, fit: model.Fit, reading: Reading) -> bool:
    """Whether the machine's noise may be all that keeps ``fit`` from deciding, so that more repeats could decide
    it: the series' points carry time repeats, no point jumped far over the depths below it (a jump is evidence of
    its own), no change of regime was read, the fit is not pinned at a model grid's edge, and its depths span the
    growth it would read (:func:`adprof.analysis.span.span_shortfall`)."""
    v = result.verdict
    if v.jumps or v.knee is not None or fit.grid_edge or not _phase_samples(result.series):
        return False
    family = "exponential" if reading is Reading.BASE else "superlinear"
    return not span_shortfall(family, list(fit.depths))


def top_halving_bound(result: Result, fit: model.Fit) -> float | None:
    """The most a power law ``a + c*d^p`` through the deepest halving of a time reading can grow there: the local
    exponent of its growing part between the deepest depth ``D`` and ``D/2``, with the overhead ``a`` as large as the
    points allow (the least value at any depth: a grows the ratio) and the ratio widened by the repeats' spread
    (:func:`spread_of`). None without a halving pair at the top, where the growing part vanishes at ``D/2``, or
    when a point was censored (killed or cut by the budget: its lower bound is evidence the halving cannot see).

    A model that misfits the shallow depths (XLA compiles a 4-layer program slower than an 8-layer one, every run)
    widens the fit's interval for good: more repeats cannot narrow it. The deepest halving still bounds the growth
    where the guard asks about it (JAX compile of ``mlp``: d^0.38 [0.06, 3.98] from 106-210 ms over 2..64, whose top
    halving grows at most d^1.07)."""
    at = dict(zip(fit.depths, fit.values, strict=False))
    if len(at) < 3 or fit.censored_depths:  # a point cut short is evidence past the top: no bound below it
        return None
    top = max(at)
    half = top // 2 if top % 2 == 0 else None
    if half is None or half not in at:
        return None
    overhead = min(at.values())
    grown_top, grown_half = at[top] - overhead, at[half] - overhead
    if grown_half <= 0 or grown_top <= 0:
        return None
    ratio = grown_top / grown_half * (1.0 + spread_of(result.series))
    return math.log2(ratio)


def _phase_samples(series: Series) -> list[list[float]]:
    """The time repeats of the classified phases, one list per (depth, phase) with at least two."""
    phases = model.classified_phases(series)
    out = []
    for p in series.points:
        if p.censored:
            continue
        for ph in phases:
            got = [x for x in p.samples.get(ph) or () if x is not None and math.isfinite(x)]
            if len(got) >= 2:
                out.append(got)
    return out


def repeats_of(series: Series) -> int:
    """The repeats per depth and phase the series was measured with (the median; 1 when none were kept)."""
    counts = [len(s) for s in _phase_samples(series)]
    return max(1, int(statistics.median(counts))) if counts else 1


def spread_of(series: Series) -> float:
    """The repeats' relative spread: the median over depths and phases of (max - min) / median (0 when unknown)."""
    spreads = []
    for got in _phase_samples(series):
        mid = statistics.median(got)
        if mid > 0:
            spreads.append((max(got) - min(got)) / mid)
    return float(statistics.median(spreads)) if spreads else 0.0


def series_seconds(series: Series) -> float:
    """Wall seconds the series' points took (what re-measuring it costs, at its repeats)."""
    return float(sum(p.wall_seconds or 0.0 for p in series.points))


def noise_of(
    result: Result,
    reading: Reading,
    rate: float,
    interval: Sequence[float],
    bound: float,
    remeasured: int = 0,
    budget: float | None = None,
) -> Noise:
    """The measured noise of an undecided reading and the seconds that would decide it."""
    low, high = float(interval[0]), float(interval[1])
    s = result.series
    repeats = repeats_of(s)
    seconds = series_seconds(s)
    need = repeats_to_decide(rate, low, high, bound, repeats)
    needed = None if need is None else seconds * need / repeats
    return Noise(reading, rate, low, high, bound, repeats, spread_of(s), remeasured, seconds, needed, budget)


def noisy_interval(fit: model.Fit | None) -> tuple[Reading, float, tuple[float, float]] | None:
    """(BASE or EXPONENT, the rate, its interval) of a time-decided fit with a finite interval, else None."""
    if not time_decided(fit) or fit is None or not fit.interval or len(fit.interval) != 2:
        return None
    low, high = fit.interval
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    if fit.base is not None and (fit.kind == "exponential" or fit.exponent is None):
        return Reading.BASE, float(fit.base), (float(low), float(high))
    rate = fit.exponent if fit.exponent is not None else (low + high) / 2
    return Reading.EXPONENT, float(rate), (float(low), float(high))


__all__ = [
    "BUDGET_SAFETY",
    "MAX_REPEATS",
    "REMEASURE_FACTOR",
    "REMEASURE_ROUNDS",
    "inconclusive_outcome",
    "noise_may_explain",
    "noise_of",
    "noisy_interval",
    "repeats_of",
    "repeats_to_decide",
    "series_seconds",
    "spread_of",
    "time_decided",
    "time_outcome",
]
