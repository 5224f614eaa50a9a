"""The time limits and the baseline's figures against each decided result (the baseline rule is
:func:`adprof.comparison.classify_time`'s)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from adprof import model, verdicts
from adprof.analysis.jumps import expected
from adprof.comparison import DEFAULT_TOLERANCE, SEVERITY, Side, State, classify_time, pair_results
from adprof.guard import noise
from adprof.guard.limits import TIME_TOLERANCE, GuardLimits
from adprof.guard.memory import with_baseline_memory, with_memory
from adprof.guard.outcome import (
    BaselineRef,
    BaselineRule,
    BaselineState,
    GuardCheck,
    GuardReport,
    MissingDepths,
    Outcome,
    Reading,
)
from adprof.model import Report, Result, point_wall


def series_key(s: Any) -> tuple[Any, ...]:
    """What pairs a measured series with its spec, and a re-measured series with the first: chain, backend, profile,
    mode and sweep values (the file is left out: a shipped chain's is renamed after the run)."""
    return (s.chain, s.backend, s.profile, s.mode, tuple(sorted((k, repr(v)) for k, v in s.params.items())))


def missing_depths(result: Result) -> list[int]:
    """The planned depths of a guarded series that were not measured (cut by the budget, stopped, killed)."""
    s = result.series
    measured = {p.depth for p in s.points if not p.censored}
    return [d for d in s.planned_depths if d not in measured]


def needed_seconds(result: Result, depths: Sequence[int]) -> float | None:
    """About how many seconds the deciding model predicts the ``depths`` would take (None when it cannot say)."""
    fit, s = result.verdict.fit, result.series
    calls = next((p.calls for p in reversed(s.points) if not p.censored and p.calls), 1) or 1
    total = 0.0
    for d in depths:
        got = expected(s, d, fit, point_wall, largest=True)
        if got is None or not math.isfinite(got[0]):
            return None
        total += got[0] * calls
    stop = s.stop
    predicted = stop.seconds if stop is not None and stop.reason is model.StopReason.BUDGET_SHARE else None
    return max(total, predicted or 0.0)


def missing_advice(result: Result, missing: Sequence[int], budget: float | None) -> MissingDepths:
    """The missing depths with the figures of the advice on what would measure them (the seconds the deciding model
    predicts, where no cap stopped them)."""
    stop = result.series.stop
    capped = stop is not None and stop.reason in (model.StopReason.CAP, model.StopReason.PREDICTED_CAP)
    return MissingDepths(tuple(missing), budget, None if capped else needed_seconds(result, missing))


def missing_text(result: Result, missing: Sequence[int], budget: float | None) -> str:
    """One line: which planned depths are missing, why, and what would measure them."""
    from adprof.render.guard import missing_depths_text  # the sentence is the renderer's

    return missing_depths_text(result, missing_advice(result, missing, budget))


def tolerance_for(result: Result) -> float:
    """The slack on the limits: none when a deterministic metric or counter decided, else TIME_TOLERANCE."""
    fit = result.verdict.fit
    return 0.0 if fit is not None and fit.source in ("counters", "metric") else TIME_TOLERANCE


def _noisy(
    result: Result,
    limits: GuardLimits,
    tolerance: float,
    fit: model.Fit | None,
    kind: Reading | None = None,
    budget: float | None = None,
) -> GuardCheck | None:
    """The undecided check of a time-decided reading whose interval reaches under its limit while the reading is
    over it or inconclusive (:mod:`adprof.guard.noise`), the held check of an inconclusive one whose interval is
    all under it, else None (``kind``: the rate held, BASE or EXPONENT; None:
    an inconclusive reading, whose fit says which)."""
    noisy = noise.noisy_interval(fit)
    if noisy is None or (kind is not None and noisy[0] is not kind):
        return None
    reading, rate, (low, high) = noisy
    if fit is None or not noise.noise_may_explain(result, fit, reading):
        return None
    limit = limits.max_base if reading is Reading.BASE else limits.max_exponent
    bound = limit * (1 + tolerance)
    decided = (
        noise.inconclusive_outcome(low, high, bound)
        if kind is None
        # call 0 is one cold sample per depth: only an interval all over the widened limit fails on it
        else noise.time_outcome(rate, low, high, bound, None if fit is result.verdict.call0_fit else limit)
    )
    v = result.verdict
    if decided is Outcome.UNDECIDED and reading is Reading.EXPONENT and fit.model == "a + c*d^p":
        top = noise.top_halving_bound(result, fit)
        if top is not None and top <= bound:  # the deepest halving bounds the growth under the limit: held
            return GuardCheck(
                result, limits, True, reading, kind=v.kind, rate=rate, bound=bound, tolerance=tolerance,
                metric=v.metric or "", interval=(low, high), top_bound=top,
            )  # fmt: skip
    if decided is Outcome.HELD:  # inconclusive, but every plausible rate holds the limit
        return GuardCheck(
            result, limits, True, reading, kind=v.kind, rate=rate, bound=bound, tolerance=tolerance,
            metric=v.metric or "", interval=(low, high),
        )  # fmt: skip
    if decided is not Outcome.UNDECIDED:
        return None
    noisy_figures = noise.noise_of(result, reading, rate, (low, high), bound, budget=budget)
    return GuardCheck(
        result, limits, False, Reading.UNDECIDED, kind=v.kind, rate=rate, bound=bound, tolerance=tolerance,
        rate_held=False, metric=v.metric or "", noise=noisy_figures,
    )  # fmt: skip


def _undecided(
    result: Result, limits: GuardLimits, tolerance: float, budget: float | None = None, noisy: bool = False
) -> GuardCheck | None:
    """The failing check of a result without a growth to compare (a hang, an error, a planned depth not
    measured, inconclusive, a runaway), else None (``budget``: the run's, for the advice on how much more would
    measure a missing depth; ``noisy``: an inconclusive time reading whose interval reaches under the limits is
    undecided, not failed)."""
    v = result.verdict
    metric = v.metric or ""

    def failed(reading: Reading, missing: MissingDepths | None = None) -> GuardCheck:
        kw = {"kind": v.kind, "tolerance": tolerance, "missing": missing, "metric": metric}
        return GuardCheck(result, limits, False, reading, **kw)  # type: ignore[arg-type]

    if v.killed and v.kind != model.ERROR:  # a hang fails the guard whatever the depths before it read
        return failed(Reading.HANG)
    if v.kind == model.ERROR:
        return failed(Reading.ERROR)
    if v.kind != model.RUNAWAY and (missing := missing_depths(result)):  # never pass on the depths before them
        return failed(Reading.MISSING, missing_advice(result, missing, budget))
    if v.kind == model.INCONCLUSIVE:
        undecided = _noisy(result, limits, tolerance, v.fit, budget=budget) if noisy else None
        return undecided or failed(Reading.INCONCLUSIVE)
    if v.kind == model.RUNAWAY:
        return failed(Reading.RUNAWAY)
    return None


def check_result(
    result: Result, limits: GuardLimits, tolerance: float = 0.0, budget: float | None = None
) -> GuardCheck:
    """Compare one classified result with the limits (``tolerance`` widens them, time-only). A planned depth that
    was not measured fails (``budget``: the run's, for the advice on how much more would measure it)."""
    v = result.verdict
    metric = v.metric or ""
    failed = _undecided(result, limits, tolerance, budget, noisy=bool(tolerance))
    if failed is not None:
        return failed
    # a verdict read past a knee: its rate is the law of the cost over the line past that depth
    knee = v.knee.depth if v.knee is not None and v.reading is v.knee.after else None
    kind, held_exponent, held_base, against = model.held_rate(v, limits.absolute)  # the excess, or the raw growth
    common = {"kind": kind, "knee": knee, "excess": bool(against), "tolerance": tolerance, "metric": metric}
    if verdicts.is_exponential(kind):  # the one table of verdict kinds
        base = held_base if held_base is not None else float("inf")
        bound = limits.max_base * (1 + tolerance)
        ok = base <= bound
        # time decided, the raw rate: its interval may span the limit (a rate over the limit itself held by the
        # tolerance alone too)
        if (not ok or base > limits.max_base) and tolerance and not against:
            undecided = _noisy(result, limits, tolerance, v.reading, Reading.BASE, budget)
            if undecided is not None:
                return undecided
        return GuardCheck(result, limits, ok, Reading.BASE, rate=base, bound=bound, rate_held=ok, **common)
    exponent = held_exponent if held_exponent is not None else 1.0
    bound = limits.max_exponent * (1 + tolerance)
    ok = exponent <= bound
    if (not ok or exponent > limits.max_exponent) and tolerance and not against:  # as for a base, above
        undecided = _noisy(result, limits, tolerance, v.reading, Reading.EXPONENT, budget)
        if undecided is not None:
            return undecided
    return GuardCheck(result, limits, ok, Reading.EXPONENT, rate=exponent, bound=bound, rate_held=ok, **common)


def check_against_baseline(
    result: Result,
    base: Result | None,
    limits: GuardLimits,
    tolerance: float = DEFAULT_TOLERANCE,
    where: str = "the baseline",
    budget: float | None = None,
) -> GuardCheck:
    """Compare one result with its baseline's own figures, by the rule of ``adprof compare``
    (:func:`adprof.comparison.classify_time`: a regression fails): its verdict may not be worse (:data:`SEVERITY`),
    and its base or exponent may not exceed the baseline's interval top + ``tolerance``. A series absent from the
    baseline, or whose baseline reading has no figures (inconclusive, an error, a runaway), gets ``limits``
    (the normal ones), and its check says so."""
    if base is None:
        normal = check_result(result, limits, tolerance_for(result), budget)
        normal.baseline_ref = BaselineRef(where, BaselineState.ABSENT)
        return normal
    before, after = Side.of(base), Side.of(result)
    rank_before = SEVERITY.get(before.verdict)
    if rank_before is None or before.span() is None:
        normal = check_result(result, limits, tolerance_for(result), budget)
        normal.baseline_ref = BaselineRef(where, BaselineState.NO_FIGURES, before)
        return normal
    _, hi = before.span()  # type: ignore[misc]
    ref = BaselineRef(where, BaselineState.COMPARED, before, tolerance, hi=hi)
    failed = _undecided(result, limits, 0.0, budget)
    if failed is not None:
        failed.baseline_ref = ref
        return failed
    v, metric = result.verdict, result.verdict.metric or ""
    is_base = after.rate_kind == "base" and after.rate is not None
    reading = Reading.BASE if is_base else Reading.EXPONENT
    rate = after.rate if is_base else after.rate if after.rate is not None else 1.0
    state, _ = classify_time(before, after, tolerance)  # the rule of `adprof compare`: a regression fails
    ok = state is not State.REGRESSED
    if SEVERITY.get(v.kind) != rank_before:
        ref.rule = BaselineRule.CLASS
    elif after.rate is None or after.rate_kind != before.rate_kind:
        ref.rule = BaselineRule.SAME
    else:
        ref.rule = BaselineRule.RATE
    return GuardCheck(
        result, limits, ok, reading, kind=v.kind, rate=rate, bound=ref.top, rate_held=ok, metric=metric,
        baseline_ref=ref,
    )  # fmt: skip


def guard_checks(
    report: Report,
    limits: GuardLimits,
    baseline: Report | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    baseline_name: str = "the baseline",
    remeasured: Mapping[tuple[Any, ...], int] | None = None,
) -> GuardReport:
    """Every decided result of ``report`` against the limits, or, with a ``baseline`` report, against the
    baseline's own figures of the same series (paired as ``adprof compare`` pairs them; ``limits`` for the
    series it does not have). ``remeasured``: how many times the guard re-measured each undecided series (by
    :func:`series_key`), which its noise reports."""
    budget = report.budget_seconds
    if baseline is None:
        checks = [with_memory(check_result(r, limits, tolerance_for(r), budget), limits) for r in report.results]
        for c in checks:
            if c.noise is not None and remeasured:
                c.noise.remeasured = remeasured.get(series_key(c.result.series), 0)
        return GuardReport(checks, report=report)
    base_of = {id(n): b for b, n, _ in pair_results(baseline.results, report.results) if n is not None}
    checks = []
    for r in report.results:
        base = base_of.get(id(r))
        check = with_memory(check_against_baseline(r, base, limits, tolerance, baseline_name, budget), limits)
        checks.append(with_baseline_memory(check, base, tolerance, baseline_name))
    return GuardReport(checks, report=report)
