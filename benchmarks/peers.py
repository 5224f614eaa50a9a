"""The engine (``fixed`` profile) side by side with JAX and PyTorch: one run, ratios against targets.

    python benchmarks/peers.py [--quick]

Each figure times ours and the peer in the same process, interleaved (ours, peer, ours, ...), and
compares medians of repeated calls (wall time, ``time.perf_counter``, gc collected before and
disabled during each call). Everything is single-threaded: BLAS/OpenMP threads 1,
``torch.set_num_threads(1)`` and ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``, all set before numpy, torch or jax is imported. The table prints
ours, peer, ratio (ours / peer), target and met/missed; nothing here is a pass/fail test.

Figures: record + grad transform of the mul chain (depth 200) and whole-graph TRG grad (20 steps,
chi 16) vs ``jax.make_jaxpr(jax.grad(f))``; eager forward, eager backward and the prepared traced
grad program of the 400-layer sin chain (n = 10) vs torch; time to first gradient at depth 400 vs
JAX ``jit(grad(f))``'s first call; the traced grad of sum(sin(x) x^2) at n = 1e6 vs numpy by hand;
staged TRG (eager and traced) value + grad per beta vs torch eager TRG with the Lorentzian SVD rule;
and counters on vs off (two fresh copies of the engine, with and without counter updates, from
``counter_overhead.py``).

A second table gives the floors, what bounds a figure from outside the engine, measured in the same
run: numpy's ufunc calls alone against torch's eager forward; CPython's ``compile()`` of the first
gradient's prepared source against JAX's first call; the n = 1e6 plan's numpy kernels called by hand;
and numpy's LAPACK/BLAS (``gesdd``, ``gemm``) against torch's MKL on the very matrices staged TRG
feeds its SVD and matmul kernels, with the staged TRG ratio that leaves if everything else matched
torch. docs/performance.md has the tables and what they mean.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import engine  # noqa: E402
from adprof.backends import jax_backend, torch_backend  # noqa: E402 - x64, 1 thread, xp
from adprof.backends.peer_common import namespace  # noqa: E402
from probes.chains import mul, sin  # noqa: E402
from probes.trg import StagedTRG, trg_lnz  # noqa: E402

torch.set_num_threads(1)
SVD_EPS = 1e-12
gc.collect()
gc.freeze()  # ~200k objects from jax/torch: keeps the gc.collect() before each timed call cheap


# --------------------------------------------------------------------------- timing


def _time(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    t0 = time.perf_counter()
    try:
        fn()
    finally:
        t = time.perf_counter() - t0
        gc.enable()
    return t


def interleaved(
    ours: Callable[[], Any], peer: Callable[[], Any], repeats: int, warm: bool = True
) -> tuple[float, float]:
    """Medians of ``repeats`` alternating calls (one untimed warm-up call each unless ``warm`` is False)."""
    if warm:
        ours()
        peer()
    a, b = [], []
    for _ in range(repeats):
        a.append(_time(ours))
        b.append(_time(peer))
    return statistics.median(a), statistics.median(b)


@dataclass
class Figure:
    name: str
    peer: str
    ours: float
    theirs: float
    target: float

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs


def _fmt(t: float) -> str:
    return f"{t * 1e3:10.3f} ms" if t < 10 else f"{t:10.3f} s "


def print_table(figs: list[Figure]) -> None:
    w = max(len(f.name) for f in figs)
    print(f"\n{'figure':{w}s}  {'ours':>13s}  {'peer':>13s}  {'ratio':>8s}  {'target':>8s}  result   peer")
    for f in figs:
        ok = "met" if f.ratio <= f.target else "MISSED"
        print(
            f"{f.name:{w}s}  {_fmt(f.ours)}  {_fmt(f.theirs)}  {f.ratio:7.3f}x  <={f.target:5.2f}x  {ok:7s}  {f.peer}"
        )


# --------------------------------------------------------------------------- workloads


def engine_transform(chain: Any, depth: int) -> Callable[[], Any]:
    def run() -> Any:
        a = chain.make_input()
        x = engine.input(a.shape, a.dtype)
        return engine.grad(chain(engine.numpy, x, depth), x)

    return run


def jax_transform(fn: Callable[[Any], Any], x: Any) -> Callable[[], Any]:
    def run() -> Any:  # a fresh function each call: jax caches traces by function identity
        return jax.make_jaxpr(jax.grad(lambda v: fn(v)))(x)

    return run


def fig_transforms(r: int) -> list[Figure]:
    figs = []
    x = jnp.asarray(mul.make_input())
    peer_fn = jax_transform(lambda v: mul(jax_backend.xp, v, 200), x)
    ours, peer = interleaved(engine_transform(mul, 200), peer_fn, r)
    figs.append(Figure("record + grad, mul depth 200", "jax make_jaxpr(grad)", ours, peer, 0.25))

    beta_e = engine.input(())
    y = trg_lnz(engine.numpy, beta_e, steps=20)
    b = jnp.asarray(0.30)
    ours, peer = interleaved(
        lambda: engine.grad(y, beta_e), jax_transform(lambda v: trg_lnz(jnp, v, steps=20), b), max(2, r // 2)
    )
    figs.append(Figure("whole-graph TRG grad, 20 steps chi 16", "jax make_jaxpr(grad)", ours, peer, 0.25))
    return figs


def _engine_sin_eager(rt: engine.EagerRuntime, xs: np.ndarray, depth: int) -> tuple[Any, Any]:
    x = rt.variable(xs)
    with rt.session():
        loss = sin(engine.numpy, x, depth)
    return x, loss


def fig_sin(r: int, depth: int = 400) -> list[Figure]:
    xs = sin.make_input()
    rt = engine.EagerRuntime()
    txp = torch_backend.xp
    fwd_e, fwd_t, bwd_e, bwd_t = [], [], [], []
    held: dict[str, Any] = {}

    def e_fwd() -> None:
        held["e"] = _engine_sin_eager(rt, xs, depth)

    def t_fwd() -> None:
        x = torch.tensor(xs, requires_grad=True)
        held["t"] = (x, sin(txp, x, depth))

    for i in range(r + 1):  # call 0 warms both up
        te, tt = _time(e_fwd), _time(t_fwd)
        be = _time(lambda: held["e"][1].backward())
        bt = _time(lambda: held["t"][1].backward())
        if i:
            fwd_e.append(te)
            fwd_t.append(tt)
            bwd_e.append(be)
            bwd_t.append(bt)
    figs = [
        Figure(
            "eager forward, sin 400 (n 10)", "torch forward", statistics.median(fwd_e), statistics.median(fwd_t), 1.0
        ),
        Figure("eager backward, sin 400", "torch backward", statistics.median(bwd_e), statistics.median(bwd_t), 0.5),
    ]

    x = engine.input(xs.shape)
    run = engine.compile(engine.grad(sin(engine.numpy, x, depth), x), inputs=[x]).prepare()

    def t_both() -> None:
        xt = torch.tensor(xs, requires_grad=True)
        sin(txp, xt, depth).backward()

    ours, peer = interleaved(lambda: run(xs), t_both, r)
    figs.append(Figure("prepared traced grad run, sin 400", "torch forward + backward", ours, peer, 0.4))
    return figs


def fig_first_gradient(r: int, depth: int = 400) -> Figure:
    xs = sin.make_input()
    xj = jnp.asarray(xs)

    def ours() -> None:
        x = engine.input(xs.shape)
        run = engine.compile(engine.grad(sin(engine.numpy, x, depth), x), inputs=[x]).prepare()
        run(xs)

    def peer() -> None:  # a fresh function: a new jit cache entry, a full trace + lower + compile
        jax.block_until_ready(jax.jit(jax.grad(lambda v: sin(jax_backend.xp, v, depth)))(xj))

    a, b = interleaved(ours, peer, r, warm=False)
    return Figure("time to first gradient, sin 400", "jax jit(grad) first call", a, b, 0.02)


def fig_vector(r: int, n: int = 1_000_000) -> Figure:
    xs = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    x = engine.input((n,))
    xp = engine.numpy
    run = engine.compile(engine.grad(xp.sum(xp.sin(x) * x * x), x), inputs=[x]).prepare()

    def by_hand() -> np.ndarray:
        return np.cos(xs) * xs * xs + 2.0 * xs * np.sin(xs)

    np.testing.assert_allclose(np.asarray(run(xs)[0]), by_hand(), rtol=1e-12)
    ours, peer = interleaved(lambda: run(xs), by_hand, r)
    return Figure("traced grad run, sum(sin(x) x^2), n 1e6", "numpy by hand", ours, peer, 1.1)


# --------------------------------------------------------------------------- torch TRG (Lorentzian SVD)


class LorentzSVD(torch.autograd.Function):
    """Reduced SVD whose backward broadens 1/(s_j^2 - s_i^2) and 1/s like the engine's rule."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        u, s, vt = torch.linalg.svd(a, full_matrices=False)
        ctx.save_for_backward(u, s, vt)
        ctx.shape = a.shape
        return u, s, vt

    @staticmethod
    def backward(ctx: Any, gu: torch.Tensor, gs: torch.Tensor, gvt: torch.Tensor) -> torch.Tensor:
        u, s, vt = ctx.saved_tensors
        m, n = ctx.shape
        k = s.shape[0]
        eps2 = SVD_EPS * SVD_EPS
        s2 = s * s
        d = s2[None, :] - s2[:, None]  # D_ij = s_j^2 - s_i^2
        f = d / (d * d + eps2)
        sinv = s / (s2 + eps2)
        v = vt.T
        inner = torch.zeros((k, k), dtype=s.dtype)
        if gu is not None:
            uhgu = u.T @ gu
            inner = inner + (uhgu - uhgu.T) * s[None, :]
        gv = gvt.T if gvt is not None else None
        if gv is not None:
            vhgv = vt @ gv
            inner = inner + s[:, None] * (vhgv - vhgv.T)
        inner = inner * f
        if gs is not None:
            inner = inner + torch.diag(gs)
        ga = u @ inner @ vt
        if m > k and gu is not None:
            gusinv = gu * sinv[None, :]
            ga = ga + (gusinv - u @ (u.T @ gusinv)) @ vt
        if n > k and gv is not None:
            gvsinv = gv * sinv[None, :]
            ga = ga + u @ (gvsinv - v @ (vt @ gvsinv)).T
        return ga


