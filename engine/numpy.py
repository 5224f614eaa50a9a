"""``engine.numpy``: an array-API-style namespace over traced, eager and program tensors.

It adds what users expect on top of the primitives: numpy broadcasting (as explicit
``broadcast_in_dim``), Python scalars and numpy arrays mixed with tensors, ``axis`` arguments.
Chains written against ``xp`` run unchanged on ``engine.numpy``, ``jax.numpy`` or torch.
"""

from __future__ import annotations

import numbers
import types

import numpy as _np

from . import context as _context
from . import ops as _ops
from .errors import DTypeError, ShapeError
from .ops import TensorBase as _TensorBase

float64 = _np.float64
float32 = _np.float32
pi = _np.pi
e = _np.e


def asarray(obj, dtype=None):
    """A tensor as is, or a constant made from array-like data (float64 unless ``dtype``)."""
    if isinstance(obj, _TensorBase):
        if dtype is not None and _np.dtype(dtype) != obj.dtype:
            raise DTypeError(
                f"asarray: tensor is {obj.dtype.name}, conversion to {_np.dtype(dtype).name} is not supported"
            )
        return obj
    array = _np.asarray(obj, dtype=dtype)
    if dtype is None and array.dtype.kind in "iu":
        array = array.astype(_np.float64)
    return _context.make_constant(array)


def _is_scalar(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool | _np.bool_)


def _lift(x, ctx):
    """Turn a non-tensor operand into a tensor in ``ctx``'s context."""
    if isinstance(x, _TensorBase):
        return x
    array = _np.asarray(x, dtype=ctx.dtype if _np.asarray(x).dtype.kind in "iuf" else None)
    return ctx._constant(array)


