"""Points far over what the deciding model predicts from the depths below them (pure).

A point stopped by the budget or a timeout has a lower bound on its cost (its wall time until it was stopped); a
point that was measured may still jump far over what the depths below it predict (a cliff, or work the deciding
metric does not see). Both are evidence, never fitted. The prediction (:func:`expected`) scales the time of the
deepest measured depths below the point by the deciding model's growth between them (a generous quadratic when the
model predicts nothing), and takes the smallest of those scalings: a run is only ever slowed (by load, by a series'
first point loading the chain), so the least inflated scaling is the best estimate. Where the points carry their
program's figures, the scaling is at least what explains the cost: a phase that runs the program grows at least as
its arithmetic (FLOPs, else bytes), any other as its size (ops), a whole point as the fastest-growing figure. A
transform's counters that stay flat while an attention layer's run grows with its n x n scores is no jump.

Stopped points compare their wall time (per call: eager points' calls may differ) with the wall time the model
predicts; measured points each phase's time (a statistic of repeats where there are repeats): a jump in any phase
is a jump. The decision (:mod:`~adprof.analysis.classify`) reads :func:`time_jumps`: a bound :data:`BEYOND_FACTOR`
times its prediction is inconclusive, or a runaway when it ran past its own timeout or :data:`RUNAWAY_FACTOR`
times its prediction; a measured phase :data:`JUMP_FACTOR` times its prediction (by more than :data:`JUMP_FLOOR`
seconds, confirmed) is inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from adprof.analysis.costs import quick_deciding_fit
from adprof.analysis.models import predict
from adprof.model import RUNAWAY_FACTOR, Fit, Point, Series, TimeJump, point_wall, time_value

__all__ = [
    "BEYOND_FACTOR",
    "CONTRADICTING_EXCESS",
    "JUMP_FACTOR",
    "JUMP_FLOOR",
    "WALL_JUMP_FLOOR",
    "RUNAWAY_FACTOR",
    "SCALE_FROM",
    "cpu_values",
    "expected",
    "explaining_figures",
    "figure_growth",
    "growth_ratio",
    "point_time",
    "measured_jumps",
    "outgrows",
    "phase_seconds",
    "time_jumps",
    "unconfirmed_jumps",
    "whole_point_time",
]

#: A lower bound this many times its prediction contradicts the model (below it, timing noise or load could
#: explain it: a point killed by the budget's end at an ordinary moment is below its prediction).
BEYOND_FACTOR = 2.0
#: A measured point whose time is this many times its prediction jumped (one run in a loaded machine may be 2-3x
#: slower; a re-measured jump is the fastest of its runs).
JUMP_FACTOR = 5.0
#: Seconds a measured phase must exceed its prediction by to be a jump: of CPU time (below: the timer), or of wall
#: time (below: the scheduler; a loaded machine preempts a call for a few timeslices of some milliseconds each).
JUMP_FLOOR = 0.0005
WALL_JUMP_FLOOR = 0.02
#: The prediction is the smallest of the scalings from this many of the deepest measured depths below the point.
SCALE_FROM = 3
#: A jump that was not re-measured counts when every deeper depth shows it, at least this many.
PERSIST_DEPTHS = 2
#: Time contradicts a healthy deterministic reading when it grows this many times more than the metric (read by
#: adprof.analysis.classify; here the cheap test of it and which clock to read it in).
CONTRADICTING_EXCESS = 4.0
#: A whole-point wall time that outgrows the metric where its CPU time does not is read once its deepest depths
#: (this many) were re-measured.
CONFIRM_DEEPEST = 2
#: The exponent of the scaling when the deciding model predicts nothing (too few depths, no model).
FALLBACK_POWER = 2.0


def point_time(point: Point) -> float | None:
    """The summed time of a measured point's phases (each a statistic of its repeats), or None."""
    timed = [t for t in point.times.values() if t is not None and math.isfinite(t)]
    return float(sum(timed)) if timed else None


def _growth(fit: Fit | None) -> Callable[[float, float], float]:
    """The deciding model's cost ratio between two depths (a generous power law when it predicts nothing)."""

    def fallback(d: float, d0: float) -> float:
        return (max(d, 1.0) / max(d0, 1.0)) ** FALLBACK_POWER

    if fit is None or fit.kind == "inconclusive" or not fit.depths:
        return fallback

    def ratio(d: float, d0: float) -> float:
        now, then = predict(fit, d0), predict(fit, d)
        if now is None or then is None or now <= 0 or then < 0:
            return fallback(d, d0)
        return then / now if math.isfinite(then) else math.inf

    return ratio