def _lorentz_svd(a: torch.Tensor, full_matrices: bool = False) -> tuple[torch.Tensor, ...]:
    if full_matrices:
        raise ValueError("only the reduced SVD")
    return LorentzSVD.apply(a)


#: torch's xp (array_api_compat + the backend's shim) with the Lorentzian SVD.
TORCH_TRG_XP = namespace(
    "torch_trg_xp",
    torch_backend.xp,
    {"linalg": namespace("torch_trg_linalg", torch_backend.xp.linalg, {"svd": _lorentz_svd})},
)


def torch_trg(beta: float, steps: int = 20) -> tuple[float, float]:
    b = torch.tensor(beta, dtype=torch.float64, requires_grad=True)
    y = trg_lnz(TORCH_TRG_XP, b, steps=steps)
    y.backward()
    return float(y.detach()), float(b.grad)


def fig_staged_trg(r: int, beta: float = 0.30) -> list[Figure]:
    traced = StagedTRG(20, 16)
    traced.build()
    eager = StagedTRG(20, 16)
    rt = engine.EagerRuntime()
    ref = torch_trg(beta)
    for mode, st, runtime in (("traced", traced, None), ("eager", eager, rt)):
        got = st.value_and_grad(beta, mode, runtime)
        if abs(got[0] - ref[0]) > 1e-9 or abs(got[1] - ref[1]) > 1e-6:
            print(f"  note: staged {mode} {got} vs torch {ref}")
    figs = []
    for mode, st, runtime in (("eager", eager, rt), ("traced", traced, None)):

        def staged(st: StagedTRG = st, mode: str = mode, runtime: Any = runtime) -> Any:
            return st.value_and_grad(beta, mode, runtime)

        ours, peer = interleaved(staged, lambda: torch_trg(beta), r)
        figs.append(
            Figure(f"staged TRG {mode}, value + grad per beta", "torch eager TRG (Lorentz SVD)", ours, peer, 1.1)
        )
    return figs


