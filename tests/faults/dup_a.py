"""Item 2: a chain named `bad` that segfaults (dup_b.py has a healthy chain of the same name)."""

import os
import signal

import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def bad(xp, x, depth):
    """Segfaults at every depth."""
    os.kill(os.getpid(), signal.SIGSEGV)
    return xp.sum(x)
