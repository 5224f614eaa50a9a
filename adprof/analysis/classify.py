"""Verdicts from one measured Series (pure): one deciding model, and evidence that only reads it.

What decides, in order: the engine's deterministic counters (``key_comparisons + metadata_lookups +
nodes_visited``, or a command's reported ``counters``); else the first deterministic work metric that
the backend declares able to see the phase's work (``Series.deciding_metrics``: Python call counts,
program sizes, instruction counts); else wall time, a robust statistic of repeats with a bootstrap
interval. Traced and compile modes classify the transform (plus lowering/compile in compile mode) and
the drop of its derivative graph; eager mode the steady per-call backward, and call 0 (the cache miss)
when only it grows. The other metrics are fitted too and shown beside, never edited into the decision.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adprof import model
from adprof.analysis import explain
from adprof.analysis.growth import fit_growth, halving_reading, interval_text, predict
from adprof.analysis.structure import Structure, disagreement_reason
from adprof.model import COUNTER_KEYS, Fit, Point, Result, Series, Verdict, cost_phases, counter_value, time_value

COUNTER_LABEL = "key comparisons+lookups+visits"
REUSE_TOLERANCE = 0.25
AMORTIZED_BELOW = 0.5  # warm calls cheaper than this fraction of call 1 => amortized
EXPONENT_DROP = 0.15  # warm calls' exponent this much below call 1's => amortized in growth

_KIND = {
    ("exponential", False): model.EXPONENTIAL_TRANSFORM,
    ("superlinear", False): model.SUPERLINEAR_TRANSFORM,
    ("mild", False): model.MILD_TRANSFORM,
    ("exponential", True): model.EXPONENTIAL_BACKWARD,
    ("superlinear", True): model.SUPERLINEAR_BACKWARD,
    ("mild", True): model.MILD_BACKWARD,
}


def _phases(series: Series) -> tuple[str, ...]:
    """The mode's cost phases, or ``process`` for a command that reports no phases (its wall time)."""
    phases = cost_phases(series.mode)
    if not any(ph in p.times or ph in p.counters or ph in p.metrics for p in series.points for ph in phases):
        if any("process" in p.times or "process" in p.metrics for p in series.points):
            return ("process",)
    return phases


def _one_counter_dict(c: Any) -> float:
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
        cs.append(bool(p.extra.get("censored", False)))
    return ds, vs, cs


