"""Item 10: a decorator argument that is wrong (the error must name the chain)."""

import adprof


@adprof.chain(input_shape="abc", depths=(1, 2))
def broken_shape(xp, x, depth):
    return xp.sum(x)
