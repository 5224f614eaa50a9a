"""Healthy programs users write, probed over a size axis (issue #34): the depth is a size, not a layer count.

Each program's arithmetic grows superlinearly in its size (about n²), and its gradient costs a constant multiple
of its forward: nothing here is a pathology. adprof reads each cost against the program's own growth
(``Point.program``: ops, FLOPs, intermediates), not against the depth.

==============  =====================================================  ========  ==================
chain           program                                                axis      grows
==============  =====================================================  ========  ==================
attention       softmax(q kᵀ / 2) v over ``depth`` tokens, arrays       seq_len   scores n x n
                ``(depth, 4)``, q = k = v = tokens @ x
pairs           sum over all pairs of exp(-|p_i - p_j|²) of             particles n x n x 4
                ``depth`` particles p = points @ x
dense4          four dense tanh layers of width ``depth`` on a batch    width     4 (w x w) weights
                of 4
==============  =====================================================  ========  ==================

The input ``x`` is a 4x4 matrix (the chain-format default input, uniform in [0.5, 1)); the size-dependent
arrays are fixed functions of the size (cosines of an index grid), so every point is deterministic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adprof.chain import chain

__all__ = ["attention", "pairs", "dense4", "SCALING"]

#: Sizes: doublings from 8 (a time fit wants an 8x span at least).
_SIZES = (8, 16, 32, 64, 128)


def _grid(rows: int, cols: int, scale: float = 0.1) -> np.ndarray:
    """A fixed ``(rows, cols)`` array of values in [-1, 1]: ``cos(scale * index)``."""
    return np.cos(scale * np.arange(rows * cols, dtype=np.float64)).reshape(rows, cols)


@chain(input_shape=(4, 4), reuse=1, depths=_SIZES, axis="seq_len")
def attention(xp: Any, x: Any, depth: int) -> Any:
    """One self-attention head over ``depth`` tokens of width 4: scores ``(depth, depth)``, softmax, values."""
    h = xp.asarray(_grid(depth, 4)) @ x  # (n, 4): q = k = v
    scores = (h @ xp.transpose(h)) * 0.5  # (n, n)
    e = xp.exp(scores - xp.max(scores, axis=1, keepdims=True))
    p = e / xp.sum(e, axis=1, keepdims=True)
    return xp.sum(xp.tanh(p @ h))


@chain(input_shape=(4, 4), reuse=1, depths=_SIZES, axis="particles")
def pairs(xp: Any, x: Any, depth: int) -> Any:
    """All-pairs interactions of ``depth`` particles in 4-d: ``sum_ij exp(-|p_i - p_j|²)``."""
    p = xp.asarray(_grid(depth, 4, 0.37)) @ x  # (n, 4)
    d = xp.reshape(p, (depth, 1, 4)) - xp.reshape(p, (1, depth, 4))  # (n, n, 4)
    r2 = xp.sum(d * d, axis=2)  # (n, n)
    return xp.sum(xp.exp(r2 * -1.0))


@chain(input_shape=(4, 4), reuse=1, depths=_SIZES, axis="width")
def dense4(xp: Any, x: Any, depth: int) -> Any:
    """Four dense tanh layers of width ``depth`` on a batch of 4 (weights fixed, scaled by 1/sqrt(width))."""
    h = x @ xp.asarray(_grid(4, depth, 0.3))  # (4, w)
    for layer in range(4):
        w = xp.asarray(_grid(depth, depth, 0.1 + 0.07 * layer) / np.sqrt(depth))
        h = xp.tanh(h @ w)
    return xp.sum(h)


#: The chains of this file, in order.
SCALING = (attention, pairs, dense4)
