"""The memory limits (``max_memory_exponent``, ``max_leak``) and the baseline's memory against a result."""

from __future__ import annotations

from adprof import model
from adprof.comparison import Side, State, classify_memory
from adprof.guard.limits import TIME_TOLERANCE, GuardLimits
from adprof.guard.outcome import GuardCheck, MemoryCheck
from adprof.model import Result
from adprof.util.text import depth_ranges, range_text


def _bytes_span(fit: model.Fit) -> str:
    """``1.1 KiB at depth 1 -> 81.0 KiB at depth 32`` of a memory fit."""
    if not fit.depths:
        return ""
    return (
        f"{model.fmt_bytes(fit.values[0])} at depth {fit.depths[0]} -> "
        f"{model.fmt_bytes(fit.values[-1])} at depth {fit.depths[-1]}"
    )


def _memory_exponent(
    mv: model.MemoryVerdict, limit: float, tolerance: float, held: tuple[float | None, str] = (None, "")
) -> tuple[bool, str, str, bool]:
    """(ok, measured, reason, checked) of the memory exponent limit (checked False: why it could not be); ``held``:
    the exponent the limit holds where it is not the raw one (the excess over the program's intermediates)."""
    what = "saved-for-backward bytes" if mv.decided_by == model.SAVED_BYTES else "peak bytes"
    fit = mv.fit
    if not mv.measured or fit is None or not fit.depths:
        why = mv.not_measured.get(model.SAVED_BYTES) or mv.reason or "no bytes against depth were measured"
        return (
            False,
            "not measured",
            f"could not check max memory exponent {limit:g}: memory not measured ({why})",
            False,
        )
    depths = depth_ranges(fit.depths)
    span = _bytes_span(fit)
    if mv.kind == model.PEAK_ONLY:  # the noisy peak alone: never a finding, never a failed guard (flip35)
        figure = model.fit_figure(fit) if fit.kind != "inconclusive" else "no law"
        return True, f"peak only {figure}", f"max memory exponent {limit:g} not checked: {mv.reason}", False
    if mv.growth in ("", model.INCONCLUSIVE):
        return False, f"{what} inconclusive", f"could not check max memory exponent {limit:g}: {mv.reason}", False
    top = limit * (1 + tolerance)
    slack = f" (+{tolerance:.0%}: peak bytes are noisy)" if tolerance else ""
    if mv.base is not None:  # exponential in depth: over any exponent
        measured = f"{what} x{mv.base:.2f} per layer over depths {depths}"
        return (
            False,
            measured,
            (
                f"{what} limited to depth^{limit:g}{slack} but grow x{mv.base:.2f} per layer (exponential) over depths "
                f"{depths}: {span}"
            ),
            True,
        )
    exponent = held[0] if held[0] is not None else mv.exponent if mv.exponent is not None else 1.0
    what += held[1]
    measured = f"{what} depth^{exponent:.2f} over depths {depths}"
    if exponent <= top:
        # scale34 (#34): the reading named is the one held (the excess': the verdict's kind), not the raw growth's
        label = mv.kind if held[0] is not None else mv.growth
        return True, measured, f"{label}: {what} grow as depth^{exponent:.2f} <= {top:.2f} ({span})", True
    return (
        False,
        measured,
        (f"{what} limited to depth^{limit:g}{slack} but grow as depth^{exponent:.2f} over depths {depths}: {span}"),
        True,
    )


def _max_leak(mv: model.MemoryVerdict, limit: float, mode: str) -> tuple[bool, str, str, bool]:
    """(ok, measured, reason, checked) of the leak limit. Retained bytes are per eager call: a traced or compiled
    series has none to check (it says so and holds); an eager series without them fails."""
    shown = model.fmt_bytes(limit)
    if mode != "eager" and not mv.leaks:
        return True, "no calls", f"max leak {shown} per call not checked: retained bytes are per eager call", False
    if not mv.leaks:
        why = mv.not_measured.get(model.RETAINED) or "no retained bytes were measured"
        why = f"could not check max leak {shown} per call: retained bytes not measured ({why})"
        return False, "not measured", why, False
    worst = max(mv.leaks, key=lambda r: r.bytes_per_call if r.leaking else -1.0)
    if mv.leaking is None:
        undecided = next(r for r in mv.leaks if r.leaking is None)
        why = undecided.fit.reason if undecided.fit is not None else "undecided"
        why = f"could not check max leak {shown} per call at depth {undecided.depth}: {why}"
        return False, "undecided", why, False
    if not worst.leaking:
        deepest = mv.leaks[-1]
        held = model.fmt_bytes(deepest.retained[-1]) if deepest.retained else "-"
        why = f"no leak: retained bytes flat over the calls at every depth ({held} at depth {deepest.depth})"
        return True, "no leak", why, True
    bpc = worst.bytes_per_call
    calls = range_text("call", "calls", worst.calls[0], worst.calls[-1]) if worst.calls else "the calls"
    grew = f"{model.fmt_bytes(worst.retained[0])} -> {model.fmt_bytes(worst.retained[-1])}" if worst.retained else ""
    leaking_depths = depth_ranges([r.depth for r in mv.leaks if r.leaking])
    measured = f"+{model.fmt_bytes(bpc)} per call at depth {worst.depth}"
    if bpc <= limit:
        return True, measured, f"leaks {model.fmt_bytes(bpc)} per call <= {shown} (depths {leaking_depths})", True
    return (
        False,
        measured,
        (
            f"limited to {shown} leaked per call but leaked {model.fmt_bytes(bpc)} per call at depth {worst.depth} "
            f"(retained {grew} over {calls}; leaking at depths {leaking_depths})"
        ),
        True,
    )


def memory_check(result: Result, limits: GuardLimits) -> MemoryCheck | None:
    """The memory limits against a result's memory verdict (None when no memory limit is set). Peak bytes (noisy)
    get :data:`TIME_TOLERANCE` on the exponent; saved bytes (deterministic) none."""
    if not limits.checks_memory:
        return None
    mv = result.verdict.memory or model.MemoryVerdict(reason="no memory verdict (a report without memory)")
    parts: list[tuple[bool, str, str, bool]] = []  # (ok, measured, reason, checked) per limit
    if limits.max_memory_exponent is not None:
        tolerance = TIME_TOLERANCE if mv.decided_by == model.PEAK_BYTES else 0.0
        held = model.held_memory_exponent(result.verdict, limits.absolute)  # the excess, or with --absolute the raw
        parts.append(_memory_exponent(mv, limits.max_memory_exponent, tolerance, held))
    if limits.max_leak is not None:
        parts.append(_max_leak(mv, limits.max_leak, result.series.mode))
    return MemoryCheck(
        ok=all(p[0] for p in parts),
        measured="; ".join(p[1] for p in parts),
        limit=limits.memory_text(),
        reason="; ".join(p[2] for p in parts),
        checked=all(p[3] for p in parts),
    )


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
    limit = f"{where}'s memory {before.memory_text}".rstrip()
    if check.memory is None:
        check.memory = MemoryCheck(ok=ok, measured=after.memory_text, limit=limit, reason=reason)
    else:
        mc = check.memory
        mc.ok, mc.limit, mc.reason = mc.ok and ok, f"{mc.limit}; {limit}", f"{mc.reason}; {where}: {reason}"
    if not ok:
        check.ok = False
    return check
