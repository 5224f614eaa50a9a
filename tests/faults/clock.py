"""Item 4: a chain that patches time.perf_counter, measured before a healthy chain in the same worker."""

import time

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4))
def patcher(xp, x, depth):
    """Freezes the clock (a side effect that must not reach other chains)."""
    time.perf_counter = lambda: 0.0
    time.perf_counter_ns = lambda: 0
    return xp.sum(xp.sin(x))


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6, 7, 8))
def victim(xp, x, depth):
    """y <- sin(y): healthy; its times must be real."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
