"""The decision on one measured Series (pure): :func:`decide` gives its Verdict, with one deciding model and
evidence that only reads it. It alone owns the verdicts that are not a reading of the model: a failing or
empty series, a point killed at its own timeout (a hang), a lower bound far over the model (a runaway), a
deterministic metric contradicted by time, and the structure and declared-reuse cross-checks.

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
    assess_series,
    deciding_fits,
    fit_cost,
    metric_names,
    metric_value,
    metric_where,
    next_depth,
    phases_of,
    predicted_growth,
    series_values,
    time_repeats,
    timed_label,
)
from adprof.analysis.eager import (
    AMORTIZED_BELOW,
    EXPONENT_DROP,
    amortization,
    amortization_evidence,
    eager_decision,
)
from adprof.analysis.evidence import (
    beside_evidence,
    describe_fit,
    describe_halving,
    describe_tail,
    fit_evidence,
    phase_evidence,
)
from adprof.analysis.growth import fit_growth, halving_reading, interval_text, predict
from adprof.analysis.models import B_MAX, P_MAX
from adprof.analysis.phases import growing_phase
from adprof.analysis.structure import Structure, disagreement_reason
from adprof.analysis.sweeps import REUSE_TOLERANCE, sweep_table
from adprof.analysis.tree import TREE_PROPORTION, follows_tree
from adprof.constants import LOADED_PER_CORE
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
    "assess_series",
    "decide",
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

#: Time contradicts a healthy deterministic reading when its own fit is confidently a pathology (the lower end
#: of its interval at least this base, exponential, or exponent, power law) and time grows this many times more
#: than the metric over the same depths (load bursts on a few points do not: the metric grows too).
CONTRADICTING_BASE = 1.3
CONTRADICTING_EXPONENT = 1.6
CONTRADICTING_EXCESS = 4.0
#: ``trust``: which side decides when a deterministic metric and time contradict each other.
TRUST_CHOICES = ("counters", "time")


def _labels(series: Series, phases: tuple[str, ...]) -> dict[str, str]:
    where = f"steady {'+'.join(phases)}" if series.mode == "eager" else "+".join(phases)
    timed = f"steady {timed_label(series, phases)}" if series.mode == "eager" else timed_label(series, phases)
    return {"counters": f"{where} {COUNTER_LABEL}", "time": f"wall time ({timed})", "where": where}


def decide(
    series: Series,
    structure: Structure | None = None,
    *,
    predicted_base: float | None = None,
    trust: str | None = None,
) -> Verdict:
    """The Verdict of one Series: the deciding fit, evidence read from it, cause and remedies.

    structure: the chain's :class:`Structure` (its summary is the first evidence line, its predicted base the
    cross-check; ``predicted_base`` overrides that base). trust: ``"counters"`` or ``"time"`` settles a
    contradiction between a deterministic metric and time (else the verdict is inconclusive).
    """
    if predicted_base is None and isinstance(structure, Structure):
        predicted_base = structure.predicted_base
    v = _verdict(series, structure, predicted_base, trust)
    if isinstance(structure, Structure):
        v.evidence.insert(0, structure.summary())
    v.loaded_machine = loaded_machine(series, v)
    return v


def loaded_machine(series: Series, verdict: Verdict) -> bool:
    """Time decided the verdict and the machine that measured the series was loaded meanwhile."""
    per_core = series.machine.load_per_core if series.machine is not None else None
    timed = verdict.fit is not None and verdict.fit.source == "time"
    return bool(timed and per_core is not None and per_core > LOADED_PER_CORE)


def _verdict(series: Series, structure: Any, predicted_base: float | None, trust: str | None) -> Verdict:
    if series.error:
        return Verdict(
            kind=model.ERROR,
            predicted_base=predicted_base,
            evidence=[series.error],
            reason=series.error,
            cause=explain.cause(model.ERROR, error=series.error),
        )
    if not series.points:
        why = series.stopped or "no points measured"
        return Verdict(
            kind=model.INCONCLUSIVE,
            predicted_base=predicted_base,
            evidence=[why],
            reason=why,
            cause="not measured",
            remedies=["rerun with a larger --budget or fewer chains"],
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
    fit, label = _deciding_fit(v, source, labels, series, phases)
    if fit is None:
        asked = f" ({series.required_metric} asked for: not counted)" if series.required_metric else ""
        v.evidence.append(f"no cost measured for phases {', '.join(phases)}{asked}")
        v.reason = "no cost was measured"
        v.cause = explain.cause(model.INCONCLUSIVE, reason=v.reason)
        return v
    if fit is counter_fit and (tree := follows_tree(counter_fit, structure)) is not None:
        fit = tree
    fit, label, backward_kind, call0_note = eager_decision(v, series, fit, label)
    if trust == "time" and fit.source != "time" and v.time_fit is not None:
        v.time_fit = fit_cost(series, phases, "time")  # time decides, with its interval
        fit, label, backward_kind, call0_note = v.time_fit, labels["time"], series.mode == "eager", ""
    v.fit = fit
    v.kind = _reading(fit, backward_kind)
    fit_evidence(v, series, fit, label, call0_note)
    _killed(v, series, fit)
    _runaway_bound(v, fit)
    if trust is None:
        _time_contradicts(v, series, phases, fit, labels)
    dominant = beside_evidence(v, series, phases, fit, labels)
    v.growing_phase, v.phase_shares, v.phase_fits = growing_phase(series, phases, fit)
    phase_evidence(v, series, fit)
    if series.mode == "eager" and phases == ("backward",):
        amortization_evidence(v, series)
    _cross_checks(v, series, predicted_base, structure)
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
        reason=v.reason or fit.reason,
        axis=series.axis,
        phase=v.growing_phase,
        phase_share=v.phase_shares.get(v.growing_phase),
        bound=_bound_name(series, fit),
    )
    v.remedies = explain.remedies(
        v.kind, mode=series.mode, backend=series.backend, profile=series.profile, source=fit.source, axis=series.axis
    )
    return v


def _bound_name(series: Series, fit: Fit) -> str:
    """The lower-bound metric that decided, or ""."""
    name = fit.metric.split(":", 1)[0] if fit.source == "metric" else ""
    return name if name in series.lower_bound_metrics else ""


def _deciding_fit(
    v: Verdict, source: str, labels: dict[str, str], series: Series, phases: tuple[str, ...]
) -> tuple[Fit | None, str]:
    """The fit of the deciding source, and its label."""
    if source == "counters":
        return v.counter_fit, labels["counters"]
    if source.startswith("metric:"):
        name = source.split(":", 1)[1]
        return v.metric_fits.get(name), f"{metric_where(series, phases, name, labels['where'])} {name}"
    return v.time_fit, labels["time"]


def _reading(fit: Fit, backward_kind: bool) -> str:
    """The verdict kind that reads the deciding fit."""
    if fit.kind in ("linear", "inconclusive"):
        return model.LINEAR if fit.kind == "linear" else model.INCONCLUSIVE
    return _KIND[(fit.kind, backward_kind)]


def _killed(v: Verdict, series: Series, fit: Fit) -> None:
    """A point killed at its own timeout: evidence for fast growth, or a runaway after depths that look
    healthy (or too few to say). Either way a finding (``Verdict.killed``)."""
    stop = series.killed
    if stop is None:
        return
    v.killed = True
    text = model.killed_text(stop)
    if fit.kind in ("exponential", "superlinear"):
        v.evidence.append(f"{text}: consistent with the {fit.kind} growth")
        return
    before = f" after depths that read {fit.kind}" if fit.kind != "inconclusive" else ""
    v.kind, v.reason = model.RUNAWAY, f"{text}{before}"
    v.key_evidence.insert(0, v.reason)


def _runaway_bound(v: Verdict, fit: Fit) -> None:
    """A lower bound past the last exact depth, far over what a linear or mild model predicts there."""
    if fit.runaway_bound is None or v.kind == model.RUNAWAY or fit.kind not in ("linear", "mild"):
        return
    v.kind = model.RUNAWAY
    v.reason = (
        f"depth {fit.runaway_bound} ran past its cap where the measured depths predict far less: a hang or a sudden "
        "blowup at that depth"
    )
    v.key_evidence.insert(0, v.reason)


def _growth(fit: Fit, lo: int, hi: int) -> float | None:
    """The fit's value at depth ``hi`` over its value at ``lo`` (None unless both are measured and positive)."""
    at = dict(zip(fit.depths, fit.values, strict=True))
    a, b = at.get(lo), at.get(hi)
    return b / a if a and b and a > 0 else None


