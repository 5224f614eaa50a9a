"""Running programs: ``Program.prepare()`` binds kernels once; the callable runs many times."""

from __future__ import annotations

import numpy as np

from .program import Prepared, Program


def prepare(program: Program) -> Prepared:
    """Prepare ``program`` for repeated runs (same as ``program.prepare()``)."""
    return Prepared(program)


def run(program: Program, *arrays) -> list[np.ndarray]:
    """Prepare and run once (convenience; prepare once and reuse for speed)."""
    return Prepared(program)(*arrays)


__all__ = ["Prepared", "prepare", "run"]
