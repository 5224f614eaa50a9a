"""The memory decision on one Series (pure): what the gradient holds against depth, and what each call leaves behind.

Three figures, read by the machinery that reads time and work (no second classifier):

* ``saved_bytes`` (deterministic: bytes the gradient keeps alive between forward and backward) is an exact
  metric: it is handed to :func:`adprof.analysis.classify.decide` as the one deciding work metric of a series that
  holds nothing else, so the marginal reading, its interval, the knee, the halving and tail cross-checks and the
  evidence lines are the counters' own. The reading names the memory verdict: ``linear`` (one residual per layer),
  ``flat`` (no growth, or at most about sqrt(d): checkpointed, or scanned with remat), ``mildly-superlinear-memory``
  (1.15 <= p < 1.3), ``superlinear-memory`` (p >= 1.3), ``exponential-memory``, or ``inconclusive`` with its reason.
* ``peak_bytes`` (the worker's high-water mark: measured, noisy) is fitted as time is (models with an overhead),
  a cross-check: the verdict says when its class disagrees with the deterministic figure's. Where it is the only
  figure measured, the verdict is ``peak-only`` with its figure (:mod:`adprof.analysis.peak_only`): a noisy figure
  is never the only evidence for a finding.
* ``retained`` (eager: bytes still held after each call and ``gc.collect()``, entry i after calls 0..i) is read
  per depth against the call count, exact, with calls as the axis: a reading that grows is a leak
  (``leak-per-call``, with the bytes per call), whatever the depth reading says; flat at every depth is no leak.

Imports only the model, the constants and the rest of analysis.
"""

from __future__ import annotations

import math

from adprof import model, verdicts
from adprof.analysis import explain
from adprof.analysis.classify import decide
from adprof.analysis.growth import fit_growth
from adprof.analysis.peak_only import peak_only_reading
from adprof.model import (
    INCONCLUSIVE,
    LEAK_PER_CALL,
    MEMORY_FLAT,
    MEMORY_LINEAR,
    PEAK_BYTES,
    SAVED_BYTES,
    Fit,
    LeakReading,
    MemoryVerdict,
    Noun,
    Point,
    Series,
)
from adprof.util.text import range_text
from adprof.words import fit_figure, fmt_bytes

#: The phase under which the memory series carries its figure (what the evidence lines name).
MEMORY_PHASE = "memory"
#: How the memory verdict's evidence names the saved bytes (decide() names the deciding metric so).
SAVED_NOUN = Noun("saved-for-backward bytes", plural=True)
#: A power reading whose exponent interval tops out below this is ``flat``: it grows at most about as sqrt(d)
#: (segment checkpointing), nothing like one residual per layer.
FLAT_MAX_EXPONENT = 0.6
#: An exact reading whose interval (the spread of its tail's local readings) is at most this wide (relative, for a
#: base) follows one law: a knee the decision finds in it is the curvature of that law, not a change of regime.
CONVERGED = 0.05
#: Saved bytes below this at every depth are below what the peak (resident pages, allocator arenas) resolves: the
#: peak is not compared with them.
PEAK_RESOLUTION = float(2**20)
#: A leak is read on at least this many calls (the measurement's untimed calls after the timed ones, whose caches
#: are warm: call 0 of them counts); fewer: undecided.
LEAK_MIN_CALLS = 3
#: Retained bytes are exact (the bytes still alive of the objects the calls made): a rise of at least this much per
#: call on average, and on each of the last two calls, is a leak.
LEAK_FLOOR_BYTES = 1.0


def _figure(point: Point, name: str) -> float | None:
    value = point.memory.get(name) if isinstance(point.memory, dict) else None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    return float(value) if ok else None


def _measured(series: Series, name: str) -> list[Point]:
    """The points (exact, not censored) that carry figure ``name``."""
    return [p for p in series.points if not p.censored and _figure(p, name) is not None]


