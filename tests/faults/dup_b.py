"""Item 2: a healthy chain named `bad` (same name as the segfaulting one in dup_a.py)."""

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def bad(xp, x, depth):
    """y <- sin(y): healthy despite its name."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
