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

import math
from collections.abc import Callable
from typing import Any

from adprof import model, verdicts, words
from adprof.analysis import explain
from adprof.analysis.bands import LINEAR_MAX
from adprof.analysis.costs import (
    assess_series,
    cost_rate,
    deciding_fit,
    deciding_fits,
    fit_cost,
    metric_names,
    metric_value,
    metric_where,
    next_depth,
    phases_of,
    predicted_growth,
    proxy_decided,
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
from adprof.analysis.growth import MIN_POINTS, fit_growth, halving_reading, interval_text, predict
from adprof.analysis.jumps import (
    CONTRADICTING_EXCESS,
    cpu_values,
    expected,
    figure_growth,
    growth_ratio,
    outgrows,
    phase_seconds,
    time_jumps,
    whole_point_time,
)
from adprof.analysis.knee import MIN_AFTER, find_knee, one_law_suffices
from adprof.analysis.models import B_MAX, P_MAX
from adprof.analysis.phases import growing_phase
from adprof.analysis.structure import Structure, disagreement_reason
from adprof.analysis.sweeps import REUSE_TOLERANCE, sweep_table
from adprof.analysis.tree import TREE_PROPORTION, follows_tree
from adprof.constants import LOADED_PER_CORE
from adprof.model import (
    COUNTER_KEYS,
    RUNAWAY_FACTOR,
    Decider,
    Fit,
    Knee,
    Noun,
    Point,
    Result,
    Series,
    Verdict,
    backend_info_of,
    cost_phases,
    counter_value,
    point_wall,
    time_value,
)
from adprof.prediction import law_factor
from adprof.verdicts import Source
from adprof.words import fit_figure

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


#: Time contradicts a healthy deterministic reading when its own fit is confidently a pathology (the lower end
#: of its interval at least this base, exponential, or exponent, power law) and time grows this many times more
#: than the metric over the same depths (load bursts on a few points do not: the metric grows too).
CONTRADICTING_BASE = 1.3
CONTRADICTING_EXPONENT = 1.6
#: A line past a knee this many times steeper than the line before it is a change of regime still undecided.
KNEE_SLOPE = 2.0
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
    named: Noun | None = None,
) -> Verdict:
    """The Verdict of one Series: the deciding fit, evidence read from it, cause and remedies.

    structure: the chain's :class:`Structure` (its summary is the first evidence line, its predicted base the
    cross-check; ``predicted_base`` overrides that base). trust: ``"counters"`` or ``"time"`` settles a
    contradiction between a deterministic metric and time (else the verdict is inconclusive). named: how the
    evidence names the deciding work metric (the memory verdict's ``saved-for-backward bytes``), else where it was
    counted and its name.
    """
    if predicted_base is None and isinstance(structure, Structure):
        predicted_base = structure.predicted_base
    v = _verdict(series, structure, predicted_base, trust, named)
    if isinstance(structure, Structure):
        v.evidence.insert(0, structure.summary())
    v.loaded_machine = loaded_machine(series, v)
    return v


def loaded_machine(series: Series, verdict: Verdict) -> bool:
    """Time decided the verdict and the machine that measured the series was loaded meanwhile."""
    per_core = series.machine.load_per_core if series.machine is not None else None
    timed = verdict.fit is not None and verdict.fit.source == "time"
    return bool(timed and per_core is not None and per_core > LOADED_PER_CORE)


