"""The primitive registry: each primitive declared once, with its rules side by side.

A :class:`Primitive` has a shape rule (abstract evaluation, which also checks operands), a numpy
kernel, a JVP rule and a VJP rule. Rules are written against the same op functions as user code
(``mul``, ``sin``, ...), so they work on any tensor type: they record graph fragments on traced
tensors, execute at once on eager tensors and emit equations on program variables. Traced and
eager modes therefore share one set of rules, and produce bitwise-equal gradients.

Rule conventions (``ct`` / ``t`` entries may be ``None`` for a symbolic zero)::

    jvp(tangents, args, outs, **params) -> list of output tangents
    vjp(cts, args, outs, **params)      -> list of input cotangents
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from .errors import DTypeError, MissingRuleError, ShapeError

# --------------------------------------------------------------------------------------------
# Abstract values and the registry


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
    """One primitive operation. ``nout`` outputs; ``linear`` if linear in all array inputs."""

    __slots__ = ("name", "nout", "shape_rule", "impl", "jvp", "vjp", "differentiable")

    def __init__(self, name: str, nout: int = 1, differentiable: bool = True) -> None:
        self.name = name
        self.nout = nout
        self.shape_rule = None
        self.impl = None
        self.jvp = None
        self.vjp = None
        self.differentiable = differentiable

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


PRIMITIVES: dict[str, Primitive] = {}


def defprim(name: str, shape_rule, impl, nout: int = 1, differentiable: bool = True) -> Primitive:
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name!r} registered twice")
    prim = Primitive(name, nout, differentiable)
    prim.shape_rule = shape_rule
    prim.impl = impl
    PRIMITIVES[name] = prim
    return prim


def defjvp(prim: Primitive):
    def register(rule):
        if prim.jvp is not None:
            raise ValueError(f"JVP of {prim.name} registered twice")
        prim.jvp = rule
        return rule

    return register


def defvjp(prim: Primitive):
    def register(rule):
        if prim.vjp is not None:
            raise ValueError(f"VJP of {prim.name} registered twice")
        prim.vjp = rule
        return rule

    return register


def rule(prim: Primitive, kind: str):
    """The ``kind`` ("jvp" | "vjp") rule of ``prim``, or a clear error naming both."""
    fn = getattr(prim, kind)
    if fn is None:
        raise MissingRuleError(f"{kind.upper()} of primitive {prim.name!r} is not defined")
    return fn


# --------------------------------------------------------------------------------------------
# Binding: every op funnels through bind(), which lets the operand's tensor type decide what an
# operation means (record a fragment, execute, or emit an equation).


class TensorBase:
    """Operators and numpy-like attributes shared by traced, eager and program tensors.

    Subclasses provide ``aval`` and ``_bind(prim, args, params)``, ``_constant(array)``.
    """

    __slots__ = ()
    __array_priority__ = 1000  # numpy arrays on the left defer to our operators

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

    def __add__(self, other):
        return _xp.add(self, other)

    def __radd__(self, other):
        return _xp.add(other, self)

    def __sub__(self, other):
        return _xp.subtract(self, other)

    def __rsub__(self, other):
        return _xp.subtract(other, self)

    def __mul__(self, other):
        return _xp.multiply(self, other)

    def __rmul__(self, other):
        return _xp.multiply(other, self)

    def __truediv__(self, other):
        return _xp.divide(self, other)

    def __rtruediv__(self, other):
        return _xp.divide(other, self)

    def __pow__(self, other):
        return _xp.pow(self, other)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return _xp.matmul(self, other)

    def __rmatmul__(self, other):
        return _xp.matmul(other, self)

    def __lt__(self, other):
        return _xp.less(self, other)

    def __le__(self, other):
        return _xp.less_equal(self, other)

    def __gt__(self, other):
        return _xp.greater(self, other)

    def __ge__(self, other):
        return _xp.greater_equal(self, other)

    __hash__ = object.__hash__

    @property
    def T(self):
        return transpose(self, tuple(reversed(range(self.ndim))))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        return _xp.reshape(self, shape)

    def sum(self, axis=None):
        return _xp.sum(self, axis=axis)


_xp: Any = None  # engine.numpy, set when it is imported (it builds on this module)


def _set_namespace(module) -> None:
    global _xp
    _xp = module


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


def _add_maybe(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


# --------------------------------------------------------------------------------------------
# Elementwise binary


def _binary_rule(name):
    def shape_rule(a: Aval, b: Aval):
        return (_same(name, a, b),)

    return shape_rule


add_p = defprim("add", _binary_rule("add"), np.add)
sub_p = defprim("sub", _binary_rule("sub"), np.subtract)
mul_p = defprim("mul", _binary_rule("mul"), np.multiply)
div_p = defprim("div", _binary_rule("div"), np.divide)


def add(a, b):
    return a._bind(add_p, (a, b), {})


def sub(a, b):
    return a._bind(sub_p, (a, b), {})


def mul(a, b):
    return a._bind(mul_p, (a, b), {})


def div(a, b):
    return a._bind(div_p, (a, b), {})


@defjvp(add_p)
def _add_jvp(t, args, outs):
    return [_add_maybe(t[0], t[1])]


@defvjp(add_p)
def _add_vjp(ct, args, outs):
    return [ct[0], ct[0]]


@defjvp(sub_p)
def _sub_jvp(t, args, outs):
    if t[1] is None:
        return [t[0]]
    return [neg(t[1]) if t[0] is None else sub(t[0], t[1])]


@defvjp(sub_p)
def _sub_vjp(ct, args, outs):
    return [ct[0], neg(ct[0])]


@defjvp(mul_p)
def _mul_jvp(t, args, outs):
    a, b = args
    return [_add_maybe(None if t[0] is None else mul(t[0], b), None if t[1] is None else mul(a, t[1]))]


@defvjp(mul_p)
def _mul_vjp(ct, args, outs):
    a, b = args
    return [mul(ct[0], b), mul(ct[0], a)]


@defjvp(div_p)
def _div_jvp(t, args, outs):
    a, b = args
    num = t[0]
    if t[1] is not None:
        term = mul(outs[0], t[1])
        num = neg(term) if num is None else sub(num, term)
    return [div(num, b)]


@defvjp(div_p)
def _div_vjp(ct, args, outs):
    a, b = args
    ga = div(ct[0], b)
    return [ga, neg(mul(ga, outs[0]))]


# --------------------------------------------------------------------------------------------
# Elementwise unary


def _unary_rule(name, need_float=True):
    def shape_rule(a: Aval, **params):
        return (_float(name, a) if need_float else a,)

    return shape_rule


neg_p = defprim("neg", _unary_rule("neg", False), np.negative)
sin_p = defprim("sin", _unary_rule("sin"), np.sin)
cos_p = defprim("cos", _unary_rule("cos"), np.cos)
exp_p = defprim("exp", _unary_rule("exp"), np.exp)
log_p = defprim("log", _unary_rule("log"), np.log)
sqrt_p = defprim("sqrt", _unary_rule("sqrt"), np.sqrt)
tanh_p = defprim("tanh", _unary_rule("tanh"), np.tanh)


def _scale_impl(x, c):
    return np.multiply(x, c)


def _pow_impl(x, n):
    return np.power(x, n)


scale_p = defprim("scale", _unary_rule("scale"), _scale_impl)  # multiply by a Python scalar
pow_int_p = defprim("pow_int", _unary_rule("pow_int"), _pow_impl)  # integer power


def neg(x):
    return x._bind(neg_p, (x,), {})


def sin(x):
    return x._bind(sin_p, (x,), {})


def cos(x):
    return x._bind(cos_p, (x,), {})


def exp(x):
    return x._bind(exp_p, (x,), {})


def log(x):
    return x._bind(log_p, (x,), {})


def sqrt(x):
    return x._bind(sqrt_p, (x,), {})


def tanh(x):
    return x._bind(tanh_p, (x,), {})


def scale(x, c: float):
    return bind(scale_p, x, c=float(c))


def pow_int(x, n: int):
    return bind(pow_int_p, x, n=int(n))


def _linear_unary(prim, fn):
    @defjvp(prim)
    def _jvp(t, args, outs, **params):
        return [None if t[0] is None else fn(t[0], **params)]

    @defvjp(prim)
    def _vjp(ct, args, outs, **params):
        return [fn(ct[0], **params)]


_linear_unary(neg_p, lambda t: neg(t))
_linear_unary(scale_p, lambda t, c: scale(t, c))


def _elementwise(prim, derivative):
    """JVP and VJP of y = f(x) from its derivative f'(x, y)."""

    @defjvp(prim)
    def _jvp(t, args, outs, **params):
        return [None if t[0] is None else mul(t[0], derivative(args[0], outs[0], **params))]

    @defvjp(prim)
    def _vjp(ct, args, outs, **params):
        return [mul(ct[0], derivative(args[0], outs[0], **params))]


