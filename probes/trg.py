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

import argparse
import os
import sys

# Timed runs (``python -m probes.trg``) use single-threaded BLAS, like the seeds' width-1 figures: on a
# small shared machine BLAS threads spinning against other processes make times swing tenfold. Set
# before numpy loads; an explicit setting in the environment wins.
if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import engine
from adprof.chain import chain
from probes.onsager import energy_exact, lnz_exact

__all__ = [
    "CHI",
    "STEPS",
    "initial_tensor",
    "trg_step",
    "final_log_trace",
    "trg_lnz",
    "schedule",
    "trg",
    "ConstantsAsInputs",
    "WholeGraph",
    "whole_graph_traced",
    "whole_graph_eager",
    "TRGStep",
    "StagedTRG",
    "main",
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


def trg_lnz(xp: Any, beta: Any, steps: int = STEPS, chi: int = CHI, schedule: list[int] | None = None) -> Any:
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


# ----------------------------------------------------------------------------------------------
# On the engine: whole graph (traced, eager) and staged (traced, eager), seeds 002 and 004


class ConstantsAsInputs:
    """An ``engine.numpy`` proxy whose ``asarray`` of numpy data makes placeholders, not constants.

    The values are collected in :attr:`feeds` (fed after beta when the program runs). The engine's
    derivative-trace rebuild gives every bound constant a fresh leaf key, so in the ``v08`` profile
    nothing downstream of a constant collides with the source keys and the whole-graph blowup of
    seed 001 never shows; with the constants as placeholders the rebuilt keys equal the source
    keys structurally, as they do in tenferro.
    """

    def __init__(self) -> None:
        self.inputs: list[Any] = []
        self.feeds: list[np.ndarray] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(engine.numpy, name)

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        if isinstance(obj, engine.ops.TensorBase):
            return obj
        value = np.asarray(obj, dtype=np.float64 if dtype is None else dtype)
        placeholder = engine.input(value.shape, value.dtype)
        self.inputs.append(placeholder)
        self.feeds.append(value)
        return placeholder


@dataclass
class WholeGraph:
    """Whole-graph traced TRG: lnZ/N and its beta-derivative as one compiled program."""

    steps: int
    program: Any  # engine.Program with outputs [lnZ/N, d lnZ/N / d beta]
    grad_counters: Any  # engine.counters Snapshot of the engine.grad call
    grad_seconds: float
    feeds: list[np.ndarray] = field(default_factory=list)
    _run: Any = None

    def __call__(self, beta: float) -> tuple[float, float]:
        """``(lnZ/N, d lnZ/N / d beta)`` at ``beta``."""
        if self._run is None:
            self._run = self.program.prepare()
        value, grad = self._run(np.asarray(float(beta)), *self.feeds)
        return float(value), float(grad)


def whole_graph_traced(steps: int, chi: int = CHI, constants_as_inputs: bool = False) -> WholeGraph:
    """Record TRG with ``steps`` steps as one graph, ``engine.grad`` it (counted) and compile.

    ``constants_as_inputs`` records the numpy constants as placeholders (see
    :class:`ConstantsAsInputs`); the numbers do not change.
    """
    xp: Any = ConstantsAsInputs() if constants_as_inputs else engine.numpy
    beta = engine.input(())
    y = trg_lnz(xp, beta, steps=steps, chi=chi)
    start = time.perf_counter()
    with engine.counters.measure() as snap:
        g = engine.grad(y, beta)
    seconds = time.perf_counter() - start
    extra = xp.inputs if constants_as_inputs else []
    program = engine.compile([y, g], inputs=[beta, *extra])
    return WholeGraph(steps, program, snap, seconds, list(xp.feeds) if constants_as_inputs else [])


def whole_graph_eager(
    beta: float, steps: int, chi: int = CHI, runtime: engine.EagerRuntime | None = None
) -> tuple[float, float]:
    """Whole-graph eager TRG: one session, one ``backward``; ``(lnZ/N, d lnZ/N / d beta)``."""
    rt = engine.EagerRuntime() if runtime is None else runtime
    b = rt.variable(np.asarray(float(beta)))
    with rt.session():
        y = trg_lnz(engine.numpy, b, steps=steps, chi=chi)
    value = float(y)
    y.backward()
    return value, float(b.grad)


class TRGStep:
    """One TRG step with bond dimension ``k`` as an ``engine.Staged`` stage: ``(T_next, ln c)``.

    Stages with the same ``k`` share ``stage_key``, so they share programs per input shape.
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.stage_key = ("trg_step", self.k)

    def __call__(self, xp: Any, t: Any) -> tuple[Any, Any]:
        return trg_step(xp, t, self.k)

    def __repr__(self) -> str:
        return f"TRGStep(k={self.k})"


def _initial_stage(xp: Any, beta: Any) -> Any:
    """Stage 0: beta (0-d) -> T0 (no extra term)."""
    return initial_tensor(xp, beta)


class StagedTRG:
    """TRG as ``engine.Staged``: stage 0 maps beta to T0, stage n is step n (one stage object per
    distinct k), extras ``ln c_n`` weighted ``c_n = 2^(N-n) 2^-N``, final ``2^-N ln tr T_N``.

    The objective is lnZ/N; its gradient is d lnZ/N / d beta, and u = -gradient.
    """

    def __init__(self, steps: int = STEPS, chi: int = CHI) -> None:
        self.steps, self.chi = steps, chi
        self.ks = schedule(steps, chi)
        by_k: dict[int, TRGStep] = {}
        step_stages = [by_k.setdefault(k, TRGStep(k)) for k in self.ks]
        scale = 2.0**-steps
        weights = [0.0] + [2.0 ** (steps - n) * scale for n in range(1, steps + 1)]
        self.staged = engine.Staged([_initial_stage, *step_stages], self._final, weights)

    def _final(self, xp: Any, t: Any) -> Any:
        return final_log_trace(xp, t) * 2.0**-self.steps

    def step_shapes(self) -> list[tuple[int, int]]:
        """Distinct step shapes (D, k), in order of first use."""
        shapes: list[tuple[int, int]] = []
        d = 2
        for k in self.ks:
            if (d, k) not in shapes:
                shapes.append((d, k))
            d = k
        return shapes

    def _input_shapes(self) -> list[tuple[int, ...]]:
        return [()] + [(d,) * 4 for d in [2, *self.ks[:-1]]]

    def build(self) -> float:
        """Build (transform, compile, prepare) every traced program now; return the seconds taken."""
        start = time.perf_counter()
        for stage, shape in zip(self.staged.stages, self._input_shapes(), strict=True):
            self.staged._stage_programs(stage, shape, np.float64)
        last = self.ks[-1] if self.ks else 2
        self.staged._final_programs((last,) * 4, np.float64)
        return time.perf_counter() - start

    def programs(self) -> list[tuple[str, int, int]]:
        """(label, forward ops, backward ops) per traced stage program built so far."""
        rows = []
        for key, shape, fwd, bwd in self.staged.program_summary():
            label = "initial beta -> T0" if key is _initial_stage else f"step (d, k) = ({shape[0]}, {key[1]})"
            rows.append((label, fwd, bwd))
        return rows

    def value_and_grad(
        self, beta: float, mode: str = "traced", runtime: engine.EagerRuntime | None = None
    ) -> tuple[float, float]:
        """``(lnZ/N, d lnZ/N / d beta)``, staged ``mode`` "traced" or "eager"."""
        value, grad = self.staged.value_and_grad(np.asarray(float(beta)), mode=mode, runtime=runtime)
        return float(value), float(grad)

    def value(self, beta: float, mode: str = "traced", runtime: engine.EagerRuntime | None = None) -> float:
        """lnZ/N only: traced runs the forward programs; eager computes stage by stage, no backward."""
        if mode == "traced":
            return float(self.staged.value(np.asarray(float(beta))))
        if mode != "eager":
            raise ValueError(f"mode must be 'traced' or 'eager', got {mode!r}")
        rt = engine.EagerRuntime() if runtime is None else runtime
        t = np.asarray(float(beta))
        total = 0.0
        for stage, w in zip(self.staged.stages, self.staged.weights, strict=True):
            with rt.session():
                out = stage(engine.numpy, rt.constant(t))
            t_next, extra = out if isinstance(out, tuple) else (out, None)
            if extra is not None:
                total += w * float(extra)
            t = t_next.numpy()
        with rt.session():
            fin = self._final(engine.numpy, rt.constant(t))
        return total + float(fin)


# ----------------------------------------------------------------------------------------------
# python -m probes.trg: seed 004's table for both staged variants

DEFAULT_BETAS = (0.30, 0.40, 0.44, 0.50, 0.60)
FD_STEP = 1e-5


@dataclass
class Row:
    """One beta of the table."""

    beta: float
    lnz: float
    grad: float
    fd: float
    value_seconds: float
    value_grad_seconds: float

    @property
    def u(self) -> float:
        return -self.grad


def _timed(fn: Any, repeat: int) -> tuple[Any, float]:
    """``fn()``'s result and its smallest wall time over ``repeat`` calls."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def table_rows(
    staged: StagedTRG,
    mode: str,
    betas: Sequence[float],
    runtime: engine.EagerRuntime | None = None,
    h: float = FD_STEP,
    repeat: int = 1,
) -> list[Row]:
    """Value, value+gradient (min time over ``repeat`` calls) and a central difference, per beta."""
    rows = []
    for beta in betas:
        value, t_value = _timed(lambda b=beta: staged.value(b, mode, runtime), repeat)
        (lnz, grad), t_grad = _timed(lambda b=beta: staged.value_and_grad(b, mode, runtime), repeat)
        fd = (staged.value(beta + h, mode, runtime) - staged.value(beta - h, mode, runtime)) / (2 * h)
        if value != lnz:
            print(f"  note: beta={beta:.2f} value-only {value!r} differs from value_and_grad {lnz!r}")
        rows.append(Row(beta, lnz, grad, fd, t_value, t_grad))
    return rows


