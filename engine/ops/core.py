"""The primitive registry: primitives, abstract values, and one rule table per transform.

As in autodidax, each kind of rule lives in its own table keyed by primitive: ``SHAPE_RULES``
(abstract evaluation, which also checks operands), ``IMPL_RULES`` (the numpy kernel), ``JVP_RULES``
and ``VJP_RULES``. :func:`register_rule` is the only way into a table and refuses a second rule
for the same primitive. Rules are written against the same op functions as user code (``mul``,
``sin``, ...), so they work on any tensor type: they record graph fragments on traced tensors,
execute at once on eager tensors and emit equations on program variables. Traced and eager modes
therefore share one set of rules, and produce bitwise-equal gradients.

Rule conventions (``ct`` / ``t`` entries may be ``None`` for a symbolic zero)::

    jvp(tangents, args, outs, **params) -> list of output tangents
    vjp(cts, args, outs, **params)      -> list of input cotangents
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..errors import DTypeError, MissingRuleError, ShapeError

# --------------------------------------------------------------------------------------------
# Abstract values, primitives and the rule tables


class Aval(NamedTuple):
    """Abstract value: a concrete shape and a numpy dtype."""

    shape: tuple
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


F64 = np.dtype("float64")
F32 = np.dtype("float32")
BOOL = np.dtype("bool")
FLOATS = (F64, F32)


class Primitive:
    """One primitive operation with ``nout`` outputs; its rules live in the tables below."""

    __slots__ = ("name", "nout", "differentiable")

    def __init__(self, name: str, nout: int = 1, differentiable: bool = True) -> None:
        self.name = name
        self.nout = nout
        self.differentiable = differentiable

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


#: name -> primitive
PRIMITIVES: dict[str, Primitive] = {}
SHAPE_RULES: dict[Primitive, Callable] = {}
IMPL_RULES: dict[Primitive, Callable] = {}
JVP_RULES: dict[Primitive, Callable] = {}
VJP_RULES: dict[Primitive, Callable] = {}
RULE_TABLES: dict[str, dict[Primitive, Callable]] = {
    "shape": SHAPE_RULES,
    "impl": IMPL_RULES,
    "jvp": JVP_RULES,
    "vjp": VJP_RULES,
}


class RuleRegistrationError(ValueError):
    """A primitive or a rule registered twice (a second rule would silently replace the first)."""


def register_rule(kind: str, prim: Primitive, fn: Callable) -> Callable:
    """Put ``fn`` in the ``kind`` table ("shape", "impl", "jvp" or "vjp") for ``prim``; once only."""
    table = RULE_TABLES[kind]
    if prim in table:
        raise RuleRegistrationError(f"{kind} rule of primitive {prim.name!r} registered twice")
    table[prim] = fn
    return fn


def defprim(name: str, shape_rule: Callable, impl: Callable, nout: int = 1, differentiable: bool = True) -> Primitive:
    """Declare a primitive with its shape rule and kernel."""
    if name in PRIMITIVES:
        raise RuleRegistrationError(f"primitive {name!r} registered twice")
    prim = Primitive(name, nout, differentiable)
    register_rule("shape", prim, shape_rule)
    register_rule("impl", prim, impl)
    PRIMITIVES[name] = prim
    return prim


def defjvp(prim: Primitive) -> Callable:
    """Decorator: register the JVP rule of ``prim``."""
    return lambda fn: register_rule("jvp", prim, fn)


def defvjp(prim: Primitive) -> Callable:
    """Decorator: register the VJP rule of ``prim``."""
    return lambda fn: register_rule("vjp", prim, fn)


def rule(prim: Primitive, kind: str) -> Callable:
    """The ``kind`` ("jvp" | "vjp") rule of ``prim``, or a clear error naming both."""
    fn = RULE_TABLES[kind].get(prim)
    if fn is None:
        raise MissingRuleError(f"{kind.upper()} of primitive {prim.name!r} is not defined")
    return fn


# --------------------------------------------------------------------------------------------
# Binding: every op funnels through bind(), which lets the operand's tensor type decide what an
# operation means (record a fragment, execute, or emit an equation).


class TensorBase:
    """What traced, eager and program tensors share: ``aval`` and the numpy-like attributes.

    Subclasses provide ``aval``, ``_bind(prim, args, params)`` and ``_constant(array)``; the
    operators come from ``engine.tensor.Tensor``.
    """

    __slots__ = ()

    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.aval.shape, dtype=np.int64))


def bind(prim: Primitive, *args, **params):
    """Apply ``prim`` to tensor ``args``; returns one tensor or a tuple for multi-output prims."""
    return args[0]._bind(prim, args, params)


def bind_const(ctx, prim: Primitive, **params):
    """Apply a primitive with no array inputs (``full``, ``eye``) in the context of tensor ``ctx``."""
    return ctx._bind(prim, (), params)


def _same(name: str, *avals: Aval) -> Aval:
    first = avals[0]
    for a in avals[1:]:
        if a.shape != first.shape:
            raise ShapeError(f"{name}: shapes {list(first.shape)} and {list(a.shape)} differ")
        if a.dtype != first.dtype:
            raise DTypeError(f"{name}: dtypes {first.dtype.name} and {a.dtype.name} differ")
    return first


def _float(name: str, aval: Aval) -> Aval:
    if aval.dtype not in FLOATS:
        raise DTypeError(f"{name}: expected a floating-point operand, got {aval.dtype.name}")
    return aval