_elementwise(sin_p, lambda x, y: cos(x))
_elementwise(cos_p, lambda x, y: neg(sin(x)))
_elementwise(exp_p, lambda x, y: y)
_elementwise(log_p, lambda x, y: div(full_like(x, 1.0), x))
_elementwise(sqrt_p, lambda x, y: div(full_like(x, 0.5), y))
_elementwise(tanh_p, lambda x, y: sub(full_like(x, 1.0), mul(y, y)))


def _pow_derivative(x, y, n):
    if n == 1:
        return full_like(x, 1.0)
    if n == 2:
        return scale(x, 2.0)
    return scale(pow_int(x, n - 1), float(n))


_elementwise(pow_int_p, _pow_derivative)


# --------------------------------------------------------------------------------------------
# Constants created inside a graph (no array inputs)


def _full_rule(value, shape, dtype):
    return (Aval(shape, np.dtype(dtype)),)


def _full_impl(value, shape, dtype):
    return np.full(shape, value, dtype=dtype)


full_p = defprim("full", _full_rule, _full_impl, differentiable=False)


def _eye_rule(n, dtype):
    return (Aval((n, n), np.dtype(dtype)),)


def _eye_impl(n, dtype):
    return np.eye(n, dtype=dtype)


eye_p = defprim("eye", _eye_rule, _eye_impl, differentiable=False)