def _verdict(
    series: Series, structure: Any, predicted_base: float | None, trust: str | None, named: Noun | None
) -> Verdict:
    if series.error:
        return Verdict(
            kind=model.ERROR,
            predicted_base=predicted_base,
            evidence=[series.error],
            reason=series.error,
            cause=explain.cause(model.ERROR, error=series.error),
        )
    if not series.points:
        why = words.stopped_text(series) or "no points measured"
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
    counter_fit, time_fit, metric_fits, decider = deciding_fits(series, phases)
    v = Verdict(
        kind=model.INCONCLUSIVE,
        predicted_base=predicted_base,
        counter_fit=counter_fit,
        time_fit=time_fit,
        metric_fits=metric_fits,
    )
    fit, label = _deciding_fit(v, decider, labels, series, phases, named)
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
    named_fit = named is not None and fit.source == Source.METRIC and fit.metric_name == decider.metric_name
    fit_evidence(v, series, fit, label, call0_note, plural=named_fit and named.plural)  # type: ignore[union-attr]
    _knee(v, series, fit, backward_kind)
    v.jumps = time_jumps(series, fit)
    _stopped_points(v, series, fit)
    _runaway_bound(v, fit)
    if trust is None:
        _time_contradicts(v, series, phases, fit, labels)
    if trust != "counters":
        _measured_jumps(v, fit)
    dominant = beside_evidence(v, series, phases, fit, labels)
    v.growing_phase, v.phase_shares, v.phase_fits = growing_phase(series, phases, fit)
    phase_evidence(v, series, fit)
    _cost_rate(v, series, phases, fit)
    if series.mode == "eager" and phases == ("backward",):
        amortization_evidence(v, series)
    _cross_checks(v, series, predicted_base, structure)
    _schedule_end(v, series, fit)
    _budget_short(v, series, fit)
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
        info=backend_info_of(series),
    )
    v.remedies = explain.remedies(v.kind, series, fit.source)
    return v


def _bound_name(series: Series, fit: Fit) -> str:
    """The lower-bound metric that decided, or ""."""
    name = fit.metric_name if fit.source == Source.METRIC else ""
    return name if name in series.lower_bound_metrics else ""


def _deciding_fit(
    v: Verdict,
    decider: Decider,
    labels: dict[str, str],
    series: Series,
    phases: tuple[str, ...],
    named: Noun | None = None,
) -> tuple[Fit | None, str]:
    """The fit of the deciding source, and its label."""
    fit = deciding_fit(decider, v.counter_fit, v.time_fit, v.metric_fits)
    if decider.source == Source.COUNTERS:
        return fit, labels["counters"]
    if decider.source == Source.METRIC:
        name = decider.metric_name
        return fit, named.text if named is not None else f"{metric_where(series, phases, name, labels['where'])} {name}"
    return fit, labels["time"]


def _reading(fit: Fit, backward_kind: bool) -> str:
    """The verdict kind that reads the deciding fit."""
    if fit.kind in ("linear", "inconclusive"):
        return model.LINEAR if fit.kind == "linear" else model.INCONCLUSIVE
    return verdicts.reading_kind(fit.kind, backward_kind)


def _depths_text(depths: list[int]) -> str:
    return f"{depths[0]}..{depths[-1]}" if len(depths) > 1 else f"{depths[0]}" if depths else "?"


def _model_text(fit: Fit) -> str:
    """``the linear model (d^1.00)``: how the jump lines name the deciding model."""
    figure = fit_figure(fit, interval=False)
    kind = fit.kind if fit.kind != "inconclusive" else "undecided"
    return f"the {kind} model" + (f" ({figure})" if figure else "") if fit.model else "a quadratic extrapolation"


def _bound_text(j: model.TimeJump, fit: Fit, stop: model.Stop | None, eager: bool) -> str:
    """The sentence of a stopped point read against the deciding model."""
    if stop is not None and stop.depth == j.depth:
        head = words.killed_head(stop)
    else:
        by = {"budget": "by the budget's end", "timeout": "at its timeout"}.get(j.stopped_by, f"({j.stopped_by})")
        head = f"depth {j.depth} was stopped {by}" + (f" in {j.phase}" if j.phase else "")
    per = " per call" if eager else ""
    return (
        f"{head} after at least {words.fmt_seconds(j.seconds)}{per}: {j.ratio:.0f}x the "
        f"{words.fmt_seconds(j.predicted)} that {_model_text(fit)} of depths {_depths_text(j.from_depths)} "
        "predicts there"
    )


