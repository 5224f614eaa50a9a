"""Levin–Nave TRG for the square-lattice Ising model (J = 1), written once against an array namespace ``xp``.

Conventions (they reproduce the seeds' figures: lnZ/N = 0.790559063800966 at beta = 0.30, chi = 16,
20 steps; Onsager's exact value is 0.790559070951263):

- ``W = [[e^b, e^-b], [e^-b, e^b]]`` and ``Q`` its symmetric square root, in closed form
  ``Q = [[a+c, a-c], [a-c, a+c]] / 2`` with ``a = sqrt(2 cosh b)``, ``c = sqrt(2 sinh b)``
  (beta > 0); ``T0[l,u,r,d] = sum_s Q[s,l] Q[s,u] Q[s,r] Q[s,d]``.
- Step n = 1..N with ``k = min(k_n, D^2)``:
  split A: T as a (l,u) x (r,d) matrix ``= U S V^T``, ``S1 = U sqrt(S)`` as [l,u,m],
  ``S3 = V sqrt(S)`` as [r,d,m]; split B: T transposed to (u,r,d,l) as a (u,r) x (d,l) matrix
  gives ``S2`` [u,r,m] and ``S4`` [d,l,m];
  ``T'[x,y,z,w] = sum S3[a,b,x] S4[c,a,y] S1[d,c,z] S2[b,d,w]``;
  ``c_n = ||T'||_F``, ``T_n = T'/c_n``.
- ``lnZ/N = 2^-N (sum_n 2^(N-n) ln c_n + ln sum_ij T_N[i,j,i,j])``.

Only the chain-safe names are used (``asarray exp log sqrt sum reshape transpose einsum
linalg.svd``, arithmetic, ``@`` and ``.shape``): no slicing (truncation multiplies by a constant
0/1 selection matrix, which is exact), einsums with two operands except the 2x2x2x2 initial tensor.

The three building blocks ``initial_tensor``, ``trg_step`` and ``final_log_trace`` each depend only
on their tensor argument's shape and ``k``, so a staged driver can build one small program per
step shape ``(D, k)`` (5 shapes for 20 steps at chi = 16) and chain cotangents step by step with
the surrogate ``<T_{n+1}, ct_{n+1}> + 2^-N 2^(N-n) ln c_n``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adprof.chain import chain

__all__ = [
    "CHI",
    "STEPS",
    "initial_tensor",
    "trg_step",
    "final_log_trace",
    "trg_lnz",
    "schedule",
    "trg",
]

CHI = 16
STEPS = 20
#: Numerical ranks of the first three Ising TRG steps (the Z2 symmetry): D = 2 -> 2, 2 -> 4, 4 -> 4.
_ISING_HEAD_RANKS = (2, 4, 4)

_HALF_PLUS = np.array([[0.5, 0.5], [0.5, 0.5]])
_HALF_MINUS = np.array([[0.5, -0.5], [-0.5, 0.5]])


def schedule(steps: int = STEPS, chi: int = CHI) -> list[int]:
    """Bond dimensions k_1..k_steps: ``[2, 4, 4, 16, 16, ...]`` for chi = 16.

    ``k_n = min(chi, r_n, D_{n-1}^2)`` with D_0 = 2, where r_n is the numerical rank of the step's
    matrices: 2, 4, 4 for the first three Ising steps, and D^2 afterwards (no further rank drop).
    This is the rank-aware rule (``#(S > 1e-12 S_max)``) fixed in advance, so step shapes do not
    depend on beta; the plain rule ``min(chi, D^2)`` would give ``[4, 16, 16, ...]``.
    """
    if steps < 0 or chi < 1:
        raise ValueError(f"need steps >= 0 and chi >= 1, got steps={steps}, chi={chi}")
    ks: list[int] = []
    d = 2
    for n in range(steps):
        cap = _ISING_HEAD_RANKS[n] if n < len(_ISING_HEAD_RANKS) else d * d
        k = min(chi, cap, d * d)
        ks.append(k)
        d = k
    return ks


def _as_tensor(xp: Any, beta: Any) -> Any:
    if isinstance(beta, int | float | np.floating | np.integer):
        return xp.asarray(np.asarray(float(beta), dtype=np.float64))
    return beta


def initial_tensor(xp: Any, beta: Any) -> Any:
    """T0[l,u,r,d] = sum_s Q[s,l] Q[s,u] Q[s,r] Q[s,d] (2x2x2x2), differentiable in beta > 0.

    beta may be a Python float or a 0-d tensor of ``xp``.
    """
    b = _as_tensor(xp, beta)
    eb, emb = xp.exp(b), xp.exp(-b)
    a = xp.sqrt(eb + emb)  # sqrt(2 cosh b): eigenvalue 2 cosh b of W, eigenvector (1, 1)/sqrt 2
    c = xp.sqrt(eb - emb)  # sqrt(2 sinh b): eigenvalue 2 sinh b of W, eigenvector (1, -1)/sqrt 2
    q = a * xp.asarray(_HALF_PLUS) + c * xp.asarray(_HALF_MINUS)
    return xp.einsum("sl,su,sr,sd->lurd", q, q, q, q)


def _select(n: int, k: int) -> np.ndarray:
    """The (n, k) matrix keeping the first k columns: ``M @ _select(n, k) == M[:, :k]``."""
    return np.eye(n, k)


def _split(xp: Any, m: Any, d: int, k: int) -> tuple[Any, Any]:
    """Truncated SVD of the (d*d, d*d) matrix m: (U sqrt S as [d,d,k], V sqrt S as [d,d,k])."""
    u, s, vt = xp.linalg.svd(m)
    v = xp.transpose(vt)
    sq = xp.sqrt(xp.reshape(s, (1, d * d)))
    if k < d * d:
        sel = xp.asarray(_select(d * d, k))
        u, v, sq = u @ sel, v @ sel, sq @ sel
    return xp.reshape(u * sq, (d, d, k)), xp.reshape(v * sq, (d, d, k))


def trg_step(xp: Any, t: Any, k: int) -> tuple[Any, Any]:
    """One TRG step on T[l,u,r,d] (D^4): returns ``(T_next / c, ln c)``, T_next of shape k'^4.

    ``k' = min(k, D^2)`` and ``c`` is the Frobenius norm of the unnormalized T_next.
    """
    d = t.shape[0]
    k = min(int(k), d * d)
    s1, s3 = _split(xp, xp.reshape(t, (d * d, d * d)), d, k)  # T[l,u,r,d] = S1[l,u,m] S3[r,d,m]
    tb = xp.transpose(t, (1, 2, 3, 0))  # [u,r,d,l]
    s2, s4 = _split(xp, xp.reshape(tb, (d * d, d * d)), d, k)  # T = S2[u,r,m] S4[d,l,m]
    # T'[x,y,z,w] = sum_{a,b,c,d} S3[a,b,x] S4[c,a,y] S1[d,c,z] S2[b,d,w], as two pair contractions
    # and one matmul over (b, c): cost O(D^3 k^2 + D^2 k^4).
    left = xp.einsum("abx,cay->xybc", s3, s4)
    right = xp.einsum("dcz,bdw->bczw", s1, s2)
    tp = xp.reshape(xp.reshape(left, (k * k, d * d)) @ xp.reshape(right, (d * d, k * k)), (k, k, k, k))
    norm = xp.sqrt(xp.sum(tp * tp))
    return tp / norm, xp.log(norm)


def final_log_trace(xp: Any, t: Any) -> Any:
    """ln sum_ij T[i,j,i,j], as ``sum(reshape(T, (D^2, D^2)) * I)`` (no repeated einsum index)."""
    d = t.shape[0]
    m = xp.reshape(t, (d * d, d * d))
    return xp.log(xp.sum(m * xp.asarray(np.eye(d * d))))


def trg_lnz(
    xp: Any, beta: Any, steps: int = STEPS, chi: int = CHI, schedule: list[int] | None = None
) -> Any:
    """lnZ/N of the Ising model after ``steps`` TRG steps (a 0-d tensor of ``xp``).

    ``schedule`` overrides the bond dimensions (its first ``steps`` entries are used); by default
    it is :func:`schedule` (steps, chi).
    """
    ks = _schedule(steps, chi) if schedule is None else list(schedule)
    if len(ks) < steps:
        raise ValueError(f"schedule has {len(ks)} entries for {steps} steps")
    t = initial_tensor(xp, beta)
    acc = None
    for n, k in enumerate(ks[:steps], start=1):
        t, ln_c = trg_step(xp, t, k)
        term = 2.0 ** (steps - n) * ln_c
        acc = term if acc is None else acc + term
    fin = final_log_trace(xp, t)
    total = fin if acc is None else acc + fin
    return total * 2.0**-steps


_schedule = schedule  # trg_lnz's parameter shadows the function name


@chain(input=0.30, reuse=None, modes=("traced", "eager"), depths=(1, 2, 3, 4))
def trg(xp: Any, beta: Any, depth: int) -> Any:
    """Whole-graph TRG: lnZ/N of the Ising model after `depth` steps (chi 16), as one graph."""
    return trg_lnz(xp, beta, steps=depth, chi=CHI)


if __name__ == "__main__":  # pragma: no cover - a quick numpy check, not the staged table
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import numpy_xp

    from probes.onsager import lnz_exact

    value = float(trg_lnz(numpy_xp, 0.30))
    print(f"beta=0.30 lnZ/N={value:.15f} exact={lnz_exact(0.30):.15f} err={value - lnz_exact(0.30):+.3e}")
