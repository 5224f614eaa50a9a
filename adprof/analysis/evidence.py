"""Evidence lines of a verdict: each reads a Fit (none re-fits) or the series' counters (pure)."""

from __future__ import annotations

import math

from adprof.analysis.choice import choice_text
from adprof.analysis.costs import metric_where, next_depth
from adprof.analysis.explain import phase_name
from adprof.analysis.growth import halving_reading, interval_text, predict
from adprof.model import Fit, Series, Verdict, backend_info_of, counter_totals
from adprof.verdicts import Source
from adprof.words import fit_figure, fit_interval


def fmt_depths(ds: list[int]) -> str:
    return f"{ds[0]}..{ds[-1]}" if len(ds) > 1 else f"{ds[0]}" if ds else "?"


def describe_fit(fit: Fit, label: str, plural: bool = False) -> str:
    """One evidence line for a fit (``plural``: the label is a plural noun, ``... grow as``)."""
    over = f"over depths {fmt_depths(fit.depths)}"
    text = interval_text(fit)
    if fit.kind == "exponential":
        ratios = ", ".join(f"{r:.2f}" for r in fit.tail_ratios[-3:])
        exact = fit.source != "time"
        tail = f" (tail ratios {ratios})" if ratios and exact else ""
        iv = fit_interval(fit)  # time: the interval
        depths = fit.tail_depths if exact and fit.tail_depths else fit.depths
        return f"{label} x{fit.base:.2f} per {fit.axis or 'layer'}{iv} over depths {fmt_depths(depths)}{tail}"
    if fit.kind in ("superlinear", "mild"):
        words = "mildly superlinear, " if fit.kind == "mild" else ""
        return f"{label} {'grow' if plural else 'grows'} as {words}{text} {over}"
    if fit.kind == "linear":
        if fit.exponent == 0.0:
            return f"{label} flat {over}: no measurable growth"
        return f"{label} linear, {text} {over}"
    return f"{label} inconclusive {over}: {fit.reason or '; '.join(fit.notes) or 'not enough points'}"


def describe_settled(fit: Fit, series: Series, label: str) -> str | None:
    """The line of depths left out below a settled count (``Fit.settled``), or None."""
    st = fit.settled
    if st is None or not st.dropped:
        return None
    why = backend_info_of(series).specializes_shapes or "the compile specializes small shapes"
    dropped = ", ".join(str(d) for d in st.dropped)
    values = " / ".join(f"{x:,.0f}" for x in st.dropped_values)
    return (
        f"depths {dropped} left out of {label}: {why}; the program is the same {st.ops:g} ops at every depth, and "
        f"the count settles from depth {st.depth} on ({st.level:,.0f}, within {100 * st.spread:.2f}%; {values} "
        "at the depths left out)"
    )


def describe_halving(fit: Fit) -> str | None:
    """The depth-halving line: the measured ratio, the model's, and the reading of the deciding kind."""
    if fit.halving_ratio is None or fit.kind == "inconclusive":
        return None
    line = f"halving ratio {fit.halving_ratio:.2f} at depth {fit.halving_depth} vs {fit.halving_from}"
    if fit.model_halving_ratio is not None:
        line += f" (model {fit.model_halving_ratio:.2f})"
    reading = halving_reading(fit)
    return f"{line}: {reading}" if reading else line


def describe_tail(fit: Fit) -> str | None:
    if fit.tail_exponent is None or fit.kind == "inconclusive" or len(fit.depths) < 2:
        return None
    model_part = f" (model {fit.model_tail_exponent:.2f})" if fit.model_tail_exponent is not None else ""
    return f"tail exponent {fit.tail_exponent:.2f} over depths {fit.depths[-2]}..{fit.depths[-1]}{model_part}"


def decided_by(fit: Fit, series: Series, label: str) -> str:
    if fit.source == "time":
        how = f"{fit.statistic or 'lower quartile of repeats'}, {fit.clock or 'wall (perf_counter)'}"
        blind = [f"{k}: {v}" for k, v in series.metric_notes.items()]
        why = f"; no deterministic metric decides ({'; '.join(blind)})" if blind else ""
        return f"decided by {label} ({how}, {fit.interval_method or 'no interval'}){why}"
    how = f": {fit.interval_method}" if fit.interval_method else ""
    if fit.metric_name in series.lower_bound_metrics:
        return (
            f"decided by {label} (deterministic{how}; a lower bound on the phase's work: it counts work the phase "
            "must do, so the work grows at least this fast)"
        )
    return f"decided by {label} (deterministic{how})"


