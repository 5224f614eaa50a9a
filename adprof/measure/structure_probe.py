"""Recording a chain's forward graph at small depths for the structure analysis (runs user code:
the worker process calls it). The prediction from the recording is pure and lives in
:mod:`adprof.analysis.structure`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adprof.chain import Chain

#: Consecutive small depths: enough marginal tree-size ratios to predict the per-layer base.
STRUCTURE_DEPTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)


def record_structure(
    chain: Chain, depths: Sequence[int] = STRUCTURE_DEPTHS, on_depth: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Record ``chain`` (traced, engine ``fixed`` profile) at ``depths``: tree sizes and value ops.

    Returns ``{"chain", "depths", "value_ops", "tree_sizes", "error"}``. An error while recording
    stops the recording; its message is kept in ``error`` and what was recorded before still counts.
    """
    import engine
    from engine.keys import tree_size

    rec: dict[str, Any] = {"chain": chain.name, "depths": [], "value_ops": [], "tree_sizes": [], "error": None}
    a = chain.make_input()
    with engine.profile("fixed"):
        for d in depths:
            if on_depth is not None:
                on_depth(d)
            try:
                x = engine.input(a.shape, a.dtype)
                y = chain(engine.numpy, x, d)
                if not isinstance(y, engine.TracedTensor):
                    raise TypeError(f"the chain returned {type(y).__name__}, not a tensor")
                rec["tree_sizes"].append(int(tree_size(y.key)))
                rec["value_ops"].append(int(engine.value_op_count([y])))
                rec["depths"].append(int(d))
                del x, y
            except Exception as exc:
                msg = str(exc).splitlines()[0] if str(exc) else ""
                rec["error"] = f"depth {d}: {type(exc).__name__}: {msg}".rstrip(": ")
                break
    return rec
