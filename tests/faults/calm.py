"""Items 6, 8, 9, 10: one healthy chain that marks every call (to tell whether anything was measured)."""

import os

import adprof


def _mark(name):
    d = os.environ.get("ADPROF_FAULT_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def calm(xp, x, depth):
    """y <- sin(y): healthy."""
    _mark("calm")
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
