"""Verdicts from one measured Series (pure).

Primary metric: the deterministic counters when present (``key_comparisons + metadata_lookups +
nodes_visited``), else wall time. Traced and compile modes: the cost of the grad transform plus the
drop of its derivative graph (phases ``transform`` and ``drop``; compile mode adds ``compile``): a
cost paid once per transform. Eager mode: the steady per-call backward (phase ``backward``), paid on
every call; when only call 0 (the cache miss) grows, the verdict is a transform one. The wall-time
fit is computed beside the counter fit and any disagreement is recorded in the evidence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from adprof import model
from adprof.analysis import explain
from adprof.analysis.fit import fit_growth, halving_ratios
from adprof.model import (
    COUNTER_KEYS,
    Fit,
    Result,
    Series,
    Verdict,
    cost_phases,
    counter_totals,
    counter_value,
    time_value,
)

COUNTER_LABEL = "key comparisons+lookups+visits"
REUSE_TOLERANCE = 0.25
AMORTIZED_BELOW = 0.5  # warm calls cheaper than this fraction of call 1 => amortized


def metric_points(series: Series, phases: tuple[str, ...], source: str) -> tuple[list[int], list[float], list[bool]]:
    """``(depths, values, censored)`` of the counter or time cost over phases."""
    get = counter_value if source == "counters" else time_value
    ds, vs, cs = [], [], []
    for p in series.points:
        v = get(p, phases)
        if v is None or not math.isfinite(v):
            continue
        ds.append(p.depth)
        vs.append(v)
        cs.append(bool(p.extra.get("censored", False)))
    return ds, vs, cs


def _fit(series: Series, phases: tuple[str, ...], source: str) -> Fit | None:
    d, v, c = metric_points(series, phases, source)
    if not d:
        return None
    label = "+".join(phases)
    metric = f"counters[{label}]: " + "+".join(COUNTER_KEYS) if source == "counters" else f"time: {label}"
    return fit_growth(d, v, metric=metric, exact=source == "counters", censored=c)


def _fmt_depths(ds: list[int]) -> str:
    return f"{ds[0]}..{ds[-1]}" if len(ds) > 1 else f"{ds[0]}" if ds else "?"


def describe_fit(fit: Fit, label: str) -> str:
    """One evidence line for a fit."""
    if fit.kind == "exponential":
        ratios = ", ".join(f"{r:.2f}" for r in fit.tail_ratios)
        over = f" over depths {_fmt_depths(fit.tail_depths)}" if fit.tail_depths else ""
        return f"{label} x{fit.base:.2f} per layer{over} (tail ratios {ratios})"
    if fit.kind == "superlinear":
        lp = ""
        if fit.method == "marginal" and fit.local_powers:
            lp = " (local power of the marginal cost " + ", ".join(f"{x:.2f}" for x in fit.local_powers[-3:]) + ")"
        return f"{label} grows as depth^{fit.exponent:.2f} over depths {_fmt_depths(fit.depths)}{lp}"
    if fit.kind == "linear":
        if fit.exponent == 0.0:
            return f"{label} constant over depths {_fmt_depths(fit.depths)}: no growth"
        tail = f", marginal per-layer ratio {fit.tail_ratios[-1]:.2f}" if fit.tail_ratios else ""
        return f"{label} linear over depths {_fmt_depths(fit.depths)} (exponent {fit.exponent:.2f}{tail})"
    why = "; ".join(fit.notes) or "not enough points"
    return f"{label} inconclusive over depths {_fmt_depths(fit.depths)}: {why}"


def describe_halving(fit: Fit) -> str | None:
    """The depth-halving evidence line, with the seed-000 reading."""
    if fit.halving_ratio is None:
        return None
    h = fit.halving_ratio
    if fit.kind == "exponential":
        reading = "grows with depth as b^(d/2): exponential, not a power of graph size"
    elif h > 3:
        reading = "below 1/3 when halved: superlinear cost of graph size, not arithmetic"
    elif h <= 2.3:
        reading = "about 2: linear"
    else:
        reading = "between 2 and 3: mildly superlinear"
    return f"halving ratio {h:.1f} at depth {fit.halving_depth} vs {fit.halving_from} ({reading})"


def _dominant(series: Series, phases: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The counter that dominates at the deepest point with counters, and an evidence line."""
    for p in sorted(series.points, key=lambda q: q.depth, reverse=True):
        tot = counter_totals(p.counters, phases)
        s = sum(tot.values()) if tot is not None else 0.0
        if tot is not None and s > 0:
            top = max(tot, key=tot.get)
            parts = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in tot.items())
            return top, f"at depth {p.depth}: {parts} of {s:,.0f}"
    return None, None


