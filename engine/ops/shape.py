"""Structural primitives: reshape, transpose, diagonal and triangular parts."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .core import Aval, bind, defjvp, defprim, defvjp
from .elementwise import linear_unary

# --------------------------------------------------------------------------------------------
# Structural ops: reshape, transpose, diagonal, triangles


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


linear_unary(diag_p, diag, transpose=diag_embed)
linear_unary(diag_embed_p, diag_embed, transpose=diag)


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


linear_unary(tril_p, tril)
linear_unary(triu_p, triu)
