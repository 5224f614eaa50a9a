"""A tiny array namespace over numpy with the names chains may use (a test shim for ``xp``).

Only the subset promised to chain authors: ``asarray sin cos exp log sqrt tanh sum max reshape
transpose matmul einsum where broadcast_to`` and ``linalg.svd`` (reduced, returns ``(u, s, vt)``),
``linalg.qr``, ``linalg.norm``. ``asarray`` always gives float64.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

sin, cos, exp, log, sqrt, tanh = np.sin, np.cos, np.exp, np.log, np.sqrt, np.tanh
sum, max = np.sum, np.max  # mirror the array-API names
reshape, transpose, matmul = np.reshape, np.transpose, np.matmul
where, broadcast_to = np.where, np.broadcast_to


def asarray(a: Any) -> np.ndarray:
    """float64 array (copy-free when possible)."""
    return np.asarray(a, dtype=np.float64)


def einsum(subscripts: str, *operands: Any) -> np.ndarray:
    """numpy einsum with contraction-order optimisation."""
    return np.einsum(subscripts, *operands, optimize=True)


def _svd(a: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return u, s, vt


def _qr(a: Any) -> tuple[np.ndarray, np.ndarray]:
    q, r = np.linalg.qr(a)
    return q, r


linalg = SimpleNamespace(svd=_svd, qr=_qr, norm=np.linalg.norm)