def _per_call(point: model.Point) -> tuple[list[float], str] | None:
    """Per-call backward costs of a point: counters if present and non-zero, else seconds."""
    cc = point.extra.get("backward_call_counters")
    if isinstance(cc, list) and len(cc) >= 3:
        # one dict per call: flat counters, or per-phase counter dicts
        vals = [sum((counter_totals(c) or counter_totals({"call": c}) or {}).values()) for c in cc]
        if vals[1] > 0:
            return vals, "counters"
    bc = point.extra.get("backward_calls")
    if isinstance(bc, list) and len(bc) >= 3 and bc[1]:
        return [float(x) for x in bc], "seconds"
    return None


def amortization(series: Series) -> tuple[bool | None, float | None, list[str]]:
    """Eager: do warm calls (2..5) get cheaper than call 1, at the deepest point and in growth?"""
    pts = [p for p in series.points if not p.extra.get("censored") and _per_call(p)]
    if not pts:
        return None, None, []
    pts.sort(key=lambda p: p.depth)
    deep = pts[-1]
    calls, unit = _per_call(deep)  # type: ignore[misc]
    warm = calls[2:6]
    ratio = float(np.median(warm)) / calls[1]
    ev = []
    amortized = ratio < AMORTIZED_BELOW
    ev.append(
        f"calls 2..{1 + len(warm)} cost {ratio:.2f}x call 1 at depth {deep.depth} ({unit}): "
        + ("amortized by the warm cache" if amortized else "not amortized by the cache")
    )
    if len(pts) >= 4:
        d = [p.depth for p in pts]
        c1, cw = [], []
        for p in pts:
            vals, _ = _per_call(p)  # type: ignore[misc]
            c1.append(vals[1])
            cw.append(float(np.median(vals[2:6])))
        exact = unit == "counters"
        f1 = fit_growth(d, c1, exact=exact)
        fw = fit_growth(d, cw, exact=exact)
        if f1.exponent is not None and fw.exponent is not None:
            ev.append(f"growth exponent of warm calls {fw.exponent:.2f} vs call 1 {f1.exponent:.2f}")
            if fw.exponent < f1.exponent - 0.15:
                amortized = True
        elif f1.base is not None and fw.base is not None:
            ev.append(f"per-layer ratio of warm calls {fw.base:.2f} vs call 1 {f1.base:.2f}")
            if fw.base < f1.base - 0.15:
                amortized = True
    return amortized, ratio, ev


_KIND = {
    ("exponential", False): model.EXPONENTIAL_TRANSFORM,
    ("superlinear", False): model.SUPERLINEAR_TRANSFORM,
    ("exponential", True): model.EXPONENTIAL_BACKWARD,
    ("superlinear", True): model.SUPERLINEAR_BACKWARD,
}