def _far(j: model.TimeJump) -> bool:
    """A lower bound far enough over the model to be a runaway: a point that ran past its own hard timeout (a
    limit it was predicted to stay well under: the bound is over BEYOND_FACTOR times its prediction), or one cut by
    the budget's end (at any moment: RUNAWAY_FACTOR times its prediction)."""
    return j.stopped_by == model.CensorReason.TIMEOUT.value or j.ratio >= RUNAWAY_FACTOR


def _knee(v: Verdict, series: Series, fit: Fit, backward_kind: bool) -> None:
    """A change of regime (:mod:`~adprof.analysis.knee`): the verdict is the law after the knee, the deepest
    well-measured segment, where it reads one (a growth). Where the whole series reads no one law (or, exact, reads
    linear over a kink), a steeper line after the knee or too few depths past it is inconclusive, saying where
    the knee is and what would decide it. (A noisy series that reads linear is left as it reads.)"""
    exact, growing = fit.source != "time", fit.kind in ("exponential", "superlinear", "mild")
    if fit.kind != "inconclusive" and not growing and not (exact and fit.kind == "linear"):
        return
    knee = find_knee(fit)
    if knee is None:
        return
    if not growing and _past_knee_exponent(fit, knee) < LINEAR_MAX:
        # a gently convex law (d^1.06 plus an overhead) sits over any line through its first depths, so every
        # deeper depth "exceeds" it; the cost past the knee growing within the linear band against depth itself
        # is no change of regime: the whole reading (linear) stands
        return
    after, where = knee.after, f"between depths {knee.depth} and {knee.next_depth}"
    line = f"a change of regime {where}: linear over {knee.before.depths[0]}..{knee.depth}"
    steep = knee.slope_ratio is not None and knee.slope_ratio >= KNEE_SLOPE
    rank = ("mild", "superlinear", "exponential")
    decided = after is not None and after.kind in rank
    if growing and not (after is not None and decided and rank.index(after.kind) >= rank.index(fit.kind)):
        return  # the whole series reads a growth no law past a knee exceeds: the whole reading stands
    if growing and one_law_suffices(fit, knee):
        # one law fits every depth as well as the knee's two (1 + (d/128)^1.5 reads "flat up to 23, then d^1.61"
        # past it, and d^1.50 exactly over all): the whole reading is the truth, its figure the verdict's
        return
    if growing and after is not None and after.kind == fit.kind and _rate_within(fit, after):
        # one law over all the depths, its rate within that of the law past the "knee" (an exponential under an
        # overhead is flat, then grows: a + c*b^d over every depth reads b, the few depths past the knee about b)
        return
    if after is not None and decided:
        v.knee, v.kind = knee, _reading(after, backward_kind)
        v.reason = ""
        v.evidence.insert(0, f"{line}, then {after.kind} {interval_text(after)} over {_depths_text(knee.depths)}")
    elif not steep:
        return  # past the knee about as steep as the line before it: no change of regime to read
    else:
        v.knee, v.kind = knee, model.INCONCLUSIVE
        ratio = knee.slope_ratio
        slope = f"its slope {ratio:.1f}x the line's" if ratio is not None and math.isfinite(ratio) else "it grows"
        slope = "it grows off a flat line" if ratio == math.inf else slope
        more = knee.after_reason or f"a steeper line so far over {len(knee.depths)} depths"
        v.reason = (
            f"{line}, then {slope} over {_depths_text(knee.depths)}: {more}; measure deeper depths to read the "
            f"law past it ({_deeper_advice(series)})"
        )
        v.evidence.insert(0, v.reason)
    knee.evidence = v.evidence[0]
    v.key_evidence.insert(0, knee.evidence)


def _past_knee_exponent(fit: Fit, knee: Knee) -> float:
    """The cost's own end-to-end exponent against depth, from the knee to the deepest depth past it."""
    at = dict(zip(fit.depths, fit.values, strict=True))
    d0, d1 = knee.depth, max(knee.depths, default=knee.depth)
    v0, v1 = at.get(d0, 0.0), at.get(d1, 0.0)
    if d1 <= d0 or v0 <= 0 or v1 <= 0:
        return math.inf
    return math.log(v1 / v0) / math.log(d1 / d0)