def format_rows(rows: list[Row]) -> list[str]:
    """Per-beta detail lines and the summary table (errors against Onsager)."""
    lines = []
    for r in rows:
        lz, ue = lnz_exact(r.beta), energy_exact(r.beta)
        lines.append(f"beta={r.beta:.2f} lnZ/N={r.lnz:#.17g} exact={lz:#.17g} err={r.lnz - lz:+.3e}")
        lines.append(
            f"  u={r.u:#.17g} exact={ue:#.17g} err={r.u - ue:+.3e} | grad={r.grad:#.17g} "
            f"fd={r.fd:#.17g} |grad-fd|={abs(r.grad - r.fd):.1e}"
        )
    lines.append(f"{'beta':>5} {'lnZ/N err':>11} {'u err':>11} {'|grad-fd|':>10} {'value ms':>9} {'value+grad ms':>14}")
    for r in rows:
        lines.append(
            f"{r.beta:5.2f} {r.lnz - lnz_exact(r.beta):+11.3e} {r.u - energy_exact(r.beta):+11.3e} "
            f"{abs(r.grad - r.fd):10.1e} {1e3 * r.value_seconds:9.1f} "
            f"{1e3 * r.value_grad_seconds:14.1f}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print seed 004's table for staged traced and staged eager TRG on the engine."""
    parser = argparse.ArgumentParser(prog="python -m probes.trg", description=main.__doc__)
    parser.add_argument("--steps", type=int, default=STEPS, help="RG steps (default %(default)s)")
    parser.add_argument("--chi", type=int, default=CHI, help="bond dimension cap (default %(default)s)")
    parser.add_argument(
        "--betas",
        type=lambda s: [float(b) for b in s.split(",") if b.strip()],
        default=list(DEFAULT_BETAS),
        help="comma-separated couplings (default 0.30,0.40,...)",
    )
    parser.add_argument(
        "--profile", choices=engine.profiles.PROFILES, default="fixed", help="engine cost profile (default %(default)s)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="timed calls per beta, the minimum is reported (default %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or any(b <= 0 for b in args.betas):
        parser.error("need --steps >= 1 and positive betas")
    with engine.profile(args.profile):
        _report(args.steps, args.chi, args.betas, args.profile, args.repeat)
    return 0


def _report(steps: int, chi: int, betas: list[float], profile: str, repeat: int) -> None:
    total_start = time.perf_counter()
    ks = schedule(steps, chi)
    # traced: build once, then every beta reuses the programs
    staged = StagedTRG(steps, chi)
    print(f"staged traced: engine profile={profile} chi={chi} steps={steps} ks={ks}")
    with engine.counters.measure() as snap:
        build = staged.build()
    progs = staged.programs()
    total_ops = sum(f + b for _, f, b in progs)
    print(
        f"build (grad+compile+prepare) all programs {1e3 * build:.1f} ms "
        f"({len(staged.step_shapes())} step shapes, {total_ops} ops in stage programs; "
        f"key comparisons {snap.key_comparisons}, metadata lookups {snap.metadata_lookups})"
    )
    for label, fwd, bwd in progs:
        print(f"  {label}: fwd+ln-norm {fwd} ops, bwd {bwd} ops")
    for line in format_rows(table_rows(staged, "traced", betas, repeat=repeat)):
        print(line)
    # eager: one runtime, its derivative cache shared by all betas
    print()
    print(f"staged eager: engine profile={profile} chi={chi} steps={steps} ks={ks}")
    rt = engine.EagerRuntime()
    eager = StagedTRG(steps, chi)
    start = time.perf_counter()
    eager.value_and_grad(betas[0], "eager", rt)
    print(
        f"first call (value+grad, fills the cache) {1e3 * (time.perf_counter() - start):.1f} ms; "
        f"cache {rt.cache_stats()}"
    )
    rows = table_rows(eager, "eager", betas, rt, repeat=repeat)
    for line in format_rows(rows):
        print(line)
    print(f"cache: {rt.cache_stats()}")
    print(f"total {time.perf_counter() - total_start:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