def _confident_pathology(timed: Fit, metric: Fit) -> bool:
    """A time fit that reads exponential or superlinear with its whole interval well inside that band and not
    pinned at the grid's edge, and that grows far more than the deterministic metric up to each of the two
    deepest depths both measured (one slow point, a load burst, does not make a contradiction)."""
    if not timed.interval:
        return False
    lo, hi = timed.interval
    common = sorted(set(timed.depths) & set(metric.depths))
    if len(common) < 4:
        return False
    for deep in common[-2:]:
        t, m = _growth(timed, common[0], deep), _growth(metric, common[0], deep)
        if t is None or m is None or t < CONTRADICTING_EXCESS * m:
            return False
    if timed.kind == "exponential":
        return CONTRADICTING_BASE <= lo and hi < B_MAX
    return timed.kind == "superlinear" and CONTRADICTING_EXPONENT <= lo and hi < P_MAX


def _time_contradicts(v: Verdict, series: Series, phases: tuple[str, ...], fit: Fit, labels: dict[str, str]) -> None:
    """A deterministic reading that says healthy while time confidently says a pathology: the metric may be
    blind to the work that grows. Inconclusive (a guard fails) unless the user says which to trust."""
    if fit.source == "time" or fit.kind not in ("linear", "mild") or v.time_fit is None:
        return
    if v.time_fit.kind not in ("exponential", "superlinear"):
        return
    timed = fit_cost(series, phases, "time")  # with its interval: only when it may contradict
    if timed is None or not _confident_pathology(timed, fit):
        return
    v.time_fit = timed
    figure = interval_text(timed)
    v.kind = model.INCONCLUSIVE
    v.reason = (
        f"{labels['time']} grows {figure} while {fit.metric} reads {fit.kind}: the deterministic metric may be "
        "blind to the work that grows; rerun with --trust counters or --trust time to choose"
    )
    v.key_evidence.insert(0, v.reason)
    v.evidence.insert(0, v.reason)


def _cross_checks(v: Verdict, series: Series, predicted_base: float | None, structure: Any) -> None:
    """The measured base against the predicted base, the structure and the declared reuse; why it stopped."""
    if predicted_base is not None:
        measured = f", measured {v.base:.2f}" if v.base is not None else ""
        v.evidence.append(f"predicted base {predicted_base:.2f} (use-matrix spectral radius){measured}")
        if v.base is not None:
            v.key_evidence.append(v.evidence[-1])
    if isinstance(structure, Structure):
        note = disagreement_reason(structure, v.base, series.profile, series.backend)
        if note:
            v.evidence.append(note)
    exp_kind = v.kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD)
    if series.declared_reuse is not None and exp_kind and v.base is not None:
        v.reuse_agrees = abs(v.base - series.declared_reuse) <= REUSE_TOLERANCE
        v.evidence.append(
            f"declared reuse {series.declared_reuse:g} vs measured base {v.base:.2f}: "
            + ("agrees" if v.reuse_agrees else "disagrees")
        )
    if series.stop is not None:
        v.evidence.append(series.stop.text())