#: The phases that run the program (read against its arithmetic); the others record, transform or compile it (read
#: against its size).
RUN_PHASES = frozenset({"record", "run", "forward", "backward", "forward0", "backward0"})
#: The figures that explain a run, in order of preference (the first one known at both depths), and the others'.
ARITHMETIC = ("flops", "bytes")
SIZE = ("ops",)


def explaining_figures(phase: str | None) -> tuple[str, ...]:
    """The program figures a phase's time is read against (None: a whole point, every figure)."""
    if phase is None:
        return (*SIZE, *ARITHMETIC)  # not the intermediates' bytes: they explain memory, not time
    return ARITHMETIC if phase in RUN_PHASES else SIZE


def _figures(series: Series) -> dict[int, dict[str, float]]:
    """The program's figures at each depth that carries them (positive, finite)."""
    out: dict[int, dict[str, float]] = {}
    for p in series.points:
        prog = p.program if isinstance(p.program, dict) else None
        for name, value in (prog or {}).items():
            if isinstance(value, int | float) and math.isfinite(value) and value > 0:
                out.setdefault(p.depth, {})[name] = float(value)
    return out


def _figure_ratios(figures: dict[int, dict[str, float]], names: tuple[str, ...], lo: int, hi: int) -> list[float]:
    """How many times each of ``names`` (in their order) grows from depth ``lo`` to ``hi``, where both carry it."""
    now, then = figures.get(lo, {}), figures.get(hi, {})
    return [then[n] / now[n] for n in names if n in now and n in then]


def figure_growth(series: Series, phases: tuple[str, ...], lo: int, hi: int) -> float | None:
    """How many times the figures that explain ``phases`` grow from depth ``lo`` to ``hi`` (the largest of them; runs
    against the arithmetic, the others against the size, a mix against every figure); None where unknown."""
    kinds = {ph in RUN_PHASES for ph in phases}
    names = explaining_figures(None if len(kinds) != 1 else phases[0])
    known = _figure_ratios(_figures(series), names, lo, hi)
    return max(known) if known else None


def _explained(
    series: Series, growth: Callable[[float, float], float], phase: str | None
) -> Callable[[float, float], float]:
    """``growth``, raised where the program's own figures grow faster between the two depths (see the module)."""
    figures = _figures(series)
    names = explaining_figures(phase)
    if not figures:
        return growth

    def ratio(d: float, d0: float) -> float:
        g = growth(d, d0)
        known = _figure_ratios(figures, names, int(d0), int(d))
        if not known:
            return g
        return max(g, max(known) if phase is None else known[0])

    return ratio


def expected(
    series: Series,
    depth: int,
    fit: Fit | None,
    value: Callable[[Point], float | None],
    under: int | None = None,
    largest: bool = False,
    phase: str | None = None,
) -> tuple[float, list[int]] | None:
    """What the deciding model predicts for ``value`` of a point at ``depth``, scaled from the deepest measured
    depths below it (or below ``under``; the fastest point of each), and those depths; None without one.
    ``largest``: the largest of the scalings (a budget estimate), not the smallest; ``phase``: the phase ``value``
    reads (its explaining figures: :func:`explaining_figures`), None for a whole point."""
    limit = depth if under is None else under
    below: dict[int, float] = {}
    for p in series.points:
        v = value(p) if not p.censored and p.depth < limit else None
        if v is not None and v > 0:
            below[p.depth] = min(v, below.get(p.depth, math.inf))
    if not below:
        return None
    growth = _explained(series, _growth(fit), phase)
    froms = sorted(below)[-SCALE_FROM:]
    scaled = [below[d0] * growth(float(depth), float(d0)) for d0 in froms]
    return (max(scaled) if largest else min(scaled)), froms


def phase_seconds(phase: str, cpu: bool = False) -> Callable[[Point], float | None]:
    """A phase's seconds of a point: its time (wall), or its CPU time where the backend read one."""

    def value(p: Point) -> float | None:
        t = (p.cpu_times if cpu else p.times).get(phase)
        return float(t) if t is not None and math.isfinite(t) else None

    return value


