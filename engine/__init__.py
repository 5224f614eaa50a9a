"""An instrumented autodiff engine on numpy/scipy, modelled on tenferro-rs 0.8.0.

Traced mode records graphs (``input``, ``constant``, ops), transforms them (``grad``, ``vjp``,
``jvp``), compiles them to flat programs (``compile``) and runs prepared programs. Eager mode
(``EagerRuntime``) computes at once and backpropagates recorded traces. Two cost profiles:
``v08`` reproduces tenferro 0.8.0's bookkeeping costs, ``fixed`` (the default) removes them.
"""

from . import counters, keys, metadata, ops, profiles
from . import numpy as numpy  # the xp namespace: engine.numpy
from .ad import grad, jvp, residual_bytes, vjp
from .compile import compile
from .eager import CacheStats, EagerRuntime, EagerSession, EagerTensor, tape_arrays, tape_bytes
from .errors import DTypeError, EngineError, MissingRuleError, ShapeError, TransformError
from .graph import TracedTensor, constant, input, value_op_count
from .profiles import profile, set_profile
from .program import Prepared, Program
from .remedies import Staged, checkpoint
from .runtime import prepare, run

__all__ = [
    "CacheStats",
    "DTypeError",
    "EagerRuntime",
    "EagerSession",
    "EagerTensor",
    "EngineError",
    "MissingRuleError",
    "Prepared",
    "Program",
    "ShapeError",
    "TracedTensor",
    "TransformError",
    "checkpoint",
    "compile",
    "constant",
    "counters",
    "grad",
    "input",
    "jvp",
    "keys",
    "metadata",
    "numpy",
    "ops",
    "prepare",
    "profile",
    "profiles",
    "residual_bytes",
    "run",
    "set_profile",
    "Staged",
    "tape_arrays",
    "tape_bytes",
    "value_op_count",
    "vjp",
]
