"""Verdicts from one measured Series (pure): one deciding model, and evidence that only reads it.

What decides, in order: the engine's deterministic counters (``key_comparisons + metadata_lookups +
nodes_visited``, or a command's reported ``counters``); else the first deterministic work metric that
the backend declares able to see the phase's work (``Series.deciding_metrics``: Python call counts,
program sizes, instruction counts); else wall time, a robust statistic of repeats with a bootstrap
interval. Traced and compile modes classify the transform (plus lowering/compile in compile mode) and
the drop of its derivative graph; eager mode the steady per-call backward, and call 0 (the cache miss)
when only it grows. The other metrics are fitted too and shown beside, never edited into the decision.

This module orchestrates; the parts live in :mod:`~adprof.analysis.costs` (the costs of a series, their fits,
which decides), :mod:`~adprof.analysis.tree` (few points read through the tree sizes),
:mod:`~adprof.analysis.eager` (call 0 and amortization), :mod:`~adprof.analysis.evidence` (the evidence lines)
and :mod:`~adprof.analysis.sweeps` (the sweep table). Their public names are still importable from here.
"""

from __future__ import annotations

from typing import Any

from adprof import model
from adprof.analysis import explain
from adprof.analysis.costs import (
    deciding_fits,
    metric_names,
    metric_value,
    next_depth,
    phases_of,
    predicted_growth,
    series_values,
    time_repeats,
)
from adprof.analysis.eager import (
    AMORTIZED_BELOW,
    EXPONENT_DROP,
    amortization,
    amortization_evidence,
    eager_decision,
)
from adprof.analysis.evidence import beside_evidence, describe_fit, describe_halving, describe_tail, fit_evidence
from adprof.analysis.growth import fit_growth, halving_reading, interval_text, predict
from adprof.analysis.structure import Structure, disagreement_reason
from adprof.analysis.sweeps import REUSE_TOLERANCE, sweep_table
from adprof.analysis.tree import TREE_PROPORTION, follows_tree
from adprof.model import COUNTER_KEYS, Fit, Point, Result, Series, Verdict, cost_phases, counter_value, time_value

__all__ = [
    "AMORTIZED_BELOW",
    "COUNTER_KEYS",
    "COUNTER_LABEL",
    "EXPONENT_DROP",
    "REUSE_TOLERANCE",
    "TREE_PROPORTION",
    "Fit",
    "Point",
    "Result",
    "Series",
    "Structure",
    "Verdict",
    "amortization",
    "classify",
    "cost_phases",
    "counter_value",
    "describe_fit",
    "describe_halving",
    "describe_tail",
    "disagreement_reason",
    "explain",
    "fit_growth",
    "follows_tree",
    "halving_reading",
    "interval_text",
    "metric_names",
    "metric_value",
    "model",
    "next_depth",
    "predict",
    "predicted_growth",
    "series_values",
    "sweep_table",
    "time_repeats",
    "time_value",
]

COUNTER_LABEL = "key comparisons+lookups+visits"

_KIND = {
    ("exponential", False): model.EXPONENTIAL_TRANSFORM,
    ("superlinear", False): model.SUPERLINEAR_TRANSFORM,
    ("mild", False): model.MILD_TRANSFORM,
    ("exponential", True): model.EXPONENTIAL_BACKWARD,
    ("superlinear", True): model.SUPERLINEAR_BACKWARD,
    ("mild", True): model.MILD_BACKWARD,
}


def _labels(series: Series, phases: tuple[str, ...]) -> dict[str, str]:
    where = "steady backward" if series.mode == "eager" else "+".join(phases)
    return {"counters": f"{where} {COUNTER_LABEL}", "time": f"wall time ({where})", "where": where}


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
    phases = phases_of(series)
    labels = _labels(series, phases)
    counter_fit, time_fit, metric_fits, source = deciding_fits(series, phases)
    v = Verdict(
        kind=model.INCONCLUSIVE,
        predicted_base=predicted_base,
        counter_fit=counter_fit,
        time_fit=time_fit,
        metric_fits=metric_fits,
    )
    fit, label = _deciding_fit(v, source, labels)
    if fit is None:
        asked = f" ({series.required_metric} asked for: not counted)" if series.required_metric else ""
        v.evidence.append(f"no cost measured for phases {', '.join(phases)}{asked}")
        v.cause = explain.cause(model.INCONCLUSIVE, reason="no cost was measured")
        return v
    if fit is counter_fit and (tree := follows_tree(counter_fit, structure)) is not None:
        fit = tree
    fit, label, backward_kind, call0_note = eager_decision(v, series, fit, label)
    _read_killed(v, series, fit)
    _set_reading(v, fit, backward_kind)
    fit_evidence(v, series, fit, label, call0_note)
    dominant = beside_evidence(v, series, phases, fit, labels)
    if series.mode == "eager":
        amortization_evidence(v, series)
    _cross_checks(v, series, predicted_base, structure_note, structure)
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


def _deciding_fit(v: Verdict, source: str, labels: dict[str, str]) -> tuple[Fit | None, str]:
    """The fit of the deciding source, and its label."""
    if source == "counters":
        return v.counter_fit, labels["counters"]
    if source.startswith("metric:"):
        name = source.split(":", 1)[1]
        return v.metric_fits.get(name), f"{labels['where']} {name}"
    return v.time_fit, labels["time"]


def _read_killed(v: Verdict, series: Series, fit: Fit) -> None:
    """A point killed at its own timeout: evidence for fast growth, or a runaway after a slow one."""
    killed = [p for p in series.points if p.extra.get("killed")]
    kind = fit.kind
    if killed and kind not in ("exponential", "superlinear"):
        # a point killed at its own timeout after depths that look healthy (or too few to say): a hang or a
        # sudden blowup there, never a healthy series
        before = f" after depths that read {kind}" if kind != "inconclusive" else ""
        fit.notes.append(f"{killed[0].extra['killed']}{before}")
        fit.kind = "runaway"
        fit.reason = f"{killed[0].extra['killed']}{before}"
    elif killed:
        v.evidence.append(f"{killed[0].extra['killed']}: consistent with the {kind} growth")


def _set_reading(v: Verdict, fit: Fit, backward_kind: bool) -> None:
    """The verdict's kind and numbers, from the deciding fit only."""
    kind = fit.kind
    v.fit, v.metric = fit, fit.metric
    if kind == "runaway":
        v.kind = model.RUNAWAY
    elif kind in ("linear", "inconclusive"):
        v.kind = model.LINEAR if kind == "linear" else model.INCONCLUSIVE
    else:
        v.kind = _KIND[(kind, backward_kind)]
    v.base, v.exponent = (fit.base, fit.exponent) if kind == "exponential" else (None, fit.exponent)
    v.halving_ratio = fit.halving_ratio
    v.interval_text = interval_text(fit)


def _cross_checks(
    v: Verdict, series: Series, predicted_base: float | None, structure_note: str | None, structure: Any
) -> None:
    """The measured base against the predicted base, the structure and the declared reuse; why it stopped."""
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
