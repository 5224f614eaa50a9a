"""The sentences of the model's fields: seconds (``12.30 ms``), why a series stopped (``stopped after depth 25:
transform 1.62 s > 1.5 s cap``), a proxy's figure, the memory verdict's cells (``linear d^1.00``), what the explained
reading says (``d^2.00: its arithmetic``).

:mod:`adprof.model` holds state in typed fields; callers take the words for it from here: the analysis writes them
into a verdict's evidence, the renderers (and the JSON's sentence fields: ``stopped``, ``proxy_text``, the memory
verdict's ``summary`` and ``interval_text``) print them. Nothing reads them back. Layer 0, beside the model.

The figures of a fit and of bytes (``fit_figure``, ``fmt_bytes``, ...) are still defined in :mod:`adprof.model` and
imported here, the one place callers read them from: ``Verdict.interval_text``, which a derandomized property test
reads (its examples are drawn from a hash of its source), and adprof/guard/limits.py read them there.
"""

from __future__ import annotations

import math

from adprof.model import (  # the figures of a fit and of bytes are defined there (see adprof/model.py)
    LEAK_PER_CALL,
    RUNAWAY_FACTOR,
    Explained,
    MemoryVerdict,
    Series,
    Stop,
    StopReason,
    Verdict,
    depth_symbol,
    fit_figure,
    fit_interval,
    fmt_bytes,
)

# --------------------------------------------------------------------------- seconds


def fmt_seconds(s: float | None, ms_digits: int = 2) -> str:
    """Seconds as ``12.30 ms`` / ``4.56 s`` / ``-`` (``ms_digits`` decimals below one second)."""
    if s is None:
        return "-"
    if s < 1e-3 and ms_digits > 0:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.{ms_digits}f} ms"
    return f"{s:.2f} s"


# --------------------------------------------------------------------------- why a series stopped


def _num(value: float | None, spec: str = "g") -> str:
    """``value`` formatted by ``spec``, or ``?`` when it is not a finite number (a :class:`Stop` read from a
    hand-edited report may lack the figures its reason usually has: the sentence is still written)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return format(value, spec) if ok else "?"


#: Internal phase names as a report says them: an eager series' first call is ``forward0``/``backward0`` inside.
PHASE_TEXT = {"backward0": "backward (call 1)", "forward0": "forward (call 1)"}


def phase_text(phase: str) -> str:
    """A phase (or ``a+b`` phases) as a report prints it: ``backward0`` is ``backward (call 1)``."""
    return "+".join(PHASE_TEXT.get(p, p) for p in phase.split("+"))


def _where(stop: Stop) -> str:
    if not stop.phase:
        return ""
    call = f" (call {stop.call})" if stop.call is not None and stop.phase not in PHASE_TEXT else ""
    return f" in {phase_text(stop.phase)}{call}"


def stop_text(stop: Stop) -> str:
    """The sentence of a :class:`Stop` (any Stop: a figure its reason usually has but it lacks reads ``?``)."""
    r = stop.reason
    head = f"stopped after depth {stop.after}: " if stop.after is not None else ""
    where, depth, phase, limit = _where(stop), _num(stop.depth, "d"), phase_text(stop.phase or "?"), _num(stop.limit)
    secs = fmt_seconds(stop.seconds, 0) if stop.seconds is not None and math.isfinite(stop.seconds) else "far"
    if r is StopReason.CAP:
        return f"{head}{phase} {secs} > {limit} s cap"
    if r is StopReason.PREDICTED_CAP:
        how = f" by the deciding model ({stop.by_model})" if stop.by_model else ""
        near = stop.seconds is not None and stop.limit is not None and stop.seconds <= stop.limit
        rel = "within 20% of the" if near else ">"
        return f"{head}next point (depth {depth}) predicted{how} {phase} {secs} {rel} {limit} s cap"
    if r is StopReason.BUDGET_SHARE:
        if stop.seconds is None:
            return f"{head}this series' budget share ({_num(stop.limit, '.1f')} s) is used up"
        return (
            f"{head}next point (depth {depth}) predicted {secs} > "
            f"{fmt_seconds(max(stop.limit or 0.0, 0.0), 0)} left of this series' budget share"
        )
    if r is StopReason.BUDGET:
        if stop.depth is None:
            return f"{head}the budget ran out"
        cut = f"depth {depth} killed{where} after {_num(stop.seconds, '.1f')} s: the budget ran out"
        return f"{head}{cut}" if stop.after is not None else f"not measured: {cut}"
    if r is StopReason.COUNTER_BUDGET:
        return (
            f"{head}depth {depth} exceeded the key-comparison budget ({_num(stop.limit, ',.0f')}) in {phase} (censored)"
        )
    if r is StopReason.CENSORED:
        return (
            f"{head}depth {depth} killed{where} after {_num(stop.seconds, '.1f')} s: the budget ran out, past the "
            f"{limit} s cap (censored)"
        )
    if r is StopReason.RUNAWAY:
        return f"{head}{killed_text(stop)} (censored)"
    if r is StopReason.TIMEOUT:
        return f"{head}{killed_text(stop)} (censored; no deeper depth measured)"
    if r is StopReason.COUNT_TIMEOUT:
        cut = f"depth {depth} not counted{where}: valgrind ran {secs}, past its {_num(stop.limit, '.0f')} s limit"
        return f"{head}{cut}" if stop.after is not None else f"not measured: {cut}"
    if stop.interrupt:
        return f"not measured: interrupted by {stop.interrupt}"
    if stop.seconds is not None and stop.limit is not None:
        return f"not measured: the budget ran out after {_num(stop.seconds, '.1f')} s of {limit} s"
    return "not measured: the budget ran out before this series started"


def killed_text(stop: Stop) -> str:
    """The finding of a point killed at its own timeout (or by the budget far past its prediction)."""
    return f"{killed_head(stop)}: the chain hangs or is far too slow"


def killed_head(stop: Stop) -> str:
    """What killed the point, and when (:func:`killed_text` without its reading)."""
    where, depth = _where(stop), _num(stop.depth, "d")
    if stop.reason is StopReason.RUNAWAY:
        return (
            f"depth {depth} killed{where} after {_num(stop.seconds, '.1f')} s: the budget ran out, "
            f"{RUNAWAY_FACTOR:g}x past its prediction"
        )
    return f"depth {depth} killed{where} after the {_num(stop.limit, '.1f')} s timeout"


def stopped_text(series: Series) -> str | None:
    """The sentence of the series' stop (None when the schedule was not stopped)."""
    return stop_text(series.stop) if series.stop is not None else None


