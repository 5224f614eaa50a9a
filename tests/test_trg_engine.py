"""TRG on the engine (probes/trg.py): whole graph and staged, traced and eager, against seeds 001/002/004.

Counters, never times, carry the cost assertions.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterator

import numpy as np
import pytest

import engine
from engine import numpy as xnp
from probes import trg as trg_mod
from probes.onsager import energy_exact, lnz_exact
from probes.trg import StagedTRG, schedule, whole_graph_eager, whole_graph_traced

try:
    import numpy_xp
except ImportError:  # tests/ is a package in some layouts
    from tests import numpy_xp

# seeds 002/004: chi = 16, 20 steps, beta = 0.30
SEED_LNZ_030 = 0.790559063800966
SEED_U_030 = -0.704498679529754
# seed 002: whole graph, 4 steps (ks = [2, 4, 4, 16]), beta = 0.30
SEED_LNZ_4 = 0.799095207857105
SEED_GRAD_4 = 0.844054073623855
MODES = ("traced", "eager")


def _openblas() -> tuple | None:
    """numpy's bundled OpenBLAS (set, get) thread-count functions, if found (best effort)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    for lib in libs:
        try:
            dll = ctypes.CDLL(lib)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                setter = getattr(dll, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(dll, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    return setter, getter
    return None


@pytest.fixture(scope="module", autouse=True)
def _single_threaded_blas() -> Iterator[None]:
    """One BLAS thread while this module runs: on a shared 2-core box spinning BLAS threads make the
    20-step runs up to 10x slower (only times change, never numbers); restored afterwards."""
    fns = _openblas()
    if fns is None:
        yield
        return
    setter, getter = fns
    before = getter()
    setter(1)
    try:
        yield
    finally:
        setter(before)


@pytest.fixture(scope="module")
def staged20() -> StagedTRG:
    return StagedTRG(20, 16)


@pytest.fixture(scope="module")
def runtime() -> engine.EagerRuntime:
    return engine.EagerRuntime()


@pytest.fixture(scope="module")
def results20(staged20: StagedTRG, runtime: engine.EagerRuntime) -> dict[str, tuple[float, float]]:
    """(lnZ/N, d lnZ/N / d beta) at beta = 0.30 for both staged modes (computed once)."""
    return {mode: staged20.value_and_grad(0.30, mode, runtime if mode == "eager" else None) for mode in MODES}


def _central(f, x: float, h: float) -> float:
    return (f(x + h) - f(x - h)) / (2 * h)


# ------------------------------------------------------------------------------ staged, 20 steps


@pytest.mark.parametrize("mode", MODES)
def test_staged_matches_seed(mode: str, results20: dict) -> None:
    lnz, grad = results20[mode]
    u = -grad
    assert abs(lnz - SEED_LNZ_030) < 1e-13
    assert abs(u - SEED_U_030) < 1e-10
    # the chi = 16 truncation error against Onsager as seed 004 prints it (+3.913e-07, -7.150e-09); the
    # tolerance is half its last printed digit plus the match tolerance above
    assert u - energy_exact(0.30) == pytest.approx(3.913e-07, abs=0.5e-10 + 1e-10)
    assert lnz - lnz_exact(0.30) == pytest.approx(-7.150e-09, abs=0.5e-12 + 1e-13)


def test_staged_modes_agree_and_match_finite_difference(staged20: StagedTRG, results20: dict) -> None:
    (lt, gt), (le, ge) = results20["traced"], results20["eager"]
    assert abs(lt - le) < 1e-14 and abs(gt - ge) < 1e-12
    fd = _central(staged20.value, 0.30, 1e-5)
    assert abs(gt - fd) < 1e-8 and abs(ge - fd) < 1e-8
    # the eager forward-only value is the same number
    assert abs(staged20.value(0.30, "eager") - lt) < 1e-14


def test_staged_step_shapes_and_eager_cache(staged20: StagedTRG, runtime: engine.EagerRuntime, results20: dict) -> None:
    # seed 004: 5 step shapes for 20 steps; programs shared by all steps of a shape
    assert staged20.step_shapes() == [(2, 2), (2, 4), (4, 4), (4, 16), (16, 16)]
    progs = staged20.programs()
    assert len(progs) == 6  # the initial stage and 5 step shapes
    assert all(f > 0 and b > f for _, f, b in progs)
    # seed 002: the eager derivative cache ends with 7 entries (5 step shapes, initial, final)
    staged20.value_and_grad(0.40, "eager", runtime)
    stats = runtime.cache_stats()
    assert stats.entries == 7 and stats.misses == 7 and stats.evictions == 0
    assert stats.hits == 2 * 22 - 7  # 21 stages + final per call, two calls


# ------------------------------------------------------------------------------ whole graph, 4 steps


def test_whole_graph_chain_runs_in_both_modes() -> None:
    """The ``trg`` chain itself (depth 4) on the engine: traced grad + compile, and eager backward."""
    ch = trg_mod.trg
    beta = engine.input(())
    y = ch(xnp, beta, 4)
    g = engine.grad(y, beta)
    value, grad = (float(a) for a in engine.compile([y, g], inputs=[beta]).prepare()(ch.make_input()))
    rt = engine.EagerRuntime()
    b = rt.variable(ch.make_input())
    with rt.session():
        ye = ch(xnp, b, 4)
    ye.backward()
    assert abs(value - SEED_LNZ_4) < 1e-14 and abs(grad - SEED_GRAD_4) < 1e-13
    # seed 002: eager and traced gradients are bitwise equal
    assert float(ye) == value and float(b.grad) == grad


def test_whole_graph_agrees_with_staged_and_finite_difference() -> None:
    whole = whole_graph_traced(4)
    staged = StagedTRG(4)
    wt = whole(0.30)
    we = whole_graph_eager(0.30, 4)
    st = staged.value_and_grad(0.30, "traced")
    se = staged.value_and_grad(0.30, "eager")
    for v, g in (we, st, se):
        assert abs(v - wt[0]) < 1e-14 and abs(g - wt[1]) < 1e-12
    fd = _central(lambda b: whole(b)[0], 0.30, 1e-5)
    assert abs(wt[1] - fd) < 1e-8
    # placeholders instead of constants change nothing numerically
    assert whole_graph_traced(4, constants_as_inputs=True)(0.30) == pytest.approx(wt, abs=1e-14)


# ------------------------------------------------------------------------------ degenerate SVD


def test_trg_has_degenerate_singular_values_and_finite_gradient(results20: dict) -> None:
    t = trg_mod.initial_tensor(numpy_xp, 0.30)
    s = np.linalg.svd(t.reshape(4, 4), compute_uv=False)
    assert s[2] < 1e-15 * s[0] and s[3] < 1e-15 * s[0]  # a degenerate (zero) pair at the first step
    assert all(np.isfinite(g) for _, g in results20.values())


@pytest.mark.parametrize("mode", MODES)
def test_svd_grad_finite_at_repeated_singular_values(mode: str) -> None:
    c = np.arange(9.0).reshape(3, 3)

    def loss(x, eps: float):
        u, s, vt = xnp.linalg.svd(x, eps=eps)
        return xnp.sum(u * xnp.asarray(c)) + xnp.sum(vt * xnp.asarray(c.T)) + xnp.sum(s)

    def grad(eps: float) -> np.ndarray:
        if mode == "traced":
            x = engine.input((3, 3))
            return engine.compile(engine.grad(loss(x, eps), x), inputs=[x]).prepare()(np.eye(3))[0]
        rt = engine.EagerRuntime()
        x = rt.variable(np.eye(3))
        with rt.session():
            y = loss(x, eps)
        y.backward()
        return np.asarray(x.grad)

    assert np.all(np.isfinite(grad(engine.ops.SVD_DERIVATIVE_EPS)))
    with np.errstate(invalid="ignore", divide="ignore"):  # without broadening: 0/0
        assert not np.all(np.isfinite(grad(0.0)))


# ------------------------------------------------------------------------------ counters


def _whole_graph_counters(profile: str, steps: tuple[int, ...]) -> list:
    keep = []  # keep the graphs alive so no drop lands in a later measurement
    with engine.profile(profile):
        for n in steps:
            keep.append(whole_graph_traced(n, constants_as_inputs=True))
        snaps = [w.grad_counters for w in keep]
        keep.clear()
    return snaps


def _grows_past(profile: str, steps: int, factor: float, reference: int) -> bool:
    """Whether ``engine.grad`` of whole-graph TRG at ``steps`` compares more than ``factor`` x
    ``reference`` keys; stops the transform at that budget instead of finishing it."""
    with engine.profile(profile):
        try:
            with engine.counters.budget(int(factor * reference)):
                w = whole_graph_traced(steps, constants_as_inputs=True)
        except engine.counters.CounterBudgetExceeded:
            return True
        return w.grad_counters.key_comparisons > factor * reference


# an aborted transform leaves a half-registered metadata batch whose __del__ fails (engine bug)
@pytest.mark.slow  # the default run keeps tests/test_check_acceptance.py's whole-graph TRG verdicts
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_whole_graph_v08_blowup() -> None:
    """Seed 001: whole-graph grad key comparisons grow ~24x per TRG step on v08 (steps 1..3)."""
    s1, s2 = _whole_graph_counters("v08", (1, 2))
    assert s1.key_comparisons > 1000
    assert s2.key_comparisons > 5 * s1.key_comparisons
    assert _grows_past("v08", 3, 5, s2.key_comparisons)  # aborted at 5x step 2 (the full step: ~24x)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_whole_graph_v08_blowup_steps_3_4() -> None:
    """Step 2 -> 3 measured in full, step 3 -> 4 stopped at 5x step 3 (minutes)."""
    s2, s3 = _whole_graph_counters("v08", (2, 3))
    assert s3.key_comparisons > 5 * s2.key_comparisons
    assert _grows_past("v08", 4, 5, s3.key_comparisons)


def test_whole_graph_fixed_is_linear() -> None:
    snaps = _whole_graph_counters("fixed", (1, 2, 3, 4))
    assert all(s.key_comparisons <= 10 for s in snaps)
    lookups = [s.metadata_lookups for s in snaps]
    steps_added = np.diff(lookups)
    assert all(d > 0 for d in steps_added)
    assert max(steps_added) < 2 * min(steps_added)  # a constant increment per step: linear
    assert lookups[3] < 6 * lookups[0]


@pytest.mark.parametrize("profile", ["v08", "fixed"])
def test_staged_counters_flat_per_step(profile: str) -> None:
    """Program builds do not depend on the step index; a full staged value_and_grad is ~linear."""
    chi = 4  # shapes (2,2), (2,4), (4,4): cheap, same structure per step
    per_steps = {}
    with engine.profile(profile):
        for steps in (8, 16):
            staged = StagedTRG(steps, chi)
            with engine.counters.measure() as build:
                staged.build()
            with engine.counters.measure() as traced:
                staged.value_and_grad(0.30, "traced")
            with engine.counters.measure() as eager:
                staged.value_and_grad(0.30, "eager")
            per_steps[steps] = (build, traced, eager)
    (b8, t8, e8), (b16, t16, e16) = per_steps[8], per_steps[16]
    # the same step shapes, built once each: identical build work at 8 and 16 steps
    assert schedule(8, chi)[-1] == schedule(16, chi)[-1]
    assert b16.key_comparisons == b8.key_comparisons
    assert abs(b16.metadata_lookups - b8.metadata_lookups) <= 0.05 * b8.metadata_lookups
    # running: no transforms in traced mode, one small backward per stage in eager mode
    assert t16.key_comparisons == 0 and t8.key_comparisons == 0
    assert e16.key_comparisons <= 2.5 * e8.key_comparisons + 100
    assert e16.metadata_lookups <= 2.5 * e8.metadata_lookups + 100
    assert e16.ops_executed <= 2.5 * e8.ops_executed
