"""The costs of one Series over its phases (engine counters, deterministic work metrics, time repeats), their
growth fits, which of them decides, and the deciding model's prediction for the schedule (pure)."""

from __future__ import annotations

import math
from typing import Any

from adprof.analysis.growth import fit_growth, interval_text, predict
from adprof.constants import NOMINAL_CLOCK
from adprof.model import COUNTER_KEYS, Fit, Point, Series, cost_phases, counter_value, time_value


def phases_of(series: Series) -> tuple[str, ...]:
    """The mode's cost phases, or ``process`` for a command that reports no phases (its wall time)."""
    phases = cost_phases(series.mode)
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


def time_repeats(point: Point, phases: tuple[str, ...]) -> list[float] | None:
    """The repeats of a point's time over phases (summed repeat by repeat), or its single value."""
    if phases == ("backward",) and "backward" not in point.samples:
        calls = point.extra.get("backward_calls")
        if isinstance(calls, list) and len(calls) >= 4:
            return [float(x) for x in calls[1:]]  # calls 1.. are the steady repeats
    lists = [point.samples.get(p) for p in phases if point.times.get(p) is not None]
    if lists and all(isinstance(x, list) and x for x in lists) and len({len(x) for x in lists}) == 1:
        return [float(sum(col)) for col in zip(*lists, strict=True)]
    total = time_value(point, phases)
    return None if total is None else [total]


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
    series: Series, phases: tuple[str, ...], source: str, name: str = ""
) -> tuple[list[int], list[Any], list[bool]]:
    """``(depths, values, censored)`` of one cost over phases; time values are lists of repeats."""
    ds, vs, cs = [], [], []
    for p in series.points:
        if source == "counters":
            v: Any = counter_value(p, phases)
        elif source == "metric":
            v = metric_value(p, phases, name)
        else:
            v = time_repeats(p, phases)
        if v is None or (not isinstance(v, list) and not math.isfinite(v)):
            continue
        ds.append(p.depth)
        vs.append(v)
        cs.append(p.censored)
    return ds, vs, cs


def fit_cost(
    series: Series, phases: tuple[str, ...], source: str, name: str = "", seed: int = 0, bootstrap: bool = True
) -> Fit | None:
    d, v, c = series_values(series, phases, source, name)
    if not d:
        return None
    label = "+".join(phases)
    metric = {
        "counters": f"counters[{label}]: " + "+".join(COUNTER_KEYS),
        "metric": f"{name}: {label}",
        "time": f"time: {label}",
    }[source]
    clock = series.clock or "wall (perf_counter)" if source == "time" else ""
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
    )
    if source == "time" and series.statistic:
        fit.statistic = series.statistic
    return fit


def deciding_fits(
    series: Series, phases: tuple[str, ...], quick: bool = False
) -> tuple[Fit | None, Fit | None, dict[str, Fit], str]:
    """(counter fit, time fit, metric fits, source that decides); ``quick``: no bootstrap (schedule use)."""
    has_counters = any(counter_value(p, phases) is not None for p in series.points)
    counter_fit = fit_cost(series, phases, "counters") if has_counters else None
    metric_fits = {n: f for n in metric_names(series, phases) if (f := fit_cost(series, phases, "metric", n))}
    deciding_metric = next((n for n in series.deciding_metrics if n in metric_fits), None)
    if series.required_metric:  # asked for: it decides, or nothing does (never a silent fall-back to time)
        deciding_metric = series.required_metric
    time_decides = counter_fit is None and deciding_metric is None
    # a counted chain's times are its counts at a nominal speed: no clock was read, nothing to fit beside
    nominal = series.clock == NOMINAL_CLOCK
    time_fit = None if nominal else fit_cost(series, phases, "time", bootstrap=time_decides and not quick)
    if deciding_metric is not None:  # declared by the backend (or asked for, e.g. --metric instructions)
        return counter_fit, time_fit, metric_fits, f"metric:{deciding_metric}"
    if counter_fit is not None:
        return counter_fit, time_fit, metric_fits, "counters"
    return counter_fit, time_fit, metric_fits, "time"


def predicted_growth(series: Series, depth: int) -> tuple[float, str] | None:
    """The deciding model's cost ratio between ``depth`` and the deepest measured depth, and its figure
    (for the schedule's cap prediction: the same model that decides the verdict, without the bootstrap)."""
    phases = phases_of(series)
    counter_fit, time_fit, metric_fits, source = deciding_fits(series, phases, quick=True)
    fit = {"counters": counter_fit, "time": time_fit}.get(source) or metric_fits.get(source.split(":", 1)[-1])
    if fit is None or fit.kind == "inconclusive" or not fit.depths:
        return None
    now, then = predict(fit, fit.depths[-1]), predict(fit, depth)
    if not now or then is None or now <= 0 or not math.isfinite(then):
        return None
    return max(then / now, 1.0), interval_text(fit) or fit.model


def next_depth(depths: list[int]) -> int | None:
    """The depth a schedule of these depths would measure next (unit steps, or the same ratio)."""
    if len(depths) < 2:
        return None
    a, b = depths[-2], depths[-1]
    return b + 1 if b - a == 1 else max(b + 1, round(b * b / a))
