"""TRG (probes/trg.py) on the numpy shim against the seeds' figures, and the Onsager solution."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from probes import trg as trg_mod
from probes.onsager import BETA_C, energy_closed_form, energy_exact, lnz_exact
from probes.trg import final_log_trace, initial_tensor, schedule, trg_lnz, trg_step

try:
    import numpy_xp as xp
except ImportError:  # tests/ is a package in some layouts
    from tests import numpy_xp as xp

# Seeds 002/004: tenferro staged TRG, chi = 16, 20 steps, ks = [2, 4, 4, 16, ...].
SEED_LNZ = {
    0.30: 0.790559063800966,
    0.40: 0.879363060306853,
    0.44: 0.928723962577072,
    0.50: 1.025792858455948,
    0.60: 1.210133028164417,
}
SEED_U_030 = -0.704498679529754
ONSAGER_LNZ_030 = 0.790559070951263
ONSAGER_U_030 = -0.704499070832445


def test_schedule() -> None:
    assert schedule(20, 16) == [2, 4, 4] + [16] * 17
    assert schedule(4, 16) == [2, 4, 4, 16]
    assert schedule(5, 8) == [2, 4, 4, 8, 8]
    assert schedule(5, 32) == [2, 4, 4, 16, 32]
    assert schedule(0, 16) == []
    # the first 4 step shapes (D, k) all differ, then (16, 16) repeats: 5 shapes for 20 steps
    ks = schedule(20, 16)
    shapes = set(zip([2] + ks[:-1], ks, strict=True))
    assert shapes == {(2, 2), (2, 4), (4, 4), (4, 16), (16, 16)}
    with pytest.raises(ValueError):
        schedule(3, 0)


def test_initial_tensor() -> None:
    beta = 0.3
    t = initial_tensor(xp, beta)
    assert t.shape == (2, 2, 2, 2)
    w = np.array([[math.exp(beta), math.exp(-beta)], [math.exp(-beta), math.exp(beta)]])
    # T0 is the contraction of four copies of Q with Q @ Q = W, so joining two T0 legs gives W
    expected = np.einsum("sl,su,sr,sd->lurd", *([np.real(_sym_sqrt(w))] * 4))
    np.testing.assert_allclose(t, expected, rtol=1e-14, atol=1e-15)
    # lattice symmetry: invariant under rotation of the legs
    np.testing.assert_allclose(t, np.transpose(t, (1, 2, 3, 0)), rtol=0, atol=1e-15)
    # beta as a 0-d array gives the same tensor
    np.testing.assert_array_equal(initial_tensor(xp, np.asarray(beta)), t)


def _sym_sqrt(w: np.ndarray) -> np.ndarray:
    vals, vecs = np.linalg.eigh(w)
    return vecs @ np.diag(np.sqrt(vals)) @ vecs.T


def test_trg_step_shapes_and_normalisation() -> None:
    t = initial_tensor(xp, 0.3)
    for k, d_next in ((2, 2), (4, 4), (16, 4)):  # k is capped at D^2
        t_next, ln_c = trg_step(xp, t, k)
        assert t_next.shape == (d_next,) * 4
        assert np.ndim(ln_c) == 0 and np.isfinite(ln_c)
        assert math.isclose(float(np.sum(t_next * t_next)), 1.0, rel_tol=1e-14)
    t = np.random.default_rng(0).uniform(size=(3, 3, 3, 3))
    assert math.isclose(float(final_log_trace(xp, t)), math.log(np.einsum("ijij->", t)), rel_tol=1e-14)


def test_trg_beta_030_matches_seed() -> None:
    value = float(trg_lnz(xp, 0.30, steps=20, chi=16))
    assert abs(value - SEED_LNZ[0.30]) < 1e-13
    assert abs(value - ONSAGER_LNZ_030) < 1e-8  # chi = 16 truncation: -7.150e-9
    # beta may also arrive as a 0-d array; an explicit schedule gives the same number
    assert float(trg_lnz(xp, np.asarray(0.30), schedule=schedule(20, 16))) == value


@pytest.mark.parametrize("beta", [0.40, 0.44, 0.50, 0.60])
def test_trg_other_betas_match_seed(beta: float) -> None:
    assert abs(float(trg_lnz(xp, beta)) - SEED_LNZ[beta]) < 1e-13


def test_whole_graph_chain_depths() -> None:
    # seed 002: the whole 4-step graph (ks = [2, 4, 4, 16]) gives lnZ/N = 0.799095207857105
    ch = trg_mod.trg
    assert ch.depths == (1, 2, 3, 4) and ch.reuse is None
    beta = ch.make_input()
    assert beta.shape == () and float(beta) == 0.30
    assert abs(float(ch(xp, beta, 4)) - 0.799095207857105) < 1e-14


def _derivative(f: Callable[[float], float], x: float, h: float = 1e-3) -> float:
    """5-point central difference (step h/2), error O(h^4)."""
    return (8 * (f(x + h / 2) - f(x - h / 2)) - (f(x + h) - f(x - h))) / (6 * h)


def test_trg_energy_finite_difference() -> None:
    """u = -d lnZ/N / d beta by a 5-point difference (h = 1e-3, error ~4e-12) against the seed."""
    u = -_derivative(lambda b: float(trg_lnz(xp, b)), 0.30)
    assert abs(u - SEED_U_030) < 1e-9
    assert abs((u - ONSAGER_U_030) - 3.913e-7) < 1e-9


def test_onsager_values() -> None:
    assert abs(lnz_exact(0.30) - ONSAGER_LNZ_030) < 1e-14
    assert abs(energy_exact(0.30) - ONSAGER_U_030) < 1e-14
    for beta in (0.1, 0.3, 0.5, 0.6, 1.0):
        assert abs(energy_exact(beta) - energy_closed_form(beta)) < 1e-13
    # seeds' table: lnZ/N errors of TRG at chi = 16
    assert abs((SEED_LNZ[0.40] - lnz_exact(0.40)) - -7.605e-7) < 1e-10
    assert abs((SEED_LNZ[0.44] - lnz_exact(0.44)) - -4.578e-6) < 1e-9
    # finite at the critical point, where u = -sqrt(2)
    assert abs(energy_exact(BETA_C) + math.sqrt(2.0)) < 1e-12
    # u is minus the derivative of lnZ/N
    assert abs(-_derivative(lnz_exact, 0.60) - energy_exact(0.60)) < 1e-9
    with pytest.raises(ValueError):
        lnz_exact(0.0)
