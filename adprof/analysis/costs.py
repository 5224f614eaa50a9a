"""The costs of one Series over its phases (engine counters, deterministic work metrics, time repeats), their
growth fits, which of them decides, and the deciding model's prediction for the schedule (pure)."""

from __future__ import annotations

import math
from typing import Any

from adprof.analysis.growth import fit_growth, interval_text, predict
from adprof.analysis.knee import MIN_AFTER, find_knee
from adprof.analysis.settle import settle
from adprof.analysis.span import require_span
from adprof.constants import CPU_CLOCK, CPU_CLOCKS, NOMINAL_CLOCK, PROCESS_CPU_CLOCK
from adprof.model import (
    COUNTER_KEYS,
    Decider,
    Fit,
    Point,
    Series,
    backend_info_of,
    classified_phases,
    counter_value,
    time_value,
    wait_key,
)
from adprof.prediction import cost_ratio
from adprof.verdicts import Source


def phases_of(series: Series) -> tuple[str, ...]:
    """The classified phases (the chain's or the mode's), or ``process`` for a command that reports no phases
    (its wall time)."""
    phases = classified_phases(series)
    if not any(ph in p.times or ph in p.counters or ph in p.metrics for p in series.points for ph in phases):
        if any("process" in p.times or "process" in p.metrics for p in series.points):
            return ("process",)
    return phases


def counter_cost(c: Any) -> float:
    """Counter cost of one counter dict (the engine's keys, or a command's own counters)."""
    if not isinstance(c, dict):
        return 0.0
    return counter_value(Point(depth=0, counters={"c": c}), ("c",)) or 0.0


def metric_value(point: Point, phases: tuple[str, ...], name: str) -> float | None:
    """A deterministic work metric of a point summed over phases, or None when no phase reports it."""
    present = [point.metrics[p][name] for p in phases if name in point.metrics.get(p, {})]
    return float(sum(present)) if present else None


#: The CPU time reads a time-decided cost in place of the wall clock (issue #35) where it covers the wall: at the
#: median point, the fastest run of each timed phase spent at least this share of its wall time on the CPU (the
#: measuring thread's, or the process's where the backend measured that: ``Point.extra["cpu_clock"]``), or runnable and
#: waiting for a core (preempted by the machine's load, where the point kept its run-queue waits:
#: :func:`adprof.model.wait_key`): the work runs there. A backend whose work runs elsewhere (another process, a
#: device), or sleeps, keeps the wall clock.
CPU_COVERS = 0.8
#: Whether the CPU clock is used where it covers (the flip-rate benchmark measured it: docs/guards.md "flip rates").
CPU_CLOCK_ON = True


def covered_share(wall: float, cpu: float, wait: float | None = None) -> float:
    """The share of a run's ``wall`` seconds its thread spent on a core (``cpu``) or waiting for one (``wait``, the
    run-queue delay: load, not the work's own waiting; None when not measured)."""
    if wall <= 0:
        return 1.0
    return (cpu + (wait or 0.0)) / wall


def _phase_clock(point: Point, phase: str) -> str:
    """Whose CPU time a phase's ``cpu_samples`` are: the process's (``extra["cpu_clock"]``) or the thread's."""
    named = point.extra.get("cpu_clock")
    return str(named.get(phase, "thread")) if isinstance(named, dict) else "thread"


