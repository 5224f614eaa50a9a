"""The standard chains: the seeds' pathological chains and two healthy controls.

Each chain ``f(xp, x, depth)`` returns a scalar and stays finite up to depth 400 (checked with a
numpy namespace). ``reuse`` is how many times a layer uses the previous layer's value, the
per-layer cost ratio of a transform that walks the graph as a tree (seed 001).

=========  ===================================  =====  =====================
chain      layer                                reuse  input
=========  ===================================  =====  =====================
mul        y <- (y*y)*0.5                       2      3x3
cube       y <- (y*y*y)*0.5                     3      3x3
svd1       u, s, vt = svd(y); y <- u + y        2      3x3
svd2       u, s, vt = svd(y); y <- tanh(u * s)  2      3x3
svd3       u, s, vt = svd(y); y <- u*s + vt     3      3x3
qr2        q, r = qr(y); y <- q + r             2      3x3
sin        y <- sin(y)                          1      (10,), deep (seed 000)
reuse[k]   y <- cos(y * y * ... * y) (k uses)   k      3x3, k = 1..4
linear     y <- tanh(sin(y)*0.9 + c)            1      3x3, healthy control
matmul     y <- tanh(y @ W)                     1      3x3, healthy control
=========  ===================================  =====  =====================

Values stay finite to depth 400 (svd1 and qr2 grow at most linearly). The SVD/QR chains depend on
LAPACK's sign convention for singular vectors, as in the seeds; at generic inputs that is locally
constant, so the chains are smooth and their gradients match finite differences.
``u * s`` scales the columns of u: ``u * reshape(s, (1, n))`` (broadcasting, no ``None``
indexing). Inputs are the chain-format default (uniform in [0.5, 1), seed 0) unless noted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adprof.chain import chain

__all__ = ["mul", "cube", "svd1", "svd2", "svd3", "qr2", "sin", "reuse", "linear", "matmul", "STANDARD"]

#: Depths for chains whose transform cost may grow like reuse**depth.
_SHORT = tuple(range(1, 15))
_SHORTER = tuple(range(1, 11))  # base 3
#: Depths for deep chains and healthy controls (doublings, as in seed 000).
_DEEP = (25, 50, 100, 200, 400)


def _cols(xp: Any, u: Any, s: Any) -> Any:
    """u * s[None, :] (scale column j of u by s[j]) via reshape + broadcasting."""
    return u * xp.reshape(s, (1, s.shape[0]))


@chain(input_shape=(3, 3), reuse=2, depths=_SHORT)
def mul(xp: Any, x: Any, depth: int) -> Any:
    """y <- (y*y)*0.5: the previous value is used twice per layer."""
    y = x
    for _ in range(depth):
        y = (y * y) * 0.5
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=3, depths=_SHORTER)
def cube(xp: Any, x: Any, depth: int) -> Any:
    """y <- (y*y*y)*0.5: the previous value is used three times per layer."""
    y = x
    for _ in range(depth):
        y = (y * y * y) * 0.5
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=2, depths=_SHORT)
def svd1(xp: Any, x: Any, depth: int) -> Any:
    """u, s, vt = svd(y); y <- u + y: y feeds the SVD and the addition."""
    y = x
    for _ in range(depth):
        u, _s, _vt = xp.linalg.svd(y)
        y = u + y
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=2, depths=_SHORT)
def svd2(xp: Any, x: Any, depth: int) -> Any:
    """u, s, vt = svd(y); y <- tanh(u * s): two outputs of one SVD, each used once.

    The tanh keeps y off matrices with orthogonal columns: for y = u * s itself, svd(y) has
    vt = +-I and LAPACK's sign choice makes the chain discontinuous from the second layer on.
    """
    y = x
    for _ in range(depth):
        u, s, _vt = xp.linalg.svd(y)
        y = xp.tanh(_cols(xp, u, s))
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=3, depths=_SHORTER)
def svd3(xp: Any, x: Any, depth: int) -> Any:
    """u, s, vt = svd(y); y <- u*s + vt: all three outputs of one SVD used."""
    y = x
    for _ in range(depth):
        u, s, vt = xp.linalg.svd(y)
        y = _cols(xp, u, s) + vt
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=2, depths=_SHORT)
def qr2(xp: Any, x: Any, depth: int) -> Any:
    """q, r = qr(y); y <- q + r: both outputs of one QR used."""
    y = x
    for _ in range(depth):
        q, r = xp.linalg.qr(y)
        y = q + r
    return xp.sum(y)


@chain(input_shape=(10,), reuse=1, depths=_DEEP)
def sin(xp: Any, x: Any, depth: int) -> Any:
    """sum(sin(sin(...sin(x)))): a deep chain without reuse (eager backward cost, seed 000)."""
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse="k", sweep={"k": [1, 2, 3, 4]}, depths=_SHORTER)
def reuse(xp: Any, x: Any, depth: int, k: int) -> Any:
    """y <- cos(y * y * ... * y): the previous value used k times per layer (k = 1..4)."""
    y = x
    for _ in range(depth):
        p = y
        for _ in range(k - 1):
            p = p * y
        y = xp.cos(p)  # stays in (0.5, 1]
    return xp.sum(y)


@chain(input_shape=(3, 3), reuse=1, depths=_DEEP)
def linear(xp: Any, x: Any, depth: int) -> Any:
    """y <- tanh(sin(y)*0.9 + c): four ops per layer, the previous value used once (healthy)."""
    c = xp.asarray(np.linspace(0.1, 0.5, int(np.prod(x.shape))).reshape(x.shape))
    y = x
    for _ in range(depth):
        y = xp.tanh(xp.sin(y) * 0.9 + c)
    return xp.sum(y)


def _rotation(n: int) -> np.ndarray:
    """A fixed n x n orthogonal matrix (QR of a seeded Gaussian matrix)."""
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((n, n)))
    return q


@chain(input_shape=(3, 3), reuse=1, depths=_DEEP)
def matmul(xp: Any, x: Any, depth: int) -> Any:
    """y <- tanh(y @ W) with a constant orthogonal W: one use per layer (healthy).

    The activation matters: the backward of tanh needs each layer's output, so the derivative
    graph refers to every forward value, as real layers do. (A purely linear ``y @ W`` chain has a
    backward that needs no forward value at all, and no bookkeeping to show.)
    """
    w = xp.asarray(_rotation(x.shape[-1]))
    y = x
    for _ in range(depth):
        y = xp.tanh(y @ w)
    return xp.sum(y)


#: All standard chains, in table order (``reuse`` is swept; use ``.variants()``).
STANDARD = [mul, cube, svd1, svd2, svd3, qr2, sin, reuse, linear, matmul]
