"""Cause and remedy texts for verdicts, after the seeds' "how to avoid" sections.

Seed 001 (the cost of the derivative transform): a value reused k times per layer makes the traced
grad transform grow k^d, because structural key equality walks the DAG as a tree when two keys are
not the same allocation; dropping the derivative graph costs as much again. Fixes: staging,
checkpoint, measuring ratios on a dozen layers first. Seed 000 (every backward equally slow): eager
backward re-derives the trace and builds and drops a derivative trace on every call, superlinear in
depth, not amortized by the prepared-program cache. Fixes: traced mode, short eager stages.
"""

from __future__ import annotations

from adprof import model, verdicts, words
from adprof.backend_info import (  # the remedies the built-in backends declare, shared with the generic ones
    CACHED_COMPILE as CACHED_COMPILE,
)
from adprof.backend_info import (
    DROP_TAPES,
    JAX_REMAT,
    RESET_GRAD,
    STAGING,
    TORCH_CHECKPOINT,
    BackendInfo,
    declared_info,
)
from adprof.backend_info import ENGINE_CHECKPOINT as ENGINE_CHECKPOINT
from adprof.backend_info import FEWER_UNROLLED as FEWER_UNROLLED
from adprof.backend_info import REGIONAL_COMPILE as REGIONAL_COMPILE
from adprof.backend_info import TORCH_AUTOGRAD_GRAD as TORCH_AUTOGRAD_GRAD
from adprof.backend_info import TORCH_SCAN as TORCH_SCAN
from adprof.backend_info import XLA_SCAN as XLA_SCAN

TRACED = (
    "use traced mode when the same function is differentiated repeatedly: record, grad, compile and "
    "prepare once, then only run the prepared program per call"
)
CHECKPOINT = (
    "checkpoint: evaluate intermediate values into leaves so structural keys restart there "
    "(watch the checkpoint chain itself: in v08 it grows with the number of stages)"
)
FIXED_PROFILE = (
    "the `fixed` engine profile (interned keys: O(1) key equality and metadata lookups) "
    "removes the structural-equality blowup; compare with `--profile fixed`"
)
MEASURE_FIRST = (
    "measure per-layer ratios on a dozen layers first: if they tend to 2 or 3, do not differentiate "
    "the whole deep graph at once"
)
EAGER_STAGES = (
    "if eager is required (e.g. to branch on values), cut the deep graph into short eager stages, "
    "one backward per stage"
)

_COUNTER_WORDS = {
    "key_comparisons": "structural key comparison",
    "metadata_lookups": "metadata-table lookups",
    "nodes_visited": "graph walks",
}


def _uses(base: float | None, declared: float | None) -> str:
    k = declared if declared is not None else base
    if k is None:
        return "layer values are reused"
    if abs(k - round(k)) <= 0.15 and round(k) >= 2:
        return f"layer values are used {round(k)} times"
    return f"the layer-to-layer use matrix has spectral radius ≈ {k:.2f}"


PROFILE_PHASE = (
    "profile the growing phase at two depths (`adprof flame`) to see which function's share grows with depth"
)

TAYLOR_MODE = (
    "for derivatives of high order, propagate a truncated Taylor series in one pass (`jax.experimental.jet`, "
    "the remedy of jax#520) instead of nesting grad: its cost grows polynomially in the order, not exponentially"
)

_PHASE_WORDS = {
    "traced": "the grad transform",
    "compile": "lowering and compiling the gradient",
    "eager": "every eager backward call",
}


def phase_name(backend: str, mode: str, phase: str) -> str:
    """What ``phase`` of ``mode`` on ``backend`` does, in words, as the backend declares it (``phase_names``; the
    phase name when it declares none)."""
    return declared_info(backend, mode).phase_name(phase)


def _growth_words(kind: str, base: float | None, exponent: float | None, axis: str) -> str:
    if kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD):
        return f"x{base:.2f} per {axis}" if base is not None else "exponentially"
    if exponent is not None:
        return f"as {'depth' if axis == 'layer' else axis}^{exponent:.2f}"
    return "superlinearly"


