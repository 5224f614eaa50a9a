"""A pathology under superlinear arithmetic (issue #34): layers that reuse a value, on arrays that grow with depth.

``grow_reuse`` runs ``depth`` layers ``y <- sin(y * y)`` on arrays of shape ``(depth, 4)``: each layer reads its
input twice (the v08 engine's structural keys grow x2 per layer), and the arithmetic grows ~depth². The program's
superlinear arithmetic must not explain the v08 transform away; ``fixed`` stays linear.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adprof.chain import chain


@chain(input_shape=(4, 4), reuse=2)
def grow_reuse(xp: Any, x: Any, depth: int) -> Any:
    """``depth`` layers ``y <- sin(y * y)`` on ``(depth, 4)`` arrays: reuse 2 per layer, arithmetic ~depth²."""
    grid = np.cos(0.1 * np.arange(depth * 4, dtype=np.float64)).reshape(depth, 4)
    y = xp.asarray(grid) @ x
    for _ in range(depth):
        y = xp.sin(y * y)
    return xp.sum(y)
