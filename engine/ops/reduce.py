"""Reductions (sum, max) and broadcasting, their transpose."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .core import Aval, bind, defjvp, defprim, defvjp
from .elementwise import compare, div, full_like, mul, select
from .shape import reshape

# --------------------------------------------------------------------------------------------
# Reductions and their transpose, broadcasting


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