def _measured_cause(
    kind: str,
    *,
    base,
    exponent,
    mode: str,
    backend: str,
    label: str,
    axis: str = "layer",
    phase: str = "",
    share: float | None = None,
    bound: str = "",
    source: str = "time",
    info: BackendInfo | None = None,
) -> str:
    """A cause that names only what was measured (no mechanism is claimed beyond what a lower-bound metric shows;
    ``source``: what decided, which the claim names truly), and the growing phase where one grows."""
    info = info or declared_info(backend, mode)
    what = _PHASE_WORDS.get(mode, "the measured phase")
    if phase:
        what = info.phase_name(phase)
    who = f" on {backend}" if backend else ""
    growth = _growth_words(kind, base, exponent, axis)
    of_growth = f", {share:.0%} of the growth of the {mode} time" if phase and share is not None else ""
    tail = " and is paid again on each call" if kind.endswith("backward") else ""
    tail = info.bound_tails.get(bound, "") or info.cause_tail or tail
    mild = "mildly (n log n-like) " if kind in (model.MILD_TRANSFORM, model.MILD_BACKWARD) else ""
    if bound:
        claim = f"{bound} counts work the phase must do, so the work grows at least this fast"
    elif source == "counters":  # counters decided, but none of them dominates to name a mechanism
        claim = "the counters that decided name no one mechanism, so none is claimed"
    elif source == "metric":
        claim = "a deterministic work metric decided; it names no mechanism, so none is claimed"
    else:
        claim = "no engine counters were measured, so no mechanism is claimed"
    return f"{what}{who} grows {mild}{growth} ({label}{of_growth}){tail}; {claim}"


def cause(
    kind: str,
    *,
    base: float | None = None,
    exponent: float | None = None,
    mode: str = "traced",
    dominant: str | None = None,
    declared_reuse: float | None = None,
    error: str | None = None,
    backend: str = "engine",
    label: str = "",
    source: str = "counters",
    reason: str = "",
    axis: str = "layer",
    phase: str = "",
    phase_share: float | None = None,
    bound: str = "",
    info: BackendInfo | None = None,
) -> str:
    """One sentence explaining the verdict, naming a mechanism only where the counters show it (``axis``: what
    a depth counts; ``phase``/``phase_share``: the growing phase of a multi-phase mode and its share of the
    growth; ``bound``: the lower-bound metric that decided, if one did; ``info``: the backend's declarations,
    default: as registered for ``backend``)."""
    if kind == model.LINEAR:
        return "cost grows linearly with depth (or not at all): no pathology found"
    if kind == model.INCONCLUSIVE:
        return f"not classified: {reason}" if reason else "too few or too ambiguous points to classify: add depths"
    if kind == model.RUNAWAY:
        return f"runaway: {reason}" if reason else "a point ran past its cap and was killed"
    if kind == model.ERROR:
        return f"the chain failed: {error}" if error else "no points were measured"
    if source != "counters" or dominant is None:
        return _measured_cause(
            kind,
            base=base,
            exponent=exponent,
            mode=mode,
            backend=backend,
            label=label,
            axis=axis,
            phase=phase,
            share=phase_share,
            bound=bound,
            source=source,
            info=info,
        )
    mech = _COUNTER_WORDS.get(dominant or "", "structural key comparison")
    b = f"x{base:.1f}" if base is not None else "exponentially"
    p = f"as {'depth' if axis == 'layer' else axis}^{exponent:.1f}" if exponent is not None else "superlinearly"
    if kind == model.EXPONENTIAL_TRANSFORM:
        what = (
            "the grad transform (and the drop of its derivative graph)"
            if mode != "eager"
            else ("the first eager backward (the derivative transform, cache miss)")
        )
        return (
            f"{what} grows {b} per {axis}: {_uses(base, declared_reuse)}, and {mech} unfolds "
            "the graph into a tree instead of visiting each node once"
        )
    if kind in (model.SUPERLINEAR_TRANSFORM, model.MILD_TRANSFORM):
        return (
            f"the grad transform grows {p}: per-node bookkeeping ({mech}) is paid against the whole "
            "graph, a cost of graph size, not arithmetic"
        )
    if kind == model.EXPONENTIAL_BACKWARD:
        return (
            f"every eager backward call grows {b} per {axis} and is paid again on each call: "
            f"{_uses(base, declared_reuse)}, and {mech} re-walks the graph as a tree on each backward"
        )
    return (
        f"every eager backward grows {p} and is not amortized by the prepared-program cache: each "
        "call re-derives the trace into a source program and builds, then drops, a derivative trace "
        f"per gradient ({mech})"
    )


def remedies(kind: str, series: model.Series, source: str = "counters") -> list[str]:
    """The remedies that follow from a verdict and what was measured on ``series`` (its profile, axis and its
    backend's declared remedies; empty for linear/inconclusive/error)."""
    profile, axis = series.profile, series.axis
    engine = profile is not None
    fixed = [FIXED_PROFILE] if engine and profile != "fixed" else []
    pathology = kind in model.PATHOLOGIES + (model.MILD_TRANSFORM,)
    if axis == "order" and pathology:
        return [TAYLOR_MODE, MEASURE_FIRST]
    declared = model.backend_info_of(series).remedies
    if declared and pathology:
        return list(declared)
    if source != "counters" and kind in model.PATHOLOGIES:
        first = [TRACED] if verdicts.info(kind).phase == verdicts.Phase.BACKWARD else []  # type: ignore[union-attr]
        return [*first, STAGING, MEASURE_FIRST, PROFILE_PHASE]
    if kind == model.EXPONENTIAL_TRANSFORM:
        return [STAGING, CHECKPOINT, *fixed, MEASURE_FIRST]
    if kind == model.SUPERLINEAR_TRANSFORM:
        return [STAGING, *fixed, MEASURE_FIRST]
    if kind == model.EXPONENTIAL_BACKWARD:
        return [TRACED, STAGING, *fixed, MEASURE_FIRST]
    if kind == model.SUPERLINEAR_BACKWARD:
        return [TRACED, EAGER_STAGES, *fixed]
    if kind == model.RUNAWAY:
        return ["rerun the stopped depth alone with `adprof halve --verbose` or `adprof flame` to see where it hangs"]
    return []