def cpu_clock_name(series: Series, phases: tuple[str, ...]) -> str | None:
    """The CPU clock the series' time is read on (:data:`CPU_CLOCK` or :data:`PROCESS_CPU_CLOCK`), or None (the
    wall clock): every measured point carries ``cpu_samples`` beside the ``samples`` of each timed phase of
    ``phases``, all of one clock, and at the median point they cover the wall (:data:`CPU_COVERS`,
    :func:`covered_share`)."""
    if not CPU_CLOCK_ON:
        return None
    shares: list[float] = []
    clocks: set[str] = set()
    for p in series.points:
        timed = [ph for ph in phases if p.times.get(ph) is not None]
        if p.censored or not timed:
            continue
        for ph in timed:
            walls, cpus = p.samples.get(ph), p.cpu_samples.get(ph)
            if not walls or not cpus or len(walls) != len(cpus):
                return None
            clocks.add(_phase_clock(p, ph))
            waits = p.extra.get(wait_key(ph))
            if not isinstance(waits, list) or len(waits) != len(walls):
                waits = None
            i = min(range(len(walls)), key=walls.__getitem__)
            shares.append(covered_share(walls[i], cpus[i], None if waits is None else float(waits[i])))
    if len(clocks) != 1 or not shares or sorted(shares)[len(shares) // 2] < CPU_COVERS:
        return None
    return PROCESS_CPU_CLOCK if clocks == {"process"} else CPU_CLOCK


def cpu_clock(series: Series, phases: tuple[str, ...]) -> bool:
    """The series' time is read on a CPU clock (:func:`cpu_clock_name`)."""
    return cpu_clock_name(series, phases) is not None


def time_repeats(point: Point, phases: tuple[str, ...], cpu: bool = False) -> list[float] | None:
    """The repeats of a point's time over phases (summed repeat by repeat), or its single value; ``cpu``: the
    thread's CPU seconds of the same repeats (:func:`cpu_clock` said they cover the wall)."""
    if cpu:
        lists = [point.cpu_samples.get(p) for p in phases if point.times.get(p) is not None]
        if lists and all(isinstance(x, list) and x for x in lists) and len({len(x) for x in lists}) == 1:
            return [float(sum(col)) for col in zip(*lists, strict=True)]
        return None
    if phases == ("backward",) and "backward" not in point.samples:
        calls = point.extra.get("backward_calls")
        if isinstance(calls, list) and len(calls) >= 4:
            return [float(x) for x in calls[1:]]  # calls 1.. are the steady repeats
    lists = [point.samples.get(p) for p in phases if point.times.get(p) is not None]
    if lists and all(isinstance(x, list) and x for x in lists) and len({len(x) for x in lists}) == 1:
        return [float(sum(col)) for col in zip(*lists, strict=True)]
    total = time_value(point, phases)
    return None if total is None else [total]


def timed_label(series: Series, phases: tuple[str, ...]) -> str:
    """The phases that carry times, joined (``transform+lower+compile``): a phase holding only metrics (torch
    compile's ``compile``) is left out of a time label."""
    timed = [ph for ph in phases if any(ph in p.times for p in series.points)]
    return "+".join(timed or phases)


def metric_where(series: Series, phases: tuple[str, ...], name: str, where: str) -> str:
    """Where a metric was counted, for labels: the one phase that carries it in a multi-phase mode, else ``where``."""
    carrying = {ph for p in series.points for ph in phases if name in p.metrics.get(ph, {})}
    return next(iter(carrying)) if len(phases) > 1 and len(carrying) == 1 else where


def metric_names(series: Series, phases: tuple[str, ...]) -> list[str]:
    """The work metrics any point reports for the phases, in first-seen order."""
    names: list[str] = []
    for p in series.points:
        for ph in phases:
            for name in p.metrics.get(ph, {}):
                if name not in names:
                    names.append(name)
    return names


def series_values(
    series: Series, phases: tuple[str, ...], source: str, name: str = "", cpu: bool = False
) -> tuple[list[int], list[Any], list[bool]]:
    """``(depths, values, censored)`` of one cost over phases; time values are lists of repeats (``cpu``: of the
    thread's CPU time)."""
    ds, vs, cs = [], [], []
    for p in series.points:
        if source == "counters":
            v: Any = counter_value(p, phases, backend_info_of(series))
        elif source == "metric":
            v = metric_value(p, phases, name)
        else:
            v = time_repeats(p, phases, cpu)
        if v is None or (not isinstance(v, list) and not math.isfinite(v)):
            continue
        ds.append(p.depth)
        vs.append(v)
        cs.append(p.censored)
    return ds, vs, cs


def fit_cost(
    series: Series,
    phases: tuple[str, ...],
    source: str,
    name: str = "",
    seed: int = 0,
    bootstrap: bool = True,
    coarse: bool = False,
    family: str | None = None,
) -> Fit | None:
    cpu_name = cpu_clock_name(series, phases) if source == "time" else None
    cpu = cpu_name is not None
    d, v, c = series_values(series, phases, source, name, cpu)
    if not d:
        return None
    settled = None
    if source != "time" and backend_info_of(series).specializes_shapes:  # read from the depth the count settles on
        d, v, c, settled = settle(d, v, c, program_ops(series, d))
    label = "+".join(phases)
    metric = {
        "counters": f"counters[{label}]: " + "+".join(backend_info_of(series).deciding_counters or COUNTER_KEYS),
        "metric": f"{name}: {metric_where(series, phases, name, label)}",
        "time": f"time: {timed_label(series, phases)}",
    }[source]
    clock = cpu_name if cpu_name is not None else series.clock or "wall (perf_counter)" if source == "time" else ""
    fit = fit_growth(
        d,
        v,
        metric=metric,
        exact=source != "time",
        censored=c,
        source=source,
        clock=clock,
        seed=seed,
        bootstrap=bootstrap,
        coarse=coarse,
        family=family,
    )
    fit.axis = series.axis
    fit.settled = settled
    if source == "metric":
        fit.metric_name = name
    if source == "time" and series.statistic:
        fit.statistic = series.statistic
    return require_span(fit) if source == "time" and family is None else fit  # a class's rate: the class decided


def program_ops(series: Series, depths: list[int]) -> list[float | None]:
    """The program's size (``Point.program["ops"]``) at each of ``depths`` (None where a point carries none)."""
    ops: dict[int, float | None] = {}
    for p in series.points:
        ops.setdefault(p.depth, (p.program or {}).get("ops"))
    return [ops.get(d) for d in depths]


PATHOLOGY_KINDS = ("exponential", "superlinear", "mild")


def cpu_check(series: Series, phases: tuple[str, ...], time_fit: Fit) -> None:
    """A wall-time pathology that the calls' CPU time does not show is interference, not work: on a loaded
    machine a call longer than a scheduler slice is preempted, so deep (long) calls slow down more than
    short ones and time seems to grow superlinearly. Then time cannot decide: ``inconclusive``, saying so.
    (Eager backward of the peers, whose points carry ``backward_cpu_calls``: the thread's CPU seconds.)"""
    if time_fit.kind not in PATHOLOGY_KINDS or phases not in (("backward",), ("backward0",)) or series.mode != "eager":
        return
    if time_fit.clock in CPU_CLOCKS:  # the CPU time decided already
        return
    warm = phases == ("backward",)  # the steady calls 1.., else call 0 (the cache miss)
    ds, vs, cs = [], [], []
    for p in series.points:
        calls = p.extra.get("backward_cpu_calls")
        if not isinstance(calls, list) or len(calls) < 2:
            return  # not measured everywhere: no check
        ds.append(p.depth)
        vs.append([float(x) for x in calls[1:]] if warm else [float(calls[0])])
        cs.append(p.censored)
    metric = f"cpu time: {phases[0]}"
    cpu = fit_growth(ds, vs, metric=metric, censored=cs, source="time", clock="thread CPU time")
    time_fit.cpu_kind, time_fit.cpu_figure = cpu.kind, interval_text(cpu)
    if cpu.kind == time_fit.kind or cpu.kind in PATHOLOGY_KINDS[: PATHOLOGY_KINDS.index(time_fit.kind) + 1]:
        return
    time_fit.notes.append(f"the calls' CPU time reads {cpu.kind} {time_fit.cpu_figure}".rstrip())
    time_fit.kind = "inconclusive"
    time_fit.predicts = False
    time_fit.reason = (
        f"wall time grows as {interval_text(time_fit)} but the calls' CPU time reads {cpu.kind} "
        f"{time_fit.cpu_figure}: the machine is loaded (calls preempted), so wall time cannot decide; rerun on "
        "a quieter machine"
    )


#: Readings of a lower-bound metric that decide (it proves the work grows at least this fast).
BOUND_KINDS = ("exponential", "superlinear")


def _steepness(fit: Fit) -> tuple[int, float]:
    """Orders readings: exponential above any power law, then by base or exponent."""
    if fit.kind == "exponential":
        return (1, float(fit.base or 0.0))
    return (0, float(fit.exponent or 0.0))


def growing_bound(series: Series, metric_fits: dict[str, Fit]) -> str | None:
    """The steepest of the series' lower-bound metrics that reads superlinear or exponential, else None."""
    growing = [n for n in series.lower_bound_metrics if n in metric_fits and metric_fits[n].kind in BOUND_KINDS]
    return max(growing, key=lambda n: _steepness(metric_fits[n])) if growing else None


def deciding_fits(
    series: Series, phases: tuple[str, ...], quick: bool = False
) -> tuple[Fit | None, Fit | None, dict[str, Fit], Decider]:
    """(counter fit, time fit, metric fits, what decides); ``quick``: no bootstrap (schedule use)."""
    info = backend_info_of(series)
    has_counters = any(counter_value(p, phases, info) is not None for p in series.points)
    counter_fit = fit_cost(series, phases, "counters") if has_counters else None
    metric_fits = {n: f for n in metric_names(series, phases) if (f := fit_cost(series, phases, "metric", n))}
    # a lower bound on the work that itself grows fast decides first (the work grows at least as fast); one
    # that reads linear proves nothing and leaves the decision to the others
    bound = growing_bound(series, metric_fits)
    deciding_metric = bound or next((n for n in series.deciding_metrics if n in metric_fits), None)
    if series.required_metric:  # asked for: it decides, or nothing does (never a silent fall-back to time)
        deciding_metric, bound = series.required_metric, None
    time_decides = counter_fit is None and deciding_metric is None
    # a counted chain's times are its counts at a nominal speed: no clock was read, nothing to fit beside
    nominal = series.clock == NOMINAL_CLOCK
    if nominal or (quick and not time_decides):  # the schedule reads the deciding fit only
        time_fit = None
    else:  # the schedule's view of a time fit: coarse grids, no bootstrap
        time_fit = fit_cost(series, phases, "time", bootstrap=time_decides and not quick, coarse=quick)
    if time_decides and not quick and time_fit is not None:
        cpu_check(series, phases, time_fit)
    if bound is not None:
        return counter_fit, time_fit, metric_fits, Decider(Source.METRIC, bound)
    if deciding_metric is not None:  # declared by the backend (or asked for, e.g. --metric instructions)
        return counter_fit, time_fit, metric_fits, Decider(Source.METRIC, deciding_metric)
    if counter_fit is not None:
        return counter_fit, time_fit, metric_fits, Decider(Source.COUNTERS)
    return counter_fit, time_fit, metric_fits, Decider(Source.TIME)


def deciding_fit(
    decider: Decider, counter_fit: Fit | None, time_fit: Fit | None, metric_fits: dict[str, Fit]
) -> Fit | None:
    """The fit ``decider`` names among a series' fits (None: it was not measured)."""
    if decider.source == Source.COUNTERS:
        return counter_fit
    if decider.source == Source.METRIC:
        return metric_fits.get(decider.metric_name)
    return time_fit


#: Readings of a proxy (a work metric that is not the cost) whose rate is not the cost's: the report gives the cost's.
PROXY_KINDS = ("exponential", "superlinear")


def proxy_decided(series: Series, fit: Fit | None) -> bool:
    """A growing class decided by a lower-bound metric (a work metric that counts work the phase must do, such
    as Inductor's loop-body ops: a proxy of the cost, whose rate is not the cost's). The engine's counters are its
    work, a backend's declared deciding metrics see the phase's work, and instruction counts are the work: their
    rates are the cost's."""
    if fit is None or fit.source != Source.METRIC:
        return False
    return fit.metric_name in series.lower_bound_metrics and fit.kind in PROXY_KINDS


def timed_phases(series: Series, phases: tuple[str, ...]) -> tuple[str, ...]:
    """The phases of ``phases`` that carry times (a phase holding only metrics has none)."""
    return tuple(ph for ph in phases if any(ph in p.times for p in series.points))


def cost_rate(series: Series, phases: tuple[str, ...], fit: Fit, quick: bool = False) -> Fit | None:
    """The cost's own fit where a proxy decided a growing class (:func:`proxy_decided`): the time of ``phases``
    (the growing phase, or the classified phases), in the class's family; None when it reads no rate."""
    family = "exponential" if fit.kind == "exponential" else "power"
    rate = fit_cost(series, timed_phases(series, phases), "time", bootstrap=not quick, coarse=quick, family=family)
    return rate if rate is not None and rate.kind != "inconclusive" and rate.depths else None


def quick_deciding_fit(series: Series) -> Fit | None:
    """The deciding model of a series without the bootstrap (the schedule's view of the verdict's model)."""
    counter_fit, time_fit, metric_fits, decider = deciding_fits(series, phases_of(series), quick=True)
    return deciding_fit(decider, counter_fit, time_fit, metric_fits)


def predicted_growth(series: Series, depth: int) -> tuple[float, str] | None:
    """The deciding model's cost ratio between ``depth`` and the deepest measured depth, and its figure
    (for the schedule's cap prediction: the same model that decides the verdict, without the bootstrap)."""
    fit = quick_deciding_fit(series)
    if proxy_decided(series, fit):  # the cost's rate predicts what the next depth costs, never the proxy's
        fit = cost_rate(series, phases_of(series), fit, quick=True)  # type: ignore[arg-type]
    if fit is None or fit.kind == "inconclusive" or not fit.depths:
        return None
    ratio = cost_ratio(predict(fit, fit.depths[-1]), predict(fit, depth))
    return None if ratio is None else (ratio, interval_text(fit) or fit.model)


#: An exact power law read this steep over uneven depth steps is likelier an exponential (a power's marginal ratio
#: falls with depth, an exponential's does not): consecutive depths tell them apart.
STEEP_POWER = 4.0


def open_exact(series: Series) -> bool:
    """The exact reading that decides ``series`` (counters or a deterministic metric) is still open: undecided
    with no law past a change of regime, linear over a knee whose law past it is unread (too few depths past it),
    or a power law steeper than :data:`STEEP_POWER` read over uneven steps at its tail. Time-decided series: False
    (the time schedule has its own rule)."""
    fit = quick_deciding_fit(series)
    if fit is None or fit.source == "time" or len(fit.depths) < 2:
        return False
    tail = sorted(fit.depths)[-4:]
    if fit.kind in ("superlinear", "mild") and (fit.exponent or 0.0) > STEEP_POWER:
        return any(b - a > 1 for a, b in zip(tail, tail[1:], strict=False))
    if fit.kind not in ("inconclusive", "linear"):
        return False
    knee = find_knee(fit)
    if fit.kind == "linear":
        return knee is not None and knee.after is None
    return knee is None or knee.after is None


def assess_series(series: Series, full: bool = False) -> Fit | None:
    """The deciding time fit of a series (the time schedule's view of it): ``full`` with the bootstrap, as the
    verdict will be; else the point estimate with its profile interval. None when a counter or a
    deterministic metric decides instead."""
    phases = phases_of(series)
    _, time_fit, _, decider = deciding_fits(series, phases, quick=not full)
    if decider.source != Source.TIME:
        return None
    if full and time_fit is not None and time_fit.kind == "inconclusive":
        knee = find_knee(time_fit)
        if knee is not None and len(knee.depths) < MIN_AFTER:
            time_fit.knee = knee.depth
    return time_fit


def next_depth(depths: list[int]) -> int | None:
    """The depth a schedule of these depths would measure next (unit steps, or the same ratio)."""
    if len(depths) < 2:
        return None
    a, b = depths[-2], depths[-1]
    return b + 1 if b - a == 1 else max(b + 1, round(b * b / a))