def _rate_within(whole: Fit, after: Fit) -> bool:
    """The whole series' rate (base or exponent) inside the interval of the law past a knee."""
    rate = whole.base if whole.kind == "exponential" else whole.exponent
    return rate is not None and bool(after.interval) and after.interval[0] <= rate <= after.interval[1]


def _deeper_advice(series: Series) -> str:
    """What would measure deeper: about how long :data:`MIN_AFTER` more depths past the deepest take (scaled from
    its wall time, a generous quadratic), and the options that allow it."""
    measured = sorted((p for p in series.points if not p.censored and p.wall_seconds), key=lambda p: p.depth)
    cost = ""
    if len(measured) >= 2:
        top, prev = measured[-1], measured[-2]
        step = max(top.depth - prev.depth, 1)
        more = sum(
            top.wall_seconds * law_factor(top.depth, top.depth + k * step, exponent=2.0)
            for k in range(1, MIN_AFTER + 1)
        )
        cost = f"about {more:.3g} s more for {MIN_AFTER} depths past {top.depth}; "
    if series.deepest_allowed is not None and series.schedule_end is model.ScheduleEnd.BUDGET:
        return f"{cost}a larger --budget"
    return f"{cost}--max-depth or --depths, and --budget"


def _kill_prediction(series: Series, stop: model.Stop, fit: Fit) -> tuple[float, list[int]] | None:
    """What the measured depths predict for the killed point: for the phase it was killed in, like for like with
    the kill's seconds (a point's wall also holds one-time costs, such as the worker's start-up on the first
    depth, which would excuse any kill after it); the whole point's wall where no phase is known."""
    if stop.depth is None:
        return None
    if stop.phase is not None:
        got = expected(series, stop.depth, fit, phase_seconds(stop.phase), phase=stop.phase)
        if got is not None:
            return got
    return expected(series, stop.depth, fit, point_wall)


def _stopped_points(v: Verdict, series: Series, fit: Fit) -> None:
    """Points stopped before they finished (killed at their timeout, cut by the budget's end): each has a lower
    bound on its cost, read against what the deciding model predicts there (:mod:`~adprof.analysis.jumps`).
    Under a pathology a kill is consistent with the growth (and a finding). Otherwise a bound far over the model
    (:func:`_far`) is a runaway (a finding), one a little over is inconclusive, and a kill that the model predicts
    (the point was expected to take that long) is explained."""
    stop = series.killed
    if fit.kind in ("exponential", "superlinear") or v.knee is not None and v.kind in model.PATHOLOGIES:
        if stop is not None:
            v.killed = True
            grows = f"{fit.kind} growth" if fit.kind in ("exponential", "superlinear") else "growth past the knee"
            v.evidence.append(f"{words.killed_text(stop)}: consistent with the {grows}")
        return
    bounds, eager = [j for j in v.jumps if j.bound], series.mode == "eager"
    far = [j for j in bounds if _far(j)]
    before = f" after depths that read {fit.kind}" if fit.kind != "inconclusive" else ""
    if far:
        v.kind, v.killed = model.RUNAWAY, True
        v.reason = f"{_bound_text(far[0], fit, stop, eager)}: the chain hangs or blows up at that depth{before}"
    elif bounds:
        j = bounds[0]
        v.evidence.append(_bound_text(j, fit, stop, eager))
        if fit.kind == "inconclusive":
            return
        v.kind = model.INCONCLUSIVE
        v.reason = (
            f"{_bound_text(j, fit, stop, eager)}: more than the measured depths explain, too little to call a "
            "runaway; give it the budget (--budget) or the cap (--cap) to finish that depth"
        )
    elif stop is not None:
        got = _kill_prediction(series, stop, fit)
        if got is not None and (stop.seconds is None or got[0] * RUNAWAY_FACTOR >= stop.seconds):
            v.evidence.append(
                f"{words.killed_head(stop)}, where {_model_text(fit)} predicts "
                f"{words.fmt_seconds(got[0])}: the kill is what the measured depths predict, not a hang"
            )
            return
        v.kind, v.killed = model.RUNAWAY, True  # nothing measured below it to predict from: a hang, early
        v.reason = f"{words.killed_text(stop)}{before}"
    else:
        return
    v.key_evidence.insert(0, v.reason)