# --------------------------------------------------------------------------- memory: causes and remedies

KEEP_PREVIOUS_ONLY = (
    "let each layer read only the previous layer's output (not every earlier one: a concatenation of all previous "
    "outputs keeps them all alive in every layer's residuals), or checkpoint the blocks that read them"
)
_MEMORY_GROWTH = {
    model.MEMORY_LINEAR: "one residual per layer: what reverse mode holds",
    model.MEMORY_FLAT: "no growth with depth: checkpointed or scanned with remat (or nothing is saved per layer)",
    model.MILD_MEMORY: "mildly more than one residual per layer (n log n-like): not a pathology",
}


def _memory_figure(mv: model.MemoryVerdict) -> str:
    if mv.base is not None:
        return f"x{mv.base:.2f} per layer"
    return f"as depth^{mv.exponent:.2f}" if mv.exponent is not None else ""


def memory_cause(mv: model.MemoryVerdict, *, backend: str = "", mode: str = "", info: BackendInfo | None = None) -> str:
    """One sentence on what holds the memory, from the memory verdict's fields (a mechanism is named where the
    figures show it: bytes per call that stay after gc, saved bytes that grow faster than the depth)."""
    if not mv.measured:
        return f"memory not measured: {mv.reason}" if mv.reason else "memory not measured"
    if mv.kind == model.LEAK_PER_CALL and mv.leak is not None:
        leak = mv.leak
        holder = (info or declared_info(backend, mode)).leak_holder or (
            "a tape, derivative program or output of each call kept alive after backward (a reference cycle "
            "or a cache that keys on each call)"
        )
        return (
            f"each {mode or 'eager'} forward+backward leaves {words.fmt_bytes(leak.bytes_per_call)} held after "
            f"gc.collect() at depth {leak.depth}: {holder}"
        )
    if mv.kind == model.INCONCLUSIVE:
        return f"memory not classified: {mv.reason}" if mv.reason else "memory not classified"
    if mv.kind == model.PEAK_ONLY:  # flip35: the noisy peak alone names no mechanism
        return f"memory not classified: {mv.reason}"
    saved = "the saved-for-backward bytes" if mv.decided_by == model.SAVED_BYTES else "the peak bytes"
    figure = _memory_figure(mv)
    if mv.kind == model.SUPERLINEAR_MEMORY:
        return (
            f"{saved} grow {figure}: each layer keeps more than its own residual alive (earlier layers' outputs "
            "are held again in every later layer's residuals), so the gradient runs out of memory at a depth "
            "where the forward fits"
        )
    if mv.kind == model.EXPONENTIAL_MEMORY:
        return (
            f"{saved} grow {figure}: the residuals multiply per layer (reused values saved once per use, the graph "
            "unfolded into a tree)"
        )
    if mv.kind == model.MEMORY_FLAT:
        return f"{saved} do not grow with depth ({words.memory_interval_text(mv) or 'flat'}): {_MEMORY_GROWTH[mv.kind]}"
    growth = _MEMORY_GROWTH.get(mv.kind, mv.kind)
    return f"{saved} grow {figure}: {growth}" if figure else f"{saved} {growth}"


def memory_remedies(
    mv: model.MemoryVerdict, *, backend: str = "", mode: str = "", info: BackendInfo | None = None
) -> list[str]:
    """The remedies that name the memory mechanism behind a memory finding (empty for healthy or undecided
    memory), the backend's declared ones first (``checkpoint_remedy``, ``leak_remedies``)."""
    info = info or declared_info(backend, mode)
    checkpoint = info.checkpoint_remedy
    if mv.kind == model.LEAK_PER_CALL:
        return list(info.leak_remedies) or [DROP_TAPES, RESET_GRAD]
    if mv.kind == model.SUPERLINEAR_MEMORY:
        return [KEEP_PREVIOUS_ONLY, *([checkpoint] if checkpoint else [JAX_REMAT, TORCH_CHECKPOINT])]
    if mv.kind == model.EXPONENTIAL_MEMORY:
        return [*([checkpoint] if checkpoint else [JAX_REMAT, TORCH_CHECKPOINT]), STAGING]
    return []