# --------------------------------------------------------------------------- floors


@dataclass
class Floor:
    """What bounds a figure from outside the engine: the cost on our side that is not the engine's
    (``ours``: numpy's kernels, CPython's compiler) against the peer's (``theirs``), and the lowest
    ratio the figure can have with it (``floor``: everything else free, or for staged TRG, matching
    torch's)."""

    name: str
    ours: float
    theirs: float
    figure: str
    floor: float

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs


def print_floors(floors: list[Floor]) -> None:
    w = max(len(f.name) for f in floors)
    print(f"\n{'floor (outside the engine)':{w}s}  {'ours':>13s}  {'peer':>13s}  {'ratio':>8s}  floor    of figure")
    for f in floors:
        print(f"{f.name:{w}s}  {_fmt(f.ours)}  {_fmt(f.theirs)}  {f.ratio:7.3f}x  {f.floor:6.3f}x  {f.figure}")


def _trg_kernels() -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """The operands of every SVD and matmul kernel one staged traced TRG value + grad runs."""
    from engine.ops import IMPL_RULES, matmul_p, svd_p

    svds: list[np.ndarray] = []
    mms: list[tuple[np.ndarray, np.ndarray]] = []
    svd, mm = IMPL_RULES[svd_p], IMPL_RULES[matmul_p]

    def svd_spy(x: np.ndarray, eps: float) -> Any:
        svds.append(x.copy())
        return svd(x, eps)

    def mm_spy(a: np.ndarray, b: np.ndarray) -> Any:
        mms.append((a.copy(order="K"), b.copy(order="K")))
        return mm(a, b)

    IMPL_RULES[svd_p], IMPL_RULES[matmul_p] = svd_spy, mm_spy
    try:  # programs bind their kernels when prepared: a fresh StagedTRG picks up the spies
        StagedTRG(20, 16).value_and_grad(0.30, "traced", None)
    finally:
        IMPL_RULES[svd_p], IMPL_RULES[matmul_p] = svd, mm
    return svds, mms