def memory_series(series: Series, name: str = SAVED_BYTES) -> Series:
    """A series holding only one deterministic memory figure, as the work metric that decides: what
    :func:`~adprof.analysis.classify.decide` reads as it reads any exact metric (no times, no counters, no stop)."""
    points = [
        Point(depth=p.depth, metrics={MEMORY_PHASE: {name: _figure(p, name)}}, status=p.status)
        for p in _measured(series, name)
    ]
    return model.Series(
        chain=series.chain,
        backend=series.backend,
        profile=series.profile,
        mode="traced",  # the eager call-0 and amortization readings are the time verdict's, not memory's
        points=points,
        deciding_metrics=[name],
        classified_phases=[MEMORY_PHASE],
        axis=series.axis,
        params=dict(series.params),
        file=series.file,
    )


def depth_kind(fit: Fit, kind: str) -> str:
    """The memory verdict of a depth reading (``kind``: the decision's reading of ``fit``, possibly past a knee)."""
    if kind == MEMORY_LINEAR:
        top = fit.interval[1] if fit.interval else fit.exponent
        if fit.exponent == 0.0 or (top is not None and top < FLAT_MAX_EXPONENT):
            return MEMORY_FLAT
    return kind


def _saved_reading(mv: MemoryVerdict, series: Series) -> None:
    """The deterministic reading: ``saved_bytes`` decided as an exact metric by :func:`decide`."""
    v = decide(memory_series(series, SAVED_BYTES), trust="counters", named=SAVED_NOUN)
    mv.decided_by, mv.fit, mv.knee = SAVED_BYTES, v.fit, v.knee
    kind = verdicts.memory_kind(v.kind)  # a runaway bound names none: no bound is measured in memory
    if v.knee is not None and v.fit is not None and _converged(v.fit):
        # the whole series reads one law whose tail has converged (exact bytes): that law, not the excess past a knee
        v.evidence = [e for e in v.evidence if e != v.knee.evidence]
        mv.knee, kind = None, verdicts.memory_reading(v.fit.kind)
    read = mv.knee.after if mv.knee is not None and mv.knee.after is not None else v.fit
    mv.growth = depth_kind(read, kind) if read is not None else kind
    if mv.growth == INCONCLUSIVE:
        mv.reason = v.reason or (v.fit.reason if v.fit is not None else "") or "the saved bytes read no law"
    mv.evidence.extend(v.evidence)


def _converged(fit: Fit) -> bool:
    """An exact reading of a growth whose tail's local readings agree to :data:`CONVERGED` (the spread that is its
    interval): the series follows that one law to its deepest depths."""
    if fit.kind not in ("linear", "mild", "superlinear", "exponential") or not fit.interval:
        return False
    lo, hi = fit.interval
    return hi - lo <= (CONVERGED * lo if fit.kind == "exponential" else CONVERGED)


def _peak_fit(series: Series, deciding: bool) -> Fit | None:
    """The peak's noisy fit: with the bootstrap interval where it decides (as time's), the profile interval where it
    is a cross-check only."""
    points = _measured(series, PEAK_BYTES)
    if not points:
        return None
    fit = fit_growth(
        [p.depth for p in points],
        [_figure(p, PEAK_BYTES) for p in points],
        metric=f"{PEAK_BYTES}: the worker's high-water mark",
        source="memory",
        bootstrap=deciding,
    )
    fit.axis = series.axis
    return fit


