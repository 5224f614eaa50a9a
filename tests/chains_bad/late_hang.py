"""Fixture: fine at depths 1 and 2, never returns from depth 3 on."""

import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def late_hang(xp, x, depth):
    """Hangs from depth 3 on."""
    while depth >= 3:
        pass
    return xp.sum(xp.sin(x))