def _measured_jumps(v: Verdict, fit: Fit) -> None:
    """A measured point far over what the deciding model predicts from the depths below it: a cliff, or a cost
    the deciding metric does not see. Inconclusive (a guard fails) unless a pathology already decided."""
    jumps = [j for j in v.jumps if not j.bound]
    if not jumps:
        return
    j = jumps[0]
    grew = f" in {j.phase}" if j.phase else ""
    clock = " of CPU time" if j.cpu else ""
    line = (
        f"depth {j.depth} takes {words.fmt_seconds(j.seconds)}{clock}{grew}: {j.ratio:.0f}x the "
        f"{words.fmt_seconds(j.predicted)} that {_model_text(fit)} of depths {_depths_text(j.from_depths)} predicts"
    )
    if not j.confirmed:
        line += " (one run: the budget left no room to re-measure it)"
    v.evidence.append(line)
    if v.kind not in (model.LINEAR, model.MILD_TRANSFORM, model.MILD_BACKWARD):
        return
    if fit.source == "time":
        why = "a cliff the fitted law does not follow: measure more depths past it (--max-depth, --depths)"
    else:
        why = (
            f"{fit.metric} does not see this cost, or the cost jumps there; rerun with --trust counters or "
            "--trust time to choose"
        )
    v.kind, v.reason = model.INCONCLUSIVE, f"{line}: {why}"
    v.key_evidence.insert(0, v.reason)


def _runaway_bound(v: Verdict, fit: Fit) -> None:
    """A deterministic lower bound (a point stopped by the counter budget) past the last exact depth, far over
    what a linear or mild model predicts there (exact values: no noise to allow for)."""
    if fit.runaway_bound is None or v.kind == model.RUNAWAY or fit.kind not in ("linear", "mild"):
        return
    if fit.source == "time":  # time bounds: read as the point's wall against the model (_stopped_points)
        return
    v.kind = model.RUNAWAY
    v.reason = (
        f"depth {fit.runaway_bound} ran past its cap where the measured depths predict far less: a hang or a sudden "
        "blowup at that depth"
    )
    v.key_evidence.insert(0, v.reason)


def _growth(fit: Fit, lo: int, hi: int) -> float | None:
    """The fit's value at depth ``hi`` over its value at ``lo`` (:func:`_ratio`; None unless both are measured)."""
    at = dict(zip(fit.depths, fit.values, strict=True))
    return growth_ratio(at.get(lo), at.get(hi))


def _confident_pathology(
    timed: Fit, metric: Fit, explained: Callable[[int, int], float | None] = lambda lo, hi: None
) -> bool:
    """A time fit that reads exponential or superlinear with its whole interval well inside that band and not
    pinned at the grid's edge, and that grows far more than the deterministic metric up to each of the two
    deepest depths both measured (one slow point, a load burst, does not make a contradiction), and far more than
    what ``explained`` says explains it (the program's arithmetic or size: the TRG's backward grows d^4 as its
    bond dimension does while its counters read linear)."""
    if not timed.interval:
        return False
    lo, hi = timed.interval
    common = sorted(set(timed.depths) & set(metric.depths))
    if len(common) < 4:
        return False
    for deep in common[-2:]:
        t, m = _growth(timed, common[0], deep), _growth(metric, common[0], deep)
        if m is not None:
            m = max(m, explained(common[0], deep) or 0.0)
        if t is None or m is None or t < CONTRADICTING_EXCESS * m:
            return False
    if timed.kind == "exponential":
        return CONTRADICTING_BASE <= lo and hi < B_MAX
    return timed.kind == "superlinear" and CONTRADICTING_EXPONENT <= lo and hi < P_MAX