def _broadcast_pair(a, b, name):
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: dtypes {a.dtype.name} and {b.dtype.name} differ")
    if a.shape == b.shape:
        return a, b
    try:
        shape = _np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ShapeError(f"{name}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
    return broadcast_to(a, shape), broadcast_to(b, shape)


def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` by numpy's rules (trailing axes aligned)."""
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ShapeError(f"broadcast_to: cannot broadcast {list(x.shape)} to {list(shape)}")
    return _ops.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


def _binary(a, b, prim_fn, name, scalar_fn=None):
    ta, tb = isinstance(a, _TensorBase), isinstance(b, _TensorBase)
    if not (ta or tb):
        raise TypeError(f"{name}: at least one operand must be a tensor")
    if scalar_fn is not None:
        if ta and _is_scalar(b):
            return scalar_fn(a, b, False)
        if tb and _is_scalar(a):
            return scalar_fn(b, a, True)
    ctx = a if ta else b
    a, b = _lift(a, ctx), _lift(b, ctx)
    a, b = _broadcast_pair(a, b, name)
    return prim_fn(a, b)


def _scalar_add(t, c, reflected):
    return _ops.add(_ops.full_like(t, c), t) if reflected else _ops.add(t, _ops.full_like(t, c))


def _scalar_sub(t, c, reflected):
    return _ops.sub(_ops.full_like(t, c), t) if reflected else _ops.sub(t, _ops.full_like(t, c))


def _scalar_mul(t, c, reflected):
    return _ops.scale(t, c)


def _scalar_div(t, c, reflected):
    return _ops.div(_ops.full_like(t, c), t) if reflected else _ops.div(t, _ops.full_like(t, c))


def add(a, b):
    return _binary(a, b, _ops.add, "add", _scalar_add)


def subtract(a, b):
    return _binary(a, b, _ops.sub, "subtract", _scalar_sub)


def multiply(a, b):
    return _binary(a, b, _ops.mul, "multiply", _scalar_mul)


def divide(a, b):
    return _binary(a, b, _ops.div, "divide", _scalar_div)


def negative(x):
    return _ops.neg(x)


def pow(x, n):  # array-API name
    """``x ** n`` for integer ``n`` (and ``n = 0.5`` as sqrt)."""
    if not isinstance(x, _TensorBase):
        raise TypeError("pow: the base must be a tensor")
    if isinstance(n, numbers.Integral) or (isinstance(n, float) and n.is_integer()):
        n = int(n)
        if n < 0:
            return divide(1.0, _ops.pow_int(x, -n))
        if n == 0:
            return _ops.full_like(x, 1.0)
        return x if n == 1 else _ops.pow_int(x, n)
    if n == 0.5:
        return _ops.sqrt(x)
    raise DTypeError(f"pow: only integer exponents (and 0.5) are supported, got {n!r}")


def _compare(direction):
    def fn(a, b):
        return _binary(a, b, lambda x, y: _ops.compare(x, y, direction), direction)

    fn.__name__ = direction
    return fn


less = _compare("lt")
less_equal = _compare("le")
greater = _compare("gt")
greater_equal = _compare("ge")
equal = _compare("eq")
not_equal = _compare("ne")


sin, cos, exp, log, sqrt, tanh = _ops.sin, _ops.cos, _ops.exp, _ops.log, _ops.sqrt, _ops.tanh


def _axes(axis, ndim):
    if axis is None:
        return None
    return (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)


def _keep(x, r, axes, keepdims):
    if not keepdims:
        return r
    axes = range(x.ndim) if axes is None else [a % x.ndim for a in axes]
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return _ops.reshape(r, shape)


def sum(x, axis=None, keepdims: bool = False):  # array-API name
    axes = _axes(axis, x.ndim)
    return _keep(x, _ops.reduce_sum(x, axes), axes, keepdims)


def max(x, axis=None, keepdims: bool = False):  # array-API name
    axes = _axes(axis, x.ndim)
    return _keep(x, _ops.reduce_max(x, axes), axes, keepdims)


def reshape(x, shape):
    return _ops.reshape(x, (shape,) if isinstance(shape, numbers.Integral) else shape)


def transpose(x, axes=None):
    return _ops.transpose(x, axes)


permute_dims = transpose


def matmul(a, b):
    """Matrix product with numpy's rules for 1-D operands (batched operands via einsum)."""
    ctx = a if isinstance(a, _TensorBase) else b
    a, b = _lift(a, ctx), _lift(b, ctx)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul: operands must not be scalars")
    if a.ndim <= 2 and b.ndim <= 2:
        va, vb = a.ndim == 1, b.ndim == 1
        a2 = _ops.reshape(a, (1, a.shape[0])) if va else a
        b2 = _ops.reshape(b, (b.shape[0], 1)) if vb else b
        r = _ops.matmul(a2, b2)
        if va or vb:
            r = _ops.reshape(r, tuple(d for d, drop in ((r.shape[0], va), (r.shape[1], vb)) if not drop))
        return r
    letters = "abcdefghijklmnopqrstuvw"
    if a.ndim != b.ndim:
        raise ShapeError("matmul: batched operands must have the same rank")
    batch = letters[: a.ndim - 2]
    return einsum(f"{batch}xy,{batch}yz->{batch}xz", a, b)


def einsum(spec: str, *operands):
    """Einsum without repeated indices inside one operand (a primitive with its own AD rule)."""
    ctx = next((o for o in operands if isinstance(o, _TensorBase)), None)
    if ctx is None:
        raise TypeError("einsum: at least one operand must be a tensor")
    return _ops.einsum(spec, *[_lift(o, ctx) for o in operands])


def where(condition, x, y):
    """Select ``x`` where ``condition`` holds, else ``y`` (broadcasting all three)."""
    ctx = next((o for o in (x, y, condition) if isinstance(o, _TensorBase)), None)
    if ctx is None:
        raise TypeError("where: at least one operand must be a tensor")
    fctx = x if isinstance(x, _TensorBase) else (y if isinstance(y, _TensorBase) else None)
    if fctx is None:
        raise TypeError("where: x or y must be a tensor")
    x, y = _lift(x, fctx), _lift(y, fctx)
    cond = condition if isinstance(condition, _TensorBase) else fctx._constant(_np.asarray(condition, bool))
    if cond.dtype != _np.dtype(bool):
        raise DTypeError(f"where: condition must be bool, got {cond.dtype.name}")
    shape = _np.broadcast_shapes(cond.shape, x.shape, y.shape)
    return _ops.select(broadcast_to(cond, shape), broadcast_to(x, shape), broadcast_to(y, shape))


def zeros_like(x):
    return _ops.full_like(x, 0.0)


def ones_like(x):
    return _ops.full_like(x, 1.0)


def _svd(x, full_matrices: bool = False, eps: float = _ops.SVD_DERIVATIVE_EPS):
    if full_matrices:
        raise ShapeError("linalg.svd: only the reduced SVD (full_matrices=False) is supported")
    return _ops.svd(x, eps)


def _qr(x, mode: str = "reduced"):
    if mode != "reduced":
        raise ShapeError("linalg.qr: only mode='reduced' is supported")
    return _ops.qr(x)


def _norm(x, ord=None, axis=None):  # numpy's name
    if ord not in (None, "fro") or axis is not None:
        raise ShapeError("linalg.norm: only the Frobenius / 2-norm over all elements is supported")
    return _ops.sqrt(_ops.reduce_sum(_ops.mul(x, x)))


linalg = types.SimpleNamespace(svd=_svd, qr=_qr, norm=_norm)
