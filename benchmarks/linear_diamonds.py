"""Linear chains whose layers use the previous value more than once, in a linear combination (diamonds):
the derivative program stays linear in depth, so a healthy engine's backward is linear too (``reuse`` is the
structural count: a transform that walks the graph as a tree, as the engine's v08 profile does, blows up).

Used by ``benchmarks/eager_linear.py`` (torch eager must read them ``linear``, not ``inconclusive``).
"""

from __future__ import annotations

from typing import Any

from adprof.chain import chain

_DEEP = (25, 50, 100, 200, 400)


@chain(input_shape=(3, 3), reuse=2, depths=_DEEP)
def diamond2(xp: Any, x: Any, depth: int) -> Any:
    """y <- 0.7*y + 0.3*y: two uses per layer, both linear."""
    y = x
    for _ in range(depth):
        y = 0.7 * y + 0.3 * y
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=3, depths=_DEEP)
def diamond3(xp: Any, x: Any, depth: int) -> Any:
    """y <- 0.5*y + 0.3*y + 0.2*y: three uses per layer, all linear."""
    y = x
    for _ in range(depth):
        y = 0.5 * y + 0.3 * y + 0.2 * y
    return xp.sum(y)
