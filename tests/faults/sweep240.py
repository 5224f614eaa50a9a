"""Item 10: a cheap chain swept over 240 variants."""

import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4), sweep={"k": list(range(240))})
def many(xp, x, depth, k):
    """y <- sin(y) + k."""
    y = x
    for _ in range(depth):
        y = xp.sin(y) + float(k)
    return xp.sum(y)