def _cross_check(mv: MemoryVerdict, peak: Fit) -> None:
    """The peak's class against the deterministic figure's: the verdict says when they disagree. Saved bytes below
    the peak's resolution (:data:`PEAK_RESOLUTION`: it counts resident pages, the allocator keeps arenas) cannot be
    seen in it: no cross-check then."""
    mv.peak_fit = peak
    peak_kind = depth_kind(peak, verdicts.memory_reading(peak.kind))
    figure = fit_figure(peak, interval=False)
    reading = f"{peak_kind} {figure}" if figure and figure != peak_kind else peak_kind
    largest = max(mv.fit.values, default=0.0) if mv.fit is not None else 0.0
    if largest < PEAK_RESOLUTION:
        mv.evidence.append(
            f"peak bytes (measured, noisy) read {reading}; no cross-check: the saved bytes (at most "
            f"{fmt_bytes(largest)}) are below the peak's resolution ({fmt_bytes(PEAK_RESOLUTION)}: resident pages, "
            "allocator arenas)"
        )
        return
    # the class of each reading (flat and linear are one class: neither grows faster)
    peak_class, growth_class = verdicts.growth_class(peak_kind), verdicts.growth_class(mv.growth)
    if peak_kind == INCONCLUSIVE or peak_class is None or growth_class is None:
        mv.evidence.append(f"peak bytes (measured, noisy) read {reading}: no cross-check")
        return
    mv.peak_agrees = peak_class == growth_class
    if mv.peak_agrees:
        mv.evidence.append(f"peak bytes (measured, noisy) read {reading}: they agree")
        return
    faster = peak_class > growth_class
    why = (
        "the peak holds more than the gradient's residuals: the forward's own temporaries, the backward's "
        "workspace, the allocator's caches"
        if faster
        else "the saved bytes grow faster than the worker's resident peak: buffers shared between residuals are "
        "counted once per use, or the memory is outside the worker's resident set"
    )
    mv.evidence.append(
        f"peak bytes (measured, noisy) read {reading} while the saved-for-backward bytes read {mv.growth}: they "
        f"disagree ({why})"
    )


def leak_reading(depth: int, retained: list[float]) -> LeakReading:
    """The retained bytes of one depth against the call count (entry i: after calls 0..i): the exact reading."""
    calls = list(range(len(retained)))
    values = [float(x) for x in retained]
    reading = LeakReading(depth=depth, calls=calls, retained=values)
    if len(values) < LEAK_MIN_CALLS:
        reading.fit = Fit(metric="retained bytes", kind="inconclusive", source="memory", axis="call")
        reading.fit.reason = f"too few calls ({len(values)} measured, need {LEAK_MIN_CALLS})"
        return reading
    fit = fit_growth(calls, values, metric="retained bytes", exact=True, source="memory")
    fit.axis = "call"
    reading.fit = fit
    rise = (values[-1] - values[0]) / (calls[-1] - calls[0])
    last_steps = [b - a for a, b in zip(values[-3:], values[-2:], strict=False)]
    grows = fit.kind in ("linear", "mild", "superlinear", "exponential") and (fit.exponent or 0.0) != 0.0
    grows = grows or fit.kind == "exponential"
    if grows and rise >= LEAK_FLOOR_BYTES and all(s > 0 for s in last_steps):
        reading.leaking, reading.bytes_per_call = True, rise
    elif fit.kind == "inconclusive" and rise >= LEAK_FLOOR_BYTES:
        reading.leaking = None  # rises, but too few growing calls to say it keeps rising
    else:
        reading.leaking, reading.bytes_per_call = False, max(rise, 0.0)
    return reading