def cpu_values(series: Series, phases: tuple[str, ...]) -> dict[int, list[float]] | None:
    """The summed CPU seconds of ``phases`` per measured depth, when every measured point carries them (the
    measuring thread's: a call preempted on a loaded machine takes longer on the wall clock only), else None."""
    out: dict[int, list[float]] = {}
    for p in series.points:
        if p.censored or not any(ph in p.times for ph in phases):
            continue
        if not all(ph in p.cpu_times for ph in phases if ph in p.times):
            return None
        out.setdefault(p.depth, []).append(sum(p.cpu_times[ph] for ph in phases if ph in p.times))
    return out or None


def wall_time(series: Series, phases: tuple[str, ...]) -> dict[int, float]:
    """The summed wall time of ``phases`` per measured depth (its fastest measurement)."""
    times: dict[int, float] = {}
    for p in series.points:
        t = time_value(p, phases) if not p.censored else None
        if t:
            times[p.depth] = min(t, times.get(p.depth, math.inf))
    return times


def _wall_only(series: Series, phases: tuple[str, ...], metric: Fit | None) -> tuple[dict[int, float], bool]:
    """The whole point's wall time per depth, and whether it outgrows the metric where the CPU time does not (load
    on the deepest depths, or work that waits, such as a sleep: re-measuring them tells which)."""
    wall = wall_time(series, phases)
    cpu = cpu_values(series, phases)
    if metric is None or cpu is None or not outgrows(wall, metric):
        return wall, False
    return wall, not outgrows({d: min(v) for d, v in cpu.items()}, metric)


def whole_point_time(series: Series, phases: tuple[str, ...], metric: Fit) -> tuple[dict[int, float], str]:
    """The summed time of ``phases`` per measured depth and its clock: CPU time where every point carries it, but
    wall time when only the wall time outgrows the metric and its deepest depths were re-measured (a growth that
    waits, not load); wall time without CPU times."""
    wall, wall_only = _wall_only(series, phases, metric)
    cpu = cpu_values(series, phases)
    if cpu is None:
        return wall, "wall"
    deepest = sorted(wall)[-CONFIRM_DEEPEST:]
    if wall_only and all(any(p.confirm_walls for p in series.points if p.depth == d) for d in deepest):
        return wall, "wall"
    return {d: min(v) for d, v in cpu.items()}, "cpu"


def growth_ratio(a: float | None, b: float | None) -> float | None:
    """How many times ``a`` the value ``b`` is: 1 for a cost that stays at zero (a metric that counts nothing at
    any depth does not grow), infinite for one that starts at zero; None when either is unknown or negative."""
    if a is None or b is None or a < 0 or b < 0:
        return None
    if a == 0:
        return 1.0 if b == 0 else math.inf
    return b / a


def outgrows(times: dict[int, float], metric: Fit) -> bool:
    """A time (per depth) grows :data:`CONTRADICTING_EXCESS` times more than the metric between their first and
    deepest common depths (the cheap test before a bootstrap fit)."""
    at = dict(zip(metric.depths, metric.values, strict=True))
    common = sorted(set(times) & set(at))
    if len(common) < 4 or times[common[0]] <= 0:
        return False
    lo, hi = common[0], common[-1]
    grown = growth_ratio(at[lo], at[hi])  # a metric that stays at zero does not grow
    return grown is not None and times[hi] / times[lo] >= CONTRADICTING_EXCESS * grown


def _timed_phases(series: Series) -> list[str]:
    seen: dict[str, None] = {}
    for p in series.points:
        if not p.censored:
            seen.update(dict.fromkeys(ph for ph, t in p.times.items() if t is not None))
    return list(seen)


def _onset(
    depths: list[int], values: list[float], growth: Callable[[float, float], float], floor: float
) -> tuple[int, float] | None:
    """The first index ``i`` from which every value is :data:`JUMP_FACTOR` times what the deepest :data:`SCALE_FROM`
    values below ``i`` predict, one of them by ``floor`` seconds or more, and the prediction at ``i``."""
    n = len(depths)
    for i in range(1, n):
        base = list(range(max(0, i - SCALE_FROM), i))
        preds = [min(values[b] * growth(float(depths[j]), float(depths[b])) for b in base) for j in range(i, n)]
        ratios_ok = all(values[j] >= JUMP_FACTOR * preds[j - i] for j in range(i, n))
        if ratios_ok and max(values[j] - preds[j - i] for j in range(i, n)) >= floor:
            return i, preds[0]
    return None