def full(ctx, value: float, shape: tuple, dtype=F64):
    return bind_const(ctx, full_p, value=float(value), shape=tuple(shape), dtype=np.dtype(dtype).name)


def full_like(x, value: float):
    return full(x, value, x.shape, x.dtype)


def eye(ctx, n: int, dtype=F64):
    return bind_const(ctx, eye_p, n=int(n), dtype=np.dtype(dtype).name)


for _p in (full_p, eye_p):
    _p.jvp = lambda t, args, outs, **params: [None]
    _p.vjp = lambda ct, args, outs, **params: []


# --------------------------------------------------------------------------------------------
# Comparisons and select


def _compare_rule(a: Aval, b: Aval, direction: str):
    _same(f"compare({direction})", a, b)
    return (Aval(a.shape, BOOL),)


_COMPARE = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def _compare_impl(a, b, direction):
    return _COMPARE[direction](a, b)


compare_p = defprim("compare", _compare_rule, _compare_impl, differentiable=False)


def compare(a, b, direction: str):
    if direction not in _COMPARE:
        raise ValueError(f"unknown comparison {direction!r}")
    return bind(compare_p, a, b, direction=direction)


compare_p.jvp = lambda t, args, outs, **params: [None]
compare_p.vjp = lambda ct, args, outs, **params: [None, None]


def _select_rule(pred: Aval, a: Aval, b: Aval):
    if pred.dtype != BOOL:
        raise DTypeError(f"select: predicate must be bool, got {pred.dtype.name}")
    if pred.shape != a.shape:
        raise ShapeError(f"select: predicate shape {list(pred.shape)} differs from {list(a.shape)}")
    return (_same("select", a, b),)


select_p = defprim("select", _select_rule, np.where)


def select(pred, a, b):
    return bind(select_p, pred, a, b)


@defjvp(select_p)
def _select_jvp(t, args, outs):
    pred, a, b = args
    if t[1] is None and t[2] is None:
        return [None]
    ta = t[1] if t[1] is not None else full_like(a, 0.0)
    tb = t[2] if t[2] is not None else full_like(b, 0.0)
    return [select(pred, ta, tb)]


@defvjp(select_p)
def _select_vjp(ct, args, outs):
    pred, a, b = args
    zero = full_like(a, 0.0)
    return [None, select(pred, ct[0], zero), select(pred, zero, ct[0])]


