"""Item 10: a chain that builds its result with torch directly (not with xp): on the engine backend the
message must say what it got ("returned Tensor, not a tensor" today)."""

import torch

import adprof


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def const(xp, x, depth):
    """Returns a torch tensor whatever the backend."""
    return torch.tensor(1.0)
