"""The memory limits (``max_memory_exponent``, ``max_leak``) and the baseline's memory against a result."""

from __future__ import annotations

from adprof import model
from adprof.comparison import Side, State, classify_memory
from adprof.guard.limits import TIME_TOLERANCE, GuardLimits
from adprof.guard.outcome import (
    GuardCheck,
    MemoryBaseline,
    MemoryCheck,
    MemoryLimit,
    MemoryPart,
    MemoryState,
    memory_verdict_of,
)
from adprof.model import Result


def _memory_exponent(
    mv: model.MemoryVerdict, limit: float, tolerance: float, held: tuple[float | None, str] = (None, "")
) -> MemoryPart:
    """The memory exponent limit against ``mv`` (not checked: why it could not be); ``held``: the exponent the limit
    holds where it is not the raw one (the excess over the program's intermediates)."""
    fit = mv.fit
    part = MemoryPart(MemoryLimit.MAX_MEMORY_EXPONENT, limit, MemoryState.NOT_MEASURED, False, False)
    if not mv.measured or fit is None or not fit.depths:
        return part
    if mv.kind == model.PEAK_ONLY:  # the noisy peak alone: never a finding, never a failed guard (flip35)
        part.state, part.ok = MemoryState.PEAK_ONLY, True
        return part
    if mv.growth in ("", model.INCONCLUSIVE):
        part.state = MemoryState.INCONCLUSIVE
        return part
    part.checked, part.tolerance, part.top = True, tolerance, limit * (1 + tolerance)
    if mv.base is not None:  # exponential in depth: over any exponent
        part.state, part.base = MemoryState.EXPONENTIAL, mv.base
        return part
    part.state, part.excess = MemoryState.POWER, bool(held[1])
    part.exponent = held[0] if held[0] is not None else mv.exponent if mv.exponent is not None else 1.0
    part.ok = part.exponent <= part.top
    return part


def _max_leak(mv: model.MemoryVerdict, limit: float, mode: str) -> MemoryPart:
    """The leak limit against ``mv``. Retained bytes are per eager call: a traced or compiled series has none to
    check (it says so and holds); an eager series without them fails."""
    part = MemoryPart(MemoryLimit.MAX_LEAK, limit, MemoryState.NOT_MEASURED, False, False)
    if mode != "eager" and not mv.leaks:
        part.state, part.ok = MemoryState.NO_CALLS, True
        return part
    if not mv.leaks:
        return part
    if mv.leaking is None:
        part.state, part.leak = MemoryState.UNDECIDED, next(r for r in mv.leaks if r.leaking is None)
        return part
    worst = max(mv.leaks, key=lambda r: r.bytes_per_call if r.leaking else -1.0)
    part.checked = True
    if not worst.leaking:
        part.state, part.ok, part.leak = MemoryState.NO_LEAK, True, mv.leaks[-1]
        return part
    part.state, part.leak, part.ok = MemoryState.LEAK, worst, worst.bytes_per_call <= limit
    return part


def memory_check(result: Result, limits: GuardLimits) -> MemoryCheck | None:
    """The memory limits against a result's memory verdict (None when no memory limit is set). Peak bytes (noisy)
    get :data:`TIME_TOLERANCE` on the exponent; saved bytes (deterministic) none."""
    if not limits.checks_memory:
        return None
    mv = memory_verdict_of(result)
    parts: list[MemoryPart] = []
    if limits.max_memory_exponent is not None:
        tolerance = TIME_TOLERANCE if mv.decided_by == model.PEAK_BYTES else 0.0
        held = model.held_memory_exponent(result.verdict, limits.absolute)  # the excess, or with --absolute the raw
        parts.append(_memory_exponent(mv, limits.max_memory_exponent, tolerance, held))
    if limits.max_leak is not None:
        parts.append(_max_leak(mv, limits.max_leak, result.series.mode))
    return MemoryCheck(ok=all(p.ok for p in parts), parts=parts)


def with_memory(check: GuardCheck, limits: GuardLimits) -> GuardCheck:
    """``check`` with the memory limits applied: a failing memory limit fails the check."""
    check.memory, check.time_ok = memory_check(check.result, limits), check.ok
    if check.memory is not None and not check.memory.ok:
        check.ok = False
    return check


def with_baseline_memory(
    check: GuardCheck, base: Result | None, tolerance: float, where: str = "the baseline"
) -> GuardCheck:
    """``check`` with its memory verdict compared to the baseline's, as ``adprof compare`` compares them: a worse
    memory class, a faster growth than the baseline's interval + ``tolerance`` or more bytes leaked per call fails
    it. Nothing is added where either report did not measure memory."""
    if base is None:
        return check
    before, after = Side.of(base), Side.of(check.result)
    compared = classify_memory(before, after, tolerance)
    if compared is None:
        return check
    state, reason = compared
    ok = state != State.REGRESSED
    mem = MemoryBaseline(where, before, after, ok, reason)
    if check.memory is None:
        check.memory = MemoryCheck(ok=ok, baseline=mem)
    else:
        check.memory.ok, check.memory.baseline = check.memory.ok and ok, mem
    if not ok:
        check.ok = False
    return check