# --------------------------------------------------------------------------------------------
# Reductions and structural ops


def _norm_axes(axes, ndim, name):
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ShapeError(f"{name}: axis {ax} out of range for rank {ndim}")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{name}: repeated axis in {tuple(axes)}")
    return tuple(sorted(out))


def _reduce_rule(name):
    def shape_rule(a: Aval, axes):
        kept = tuple(d for i, d in enumerate(a.shape) if i not in axes)
        return (Aval(kept, a.dtype),)

    return shape_rule


def _reduce_sum_impl(x, axes):
    return np.sum(x, axis=axes)


def _reduce_max_impl(x, axes):
    return np.max(x, axis=axes)


reduce_sum_p = defprim("reduce_sum", _reduce_rule("reduce_sum"), _reduce_sum_impl)
reduce_max_p = defprim("reduce_max", _reduce_rule("reduce_max"), _reduce_max_impl)


def reduce_sum(x, axes=None):
    axes = tuple(range(x.ndim)) if axes is None else _norm_axes(axes, x.ndim, "reduce_sum")
    return bind(reduce_sum_p, x, axes=axes)


def reduce_max(x, axes=None):
    axes = tuple(range(x.ndim)) if axes is None else _norm_axes(axes, x.ndim, "reduce_max")
    if any(x.shape[a] == 0 for a in axes):
        raise ShapeError("reduce_max: zero-size axis has no maximum")
    return bind(reduce_max_p, x, axes=axes)


def _kept_dims(ndim, axes):
    return tuple(i for i in range(ndim) if i not in axes)


@defjvp(reduce_sum_p)
def _reduce_sum_jvp(t, args, outs, axes):
    return [None if t[0] is None else reduce_sum(t[0], axes)]


@defvjp(reduce_sum_p)
def _reduce_sum_vjp(ct, args, outs, axes):
    x = args[0]
    return [broadcast_in_dim(ct[0], x.shape, _kept_dims(x.ndim, axes))]


def _max_mask(x, y, axes):
    kept = _kept_dims(x.ndim, axes)
    hit = compare(x, broadcast_in_dim(y, x.shape, kept), "eq")
    ones = full_like(x, 1.0)
    mask = select(hit, ones, full_like(x, 0.0))
    count = broadcast_in_dim(reduce_sum(mask, axes), x.shape, kept)
    return div(mask, count), kept  # ties share the derivative evenly


@defjvp(reduce_max_p)
def _reduce_max_jvp(t, args, outs, axes):
    if t[0] is None:
        return [None]
    weights, _ = _max_mask(args[0], outs[0], axes)
    return [reduce_sum(mul(t[0], weights), axes)]


@defvjp(reduce_max_p)
def _reduce_max_vjp(ct, args, outs, axes):
    x = args[0]
    weights, kept = _max_mask(x, outs[0], axes)
    return [mul(broadcast_in_dim(ct[0], x.shape, kept), weights)]


def _broadcast_rule(a: Aval, shape, dims):
    if len(dims) != len(a.shape):
        raise ShapeError(f"broadcast_in_dim: {len(dims)} dims for an operand of rank {len(a.shape)}")
    for d, size in zip(dims, a.shape, strict=True):
        if not 0 <= d < len(shape) or size not in (1, shape[d]):
            raise ShapeError(
                f"broadcast_in_dim: cannot broadcast {list(a.shape)} to {list(shape)} along dims {list(dims)}"
            )
    if list(dims) != sorted(dims):
        raise ShapeError("broadcast_in_dim: dims must be increasing")
    return (Aval(tuple(shape), a.dtype),)


def _broadcast_impl(x, shape, dims):
    expanded = [1] * len(shape)
    for d, size in zip(dims, x.shape, strict=True):
        expanded[d] = size
    return np.broadcast_to(np.reshape(x, expanded), shape)


broadcast_in_dim_p = defprim("broadcast_in_dim", _broadcast_rule, _broadcast_impl)


def broadcast_in_dim(x, shape, dims):
    return bind(broadcast_in_dim_p, x, shape=tuple(int(s) for s in shape), dims=tuple(dims))