def measured_jumps(series: Series, fit: Fit | None) -> list[TimeJump]:
    """Per phase, the depth from which its time jumps: every depth from it on :data:`JUMP_FACTOR` times what the
    depths below it predict, by more than a floor somewhere; confirmed or not; the fastest measurement of each
    depth. A phase whose points all carry the measuring thread's CPU time jumps in CPU time (over
    :data:`JUMP_FLOOR`): a call preempted on a loaded machine takes longer on the wall clock only. Others jump in
    wall time (over :data:`WALL_JUMP_FLOOR`: a few timeslices of a loaded machine). The earliest first."""
    out: list[TimeJump] = []
    measured = [p for p in series.points if not p.censored]
    for ph in _timed_phases(series):
        growth = _explained(series, _growth(fit), ph)
        cpu = all(ph in p.cpu_times for p in measured if ph in p.times)
        value, floor = phase_seconds(ph, cpu), JUMP_FLOOR if cpu else WALL_JUMP_FLOOR
        fastest: dict[int, float] = {}
        for p in measured:
            v = value(p)
            if v is not None and v > 0:
                fastest[p.depth] = min(v, fastest.get(p.depth, math.inf))
        depths = sorted(fastest)
        got = _onset(depths, [fastest[d] for d in depths], growth, floor)
        if got is not None:
            i, predicted = got
            froms = depths[max(0, i - SCALE_FROM) : i]
            out.append(TimeJump(depths[i], fastest[depths[i]], predicted, froms, phase=ph, cpu=cpu))
    return sorted(out, key=lambda j: (j.depth, -j.ratio))


def _counts(series: Series, jump: TimeJump) -> bool:
    """A measured jump that is evidence: its depth was re-measured (the fastest run still jumps), or every one of
    at least :data:`PERSIST_DEPTHS` deeper depths shows it too (not a slow run, nor a burst over two points), or
    the measuring found no room to re-measure it (then it cannot be ruled out: ``confirmed`` is False)."""
    at = [p for p in series.points if p.depth == jump.depth and not p.censored]
    deeper = {p.depth for p in series.points if p.depth > jump.depth and not p.censored}
    if any(p.confirm_walls for p in at) or len(deeper) >= PERSIST_DEPTHS:
        return True
    jump.confirmed = False
    return jump.depth in series.unconfirmed_depths


def time_jumps(series: Series, fit: Fit | None) -> list[TimeJump]:
    """The stopped points whose wall time is over :data:`BEYOND_FACTOR` times its prediction, and the measured
    phases whose time jumps (:func:`measured_jumps`) with the evidence to count (:func:`_counts`), in depth order."""
    out: list[TimeJump] = []
    for p in series.points:
        if not p.censored:
            continue
        wall = point_wall(p)
        got = expected(series, p.depth, fit, point_wall) if wall is not None else None
        if wall is None or got is None or wall < BEYOND_FACTOR * got[0]:
            continue
        reason = p.censor_reason.value if p.censor_reason is not None else ""
        out.append(TimeJump(p.depth, wall, got[0], got[1], bound=True, stopped_by=reason, phase=p.censored_phase))
    out.extend(j for j in measured_jumps(series, fit) if _counts(series, j))
    return sorted(out, key=lambda j: (j.depth, not j.bound))


def unconfirmed_jumps(series: Series, confirmed: bool = False) -> list[int]:
    """The depths to re-measure, not re-measured yet (``confirmed``: re-measured or not): each phase's jump onset
    and every deeper depth (they all jump), and the deepest depths when only the whole point's wall time outgrows
    the deciding metric. The measuring layer re-measures them at the end of the series, when a burst of load is
    over: a jump (or a cost that waits) repeats, a burst does not."""
    fit = quick_deciding_fit(series)
    onsets = [j.depth for j in measured_jumps(series, fit)]
    measured = sorted({p.depth for p in series.points if not p.censored})
    depths = {d for d in measured if onsets and d >= min(onsets)}
    whole = tuple(_timed_phases(series))
    wall_only = fit is not None and fit.source != "time" and bool(whole) and _wall_only(series, whole, fit)[1]
    if wall_only:
        depths |= set(measured[-CONFIRM_DEEPEST:])
    if confirmed:  # still jumping after a re-run: a burst of load may have hit the re-run too
        return sorted(d for d in depths if d in onsets or (wall_only and d in measured[-CONFIRM_DEEPEST:]))
    return sorted(d for d in depths if not any(p.confirm_walls for p in series.points if p.depth == d))