def _leak_readings(mv: MemoryVerdict, series: Series) -> None:
    last: dict[int, Point] = {}  # one reading per depth: the last point measured there (a pass re-measures it)
    for p in series.points:
        if not p.censored and len(p.retained) >= 2:
            last[p.depth] = p
    mv.leaks = [leak_reading(d, list(last[d].retained)) for d in sorted(last)]
    if not mv.leaks:
        return
    if any(r.leaking for r in mv.leaks):
        mv.leaking = True
        leak = mv.leak
        assert leak is not None
        per = ", ".join([f"{fmt_bytes(r.bytes_per_call)} at depth {r.depth}" for r in mv.leaks if r.leaking][-4:])
        mv.evidence.insert(
            0,
            f"retained bytes grow with the calls at a fixed depth: +{fmt_bytes(leak.bytes_per_call)} per call at "
            f"depth {leak.depth} ({range_text('call', 'calls', leak.calls[0], leak.calls[-1])}: "
            f"{fmt_bytes(leak.retained[0])} -> "
            f"{fmt_bytes(leak.retained[-1])}); per call: {per}",
        )
    elif all(r.leaking is False for r in mv.leaks):
        mv.leaking = False
        deepest = mv.leaks[-1]
        mv.evidence.append(
            f"retained bytes do not grow with the calls (depth {deepest.depth}: {fmt_bytes(deepest.retained[-1])} "
            f"held after call {deepest.calls[-1] if deepest.calls else 0}): no leak"
        )
    else:
        undecided = next(r for r in mv.leaks if r.leaking is None)
        why = undecided.fit.reason if undecided.fit is not None and undecided.fit.reason else "undecided"
        mv.evidence.append(f"retained bytes at depth {undecided.depth}: {why}")


def _not_measured_reason(series: Series) -> str:
    notes = series.memory_notes
    if notes:
        return "; ".join(f"{name}: {why}" for name, why in notes.items())
    return "no memory figure was measured (check --memory measures it where the backend can)"


def decide_memory(series: Series) -> MemoryVerdict:
    """The memory verdict of one series (module docstring); every figure the series lacks is in
    :attr:`MemoryVerdict.not_measured`, with the series' note."""
    mv = MemoryVerdict(not_measured=dict(series.memory_notes))
    saved, peak_points = _measured(series, SAVED_BYTES), _measured(series, PEAK_BYTES)
    retained = [p for p in series.points if p.retained]
    mv.measured = bool(saved or peak_points or retained)
    if not mv.measured:
        mv.reason = _not_measured_reason(series)
        mv.evidence.extend(f"{name} not measured: {why}" for name, why in series.memory_notes.items())
        return mv
    peak = _peak_fit(series, deciding=not saved)
    if saved:
        _saved_reading(mv, series)
        if peak is not None:
            _cross_check(mv, peak)
    elif peak is not None:
        why = series.memory_notes.get(SAVED_BYTES, "")
        peak_only_reading(mv, peak, backend=series.backend, mode=series.mode, why=why)
    _leak_readings(mv, series)
    if mv.leaking:
        mv.kind = LEAK_PER_CALL
    elif mv.growth:
        mv.kind = mv.growth
    elif mv.leaking is False:  # retained bytes only: no leak, but nothing against depth to read
        mv.kind = INCONCLUSIVE
        mv.reason = "only retained bytes were measured (no leak); " + _not_measured_reason(series)
    if mv.kind == INCONCLUSIVE and not mv.reason:
        undecided = next((r for r in mv.leaks if r.leaking is None), None)
        if undecided is not None and undecided.fit is not None:
            mv.reason = f"retained bytes at depth {undecided.depth}: {undecided.fit.reason or 'undecided'}"
        else:
            mv.reason = "memory was measured at too few depths to read a law against depth"
    for name, why in series.memory_notes.items():
        mv.evidence.append(f"{name} not measured: {why}")
    info = model.backend_info_of(series)
    mv.cause = explain.memory_cause(mv, backend=series.backend, mode=series.mode, info=info)
    mv.remedies = explain.memory_remedies(mv, backend=series.backend, mode=series.mode, info=info)
    return mv


def _span(depths: list[int]) -> str:
    return f"{depths[0]}..{depths[-1]}" if len(depths) > 1 else f"{depths[0]}" if depths else "?"


__all__ = [
    "FLAT_MAX_EXPONENT",
    "LEAK_FLOOR_BYTES",
    "LEAK_MIN_CALLS",
    "PEAK_RESOLUTION",
    "decide_memory",
    "depth_kind",
    "leak_reading",
    "memory_series",
]
