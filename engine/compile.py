"""``engine.compile``: materialize traced outputs into one flat, deduplicated, fingerprinted program."""

from __future__ import annotations

from .errors import TransformError
from .graph import TracedTensor, freeze
from .program import Program


def compile(outputs, inputs=()) -> Program:  # public name engine.compile
    """Freeze the graph behind ``outputs`` (a tensor or a list) into a :class:`Program`.

    ``inputs`` lists the placeholders fed positionally to the prepared program. Identical
    operation keys are emitted once (CSE); the program's ``fingerprint`` covers ops and shapes.
    """
    outs = list(outputs) if isinstance(outputs, list | tuple) else [outputs]
    if not outs:
        raise TransformError("compile needs at least one output")
    for t in outs:
        if type(t) is not TracedTensor:
            raise TransformError(f"compile takes traced tensors, got {type(t).__name__}")
    return freeze(outs, inputs=list(inputs)).program
