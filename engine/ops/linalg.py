"""Contractions (matmul, einsum) and linear algebra (SVD with a Lorentzian-broadened rule, QR, triangular solve)."""

from __future__ import annotations

import functools

import numpy as np

from ..errors import DTypeError, ShapeError
from .core import Aval, _float, bind, defjvp, defprim, defvjp
from .elementwise import _add_maybe, add, div, full_like, mul, neg, sub
from .reduce import broadcast_in_dim
from .shape import diag, diag_embed, transpose, tril, triu

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


#: Below this product of operand sizes a pairwise einsum runs numpy's own loops (no path, no BLAS).
_EINSUM_BLAS_SIZE = 1 << 16


def _einsum_impl(*arrays, spec):
    # numpy's c_einsum loops are ~4x slower than the tensordot (BLAS) route the optimized path
    # takes on TRG-sized pairwise contractions; tiny ones are cheaper without the path machinery
    if len(arrays) == 1 or (len(arrays) == 2 and arrays[0].size * arrays[1].size < _EINSUM_BLAS_SIZE):
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