def dominant_counter(series: Series, phases: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The counter that dominates at the deepest point with counters, and an evidence line."""
    for p in sorted(series.points, key=lambda q: q.depth, reverse=True):
        tot = counter_totals(p.counters, phases)
        s = sum(tot.values()) if tot is not None else 0.0
        if tot is not None and s > 0:
            top = max(tot, key=tot.get)  # type: ignore[arg-type]
            parts = ", ".join(f"{k} {100 * v / s:.0f}%" for k, v in tot.items())
            return top, f"at depth {p.depth}: {parts} of {s:,.0f}"
    return None, None


def describe_choice(fit: Fit) -> str | None:
    """The model-choice line of a noisy reading: which family, over which, on what evidence."""
    if fit.source != "time" or not fit.model_choice:
        return None
    family = "exponential" if fit.model == "a + c*b^d" else "power"
    line = "model: " + choice_text(fit.model_choice, family, fit.ic_delta, fit.holdout_errors)
    if fit.grid_edge:
        line += f"; pinned at its grid edge: {', '.join(fit.grid_edge)}"
    return line


def fit_evidence(v: Verdict, series: Series, fit: Fit, label: str, call0_note: str, plural: bool = False) -> None:
    """The deciding fit's lines (and the key ones among them), its notes, and its prediction (``plural``: the label
    is a plural noun)."""
    v.evidence.append(describe_fit(fit, label, plural))
    settled = describe_settled(fit, series, label)
    if settled:
        v.evidence.append(settled)
    v.evidence.append(decided_by(fit, series, label))
    choice = describe_choice(fit)
    if choice:
        v.evidence.append(choice)
    halving = describe_halving(fit)
    if call0_note:
        v.evidence.append(call0_note)
    v.key_evidence = [v.evidence[0], *([halving] if halving else []), *v.evidence[1:]]
    for line in (halving, describe_tail(fit)):
        if line:
            v.evidence.append(line)
    v.evidence.extend(f"{label}: {n}" for n in fit.notes)
    nd = next_depth(fit.depths)
    if nd is not None and fit.kind != "inconclusive":
        pv = predict(fit, nd)
        if pv is not None and math.isfinite(pv):
            v.prediction = {"depth": nd, "value": pv}
            unit = " s" if fit.source == "time" else ""
            growth = f"x{pv / fit.values[-1]:.2f} over depth {fit.depths[-1]}" if fit.values[-1] else "from zero"
            v.evidence.append(f"the deciding model predicts {pv:.4g}{unit} at depth {nd} ({growth})")


def beside_evidence(
    v: Verdict, series: Series, phases: tuple[str, ...], fit: Fit, labels: dict[str, str]
) -> str | None:
    """The dominant counter, and the fits that do not decide; returns the dominant counter's name."""
    dominant, dom_line = dominant_counter(series, phases) if v.counter_fit is not None else (None, None)
    if dom_line:
        v.evidence.append(dom_line)
    for other, olabel in ((v.counter_fit, labels["counters"]), (v.time_fit, labels["time"])):
        if other is not None and other is not fit:
            agree = "agrees" if other.kind == fit.kind else f"disagrees with {fit.source} ({fit.kind}), which decide"
            v.evidence.append(f"beside: {describe_fit(other, olabel)}; {agree}")
    for name, mf in v.metric_fits.items():
        if mf is fit:
            continue
        note = series.metric_notes.get(name)
        v.evidence.append(
            f"beside: {describe_fit(mf, metric_where(series, phases, name, labels['where']) + ' ' + name)}"
            + (f" (does not decide: {note})" if note else "")
        )
    return dominant


def phase_evidence(v: Verdict, series: Series, fit: Fit) -> None:
    """The growing phase and every phase's share of the growth (multi-phase modes; read from the verdict)."""
    if not v.phase_shares:
        return
    parts = []
    for ph, share in sorted(v.phase_shares.items(), key=lambda kv: -kv[1]):
        pf = v.phase_fits.get(ph)
        figure = fit_figure(pf, interval=False) if pf is not None and pf.kind not in ("inconclusive",) else ""
        parts.append(f"{ph} {share:.0%}" + (f" ({figure})" if figure else ""))
    pts = [p.depth for p in series.points if not p.extra.get("censored")]
    span = f" between depths {min(pts)} and {max(pts)}" if pts else ""
    line = f"phases, share of the time's growth{span}: " + ", ".join(parts)
    if v.growing_phase:
        name = fit.metric_name if fit.source == Source.METRIC else ""
        carried = bool(name) and any(name in p.metrics.get(v.growing_phase, {}) for p in series.points)
        how = f"its {name} decides" if carried else "most of the growth"
        line += f"; growing: {v.growing_phase} ({phase_name(series.backend, series.mode, v.growing_phase)}; {how})"
    v.evidence.append(line)
    if v.growing_phase:
        v.key_evidence.append(line)
