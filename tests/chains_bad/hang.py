"""Fixture: a chain that never returns next to a healthy one."""

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def good(xp, x, depth):
    """y <- sin(y): healthy."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3))
def hangs(xp, x, depth):
    """Never returns."""
    while True:
        pass
