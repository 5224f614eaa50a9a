"""Items 3 and 10: fine at depths 1..3, SIGSEGV from depth 4 on (inside the structure probe's range too)."""

import os
import signal

import adprof


def _explode(depth):
    if depth >= 4:
        os.kill(os.getpid(), signal.SIGSEGV)


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def segv(xp, x, depth):
    """y <- sin(y) that segfaults from depth 4 on."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    _explode(depth)
    return xp.sum(y)