def _all_phases(series: Series) -> tuple[str, ...]:
    """Every timed phase of the series' measured points, in first-seen order."""
    seen: dict[str, None] = {}
    for p in series.points:
        if not p.censored:
            seen.update(dict.fromkeys(ph for ph, t in p.times.items() if t is not None))
    return tuple(seen)


def _time_fit(series: Series, phases: tuple[str, ...], clock: str) -> Fit | None:
    """The time fit of ``phases`` with its interval, in CPU time (``clock == "cpu"``) or wall time."""
    if clock != "cpu":
        return fit_cost(series, phases, "time")
    values = cpu_values(series, phases) or {}
    depths = sorted(values)
    return fit_growth(
        depths,
        [values[d] for d in depths],
        metric=f"cpu time: {'+'.join(phases)}",
        source="time",
        clock="thread CPU time",
    )


def _time_contradicts(v: Verdict, series: Series, phases: tuple[str, ...], fit: Fit, labels: dict[str, str]) -> None:
    """A deterministic reading that says healthy while time confidently says a pathology: the metric may be
    blind to the work that grows. Inconclusive (a guard fails) unless the user says which to trust. The time of
    the classified phases is read first, then that of the whole point (work in a phase no metric covers, such as
    the chain's own forward, grows too); in CPU time where the points carry it (load inflates wall time only)."""
    if fit.source == "time" or fit.kind not in ("linear", "mild") or v.kind == model.INCONCLUSIVE:
        return
    candidates: list[tuple[tuple[str, ...], str, str]] = []
    if v.time_fit is not None and v.time_fit.kind in ("exponential", "superlinear"):
        clock = "cpu" if cpu_values(series, phases) is not None else "wall"
        candidates.append((phases, labels["time"] if clock == "wall" else f"cpu time ({'+'.join(phases)})", clock))
    whole = _all_phases(series)
    times, clock = whole_point_time(series, whole, fit)
    if set(whole) - set(phases) and outgrows(times, fit):
        what = "wall time" if clock == "wall" else "cpu time"
        candidates.append((whole, f"{what} of the whole point ({'+'.join(whole)})", clock))
    for timed_phases, label, clock in candidates:
        timed = _time_fit(series, timed_phases, clock)  # with its interval: only when it may contradict

        def explained(lo: int, hi: int, timed_phases: tuple[str, ...] = timed_phases) -> float | None:
            return figure_growth(series, timed_phases, lo, hi)

        if timed is None or not _confident_pathology(timed, fit, explained):
            continue
        if timed_phases == phases and clock == "wall":
            v.time_fit = timed
        v.kind = model.INCONCLUSIVE
        v.reason = (
            f"{label} grows {interval_text(timed)} while {fit.metric} reads {fit.kind}: the deterministic metric "
            "may be blind to the work that grows; rerun with --trust counters or --trust time to choose"
        )
        v.key_evidence.insert(0, v.reason)
        v.evidence.insert(0, v.reason)
        return


def _cost_rate(v: Verdict, series: Series, phases: tuple[str, ...], fit: Fit) -> None:
    """A proxy decided a growing class: the report's rate, prediction and the schedule's estimate are the cost's
    (the growing phase's time, in the class's family), the proxy's rate beside it; one line where they disagree."""
    if not proxy_decided(series, fit) or v.kind not in model.PATHOLOGIES:
        return
    where = (v.growing_phase,) if v.growing_phase else phases
    rate = cost_rate(series, where, fit)
    proxy = f"{fit.metric_name} {interval_text(fit)}"
    if rate is None:
        v.evidence.append(f"rate: the time of {'+'.join(where)} reads no rate; the one given is the proxy's ({proxy})")
        v.prediction = None  # the proxy's model predicts no cost (flip35)
        return
    v.rate_fit = rate
    figure = interval_text(rate)
    v.evidence.append(f"rate: {'+'.join(where)} time {figure} (the cost); {proxy} decided the class (a proxy)")
    v.key_evidence.append(v.evidence[-1])
    nd = next_depth(rate.depths)
    pv = predict(rate, nd) if nd is not None else None
    v.prediction = {"depth": nd, "value": pv} if nd is not None and pv is not None and math.isfinite(pv) else None
    mine = fit.base if fit.kind == "exponential" else fit.exponent
    if rate.interval and mine is not None and not rate.interval[0] <= mine <= rate.interval[1]:
        faster = "faster" if mine > rate.interval[1] else "slower"
        v.evidence.append(
            f"the proxy's rate ({proxy}) is outside the cost's interval [{rate.interval[0]:.2f}, "
            f"{rate.interval[1]:.2f}]: it grows {faster} than the time the user waits for"
        )
        v.key_evidence.append(v.evidence[-1])


