"""Item 5: rich markup in user strings (an exception message, a docstring) next to a healthy chain."""

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4))
def good(xp, x, depth):
    """y <- sin(y): healthy."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def weights(xp, x, depth):
    """Loads [bold]weights[/bold] from [/data] and [/] fails."""
    if depth >= 2:
        raise FileNotFoundError("could not load weights [/data/weights.npy]")
    return xp.sum(x)
