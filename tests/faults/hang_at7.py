"""Item 1: healthy up to depth 6, never returns from depth 7 on (next to a healthy chain)."""

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


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def hang7(xp, x, depth):
    """y <- sin(y), but depth 7 never returns."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    if depth >= 7:
        _mark("hang7")
        while True:
            pass
    return xp.sum(y)
