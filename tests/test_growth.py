"""Growth fits on exact counter formulas and on noisy times (fixed seed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from adprof.analysis.growth import fit_growth, halving_pair, predict

UNIT = list(range(1, 19))
DOUBLING = [8, 16, 32, 64, 128, 256, 512]


def _noise(rng: np.random.Generator, n: int, sigma: float = 0.1) -> np.ndarray:
    return np.exp(rng.normal(0.0, sigma, n))


@pytest.mark.parametrize(
    ("name", "depths", "formula", "base"),
    [
        ("2^d", UNIT[:10], lambda d: 2.0**d, 2.0),
        ("mul: c*2^d + linear", UNIT, lambda d: 5 * 2.0**d + 300 * d + 40, 2.0),
        ("3^d", UNIT[:10], lambda d: 3.0**d, 3.0),
        ("cube: 3^d + linear", UNIT[:12], lambda d: 3 * 3.0**d + 500 * d, 3.0),
        ("2^d - 1", UNIT[:10], lambda d: 2.0**d - 1, 2.0),
        ("fibonacci-like", UNIT[:14], lambda d: round(((1 + 5**0.5) / 2) ** d / 5**0.5), 1.618),
    ],
)
def test_exponential_counters_base(name, depths, formula, base):
    f = fit_growth(depths, [formula(d) for d in depths], exact=True, metric=name)
    assert f.kind == "exponential", (name, f)
    assert f.base == pytest.approx(base, abs=0.15)
    assert f.exponent is None
    assert f.tail_depths[-1] == depths[-1]
    assert all(abs(r - base) < 0.2 for r in f.tail_ratios)
    assert f.interval[0] <= f.base <= f.interval[1]


def test_exponential_on_doubling_grid_reports_per_layer_base():
    d = [2, 4, 8, 16]
    f = fit_growth(d, [2.0**x + 10 * x for x in d], exact=True)
    assert f.kind == "exponential"
    assert f.base == pytest.approx(2.0, abs=0.15)


def test_quadratic_counters_superlinear():
    f = fit_growth([50, 100, 200, 400], [d * d for d in (50, 100, 200, 400)], exact=True)
    assert f.kind == "superlinear"
    assert f.exponent == pytest.approx(2.0, abs=0.05)
    assert f.halving_ratio == pytest.approx(4.0)
    assert (f.halving_depth, f.halving_from) == (400, 200)


def test_sin_chain_backward_shape():
    """a*d^2 + b*d as in the eager sin chain: exponent near 2, halving ratio ~4 (>= 3)."""
    d = np.array([50, 100, 200, 400])
    f = fit_growth(d, 1.153e-4 * d**2 + 0.00634 * d, exact=True)
    assert f.kind == "superlinear"
    assert 1.7 <= f.exponent <= 2.1
    assert f.halving_ratio >= 3


def test_cubic_plus_constant_not_exponential():
    d = list(range(0, 11))
    f = fit_growth(d, [x**3 + 100 for x in d], exact=True)
    assert f.kind == "superlinear"
    assert f.exponent == pytest.approx(3.0, abs=0.2)


def test_linear_counters():
    f = fit_growth(DOUBLING, [100 + 7 * d for d in DOUBLING], exact=True)
    assert f.kind == "linear"
    assert f.exponent == pytest.approx(1.0, abs=0.01)
    assert f.halving_ratio < 2.3


def test_linear_counters_unit_steps_with_big_offset():
    f = fit_growth(UNIT, [10_000 + 3 * d for d in UNIT], exact=True)
    assert f.kind == "linear"


def test_n_log_n_is_not_superlinear():
    f = fit_growth(DOUBLING, [d * math.log(d) for d in DOUBLING], exact=True)
    assert f.kind == "mild"  # its own honest reading: neither linear nor superlinear
    assert 1.15 <= f.exponent < 1.3


@pytest.mark.parametrize("values", [[0] * 7, [5] * 7])
def test_constant_counter_is_linear_not_a_crash(values):
    f = fit_growth(DOUBLING, values, exact=True)
    assert f.kind == "linear"
    assert f.exponent == 0.0
    assert f.base is None


def test_two_points_inconclusive():
    f = fit_growth([1, 2], [2.0, 4.0], exact=True)
    assert f.kind == "inconclusive"
    f = fit_growth([1, 2], [2.0, 4.0], exact=False)
    assert f.kind == "inconclusive"


def test_empty_inconclusive():
    assert fit_growth([], [], exact=True).kind == "inconclusive"


def test_emerging_exponential_is_inconclusive():
    d = list(range(0, 11))
    f = fit_growth(d, [1.5**x + 50 * x for x in d], exact=True)
    assert f.kind == "inconclusive"
    assert "emerging" in f.reason and "add depths" in f.reason


def test_noisy_exponential_times():
    rng = np.random.default_rng(1)
    d = np.arange(1, 13)
    f = fit_growth(d, 1e-4 * 2.0**d * _noise(rng, len(d)), exact=False)
    assert f.kind == "exponential"
    assert f.base == pytest.approx(2.0, abs=0.3)


def test_noisy_quadratic_and_linear_times():
    rng = np.random.default_rng(2)
    d = np.array(DOUBLING, float)
    q = fit_growth(d, 1e-6 * d**2 * _noise(rng, len(d)), exact=False)
    assert q.kind == "superlinear"
    assert q.exponent == pytest.approx(2.0, abs=0.2)
    lin = fit_growth(d, (1e-3 + 1e-5 * d) * _noise(rng, len(d)), exact=False)
    assert lin.kind == "linear"


def test_noisy_linear_unit_steps_not_exponential():
    rng = np.random.default_rng(3)
    d = np.arange(1, 19)
    f = fit_growth(d, (2e-3 + 1e-4 * d) * _noise(rng, len(d), 0.2), exact=False)
    # one sample per depth at 20% noise under a large overhead: never exponential or superlinear; the
    # interval may be too wide to call it linear, and then it says so
    assert f.kind in ("linear", "inconclusive")
    assert f.kind == "linear" or "interval" in f.reason


def test_censored_points_never_fitted_but_support_exponential():
    d = list(range(1, 8))
    v = [2.0**x for x in range(1, 6)] + [100.0, 120.0]  # last two are lower bounds
    f = fit_growth(d, v, exact=True, censored=[False] * 5 + [True, True])
    assert f.depths == [1, 2, 3, 4, 5]
    assert f.censored_depths == [6, 7]
    assert f.kind == "exponential"
    assert f.base == pytest.approx(2.0, abs=0.05)


def test_censored_bounds_never_decide_the_form():
    # growth starts late: only two growing marginals -> inconclusive; lower bounds after it are shown as
    # evidence but do not turn the reading into an exponential (they bound, they do not measure)
    d = [1, 2, 3, 4, 5, 6]
    v = [0.0, 0.0, 4.0, 16.0, 60.0, 200.0]
    f = fit_growth(d, v, exact=True, censored=[False] * 4 + [True, True])
    assert f.kind == "inconclusive" and f.reason
    assert any("lower bounds" in n for n in f.notes)


def test_halving_pair():
    assert halving_pair([8, 16, 32]) == (32, 16)
    assert halving_pair([30, 100]) == (100, 30)  # nearest measured depth in [d/4, 3d/4]
    assert halving_pair([1, 2]) == (2, 1)
    assert halving_pair([5]) is None
    f = fit_growth([8, 16, 32, 64], [8.0, 32.0, 128.0, 512.0], exact=True)
    assert (f.halving_depth, f.halving_from) == (64, 32) and f.halving_ratio == pytest.approx(4.0)


def test_predict_follows_fit():
    d = list(range(1, 11))
    f = fit_growth(d, [2.0**x for x in d], exact=True)
    assert predict(f, 12) == pytest.approx(2.0**12, rel=1e-6)
    g = fit_growth(DOUBLING, [float(x * x) for x in DOUBLING], exact=True)
    assert predict(g, 1024) == pytest.approx(1024.0**2, rel=1e-6)


def test_fit_values_json_safe():
    f = fit_growth([1, 2, 3, 4], [0.0, 0.0, 1.0, 0.0], exact=True)
    for x in [f.base, f.exponent, f.halving_ratio, *f.tail_ratios]:
        assert x is None or math.isfinite(x)