@defjvp(broadcast_in_dim_p)
def _broadcast_jvp(t, args, outs, shape, dims):
    return [None if t[0] is None else broadcast_in_dim(t[0], shape, dims)]


@defvjp(broadcast_in_dim_p)
def _broadcast_vjp(ct, args, outs, shape, dims):
    x = args[0]
    summed = tuple(i for i in range(len(shape)) if i not in dims)
    stretched = tuple(d for d, size in zip(dims, x.shape, strict=True) if size == 1 and shape[d] != 1)
    g = ct[0]
    if summed or stretched:
        g = reduce_sum(g, tuple(sorted(summed + stretched)))
    if g.shape != x.shape:
        g = reshape(g, x.shape)
    return [g]


def _reshape_rule(a: Aval, shape):
    if int(np.prod(shape, dtype=np.int64)) != int(np.prod(a.shape, dtype=np.int64)):
        raise ShapeError(f"reshape: cannot reshape {list(a.shape)} to {list(shape)}")
    return (Aval(tuple(shape), a.dtype),)


def _reshape_impl(x, shape):
    return np.reshape(x, shape)


reshape_p = defprim("reshape", _reshape_rule, _reshape_impl)


def reshape(x, shape):
    shape = tuple(int(s) for s in shape)
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
        if shape.count(-1) > 1 or known == 0 or x.size % known:
            raise ShapeError(f"reshape: cannot reshape {list(x.shape)} to {list(shape)}")
        shape = tuple(x.size // known if s == -1 else s for s in shape)
    return bind(reshape_p, x, shape=shape)


@defjvp(reshape_p)
def _reshape_jvp(t, args, outs, shape):
    return [None if t[0] is None else reshape(t[0], shape)]


@defvjp(reshape_p)
def _reshape_vjp(ct, args, outs, shape):
    return [reshape(ct[0], args[0].shape)]


def _transpose_rule(a: Aval, perm):
    if sorted(perm) != list(range(len(a.shape))):
        raise ShapeError(f"transpose: {list(perm)} is not a permutation of {len(a.shape)} axes")
    return (Aval(tuple(a.shape[p] for p in perm), a.dtype),)


def _transpose_impl(x, perm):
    return np.transpose(x, perm)


transpose_p = defprim("transpose", _transpose_rule, _transpose_impl)


def transpose(x, perm=None):
    perm = tuple(reversed(range(x.ndim))) if perm is None else tuple(int(p) for p in perm)
    return bind(transpose_p, x, perm=perm)


@defjvp(transpose_p)
def _transpose_jvp(t, args, outs, perm):
    return [None if t[0] is None else transpose(t[0], perm)]


@defvjp(transpose_p)
def _transpose_vjp(ct, args, outs, perm):
    return [transpose(ct[0], tuple(np.argsort(perm)))]


def _diag_rule(a: Aval):
    if len(a.shape) != 2 or a.shape[0] != a.shape[1]:
        raise ShapeError(f"diag: expected a square matrix, got {list(a.shape)}")
    return (Aval((a.shape[0],), a.dtype),)


def _diag_embed_rule(a: Aval):
    if len(a.shape) != 1:
        raise ShapeError(f"diag_embed: expected a vector, got {list(a.shape)}")
    return (Aval((a.shape[0], a.shape[0]), a.dtype),)


def _diag_impl(x):
    return np.diagonal(x).copy()


diag_p = defprim("diag", _diag_rule, _diag_impl)
diag_embed_p = defprim("diag_embed", _diag_embed_rule, np.diag)


def diag(x):
    return bind(diag_p, x)


def diag_embed(x):
    return bind(diag_embed_p, x)


_linear_unary(diag_p, lambda t: diag(t))
_linear_unary(diag_embed_p, lambda t: diag_embed(t))
diag_p.vjp = lambda ct, args, outs: [diag_embed(ct[0])]
diag_embed_p.vjp = lambda ct, args, outs: [diag(ct[0])]


def _tri_rule(a: Aval, k):
    if len(a.shape) != 2:
        raise ShapeError(f"tril/triu: expected a matrix, got {list(a.shape)}")
    return (a,)


def _tril_impl(x, k):
    return np.tril(x, k)


def _triu_impl(x, k):
    return np.triu(x, k)


tril_p = defprim("tril", _tri_rule, _tril_impl)
triu_p = defprim("triu", _tri_rule, _triu_impl)


def tril(x, k: int = 0):
    return bind(tril_p, x, k=int(k))


def triu(x, k: int = 0):
    return bind(triu_p, x, k=int(k))


_linear_unary(tril_p, lambda t, k: tril(t, k))
_linear_unary(triu_p, lambda t, k: triu(t, k))


# --------------------------------------------------------------------------------------------
# Contractions


def _matmul_rule(a: Aval, b: Aval):
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ShapeError(f"matmul: expected matrices, got {list(a.shape)} and {list(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"matmul: inner dimensions differ: {list(a.shape)} @ {list(b.shape)}")
    if a.dtype != b.dtype:
        raise DTypeError(f"matmul: dtypes {a.dtype.name} and {b.dtype.name} differ")
    return (Aval((a.shape[0], b.shape[1]), a.dtype),)


matmul_p = defprim("matmul", _matmul_rule, np.matmul)


def matmul(a, b):
    return bind(matmul_p, a, b)


@defjvp(matmul_p)
def _matmul_jvp(t, args, outs):
    a, b = args
    return [_add_maybe(None if t[0] is None else matmul(t[0], b), None if t[1] is None else matmul(a, t[1]))]


@defvjp(matmul_p)
def _matmul_vjp(ct, args, outs):
    a, b = args
    return [matmul(ct[0], transpose(b)), matmul(transpose(a), ct[0])]


def parse_einsum(spec: str, nops: int) -> tuple[tuple[str, ...], str]:
    """Split an explicit or implicit einsum spec into input index strings and the output string."""
    spec = spec.replace(" ", "")
    if "..." in spec:
        raise ShapeError("einsum: ellipsis is not supported")
    lhs, arrow, out = spec.partition("->")
    ins = tuple(lhs.split(","))
    if len(ins) != nops:
        raise ShapeError(f"einsum: spec {spec!r} names {len(ins)} operands, got {nops}")
    if not arrow:
        counts: dict[str, int] = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    for s in ins:
        if len(set(s)) != len(s):
            raise ShapeError(f"einsum: repeated index within one operand ({s!r}) is not supported")
    if len(set(out)) != len(out) or not set(out) <= set("".join(ins)):
        raise ShapeError(f"einsum: bad output indices {out!r}")
    return ins, out


def _einsum_rule(*avals: Aval, spec):
    ins, out = parse_einsum(spec, len(avals))
    sizes: dict[str, int] = {}
    for s, a in zip(ins, avals, strict=True):
        if len(s) != len(a.shape):
            raise ShapeError(f"einsum: operand {s!r} has rank {len(a.shape)}")
        for c, d in zip(s, a.shape, strict=True):
            if sizes.setdefault(c, d) != d:
                raise ShapeError(f"einsum: index {c!r} has sizes {sizes[c]} and {d}")
        if a.dtype != avals[0].dtype:
            raise DTypeError("einsum: operands have different dtypes")
    return (Aval(tuple(sizes[c] for c in out), avals[0].dtype),)


@functools.lru_cache(maxsize=4096)
def _einsum_path(spec, shapes):
    operands = [np.empty(s) for s in shapes]
    return np.einsum_path(spec, *operands, optimize="greedy")[0]


def _einsum_impl(*arrays, spec):
    if len(arrays) <= 2:
        return np.einsum(spec, *arrays)
    return np.einsum(spec, *arrays, optimize=_einsum_path(spec, tuple(a.shape for a in arrays)))


einsum_p = defprim("einsum", _einsum_rule, _einsum_impl)


def einsum(spec: str, *operands):
    ins, out = parse_einsum(spec, len(operands))
    return bind(einsum_p, *operands, spec=",".join(ins) + "->" + out)


@defjvp(einsum_p)
def _einsum_jvp(t, args, outs, spec):
    total = None
    for i, ti in enumerate(t):
        if ti is not None:
            ops = list(args)
            ops[i] = ti
            total = _add_maybe(total, einsum(spec, *ops))
    return [total]


@defvjp(einsum_p)
def _einsum_vjp(ct, args, outs, spec):
    ins, out = parse_einsum(spec, len(args))
    grads = []
    for i, target in enumerate(ins):
        others = [s for j, s in enumerate(ins) if j != i]
        present = set(out).union(*others) if others else set(out)
        reduced = "".join(c for c in target if c in present)
        rest = [a for j, a in enumerate(args) if j != i]
        g = einsum(",".join([out] + others) + "->" + reduced, ct[0], *rest)
        if reduced != target:  # indices only in this operand: the gradient is constant along them
            g = broadcast_in_dim(g, args[i].shape, tuple(target.index(c) for c in reduced))
        grads.append(g)
    return grads


# --------------------------------------------------------------------------------------------
# Linear algebra: SVD (Lorentzian-broadened rule), QR, triangular solve

#: Regularization of the SVD derivative: F_ij = D/(D^2 + eps^2), 1/s -> s/(s^2 + eps^2).
SVD_DERIVATIVE_EPS = 1e-12


def _matrix(name, a: Aval):
    if len(a.shape) != 2:
        raise ShapeError(f"{name}: expected a matrix, got shape {list(a.shape)}")
    _float(name, a)


def _svd_rule(a: Aval, eps):
    _matrix("svd", a)
    m, n = a.shape
    k = min(m, n)
    return (Aval((m, k), a.dtype), Aval((k,), a.dtype), Aval((k, n), a.dtype))


def _svd_impl(x, eps):
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    return u, s, vt


svd_p = defprim("svd", _svd_rule, _svd_impl, nout=3)


def svd(x, eps: float = SVD_DERIVATIVE_EPS):
    """Reduced SVD: ``(u, s, vt)`` with ``x = u @ diag(s) @ vt``."""
    return bind(svd_p, x, eps=float(eps))


def _row(v, n):  # v[None, :] broadcast to (n, len(v))
    return broadcast_in_dim(v, (n, v.shape[0]), (1,))


def _col(v, n):  # v[:, None] broadcast to (len(v), n)
    return broadcast_in_dim(v, (v.shape[0], n), (0,))


def _lorentz(s, eps):
    """F_ij = D/(D^2 + eps^2) with D = s_j^2 - s_i^2 (zero on the diagonal), and s/(s^2 + eps^2)."""
    k = s.shape[0]
    s2 = mul(s, s)
    d = sub(_row(s2, k), _col(s2, k))
    f = div(d, add(mul(d, d), full_like(d, eps * eps)))
    sinv = div(s, add(s2, full_like(s, eps * eps)))
    return f, sinv


@defjvp(svd_p)
def _svd_jvp(t, args, outs, eps):
    if t[0] is None:
        return [None, None, None]
    a, da = args[0], t[0]
    u, s, vt = outs
    v = transpose(vt)
    m, n = a.shape
    k = s.shape[0]
    f, sinv = _lorentz(s, eps)
    dp = matmul(matmul(transpose(u), da), v)
    ds = diag(dp)
    dpt = transpose(dp)
    s_row, s_col = _row(s, k), _col(s, k)
    du = matmul(u, mul(f, add(mul(dp, s_row), mul(s_col, dpt))))
    dv = matmul(v, mul(f, add(mul(s_col, dp), mul(dpt, s_row))))
    if m > k:
        du = add(du, mul(sub(matmul(da, v), matmul(u, matmul(transpose(u), matmul(da, v)))), _row(sinv, m)))
    if n > k:
        dat_u = matmul(transpose(da), u)
        dv = add(dv, mul(sub(dat_u, matmul(v, matmul(vt, dat_u))), _row(sinv, n)))
    return [du, ds, transpose(dv)]


@defvjp(svd_p)
def _svd_vjp(ct, args, outs, eps):
    gu, gs, gvt = ct
    u, s, vt = outs
    m, n = args[0].shape
    k = s.shape[0]
    v = transpose(vt)
    f, sinv = _lorentz(s, eps)
    inner = None
    if gu is not None:
        uhgu = matmul(transpose(u), gu)
        inner = mul(sub(uhgu, transpose(uhgu)), _row(s, k))
    gv = None
    if gvt is not None:
        gv = transpose(gvt)
        vhgv = matmul(vt, gv)
        inner = _add_maybe(inner, mul(_col(s, k), sub(vhgv, transpose(vhgv))))
    if inner is not None:
        inner = mul(inner, f)
    if gs is not None:
        inner = _add_maybe(inner, diag_embed(gs))
    ga = None if inner is None else matmul(matmul(u, inner), vt)
    if m > k and gu is not None:
        gusinv = mul(gu, _row(sinv, m))
        extra = sub(gusinv, matmul(u, matmul(transpose(u), gusinv)))
        ga = _add_maybe(ga, matmul(extra, vt))
    if n > k and gv is not None:
        gvsinv = mul(gv, _row(sinv, n))
        extra = sub(gvsinv, matmul(v, matmul(vt, gvsinv)))
        ga = _add_maybe(ga, matmul(u, transpose(extra)))
    return [ga]


def _qr_rule(a: Aval):
    _matrix("qr", a)
    m, n = a.shape
    k = min(m, n)
    return (Aval((m, k), a.dtype), Aval((k, n), a.dtype))


def _qr_impl(x):
    q, r = np.linalg.qr(x, mode="reduced")
    return q, r


qr_p = defprim("qr", _qr_rule, _qr_impl, nout=2)


def qr(x):
    """Reduced QR: ``(q, r)``; derivatives need m >= n."""
    return bind(qr_p, x)


def _solve_tri_rule(a: Aval, b: Aval, lower):
    _matrix("solve_triangular", a)
    if a.shape[0] != a.shape[1] or b.shape[0] != a.shape[0]:
        raise ShapeError(f"solve_triangular: shapes {list(a.shape)} and {list(b.shape)} do not fit")
    return (b,)


def _solve_tri_impl(a, b, lower):
    import scipy.linalg  # on first use: importing scipy.linalg costs more than most programs run

    return scipy.linalg.solve_triangular(a, b, lower=lower)


solve_triangular_p = defprim("solve_triangular", _solve_tri_rule, _solve_tri_impl)


def solve_triangular(a, b, lower: bool):
    """Solve ``a @ x = b`` for triangular ``a``."""
    return bind(solve_triangular_p, a, b, lower=bool(lower))


def _right_solve_upper(y, r):
    """y @ inv(r) for upper-triangular r."""
    return transpose(solve_triangular(transpose(r), transpose(y), lower=True))


@defjvp(solve_triangular_p)
def _solve_tri_jvp(t, args, outs, lower):
    a, b = args
    rhs = t[1]
    if t[0] is not None:
        term = matmul(t[0], outs[0])
        rhs = neg(term) if rhs is None else sub(rhs, term)
    return [None if rhs is None else solve_triangular(a, rhs, lower)]


@defvjp(solve_triangular_p)
def _solve_tri_vjp(ct, args, outs, lower):
    a, _ = args
    gb = solve_triangular(transpose(a), ct[0], not lower)
    ga = neg(matmul(gb, transpose(outs[0])))
    ga = tril(ga) if lower else triu(ga)
    return [ga, gb]


def _require_tall(a, what):
    m, n = a.shape
    if m < n:
        raise ShapeError(f"qr {what}: derivative needs m >= n, got {m}x{n}")


@defjvp(qr_p)
def _qr_jvp(t, args, outs):
    if t[0] is None:
        return [None, None]
    a, da = args[0], t[0]
    _require_tall(a, "JVP")
    q, r = outs
    x = _right_solve_upper(matmul(transpose(q), da), r)  # Q^T dA R^-1
    low = tril(x, -1)
    omega = sub(low, transpose(low))
    dr = matmul(sub(x, omega), r)
    dq = _right_solve_upper(sub(da, matmul(q, dr)), r)
    return [dq, dr]


@defvjp(qr_p)
def _qr_vjp(ct, args, outs):
    gq, gr = ct
    a = args[0]
    _require_tall(a, "VJP")
    q, r = outs
    if gq is None:
        gq = full_like(q, 0.0)
    if gr is None:
        gr = full_like(r, 0.0)
    m_ = sub(matmul(r, transpose(gr)), matmul(transpose(gq), q))
    copyltu = add(tril(m_), transpose(tril(m_, -1)))
    # gA = (gQ + Q copyltu(M)) R^-T, i.e. solve R Z^T = (...)^T
    return [transpose(solve_triangular(r, transpose(add(gq, matmul(q, copyltu))), lower=False))]