def _fit(
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


# -- evidence lines (all read a Fit; none re-fits) -------------------------------------------------------------


def _fmt_depths(ds: list[int]) -> str:
    return f"{ds[0]}..{ds[-1]}" if len(ds) > 1 else f"{ds[0]}" if ds else "?"


def describe_fit(fit: Fit, label: str) -> str:
    """One evidence line for a fit."""
    over = f"over depths {_fmt_depths(fit.depths)}"
    text = interval_text(fit)
    if fit.kind == "exponential":
        ratios = ", ".join(f"{r:.2f}" for r in fit.tail_ratios[-3:])
        exact = fit.source != "time"
        tail = f" (tail ratios {ratios})" if ratios and exact else ""
        iv = f" {text.split(' ', 1)[1]}" if " " in text else ""  # time: the interval
        depths = fit.tail_depths if exact and fit.tail_depths else fit.depths
        return f"{label} x{fit.base:.2f} per layer{iv} over depths {_fmt_depths(depths)}{tail}"
    if fit.kind in ("superlinear", "mild"):
        words = "mildly superlinear, " if fit.kind == "mild" else ""
        return f"{label} grows as {words}{text} {over}"
    if fit.kind == "linear":
        if fit.exponent == 0.0:
            return f"{label} flat {over}: no measurable growth"
        return f"{label} linear, {text} {over}"
    if fit.kind == "runaway":
        return f"{label}: {fit.reason}"
    return f"{label} inconclusive {over}: {fit.reason or '; '.join(fit.notes) or 'not enough points'}"


def describe_halving(fit: Fit) -> str | None:
    """The depth-halving line: the measured ratio, the model's, and the reading of the deciding kind."""
    if fit.halving_ratio is None or fit.kind in ("inconclusive", "runaway"):
        return None
    line = f"halving ratio {fit.halving_ratio:.2f} at depth {fit.halving_depth} vs {fit.halving_from}"
    if fit.model_halving_ratio is not None:
        line += f" (model {fit.model_halving_ratio:.2f})"
    reading = halving_reading(fit)
    return f"{line}: {reading}" if reading else line


def describe_tail(fit: Fit) -> str | None:
    if fit.tail_exponent is None or fit.kind in ("inconclusive", "runaway") or len(fit.depths) < 2:
        return None
    model_part = f" (model {fit.model_tail_exponent:.2f})" if fit.model_tail_exponent is not None else ""
    return f"tail exponent {fit.tail_exponent:.2f} over depths {fit.depths[-2]}..{fit.depths[-1]}{model_part}"


def _decided_by(fit: Fit, series: Series, label: str) -> str:
    if fit.source == "time":
        how = f"{fit.statistic or 'lower quartile of repeats'}, {fit.clock or 'wall (perf_counter)'}"
        blind = [f"{k}: {v}" for k, v in series.metric_notes.items()]
        why = f"; no deterministic metric decides ({'; '.join(blind)})" if blind else ""
        return f"decided by {label} ({how}, {fit.interval_method or 'no interval'}){why}"
    return f"decided by {label} (deterministic: {fit.interval_method})"


def _dominant(series: Series, phases: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The counter that dominates at the deepest point with counters, and an evidence line."""
    for p in sorted(series.points, key=lambda q: q.depth, reverse=True):
        tot = dict.fromkeys(COUNTER_KEYS, 0.0)
        found = False
        for ph in phases:
            c = p.counters.get(ph)
            if isinstance(c, dict):
                found = True
                for k in COUNTER_KEYS:
                    tot[k] += float(c.get(k, 0) or 0)
        s = sum(tot.values())
        if found and s > 0:
            top = max(tot, key=tot.get)
            parts = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in tot.items())
            return top, f"at depth {p.depth}: {parts} of {s:,.0f}"
    return None, None


def _per_call(point: Point) -> tuple[list[float], str] | None:
    """Per-call backward costs of a point: counters if present and non-zero, else seconds."""
    cc = point.extra.get("backward_call_counters")
    if isinstance(cc, list) and len(cc) >= 3:
        vals = [_one_counter_dict(c) for c in cc]
        if vals[1] > 0:
            return vals, "counters"
    bc = point.extra.get("backward_calls")
    if isinstance(bc, list) and len(bc) >= 3 and bc[1]:
        return [float(x) for x in bc], "seconds"
    return None


def amortization(series: Series) -> tuple[bool | None, float | None, list[str]]:
    """Eager: do warm calls (2..5) get cheaper than call 1, at the deepest point and in growth?"""
    pts = sorted((p for p in series.points if not p.extra.get("censored") and _per_call(p)), key=lambda p: p.depth)
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
    lines = [f"calls 2..{1 + len(warm)} cost {ratio:.2f}x call 1 at depth {pts[-1].depth} ({unit}): {verdict}"]
    if growth_line:
        lines.append(growth_line + ("; warm calls grow slower" if cheaper_growth else ""))
    return amortized, ratio, lines


# -- the verdict -------------------------------------------------------------------------------------------------


def _labels(series: Series, phases: tuple[str, ...]) -> dict[str, str]:
    where = "steady backward" if series.mode == "eager" else "+".join(phases)
    return {"counters": f"{where} {COUNTER_LABEL}", "time": f"wall time ({where})", "where": where}


def _deciding(
    series: Series, phases: tuple[str, ...], quick: bool = False
) -> tuple[Fit | None, Fit | None, dict[str, Fit], str]:
    """(counter fit, time fit, metric fits, source that decides); ``quick``: no bootstrap (schedule use)."""
    counter_fit = (
        _fit(series, phases, "counters") if any(counter_value(p, phases) is not None for p in series.points) else None
    )
    metric_fits = {n: f for n in metric_names(series, phases) if (f := _fit(series, phases, "metric", n))}
    deciding_metric = next((n for n in series.deciding_metrics if n in metric_fits), None)
    time_decides = counter_fit is None and deciding_metric is None
    time_fit = _fit(series, phases, "time", bootstrap=time_decides and not quick)
    if deciding_metric is not None:  # declared by the backend (or asked for, e.g. --metric instructions)
        return counter_fit, time_fit, metric_fits, f"metric:{deciding_metric}"
    if counter_fit is not None:
        return counter_fit, time_fit, metric_fits, "counters"
    return counter_fit, time_fit, metric_fits, "time"


def _call0(series: Series, has_counters: bool) -> Fit | None:
    """Eager call 0 (the cache miss) when it grows while the steady calls do not."""
    call0 = _fit(series, ("backward0",), "counters") if has_counters else None
    return call0 or _fit(series, ("backward0",), "time")


def predicted_growth(series: Series, depth: int) -> tuple[float, str] | None:
    """The deciding model's cost ratio between ``depth`` and the deepest measured depth, and its figure
    (for the schedule's cap prediction: the same model that decides the verdict, without the bootstrap)."""
    phases = _phases(series)
    counter_fit, time_fit, metric_fits, source = _deciding(series, phases, quick=True)
    fit = {"counters": counter_fit, "time": time_fit}.get(source) or metric_fits.get(source.split(":", 1)[-1])
    if fit is None or fit.kind in ("inconclusive", "runaway") or not fit.depths:
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


TREE_PROPORTION = 0.10  # counters follow the tree size when C(d)/T(d) varies by less than this


def follows_tree(counter_fit: Fit, structure: Any) -> Fit | None:
    """Few exact points (the cap stopped the series after 2-3 depths): when the counters are proportional to
    the structure's tree sizes (the key DAG unfolded as a tree, counted at more depths without any
    transform), the tree's growth is the counters' growth. Two independent measurements must agree in
    shape; the tree sizes then decide the form (returns that decision, or None)."""
    if structure is None or counter_fit.kind != "inconclusive" or len(counter_fit.depths) < 2:
        return None
    get = structure.get if isinstance(structure, dict) else lambda k: getattr(structure, k, None)
    tree = dict(zip(get("depths") or [], get("tree_sizes") or [], strict=False))
    common = [(d, c, tree[d]) for d, c in zip(counter_fit.depths, counter_fit.values, strict=True) if tree.get(d)]
    if len(common) < 2 or len(tree) < 4:
        return None
    if any(c <= 0 or t <= 0 for _, c, t in common):
        return None
    props = [c / t for _, c, t in common]
    if max(props) > (1 + TREE_PROPORTION) * min(props):
        return None
    tree_fit = fit_growth(list(tree), list(tree.values()), exact=True, source="counters", metric="structure: tree size")
    if tree_fit.kind != "exponential":
        return None
    d, c = counter_fit.depths, counter_fit.values
    fit = counter_fit
    fit.kind, fit.model, fit.base = "exponential", "a + c*b^d", float((c[-1] / c[-2]) ** (1 / (d[-1] - d[-2])))
    fit.interval = sorted([fit.base, tree_fit.base or fit.base])
    fit.interval_method = "counter ratio and the tree-size base (exact values)"
    fit.overhead, fit.scale, fit.reason = 0.0, float(c[-1]), ""
    fit.notes.append(
        f"only {len(d)} depths before the cap; the counters are proportional to the structure's tree size "
        f"(counters/tree {min(props):.3g}..{max(props):.3g} at depths {_fmt_depths(d)}), whose exact growth over "
        f"depths {_fmt_depths(tree_fit.depths)} is exponential x{tree_fit.base:.2f} per layer"
    )
    return fit


def classify(
    series: Series,
    predicted_base: float | None = None,
    structure_note: str | None = None,
    structure: Any = None,
) -> Verdict:
    """Classify one Series into a Verdict: the deciding fit, evidence read from it, cause and remedies."""
    if series.error or not series.points:
        msg = series.error or "no points measured"
        return Verdict(
            kind=model.ERROR,
            predicted_base=predicted_base,
            evidence=[msg],
            cause=explain.cause(model.ERROR, error=series.error),
        )
    eager = series.mode == "eager"
    phases = _phases(series)
    labels = _labels(series, phases)
    counter_fit, time_fit, metric_fits, source = _deciding(series, phases)
    v = Verdict(
        kind=model.INCONCLUSIVE,
        predicted_base=predicted_base,
        counter_fit=counter_fit,
        time_fit=time_fit,
        metric_fits=metric_fits,
    )
    if source == "counters":
        fit, label = counter_fit, labels["counters"]
    elif source.startswith("metric:"):
        name = source.split(":", 1)[1]
        fit, label = metric_fits[name], f"{labels['where']} {name}"
    else:
        fit, label = time_fit, labels["time"]
    if fit is None:
        v.evidence.append(f"no cost measured for phases {', '.join(phases)}")
        v.cause = explain.cause(model.INCONCLUSIVE, reason="no cost was measured")
        return v

    if fit is counter_fit and (tree := follows_tree(counter_fit, structure)) is not None:
        fit = tree
    kind, call0_note = fit.kind, ""
    if eager and kind == "linear":
        call0 = _call0(series, counter_fit is not None)
        v.call0_fit = call0
        if call0 is not None and call0.kind in ("exponential", "superlinear"):
            fit, label, eager_kind = call0, "call 0 backward (cache miss)", False
            kind = call0.kind
            call0_note = "steady calls are linear; only call 0 grows (the cache miss: transform + first backward)"
        else:
            eager_kind = True
    else:
        eager_kind = eager
    killed = [p for p in series.points if p.extra.get("killed")]
    if killed and kind not in ("exponential", "superlinear"):
        # a point killed at its own timeout after depths that look healthy (or too few to say): a hang or a
        # sudden blowup there, never a healthy series
        before = f" after depths that read {kind}" if kind != "inconclusive" else ""
        fit.notes.append(f"{killed[0].extra['killed']}{before}")
        fit.kind, kind = "runaway", "runaway"
        fit.reason = f"{killed[0].extra['killed']}{before}"
    elif killed:
        v.evidence.append(f"{killed[0].extra['killed']}: consistent with the {kind} growth")
    v.fit, v.metric = fit, fit.metric
    if kind == "runaway":
        v.kind = model.RUNAWAY
    elif kind in ("linear", "inconclusive"):
        v.kind = model.LINEAR if kind == "linear" else model.INCONCLUSIVE
    else:
        v.kind = _KIND[(kind, eager_kind)]
    v.base, v.exponent = (fit.base, fit.exponent) if kind == "exponential" else (None, fit.exponent)
    v.halving_ratio = fit.halving_ratio
    v.interval_text = interval_text(fit)

    v.evidence.append(describe_fit(fit, label))
    v.evidence.append(_decided_by(fit, series, label))
    halving = describe_halving(fit)
    if call0_note:
        v.evidence.append(call0_note)
    v.key_evidence = [v.evidence[0], *([halving] if halving else []), *v.evidence[1:]]
    for line in (halving, describe_tail(fit)):
        if line:
            v.evidence.append(line)
    v.evidence.extend(f"{label}: {n}" for n in fit.notes)
    nd = next_depth(fit.depths)
    if nd is not None and fit.kind not in ("inconclusive", "runaway"):
        pv = predict(fit, nd)
        if pv is not None and math.isfinite(pv):
            v.prediction = {"depth": nd, "value": pv}
            unit = " s" if fit.source == "time" else ""
            growth = f"x{pv / fit.values[-1]:.2f} over depth {fit.depths[-1]}" if fit.values[-1] else "from zero"
            v.evidence.append(f"the deciding model predicts {pv:.4g}{unit} at depth {nd} ({growth})")

    dominant, dom_line = _dominant(series, phases) if counter_fit is not None else (None, None)
    if dom_line:
        v.evidence.append(dom_line)
    for other, olabel in ((counter_fit, labels["counters"]), (time_fit, labels["time"])):
        if other is not None and other is not fit:
            agree = "agrees" if other.kind == fit.kind else f"disagrees with {fit.source} ({fit.kind}), which decide"
            v.evidence.append(f"beside: {describe_fit(other, olabel)}; {agree}")
    for name, mf in metric_fits.items():
        if mf is fit:
            continue
        note = series.metric_notes.get(name)
        v.evidence.append(
            f"beside: {describe_fit(mf, labels['where'] + ' ' + name)}"
            + (f" (does not decide: {note})" if note else "")
        )
    if eager:
        v.amortized, v.warm_to_call1, ev = amortization(series)
        v.evidence.extend(ev)
        if ev and v.kind in (model.SUPERLINEAR_BACKWARD, model.EXPONENTIAL_BACKWARD):
            v.key_evidence.append(ev[0])  # seed 000: warm calls as slow as call 1
    if predicted_base is not None:
        measured = f", measured {v.base:.2f}" if v.base is not None else ""
        v.evidence.append(f"predicted base {predicted_base:.2f} (use-matrix spectral radius){measured}")
        if v.base is not None:
            v.key_evidence.append(v.evidence[-1])
    if structure_note is None and isinstance(structure, Structure):
        structure_note = disagreement_reason(structure, v.base, series.profile, series.backend)
    if structure_note:
        v.evidence.append(structure_note)
    exp_kind = v.kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD)
    if series.declared_reuse is not None and exp_kind and v.base is not None:
        v.reuse_agrees = abs(v.base - series.declared_reuse) <= REUSE_TOLERANCE
        v.evidence.append(
            f"declared reuse {series.declared_reuse:g} vs measured base {v.base:.2f}: "
            + ("agrees" if v.reuse_agrees else "disagrees")
        )
    if series.stopped:
        v.evidence.append(series.stopped)
    v.cause = explain.cause(
        v.kind,
        base=v.base,
        exponent=v.exponent,
        mode=series.mode,
        dominant=dominant if fit.source == "counters" else None,
        declared_reuse=series.declared_reuse,
        backend=series.backend,
        label=label,
        source=fit.source,
        reason=fit.reason,
    )
    v.remedies = explain.remedies(
        v.kind, mode=series.mode, backend=series.backend, profile=series.profile, source=fit.source
    )
    return v


def sweep_table(results: list[Result]) -> list[dict[str, Any]]:
    """Rows for swept chains (results whose series has params, e.g. {"k": 2}), grouped by chain.

    Each row: chain, backend, profile, mode, params, k (``params["k"]``, or the only param's value),
    base (measured), predicted_base, verdict, and agrees (|base - predicted| <= 0.25 when both are known;
    True for a linear k = 1; None otherwise).
    """
    rows = []
    for r in results:
        s = r.series
        if not s.params:
            continue
        k = s.params.get("k")
        if k is None and len(s.params) == 1:
            k = next(iter(s.params.values()))
        pred = r.verdict.predicted_base if r.verdict.predicted_base is not None else s.declared_reuse
        base = r.verdict.base
        agrees = None
        if pred is not None and base is not None:
            agrees = abs(base - pred) <= REUSE_TOLERANCE
        elif pred is not None and r.verdict.kind == model.LINEAR and pred <= 1 + REUSE_TOLERANCE:
            agrees = True  # k = 1 must come out linear
        # (a linear verdict where the structure predicts k > 1 is an engine that does not walk the key
        # DAG as a tree, e.g. the fixed profile: nothing to agree or disagree with, left as None)
        rows.append(
            {
                "chain": s.chain,
                "backend": s.backend,
                "profile": s.profile,
                "mode": s.mode,
                "params": dict(s.params),
                "k": k,
                "base": base,
                "predicted_base": pred,
                "verdict": r.verdict.kind,
                "agrees": agrees,
            }
        )

    def _key(row: dict[str, Any]) -> tuple:
        k = row["k"]
        return (
            row["chain"],
            row["backend"],
            str(row["profile"]),
            row["mode"],
            (0, k) if isinstance(k, int | float) else (1, str(k)),
        )

    return sorted(rows, key=_key)
