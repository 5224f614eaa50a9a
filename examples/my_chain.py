"""Example chain file: ``adprof check examples/my_chain.py`` (or ``examples/my_chain.py::square``).

A chain is ``f(xp, x, depth)`` returning a scalar. ``xp`` is the probed backend's array namespace
(numpy-like: ``xp.sin``, ``xp.sum``, ``xp.linalg.svd``, ...), ``x`` the input tensor, ``depth``
the number of layers. ``reuse`` says how often each layer uses the previous value; adprof checks
whether the derivative cost grows like ``reuse ** depth`` instead of linearly.
"""

import numpy as np

import adprof


@adprof.chain(input_shape=(3, 3), reuse=2, max_depth=12)
def square(xp, x, depth):
    """y <- (y*y)*0.5: uses the previous value twice per layer (expect ~2x cost per layer)."""
    y = x
    for _ in range(depth):
        y = (y * y) * 0.5
    return xp.sum(y)


@adprof.chain(input_shape=(4,), reuse=1, depths=(25, 50, 100, 200))
def damped(xp, x, depth):
    """y <- tanh(y*0.9 + c): one use per layer, a healthy control (linear cost)."""
    c = xp.asarray(np.array([0.1, 0.2, 0.3, 0.4]))
    y = x
    for _ in range(depth):
        y = xp.tanh(y * 0.9 + c)
    return xp.sum(y)


@adprof.chain(reuse="k", sweep={"k": [1, 2, 3]}, max_depth=8)
def powers(xp, x, depth, k):
    """y <- cos(y*...*y), k factors: k uses per layer; probed as powers[k=1], powers[k=2], powers[k=3]."""
    y = x
    for _ in range(depth):
        p = y
        for _ in range(k - 1):
            p = p * y
        y = xp.cos(p)
    return xp.sum(y)
