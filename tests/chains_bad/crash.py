"""Fixture: the chain kills its own process with SIGSEGV at depth 2 (a native crash)."""

import os
import signal

import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3))
def segfault(xp, x, depth):
    """Segfaults at depth 2."""
    if depth >= 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    return xp.sum(xp.sin(x))
