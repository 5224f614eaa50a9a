"""Item 7: a healthy chain, then one that spins forever (after dropping a marker file)."""

import os

import adprof


def _mark(name):
    d = os.environ.get("ADPROF_FAULT_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def good(xp, x, depth):
    """y <- sin(y): healthy."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def spin(xp, x, depth):
    """Fine at depth 1, spins at 100 % CPU from depth 2 on."""
    if depth >= 2:
        _mark("spin")
        while True:
            pass
    return xp.sum(xp.sin(x))
