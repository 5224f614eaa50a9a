"""The time limits and the baseline's figures against each decided result (the baseline rule is
:func:`adprof.comparison.classify_time`'s)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from adprof import model, verdicts
from adprof.analysis.jumps import expected
from adprof.comparison import DEFAULT_TOLERANCE, SEVERITY, Side, State, classify_time, pair_results
from adprof.guard.limits import TIME_TOLERANCE, GuardLimits
from adprof.guard.memory import with_baseline_memory, with_memory
from adprof.guard.outcome import GuardCheck, GuardReport
from adprof.model import Report, Result, point_wall
from adprof.util.text import depth_ranges

#: The largest budget the guard advises, as a multiple of the run's (past it, the missing depths are too costly to
#: guard, whatever the advice).
ADVICE_FACTOR = 10.0


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


def missing_text(result: Result, missing: Sequence[int], budget: float | None) -> str:
    """One line: which planned depths are missing, why, and what would measure them."""
    s = result.series
    stop = s.stop
    why = f" ({stop.text()})" if stop is not None else ""
    head = f"depth{'s' if len(missing) > 1 else ''} {depth_ranges(missing)} not measured{why}"
    if stop is not None and stop.reason in (model.StopReason.CAP, model.StopReason.PREDICTED_CAP):
        need = max(stop.seconds or 0.0, stop.limit or 0.0)
        if not math.isfinite(need) or (budget is not None and need * 1.5 > budget):
            # no cap within the run's budget measures it: advise none (never a cap of 10^20 seconds)
            took = f"{need:.3g} s" if math.isfinite(need) else "longer than any cap"
            within = f"the {budget:g} s budget" if budget is not None else "any budget"
            at = stop.depth if stop.depth is not None else stop.after
            return f"{head}; depth {at} would take about {took}, past {within}: a cost this steep fails"
        return f"{head}; a cap above {need:.3g} s would measure them (--cap {math.ceil(need * 1.5):d})"
    secs = needed_seconds(result, missing)
    if secs is None or budget is None:
        return f"{head}; rerun with a larger --budget"
    more = max(1, math.ceil(1.5 * secs))
    if more > ADVICE_FACTOR * budget:  # no advice of a budget the run could never have (a model far past its data)
        return f"{head}; they would take about {secs:.3g} s, over {ADVICE_FACTOR:g}x the {budget:g} s budget"
    return f"{head}; they need about {secs:.3g} s more: rerun with --budget {math.ceil(budget + more):d}"


def tolerance_for(result: Result) -> float:
    """The slack on the limits: none when a deterministic metric or counter decided, else TIME_TOLERANCE."""
    fit = result.verdict.fit
    return 0.0 if fit is not None and fit.source in ("counters", "metric") else TIME_TOLERANCE


def _undecided(result: Result, limits: GuardLimits, limit: str, budget: float | None = None) -> GuardCheck | None:
    """The failing check of a result without a growth to compare (a hang, an error, a planned depth not
    measured, inconclusive, a runaway), else None (``budget``: the run's, for the advice on how much more would
    measure a missing depth)."""
    v = result.verdict
    metric = v.metric or ""
    if v.killed and v.kind != model.ERROR:  # a hang fails the guard whatever the depths before it read
        stop = result.series.killed
        why = v.reason if v.kind == model.RUNAWAY else model.killed_text(stop) if stop is not None else ""
        why = why or "a point was stopped far past its prediction"
        return GuardCheck(result, limits, False, "hang", limit, why, metric)
    if v.kind == model.ERROR:
        return GuardCheck(result, limits, False, "error", limit, result.series.error or "the chain failed", metric)
    if v.kind != model.RUNAWAY and (missing := missing_depths(result)):  # never pass on the depths before them
        why = missing_text(result, missing, budget)
        return GuardCheck(result, limits, False, "missing depths", limit, why, metric)
    if v.kind == model.INCONCLUSIVE:
        why = v.reason or (v.fit.reason if v.fit is not None else "") or "too few points to decide: give it more depths"
        return GuardCheck(result, limits, False, "inconclusive", limit, why, metric)
    if v.kind == model.RUNAWAY:
        why = v.reason or "a point ran past its cap"
        return GuardCheck(result, limits, False, "runaway", limit, why, metric)
    return None


def check_result(
    result: Result, limits: GuardLimits, tolerance: float = 0.0, budget: float | None = None
) -> GuardCheck:
    """Compare one classified result with the limits (``tolerance`` widens them, time-only). A planned depth that
    was not measured fails (``budget``: the run's, for the advice on how much more would measure it)."""
    v = result.verdict
    max_base = limits.max_base * (1 + tolerance)
    max_exp = limits.max_exponent * (1 + tolerance)
    limit = f"max base {limits.max_base:.2f}, max exponent {limits.max_exponent:.2f}"
    if tolerance:
        limit += f" (+{tolerance:.0%} for wall time)"
    metric = v.metric or ""
    failed = _undecided(result, limits, limit, budget)
    if failed is not None:
        return failed
    # a verdict read past a knee: its rate is the law of the cost over the line past that depth
    past = f" past depth {v.knee.depth}" if v.knee is not None and v.reading is v.knee.after else ""
    kind, held_exponent, held_base, against = model.held_rate(v, limits.absolute)  # the excess, or the raw growth
    if verdicts.is_exponential(kind):  # the one table of verdict kinds
        base = held_base if held_base is not None else float("inf")
        ok = base <= max_base
        return GuardCheck(
            result,
            limits,
            ok,
            f"base {base:.2f} per layer{past}",
            limit,
            f"{kind}: cost x{base:.2f} per layer{past}{against}" + ("" if ok else f" > {max_base:.2f}"),
            metric,
        )
    exponent = held_exponent if held_exponent is not None else 1.0
    ok = exponent <= max_exp
    what = f"(depth - {v.knee.depth})" if past and v.knee is not None else "depth"
    return GuardCheck(
        result,
        limits,
        ok,
        f"exponent {exponent:.2f}{past}",
        limit,
        f"{kind}: cost ~ {what}^{exponent:.2f}{against}" + ("" if ok else f" > {max_exp:.2f}"),
        metric,
    )


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
        normal.baseline = f"not in {where}: the normal limits"
        return normal
    before, after = Side.of(base), Side.of(result)
    rank_before = SEVERITY.get(before.verdict)
    if rank_before is None or before.span() is None:
        normal = check_result(result, limits, tolerance_for(result), budget)
        normal.baseline = f"{where} reads {before.verdict}, without figures: the normal limits"
        return normal
    _, hi = before.span()  # type: ignore[misc]
    what = "base" if before.rate_kind == "base" else "exponent"
    top = hi + tolerance
    limit = f"{where}'s {before.verdict} {before.growth}: {what} at most {top:.2f} (top {hi:.2f} + {tolerance:g})"
    reading = f"{where}: {before.verdict} {before.growth}".rstrip()
    failed = _undecided(result, limits, limit, budget)
    if failed is not None:
        failed.baseline = reading
        return failed
    v, metric = result.verdict, result.verdict.metric or ""
    measured = f"base {after.rate:.2f} per layer" if after.rate_kind == "base" and after.rate is not None else ""
    if not measured:
        measured = f"exponent {after.rate if after.rate is not None else 1.0:.2f}"
    state, _ = classify_time(before, after, tolerance)  # the rule of `adprof compare`: a regression fails
    ok = state is not State.REGRESSED
    if SEVERITY.get(v.kind) != rank_before:
        why = f"{v.kind}: {'better' if ok else 'worse'} than the baseline's {before.verdict}"
    elif after.rate is None or after.rate_kind != before.rate_kind:
        why = f"{v.kind}: as in the baseline"
    else:
        why = f"{v.kind}: {what} {after.rate:.2f}" + (f" <= {top:.2f}" if ok else f" > {top:.2f}")
    return GuardCheck(result, limits, ok, measured, limit, why, metric, reading)


def guard_checks(
    report: Report,
    limits: GuardLimits,
    baseline: Report | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    baseline_name: str = "the baseline",
) -> GuardReport:
    """Every decided result of ``report`` against the limits, or, with a ``baseline`` report, against the
    baseline's own figures of the same series (paired as ``adprof compare`` pairs them; ``limits`` for the
    series it does not have)."""
    budget = report.budget_seconds
    if baseline is None:
        checks = [with_memory(check_result(r, limits, tolerance_for(r), budget), limits) for r in report.results]
        return GuardReport(checks, report=report)
    base_of = {id(n): b for b, n, _ in pair_results(baseline.results, report.results) if n is not None}
    checks = []
    for r in report.results:
        base = base_of.get(id(r))
        check = with_memory(check_against_baseline(r, base, limits, tolerance, baseline_name, budget), limits)
        checks.append(with_baseline_memory(check, base, tolerance, baseline_name))
    return GuardReport(checks, report=report)
