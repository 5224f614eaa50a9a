"""Deterministic work metrics of the real engines (Point.metrics): repeat to within a tight tolerance and grow
linearly on healthy chains (exact or tight bounds, never wall time); time repeats in Point.samples with the
lower quartile in Point.times. Each engine's tests skip (with the reason) only when it cannot be imported."""

from __future__ import annotations

import numpy as np
import pytest
from extras import requires

from adprof.backends import get_backend
from adprof.backends.base import lower_quartile
from probes import chains


def _needs(*modules: str):
    return requires(*modules)


def _linear_increments(depths, values, rel=0.002):
    """Per-layer increments between consecutive depths agree within ``rel`` (a + b*d exactly, up to noise)."""
    steps = [(v2 - v1) / (d2 - d1) for d1, d2, v1, v2 in zip(depths, depths[1:], values, values[1:], strict=False)]
    assert min(steps) > 0, steps
    assert max(steps) - min(steps) <= rel * max(steps), steps
    return steps


def _samples_match_times(pt):
    assert set(pt.samples) == set(pt.times)
    for phase, samples in pt.samples.items():
        assert 1 <= len(samples) <= max(7, pt.extra.get("calls", 0))
        assert pt.times[phase] == lower_quartile(samples)


# --------------------------------------------------------------------------- jax


@_needs("jax")
def test_jax_traced_python_calls_repeat_and_grow_linearly():
    b = get_backend("jax")
    depths = (25, 50, 100)
    pts = [b.measure_point(chains.sin, "traced", d, repeats=1) for d in depths]
    again = b.measure_point(chains.sin, "traced", 100, repeats=1)
    calls = [p.metrics["transform"]["python_calls"] for p in pts]
    # measured here: +-8 calls in 292,015 at depth 400; allow 0.1%
    assert abs(again.metrics["transform"]["python_calls"] - calls[-1]) <= 0.001 * calls[-1]
    _linear_increments(depths, calls)
    # the grad jaxpr of the sin chain: exactly 3 equations per layer + 2 (seed 001); the forward one d + 1
    assert [p.metrics["transform"]["jaxpr_eqns"] for p in pts] == [3 * d + 2 for d in depths]
    assert [p.metrics["record"]["jaxpr_eqns"] for p in pts] == [d + 1 for d in depths]
    for p in pts:
        _samples_match_times(p)


@_needs("jax")
def test_jax_compile_recompiles_every_repeat_and_counts_hlo():
    from adprof.backends import peer_common

    peer_common._seen.clear()  # another test in this worker may have measured these depths (once per depth)
    b = get_backend("jax")
    pts = [b.measure_point(chains.sin, "compile", d, repeats=2) for d in (8, 16, 32)]
    for p in pts:
        assert len(p.samples["compile"]) == len(p.samples["lower"]) == len(p.samples["transform"]) == 2
        assert p.extra["compile_cache_hits"] == 0  # a fresh function per repeat: no compilation cache hit
        assert set(p.metrics) == {"transform", "lower", "compile"}
        _samples_match_times(p)
    hlo = [p.metrics["compile"]["hlo_instructions"] for p in pts]
    assert hlo[2] - hlo[1] == 2 * (hlo[1] - hlo[0]) > 0  # exactly linear in depth
    assert backends_deciding("jax", "compile") == []
    # the forward's own compile, FORWARD_COMPILE_REPEATS times on a depth's first point: what the gradient's compile
    # is read against (issue #34), its fastest run (one compile is one noisy sample)
    from adprof.analysis.explained import fastest
    from adprof.backends.jax_backend import FORWARD_COMPILE_REPEATS

    for p in pts:
        assert len(p.samples["forward_compile"]) == FORWARD_COMPILE_REPEATS == 3 and p.times["forward_compile"] > 0
        assert len(p.cpu_samples["forward_compile"]) == 3 and min(p.cpu_samples["forward_compile"]) > 0
        assert fastest(p, ("forward_compile",)) <= min(p.samples["forward_compile"])
    from adprof.analysis.explained import gradient_ratio
    from adprof.model import Series

    depths, ratios, of = gradient_ratio(Series("sin", "jax", None, "compile", points=pts))
    assert depths == [8, 16, 32] and of.endswith("/forward_compile") and all(r > 0 for r in ratios)
    again = b.measure_point(chains.sin, "compile", 16, repeats=1)  # a later pass over a depth: not paid again
    assert "forward_compile" not in again.samples and "forward_compile" not in again.times


def backends_deciding(name, mode):
    from adprof.backends import series_fields

    return series_fields(name, mode)["deciding_metrics"]


@_needs("jax")
def test_jax_eager_python_calls_linear():
    b = get_backend("jax")
    depths = (16, 32, 64)
    pts = [b.measure_point(chains.sin, "eager", d, calls=3) for d in depths]
    for phase in ("forward", "backward"):
        _linear_increments(depths, [p.metrics[phase]["python_calls"] for p in pts], rel=0.01)
    for p in pts:
        _samples_match_times(p)


# --------------------------------------------------------------------------- torch