def floor_trg(r: int, torch_seconds: float) -> Floor:
    """numpy's LAPACK (gesdd) and BLAS (gemm) against torch's MKL on the matrices staged TRG feeds them."""
    svds, mms = _trg_kernels()
    tsvds = [torch.from_numpy(x) for x in svds]
    tmms = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in mms]

    def ours() -> None:
        for x in svds:
            np.linalg.svd(x, full_matrices=False)
        for a, b in mms:
            np.matmul(a, b)

    def theirs() -> None:
        for x in tsvds:
            torch.linalg.svd(x, full_matrices=False)
        for a, b in tmms:
            torch.matmul(a, b)

    a, b = interleaved(ours, theirs, r)
    floor = (a + torch_seconds - b) / torch_seconds  # our kernels, torch's everything else
    return Floor(f"staged TRG: its {len(svds)} SVDs + {len(mms)} matmuls", a, b, "staged TRG", floor)


def floor_eager_forward(r: int, torch_seconds: float, depth: int = 400) -> Floor:
    """numpy's own ufunc calls (np.sin on 10 elements, 400 times) against torch's whole forward."""
    xs = sin.make_input()

    def calls() -> None:
        y = xs
        for _ in range(depth):
            y = np.sin(y)

    def t_fwd() -> None:
        x = torch.tensor(xs, requires_grad=True)
        sin(torch_backend.xp, x, depth)

    a, b = interleaved(calls, t_fwd, r)
    return Floor("eager forward: np.sin x400 alone (n 10)", a, b, "eager forward", a / b)


def floor_vector(r: int, n: int = 1_000_000) -> Floor:
    """The prepared plan's own numpy kernels, called by hand with the plan's buffers, against numpy by hand."""
    from engine.program import execution_plan

    xs = np.random.default_rng(0).uniform(-1.0, 1.0, n)
    x = engine.input((n,))
    xp = engine.numpy
    planned = len(execution_plan(engine.compile(engine.grad(xp.sum(xp.sin(x) * x * x), x), inputs=[x]))[0])
    if planned != 7:
        print(f"  note: the n = 1e6 plan runs {planned} kernels, the floor below calls 7")

    def kernels() -> np.ndarray:
        c = np.cos(xs)
        sq = np.multiply(xs, xs)
        np.multiply(sq, c, out=sq)
        s = np.sin(xs)
        np.multiply(xs, s, out=s)
        np.add(s, s, out=s)
        return np.add(s, sq, out=s)

    def by_hand() -> np.ndarray:
        return np.cos(xs) * xs * xs + 2.0 * xs * np.sin(xs)

    a, b = interleaved(kernels, by_hand, r)
    return Floor("n 1e6: the plan's 7 numpy kernels by hand", a, b, "traced grad run, n 1e6", a / b)


