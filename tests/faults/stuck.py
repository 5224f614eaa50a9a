"""Item 6: a chain that never returns at any depth (the structure probe hangs first)."""

import os

import adprof


def _mark(name):
    d = os.environ.get("ADPROF_FAULT_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def stuck(xp, x, depth):
    """Never returns."""
    _mark("stuck")
    while True:
        pass
