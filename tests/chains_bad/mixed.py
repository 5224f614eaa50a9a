"""Fixture: one healthy chain next to failing ones (adprof must report them all)."""

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def good(xp, x, depth):
    """y <- sin(y): healthy."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4, 5, 6))
def raises(xp, x, depth):
    """Raises at depth 3."""
    if depth >= 3:
        raise ValueError("boom at depth 3")
    return xp.sum(x * 2.0)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def nonscalar(xp, x, depth):
    """Forgets to reduce."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return y


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def nan_output(xp, x, depth):
    """log of a negative number."""
    return xp.sum(xp.log(x * 0.0 - 1.0))