def classify(series: Series, predicted_base: float | None = None) -> Verdict:
    """Classify one Series into a Verdict with figures, evidence, cause and remedies."""
    if series.error or not series.points:
        msg = series.error or "no points measured"
        return Verdict(
            kind=model.ERROR,
            predicted_base=predicted_base,
            evidence=[msg],
            cause=explain.cause(model.ERROR, error=series.error),
        )
    eager = series.mode == "eager"
    phases = cost_phases(series.mode)
    has_counters = any(counter_value(p, phases) is not None for p in series.points)
    counter_fit = _fit(series, phases, "counters") if has_counters else None
    time_fit = _fit(series, phases, "time")
    primary = counter_fit or time_fit
    where = "steady backward" if eager else "+".join(phases)
    c_label = f"{where} {COUNTER_LABEL}"
    t_label = f"wall time ({where})"
    v = Verdict(
        kind=model.INCONCLUSIVE,
        predicted_base=predicted_base,
        counter_fit=counter_fit,
        time_fit=time_fit,
    )
    if primary is None:
        v.evidence.append(f"no cost measured for phases {', '.join(phases)}")
        v.cause = explain.cause(model.INCONCLUSIVE)
        return v
    v.metric = primary.metric
    label = c_label if primary is counter_fit else t_label
    v.evidence.append(describe_fit(primary, label))
    if primary.kind != "inconclusive":  # (inconclusive lines already carry the notes)
        v.evidence.extend(f"{label}: {n}" for n in primary.notes)
    halving = describe_halving(primary)
    if halving and primary.kind != "inconclusive":
        v.evidence.append(halving)
    if (
        primary.r2_exponential is not None
        and primary.r2_power is not None
        and primary.kind
        in (
            "exponential",
            "superlinear",
        )
    ):
        v.evidence.append(f"log fits: exponential R² {primary.r2_exponential:.3f}, power R² {primary.r2_power:.3f}")
    dominant, dom_line = _dominant(series, phases) if counter_fit is not None else (None, None)
    if dom_line:
        v.evidence.append(dom_line)
    if counter_fit is not None and time_fit is not None:
        agree = "agrees" if time_fit.kind == counter_fit.kind else f"disagrees with counters ({counter_fit.kind})"
        v.evidence.append(describe_fit(time_fit, t_label) + f"; {agree}")

    kind = primary.kind
    fit_used = primary
    steep = _steep_with_structure(series, phases, counter_fit, predicted_base) if kind == "inconclusive" else None
    if steep is not None:
        # Too few points for a fit, because the cost outran the cap after 2-3 depths; the exact counters
        # grow by the factor the structure predicts, which is enough to call it (seed 001's TRG: 4 steps).
        kind = "exponential"
        primary.kind, primary.base = "exponential", steep
        v.evidence.append(
            f"only {len(primary.depths)} depths before the cap: exact counters grow "
            f"x{steep:.1f} per layer, and the structure predicts x{predicted_base:.1f}"
        )
    if kind == "inconclusive":
        v.kind = model.INCONCLUSIVE
    elif kind == "linear":
        v.kind = model.LINEAR
        if eager:
            call0 = _fit(series, ("backward0",), "counters") if has_counters else None
            call0 = call0 or _fit(series, ("backward0",), "time")
            v.call0_fit = call0
            if (
                call0 is not None
                and call0.kind in ("exponential", "superlinear")
                and (has_counters or _consistent_growth(call0))
            ):
                v.kind = _KIND[(call0.kind, False)]
                fit_used = call0
                v.evidence.append(describe_fit(call0, "call 0 backward (cache miss)") + "; only call 0 grows")
    else:
        v.kind = _KIND[(kind, eager)]
    if eager:
        v.amortized, v.warm_to_call1, ev = amortization(series)
        v.evidence.extend(ev)

    if v.kind in model.PATHOLOGIES:
        v.base = fit_used.base
        v.exponent = fit_used.exponent
    else:
        v.exponent = primary.exponent
    v.halving_ratio = fit_used.halving_ratio
    exp_kind = v.kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD)
    if predicted_base is not None and v.base is not None:
        v.evidence.append(f"predicted base {predicted_base:.2f} (use-matrix spectral radius), measured {v.base:.2f}")
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
        dominant=dominant,
        declared_reuse=series.declared_reuse,
    )
    v.remedies = explain.remedies(v.kind, mode=series.mode, backend=series.backend, profile=series.profile)
    return v


def _consistent_growth(fit: Fit) -> bool:
    """Wall-time growth of a single-sample series (call 0) that is not one slow point: the last two
    depth-doubling ratios both exceed 2.6 (a load burst inflates one point, not two ratios)."""
    ratios = [r for _, _, r in halving_ratios(fit.depths, fit.values)]
    return len(ratios) >= 2 and min(ratios[-2:]) > 2.6


#: Smallest per-layer counter ratio that the few-points rule accepts (with a structure that agrees).
STEEP_RATIO = 1.5


def _steep_with_structure(
    series: Series, phases: tuple[str, ...], counter_fit: Fit | None, predicted_base: float | None
) -> float | None:
    """Per-layer base from 2-3 consecutive exact points that agree with the predicted base, else None."""
    if counter_fit is None or predicted_base is None or predicted_base < STEEP_RATIO:
        return None
    d, c = counter_fit.depths, counter_fit.values
    if not 2 <= len(d) <= 3 or not series.stopped or any(b - a != 1 for a, b in zip(d, d[1:], strict=False)):
        return None
    if any(x <= 0 for x in c):
        return None
    ratios = [b / a for a, b in zip(c, c[1:], strict=False)]
    last = ratios[-1]
    if min(ratios) < STEEP_RATIO or abs(last - predicted_base) > 0.25 * predicted_base:
        return None
    return last


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