@pytest.mark.slow  # torch stays in the default run through tests/test_peers.py (eager, wall time)
@_needs("torch", "array_api_compat")
def test_torch_metrics():
    b = get_backend("torch")
    depths = (8, 16, 32)
    eager = [b.measure_point(chains.sin, "eager", d, calls=3) for d in depths]
    # one SinBackward0 per layer, SumBackward0 and the leaf's AccumulateGrad
    assert [p.metrics["backward"]["autograd_nodes"] for p in eager] == [d + 2 for d in depths]
    # backward() runs in C++: its Python call count does not grow with depth (why python_calls cannot decide)
    bwd = [p.metrics["backward"]["python_calls"] for p in eager]
    assert max(bwd) - min(bwd) <= 2
    traced = [b.measure_point(chains.sin, "traced", d, repeats=1) for d in depths]
    # consecutive points repeat exactly; what ran before in the process (torch's dispatch caches) shifts the
    # count by up to ~0.6%, so compare two points measured one after the other
    again = [b.measure_point(chains.sin, "traced", 32, repeats=1).metrics["transform"]["python_calls"] for _ in "ab"]
    assert abs(again[0] - again[1]) <= 0.001 * again[0]
    calls = [p.metrics["transform"]["python_calls"] for p in traced]
    _linear_increments(depths, calls, rel=0.02)
    for p in eager + traced:
        _samples_match_times(p)


# --------------------------------------------------------------------------- autograd


@_needs("autograd")
def test_autograd_eager_point_value_metrics_and_linear_growth():
    b = get_backend("autograd")
    assert b.modes == ("eager",)
    depths = (25, 50, 100)
    pts = [b.measure_point(chains.sin, "eager", d, calls=3) for d in depths]
    again = b.measure_point(chains.sin, "eager", 100, calls=3)
    for phase in ("forward", "backward"):
        calls = [p.metrics[phase]["python_calls"] for p in pts]
        assert again.metrics[phase]["python_calls"] == calls[-1]  # pure Python: exactly repeatable
        _linear_increments(depths, calls, rel=0.0)
    for p, d in zip(pts, depths, strict=True):
        assert p.extra["value"] == pytest.approx(float(chains.sin(np, chains.sin.make_input(), d)))
        assert p.extra["finite_gradient"] is True
        _samples_match_times(p)


@_needs("autograd")
def test_autograd_gradient_matches_finite_differences():
    from autograd import grad

    from adprof.backends.autograd_backend import xp

    a = chains.linear.make_input()
    g = grad(lambda x: chains.linear(xp, x, 5))(a)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd[i] = (chains.linear(np, a + e, 5) - chains.linear(np, a - e, 5)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@_needs("autograd")
def test_autograd_missing_gradient_is_one_line():
    b = get_backend("autograd")
    with pytest.raises(b.PointFailure) as info:
        b.measure_point(chains.qr2, "eager", 2, calls=2)
    assert info.value.kind == "chain" and "\n" not in info.value.message
    assert "VJP of qr" in info.value.message and "chains.py line" in info.value.message


# --------------------------------------------------------------------------- tinygrad


@_needs("tinygrad")
def test_tinygrad_compile_phases_and_deterministic_graph_metrics():
    b = get_backend("tinygrad")
    depths = (4, 8, 16)
    pts = [b.measure_point(chains.sin, "compile", d, repeats=1) for d in depths]
    again = b.measure_point(chains.sin, "compile", 16, repeats=1)
    for p in pts:
        assert set(p.times) == {"transform", "lower", "compile", "run"}
        assert p.extra["finite_gradient"] is True
        _samples_match_times(p)
    for phase in ("transform", "lower"):
        calls = [p.metrics[phase]["python_calls"] for p in pts]
        assert again.metrics[phase]["python_calls"] == calls[-1]  # caches cleared: every run does the same work
        _linear_increments(depths, calls, rel=0.0)


@_needs("tinygrad")
def test_tinygrad_eager_value_and_gradient():
    from tinygrad import Tensor

    from adprof.backends.tinygrad_backend import xp

    b = get_backend("tinygrad")
    pt = b.measure_point(chains.mul, "eager", 3, calls=2)
    assert pt.extra["value"] == pytest.approx(float(chains.mul(np, chains.mul.make_input(), 3)))
    assert pt.extra["finite_gradient"] is True and {"forward0", "backward0", "forward", "backward"} <= set(pt.times)
    a = chains.linear.make_input()
    x = Tensor(a)
    (g,) = chains.linear(xp, x, 3).gradient(x)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd[i] = (chains.linear(np, a + e, 3) - chains.linear(np, a - e, 3)) / (2 * eps)
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)


@_needs("tinygrad")
def test_tinygrad_lacking_op_is_one_line():
    b = get_backend("tinygrad")
    with pytest.raises(b.PointFailure) as info:
        b.measure_point(chains.svd1, "eager", 2, calls=2)
    msg = info.value.message
    assert info.value.kind == "chain" and "\n" not in msg and len(msg) < 260
    assert "xp.linalg.svd is not offered on tinygrad" in msg and "chains.py line" in msg


@pytest.mark.slow
@_needs("torch")
def test_torch_compile_measures_the_forwards_own_compile_beside_the_gradients():
    """torch.compile of the gradient and, once per point, of the forward alone (no gradient: the inference graph):
    the ratio the report shows as "gradient 1.5x its forward" (issue #34). About 30 s: gcc runs per compile."""
    from adprof.analysis.explained import gradient_ratio
    from adprof.backends import peer_common
    from adprof.model import Series

    peer_common._seen.clear()  # another test in this worker may have measured these depths (once per depth)
    b = get_backend("torch")
    pts = [b.measure_point(chains.sin, "compile", d, repeats=1) for d in (2, 4, 8)]
    for p in pts:
        assert len(p.samples["forward_compile"]) == 1 and p.times["forward_compile"] > 0
    depths, ratios, of = gradient_ratio(Series("sin", "torch", None, "compile", points=pts))
    assert depths == [2, 4, 8] and of.endswith("/forward_compile") and all(r > 0 for r in ratios)
