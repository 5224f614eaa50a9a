"""Cause and remedy texts for verdicts, after the seeds' "how to avoid" sections.

Seed 001 (the cost of the derivative transform): a value reused k times per layer makes the traced
grad transform grow k^d, because structural key equality walks the DAG as a tree when two keys are
not the same allocation; dropping the derivative graph costs as much again. Fixes: staging,
checkpoint, measuring ratios on a dozen layers first. Seed 000 (every backward equally slow): eager
backward re-derives the trace and builds and drops a derivative trace on every call, superlinear in
depth, not amortized by the prepared-program cache. Fixes: traced mode, short eager stages.
"""

from __future__ import annotations

from adprof import model

TRACED = (
    "use traced mode when the same function is differentiated repeatedly: record, grad, compile and "
    "prepare once, then only run the prepared program per call"
)
STAGING = (
    "staging: cut the chain into short stages (one transform/backward per stage) and chain the "
    "cotangents by hand, so no single transform or backward sees the whole depth"
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


def cause(
    kind: str,
    *,
    base: float | None = None,
    exponent: float | None = None,
    mode: str = "traced",
    dominant: str | None = None,
    declared_reuse: float | None = None,
    error: str | None = None,
) -> str:
    """One sentence explaining the verdict."""
    mech = _COUNTER_WORDS.get(dominant or "", "structural key comparison")
    b = f"x{base:.1f}" if base is not None else "exponentially"
    p = f"as depth^{exponent:.1f}" if exponent is not None else "superlinearly"
    if kind == model.EXPONENTIAL_TRANSFORM:
        what = (
            "the grad transform (and the drop of its derivative graph)"
            if mode != "eager"
            else ("the first eager backward (the derivative transform, cache miss)")
        )
        return (
            f"{what} grows {b} per layer: {_uses(base, declared_reuse)}, and {mech} unfolds "
            "the graph into a tree instead of visiting each node once"
        )
    if kind == model.SUPERLINEAR_TRANSFORM:
        return (
            f"the grad transform grows {p}: per-node bookkeeping ({mech}) is paid against the whole "
            "graph, a cost of graph size, not arithmetic"
        )
    if kind == model.EXPONENTIAL_BACKWARD:
        return (
            f"every eager backward call grows {b} per layer and is paid again on each call: "
            f"{_uses(base, declared_reuse)}, and {mech} re-walks the graph as a tree on each backward"
        )
    if kind == model.SUPERLINEAR_BACKWARD:
        return (
            f"every eager backward grows {p} and is not amortized by the prepared-program cache: each "
            "call re-derives the trace into a source program and builds, then drops, a derivative trace "
            f"per gradient ({mech})"
        )
    if kind == model.LINEAR:
        return "cost grows linearly with depth (or not at all): no pathology found"
    if kind == model.INCONCLUSIVE:
        return "too few or too ambiguous points to classify: extend the depth range"
    return f"the chain failed: {error}" if error else "no points were measured"


def remedies(kind: str, *, mode: str = "traced", backend: str = "", profile: str | None = None) -> list[str]:
    """The remedies that apply to a verdict (empty for linear/inconclusive/error)."""
    engine = profile is not None
    fixed = [FIXED_PROFILE] if engine and profile != "fixed" else []
    if kind == model.EXPONENTIAL_TRANSFORM:
        return [STAGING, CHECKPOINT, *fixed, MEASURE_FIRST]
    if kind == model.SUPERLINEAR_TRANSFORM:
        return [STAGING, *fixed, MEASURE_FIRST]
    if kind == model.EXPONENTIAL_BACKWARD:
        return [TRACED, STAGING, *fixed, MEASURE_FIRST]
    if kind == model.SUPERLINEAR_BACKWARD:
        return [TRACED, EAGER_STAGES, *fixed]
    return []