#: Why more budget would not have decided an inconclusive time-decided series, by why its schedule ended.
_ENDED = {
    model.ScheduleEnd.PASSES: "the most passes over its depths were measured and the noise there did not average out",
    model.ScheduleEnd.POINTS: "the most points of a series were measured",
    model.ScheduleEnd.CAP: "the next depth is over the cap (--cap higher would measure it)",
    model.ScheduleEnd.KILLS: "points were killed at their timeout",
}


def _schedule_end(v: Verdict, series: Series, fit: Fit) -> None:
    """An inconclusive time-decided series that did not spend its budget says why more could not have helped."""
    end = series.schedule_end
    if v.kind != model.INCONCLUSIVE or fit.source != "time" or end is None or end is model.ScheduleEnd.BUDGET:
        return
    if end is model.ScheduleEnd.DEEPEST:
        why = f"depth {series.deepest_allowed} is the deepest allowed (--max-depth deeper would measure past it)"
    else:
        why = _ENDED.get(end, "")
    if not why:
        return
    line = f"the schedule ended before the budget: {why}"
    v.evidence.append(line)
    base = v.reason or fit.reason
    v.reason = f"{base}; {line}" if base else line


#: Stops by the run's budget (not by the chain's cost): more budget measures more depths.
_BUDGET_STOPS = (model.StopReason.BUDGET, model.StopReason.BUDGET_SHARE, model.StopReason.NOT_MEASURED)


def _budget_short(v: Verdict, series: Series, fit: Fit) -> None:
    """An inconclusive series the budget stopped before it had the depths a law needs says so, with about how much
    more would measure them: "raise --cap" is no advice when the cap did not stop it (torch.compile at seconds per
    point under the default 60 s shared by three series)."""
    stop = series.stop
    if v.kind != model.INCONCLUSIVE or stop is None or len(fit.depths) >= MIN_POINTS:
        return
    if stop.reason not in _BUDGET_STOPS:
        return
    walls = [p.wall_seconds for p in series.points if not p.censored and p.wall_seconds]
    missing = MIN_POINTS - len(fit.depths)
    more = (
        f"about {missing * max(walls):.3g} s more would measure {missing} more"
        if walls
        else "more budget measures more"
    )
    v.reason = (
        f"too few depths ({len(fit.depths)} measured, need {MIN_POINTS}): the budget ran out first; {more} "
        "(rerun with a larger --budget, or fewer chains)"
    )
    v.evidence.append(v.reason)


def _cross_checks(v: Verdict, series: Series, predicted_base: float | None, structure: Any) -> None:
    """The measured base against the predicted base, the structure and the declared reuse; why it stopped."""
    if predicted_base is not None:
        measured = f", measured {v.base:.2f}" if v.base is not None else ""
        v.evidence.append(f"predicted base {predicted_base:.2f} (use-matrix spectral radius){measured}")
        if v.base is not None:
            v.key_evidence.append(v.evidence[-1])
    if isinstance(structure, Structure):
        note = disagreement_reason(structure, v.base, series.profile, series.backend, backend_info_of(series))
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
        v.evidence.append(words.stop_text(series.stop))
