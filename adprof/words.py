"""The sentences of the model's fields: figures (``d^1.72 [1.55, 1.90]``, ``x2.00/layer``, ``4.0 KiB``, ``12.30 ms``),
why a series stopped, a proxy's figure, what the explained reading says.

:mod:`adprof.model` holds state in typed fields; callers take the words for it from here: the analysis writes them
into a verdict's evidence, the renderers (and the JSON's sentence fields ``stopped`` and ``proxy_text``) print them.
Nothing reads them back. Layer 0, beside the model.

Still defined in :mod:`adprof.model` (transitional), and imported here for every other caller: the sentences of a
stop, a figure, bytes and seconds, and the memory verdict's cells, which adprof/guard/* and render/guard.py (being
rewritten by their owner) read as ``model.NAME``, ``Stop.text()`` and ``MemoryVerdict.summary``; and
``Verdict.interval_text``, which a derandomized property test reads (its examples are drawn from a hash of its source).
"""

from __future__ import annotations

from adprof.model import (  # defined there while the guard reads them as model.NAME (see adprof/model.py)
    PHASE_TEXT,
    Explained,
    Series,
    Verdict,
    depth_symbol,
    fit_figure,
    fit_interval,
    fmt_bytes,
    fmt_seconds,
    killed_head,
    killed_text,
    phase_text,
    stop_text,
)

# --------------------------------------------------------------------------- why a series stopped


def stopped_text(series: Series) -> str | None:
    """The sentence of the series' stop (None when the schedule was not stopped)."""
    return stop_text(series.stop) if series.stop is not None else None


# --------------------------------------------------------------------------- a verdict's cells


def proxy_text(v: Verdict) -> str:
    """Where a proxy decided the class: its name and figure (``inductor_loop_body_ops x3.69/unroll``), else ""."""
    if v.rate_fit is None or v.fit is None:
        return ""
    return f"{v.fit.metric_name} {fit_figure(v.fit)}".strip()


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
    """``gradient 3.1x its forward`` (at the deepest depth; ``, flat`` or ``, growing`` when read)."""
    if ex.ratio is None:
        return ""
    falling = ex.ratio_slope is not None and ex.ratio_slope <= -0.15
    shape = "" if ex.ratio_flat is None else ", growing" if not ex.ratio_flat else ", falling" if falling else ", flat"
    return f"gradient {ex.ratio:.1f}x its forward{shape}"


def whose_text(ex: Explained) -> str:
    """``the forward's compile grows the same way: the compiler's, not the gradient's`` ("" when it does not)."""
    if not ex.forward_phase:
        return ""
    owner = "the compiler's" if "compile" in ex.forward_phase else "the engine's"
    return f"the forward's {ex.forward_phase} grows the same way: {owner}, not the gradient's"


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
    "memory_program_text",
    "phase_text",
    "program_figure",
    "program_text",
    "proxy_text",
    "ratio_text",
    "stop_text",
    "stopped_text",
    "whose_text",
]