# --------------------------------------------------------------------------- a verdict's cells


def proxy_text(v: Verdict) -> str:
    """Where a proxy decided the class: its name and figure (``inductor_loop_body_ops x3.69/unroll``), else ""."""
    if v.rate_fit is None or v.fit is None:
        return ""
    return f"{v.fit.metric_name} {fit_figure(v.fit)}".strip()


def memory_interval_text(mv: MemoryVerdict) -> str:
    """The deciding model's figure in depth (``d^1.00``, ``x1.50/layer``, ``flat``; past a knee: ``... past 8``)."""
    return memory_figure(mv, interval=True)


def memory_figure_text(mv: MemoryVerdict) -> str:
    """:func:`memory_interval_text` without the interval (``d^1.00``, ``x1.50/layer``; time-read peaks: no interval)."""
    return memory_figure(mv, interval=False)


def memory_figure(mv: MemoryVerdict, interval: bool) -> str:
    """The deciding model's figure in depth, with its interval or without (past a knee: ``... past 8``)."""
    if mv.knee is not None and mv.knee.after is not None:
        figure = fit_figure(mv.knee.after, interval=interval)
        # the short cell gives the law alone where it has an interval (as it read before the fields)
        shown = not interval and fit_interval(mv.knee.after)
        return figure if shown else f"{figure} past {mv.knee.depth}"
    return fit_figure(mv.fit, interval=interval) if mv.fit is not None else ""


def memory_summary(mv: MemoryVerdict) -> str:
    """The short cell of a report's row: ``linear d^1.00``, ``leak-per-call +4.0 KiB/call at depth 8``,
    ``not measured``."""
    if not mv.measured:
        return "not measured"
    if mv.kind == LEAK_PER_CALL and mv.leak is not None:
        return f"{mv.kind} +{fmt_bytes(mv.leak.bytes_per_call)}/call at depth {mv.leak.depth}"
    figure = memory_figure_text(mv)
    return f"{mv.kind} {figure}".strip() if figure and figure != mv.kind else mv.kind


