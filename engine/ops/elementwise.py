"""Elementwise primitives: arithmetic, unary functions, in-graph constants, comparisons, select."""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, ShapeError
from .core import BOOL, F64, Aval, _float, _same, bind, bind_const, defjvp, defprim, defvjp

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


def _add_maybe(a, b):
    """a + b where either may be None (a symbolic zero)."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


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


def linear_unary(prim, forward, transpose=None):
    """Register the JVP (``forward`` of the tangent) and VJP (``transpose`` of the cotangent, default
    ``forward``: self-adjoint ops) of a unary op that is linear in its operand."""

    @defjvp(prim)
    def _jvp(t, args, outs, **params):
        return [None if t[0] is None else forward(t[0], **params)]

    adjoint = forward if transpose is None else transpose

    @defvjp(prim)
    def _vjp(ct, args, outs, **params):
        return [adjoint(ct[0], **params)]


linear_unary(neg_p, neg)
linear_unary(scale_p, scale)


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