def floor_first_gradient(r: int, jax_seconds: float, depth: int = 400) -> Floor:
    """CPython's compile() of the prepared program's source (part of every first gradient) against
    JAX's first jit(grad) call."""
    xs = sin.make_input()
    x = engine.input(xs.shape)
    source = engine.compile(engine.grad(sin(engine.numpy, x, depth), x), inputs=[x]).prepare().source
    a = statistics.median([_time(lambda: compile(source, "<prepared program>", "exec")) for _ in range(r)])
    return Floor(
        "first gradient: CPython compile() of its source", a, jax_seconds, "time to first gradient", a / jax_seconds
    )


# --------------------------------------------------------------------------- counters on vs off


def fig_counters(r: int) -> list[Figure]:
    """Two fresh copies of the engine, with and without counter updates (counter_overhead.engine_copy):
    after the other figures the engine itself carries their state, which a fresh copy does not."""
    import counter_overhead  # benchmarks/counter_overhead.py

    on, _ = counter_overhead.engine_copy(counted=True)
    off, _removed = counter_overhead.engine_copy(counted=False)
    xs = sin.make_input()
    figs = []
    with on.profile("fixed"), off.profile("fixed"):
        ours, peer = interleaved(
            lambda: counter_overhead.mul_transform(on), lambda: counter_overhead.mul_transform(off), r
        )
        figs.append(Figure("counters on/off: record + grad, mul 200", "same, counters off", ours, peer, 1.05))
        rts = {id(on): on.EagerRuntime(), id(off): off.EagerRuntime()}
        ours, peer = interleaved(
            lambda: counter_overhead.sin_eager(on, rts[id(on)], xs),
            lambda: counter_overhead.sin_eager(off, rts[id(off)], xs),
            r,
        )
        figs.append(Figure("counters on/off: eager fwd + bwd, sin 400", "same, counters off", ours, peer, 1.05))
        on_run, off_run = counter_overhead.sin_program(on), counter_overhead.sin_program(off)
        ours, peer = interleaved(lambda: on_run(xs), lambda: off_run(xs), 3 * r)
        figs.append(Figure("counters on/off: prepared grad run, sin 400", "same, counters off", ours, peer, 1.05))
    return figs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (about a minute)")
    args = ap.parse_args(argv)
    r = 3 if args.quick else 9
    start = time.perf_counter()
    print(
        f"jax {jax.__version__}, torch {torch.__version__}, numpy {np.__version__}; engine profile fixed; "
        f"{'quick' if args.quick else 'full'} run, 1 thread"
    )
    figs: list[Figure] = []
    with engine.profile("fixed"):
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("transforms", lambda: fig_transforms(r)),
            ("sin chain", lambda: fig_sin(10 * r)),
            ("first gradient", lambda: [fig_first_gradient(1 if args.quick else 3)]),
            ("n = 1e6", lambda: [fig_vector(2 * r)]),
            ("staged TRG", lambda: fig_staged_trg(max(2, r // 2 + 1))),
        ]
        for label, step in steps:
            t0 = time.perf_counter()
            figs.extend(step())
            print(f"  {label}: {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    figs.extend(fig_counters(2 * r))
    print(f"  counters: {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    by_name = {f.name: f for f in figs}
    floors = [
        floor_eager_forward(10 * r, by_name["eager forward, sin 400 (n 10)"].theirs),
        floor_first_gradient(r, by_name["time to first gradient, sin 400"].theirs),
        floor_vector(2 * r),
        floor_trg(max(2, r // 2 + 1), by_name["staged TRG eager, value + grad per beta"].theirs),
    ]
    print(f"  floors: {time.perf_counter() - t0:.1f} s", flush=True)
    print_table(figs)
    print_floors(floors)
    print(f"\ntotal {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