# --------------------------------------------------------------------------- the explained reading


#: How a report names what a program figure measures.
PROGRAM_FIGURE_TEXT = {
    "ops": "its size",
    "flops": "its arithmetic",
    "bytes": "its arithmetic (bytes)",
    "intermediate_bytes": "its intermediates",
}


def program_text(ex: Explained) -> str:
    """``seq_len^2.00: its arithmetic`` (the basis' growth and what it measures), "" without a basis."""
    fit = ex.program_fit
    if fit is None:
        return ""
    text = f"{fit_figure(fit) or fit.kind}: {PROGRAM_FIGURE_TEXT.get(ex.basis, ex.basis)}"
    arithmetic = next((n for n in ("flops", "bytes") if n in ex.program_fits), "")
    if arithmetic and ex.basis not in ("flops", "bytes"):  # a size: the arithmetic beside it
        other = ex.program_fits[arithmetic]
        text += f", {fit_figure(other) or other.kind}: {PROGRAM_FIGURE_TEXT[arithmetic]}"
    return text


def memory_program_text(ex: Explained) -> str:
    """``d^1.90: its intermediates``, "" without one."""
    fit = ex.program_fits.get(ex.memory_basis)
    if fit is None:
        return ""
    return f"{fit_figure(fit) or fit.kind}: {PROGRAM_FIGURE_TEXT.get(ex.memory_basis, ex.memory_basis)}"


def program_figure(ex: Explained) -> str:
    """The basis' growth alone: ``seq_len^2.00``, ``x1.50/layer``, "" without a basis."""
    fit = ex.program_fit
    return (fit_figure(fit) or fit.kind) if fit is not None else ""


def excess_text(ex: Explained) -> str:
    """The excess over the basis: ``d^1.02``, ``x1.95/layer``, "" when not read."""
    fit = ex.program_fit
    unit = fit.axis if fit is not None and fit.axis else "layer"
    if ex.excess_base is not None:
        return f"x{ex.excess_base:.2f}/{unit}"
    return f"{depth_symbol(unit)}^{ex.excess_exponent:.2f}" if ex.excess_exponent is not None else ""


def ratio_text(ex: Explained) -> str:
    """``gradient 3.1x its forward`` (at the deepest depth; ``, flat``, ``, falling``, ``, growing`` or ``, rising
    only as its forward falls`` when read)."""
    if ex.ratio is None:
        return ""
    falling = ex.ratio_slope is not None and ex.ratio_slope <= -0.15
    rising = ex.ratio_slope is not None and ex.ratio_slope >= 0.15
    shape = "" if ex.ratio_flat is None else ", growing" if not ex.ratio_flat else ", falling" if falling else ", flat"
    if ex.ratio_flat and rising and ex.gradient_grows is False:  # bounded: the gradient's own cost does not grow
        shape = ", rising only as its forward falls"
    return f"gradient {ex.ratio:.1f}x its forward{shape}"


#: The forward's phases as the whose-cost line names them ("the forward's compile grows the same way").
_FORWARD_PHASE_WORDS = {"forward_compile": "compile", "record": "recording", "forward": "call"}


def whose_text(ex: Explained) -> str:
    """``the forward's compile grows the same way: the compiler's, not the gradient's`` ("" when it does not)."""
    if not ex.forward_phase:
        return ""
    owner = "the compiler's" if "compile" in ex.forward_phase else "the engine's"
    phase = _FORWARD_PHASE_WORDS.get(ex.forward_phase, ex.forward_phase)
    return f"the forward's {phase} grows the same way: {owner}, not the gradient's"


__all__ = [
    "PHASE_TEXT",
    "PROGRAM_FIGURE_TEXT",
    "depth_symbol",
    "excess_text",
    "fit_figure",
    "fit_interval",
    "fmt_bytes",
    "fmt_seconds",
    "killed_head",
    "killed_text",
    "memory_figure",
    "memory_figure_text",
    "memory_interval_text",
    "memory_program_text",
    "memory_summary",
    "phase_text",
    "program_figure",
    "program_text",
    "proxy_text",
    "ratio_text",
    "stop_text",
    "stopped_text",
    "whose_text",
]
