"""Eager mode: sessions, backward, the prepared-derivative cache and per-backward bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.numpy as xnp
from engine import EngineError, TransformError

WORK = ("key_comparisons", "metadata_lookups", "nodes_visited", "ops_executed")


def work(snapshot) -> int:
    """Deterministic work units of a backward: bookkeeping plus kernels run."""
    return sum(getattr(snapshot, k) for k in WORK)


def sin_chain_calls(rt, depth, calls=4, n=10):
    """Per call: (forward counters, backward counters), each call on fresh variables."""
    out = []
    for _ in range(calls):
        x = rt.variable(np.linspace(0.1, 1.0, n))
        with engine.counters.measure() as fwd, rt.session():
            h = xnp.sin(x)
            for _ in range(depth - 1):
                h = xnp.sin(h)
            loss = xnp.sum(h)
        with engine.counters.measure() as bwd:
            loss.backward()
        out.append((fwd, bwd))
    return out


def test_v08_backward_is_quadratic_and_not_amortized_by_the_cache():
    rt = engine.EagerRuntime()
    with engine.profile("v08"):
        per_depth = {d: sin_chain_calls(rt, d) for d in (50, 100, 200)}
    comparisons = {d: calls[1][1].key_comparisons for d, calls in per_depth.items()}
    assert 3.8 < comparisons[100] / comparisons[50] < 4.2
    assert 3.8 < comparisons[200] / comparisons[100] < 4.2
    steady = {d: work(calls[1][1]) for d, calls in per_depth.items()}  # seed 000: x3.3 to x3.8
    assert 3.3 < steady[100] / steady[50] < steady[200] / steady[100] < 4.2
    forward = {d: calls[1][0].metadata_lookups for d, calls in per_depth.items()}
    assert forward[200] / forward[100] == pytest.approx(2, rel=0.05)
    for calls in per_depth.values():
        first_hit = calls[1][1]
        assert first_hit.trace_rebuilds == 1 and first_hit.derivative_traces_built == 1
        for _, later in calls[2:]:  # calls 2.. pay exactly what call 1 paid after its cache hit
            assert later.key_comparisons == first_hit.key_comparisons
            assert later.derivative_traces_built == later.derivative_traces_dropped == 1
    stats = rt.cache_stats()
    assert stats.misses == 3 and stats.hits == 9


def test_fixed_backward_is_linear_and_builds_no_trace():
    rt = engine.EagerRuntime()
    with engine.profile("fixed"):
        per_depth = {d: sin_chain_calls(rt, d) for d in (50, 100, 200)}
    steady = {d: work(calls[1][1]) for d, calls in per_depth.items()}
    assert 1.8 < steady[100] / steady[50] < 2.2
    assert 1.8 < steady[200] / steady[100] < 2.2
    for calls in per_depth.values():
        for _, bwd in calls[1:]:
            assert bwd.key_comparisons == 0
            assert bwd.trace_rebuilds == 0 and bwd.derivative_traces_built == 0


def test_gradients_match_and_accumulate():
    rt = engine.EagerRuntime()
    x = rt.variable([1.0, 2.0, 3.0])
    for _ in range(2):
        with rt.session():
            loss = xnp.sum(x + x)
        loss.backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0, 4.0])
    x.clear_grad()
    assert x.grad is None
    with rt.session():
        loss = xnp.sum(x * x)
    loss.backward()
    np.testing.assert_array_equal(x.grad, [2.0, 4.0, 6.0])


def test_cache_hits_misses_and_shape_change():
    rt = engine.EagerRuntime()
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            rt.clear_cache()
            base = rt.cache_stats()

            def step(n):
                x = rt.variable(np.linspace(0.0, 1.0, n))
                with rt.session():
                    loss = xnp.sum(xnp.sin(x) * x * x)
                loss.backward()
                return x.grad, rt.cache_stats()

            _, s1 = step(1000)
            _, s2 = step(1000)
            _, s3 = step(1001)
            g, s4 = step(1000)
            assert (s1.misses - base.misses, s1.hits - base.hits) == (1, 0)
            assert (s2.misses - base.misses, s2.hits - base.hits) == (1, 1)
            assert (s3.misses - base.misses, s3.entries) == (2, 2)
            assert (s4.misses - base.misses, s4.hits - base.hits, s4.entries, s4.evictions) == (2, 2, 2, 0)
            assert s4.clears == base.clears
            a = np.linspace(0.0, 1.0, 1000)
            np.testing.assert_allclose(g, np.cos(a) * a * a + 2 * a * np.sin(a), rtol=1e-13)


def test_cache_evicts_least_recently_used():
    rt = engine.EagerRuntime(cache_capacity=2)
    for n in (2, 3, 4):
        x = rt.variable(np.ones(n))
        with rt.session():
            loss = xnp.sum(x * x)
        loss.backward()
    stats = rt.cache_stats()
    assert stats.entries == 2 and stats.evictions == 1 and stats.retained_bytes > 0


def test_branching_on_a_value_inside_a_session():
    rt = engine.EagerRuntime()
    x = rt.variable(np.linspace(0.0, 2.0, 1000))
    with rt.session():
        big = float(xnp.max(x)) > 1.0
        loss = xnp.sum(x * x) if big else xnp.sum(xnp.sin(x))
    assert big
    loss.backward()
    np.testing.assert_allclose(x.grad[:3], 2 * np.linspace(0.0, 2.0, 1000)[:3])
    assert x.numpy()[-1] == 2.0


def test_second_derivative_with_create_graph():
    rt = engine.EagerRuntime()
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            x = rt.variable(np.array([0.3, 0.9]))
            with rt.session():
                loss = xnp.sum(xnp.sin(x) * x)
            with engine.counters.measure() as m:
                loss.backward(create_graph=True)
            assert m.derivative_traces_built == 1
            g = x.grad
            a = np.array([0.3, 0.9])
            np.testing.assert_allclose(g.numpy(), np.cos(a) * a + np.sin(a), rtol=1e-14)
            x.clear_grad()
            with rt.session():
                second = xnp.sum(g)
            second.backward()
            np.testing.assert_allclose(x.grad, -np.sin(a) * a + 2 * np.cos(a), rtol=1e-13)


def _eager_and_traced(f, a, profile):
    with engine.profile(profile):
        rt = engine.EagerRuntime()
        xv = rt.variable(a)
        with rt.session():
            loss = f(xv)
        loss.backward()
        x = engine.input(a.shape)
        traced = engine.compile(engine.grad(f(x), x), inputs=[x]).prepare()(a)[0]
    return xv.grad, traced


@pytest.mark.parametrize("profile", ["v08", "fixed"])
def test_eager_and_traced_gradients_are_bitwise_equal(profile):
    a = np.random.default_rng(2).uniform(-3, 3, 1000)
    eager_g, traced_g = _eager_and_traced(lambda x: xnp.sum(xnp.sin(x) * x * x), a, profile)
    assert np.array_equal(eager_g, traced_g)  # 1000 of 1000 bitwise equal (seed 002)

    def svd_chain(x):
        y = x
        for _ in range(3):
            u, s, vt = xnp.linalg.svd(y)
            y = u * xnp.reshape(s, (1, 3)) + vt
        return xnp.sum(y * y)

    m = np.random.default_rng(3).uniform(0.5, 1.0, (3, 3))
    eager_g, traced_g = _eager_and_traced(svd_chain, m, profile)
    assert np.array_equal(eager_g, traced_g)


def test_fixed_5000_layer_eager_backward():
    rt = engine.EagerRuntime()
    with engine.profile("fixed"):
        x = rt.variable(np.array([0.5, 1.0]))
        with rt.session():
            h = x
            for _ in range(5000):
                h = xnp.sin(h)
            loss = xnp.sum(h)
        loss.backward()
    d, h = np.ones(2), np.array([0.5, 1.0])
    for _ in range(5000):
        d *= np.cos(h)
        h = np.sin(h)
    np.testing.assert_allclose(x.grad, d, rtol=1e-10)


def test_backward_errors():
    rt = engine.EagerRuntime()
    x = rt.variable(np.ones(3))
    with rt.session():
        y = xnp.sin(x)
    with pytest.raises(TransformError, match="scalar"):
        y.backward()
    with rt.session():
        loss = xnp.sum(y)
    loss.backward()
    with pytest.raises(TransformError, match="freed"):
        loss.backward()
    other = engine.EagerRuntime()
    with other.session(), pytest.raises(EngineError, match="another EagerRuntime"):
        _ = x * x
    z = other.variable(np.ones(3))
    with pytest.raises(EngineError, match="different EagerRuntimes"):
        _ = x * z
    with pytest.raises(TypeError):
        _ = x * engine.input((3,))


def test_retain_graph_allows_a_second_backward():
    rt = engine.EagerRuntime()
    x = rt.variable(np.array([1.0, 2.0]))
    with rt.session():
        loss = xnp.sum(x * x * x)
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad, 2 * 3 * np.array([1.0, 4.0]))


def test_staged_helper_matches_whole_graph_in_both_modes():
    stages = [lambda xp, t: (xp.sin(t) * 1.1, xp.sum(t * t)), lambda xp, t: (xp.tanh(t), xp.sum(t))]
    staged = engine.Staged(stages, final=lambda xp, t: xp.sum(xp.exp(t)), weights=[0.5, 2.0])
    a = np.linspace(-1.0, 1.0, 6)
    t = engine.input(a.shape)
    t1 = xnp.sin(t) * 1.1
    j = 0.5 * xnp.sum(t * t) + 2.0 * xnp.sum(t1) + xnp.sum(xnp.exp(xnp.tanh(t1)))
    value, grad = engine.compile([j, engine.grad(j, t)], inputs=[t]).prepare()(a)
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            for mode in ("traced", "eager"):
                v, g = staged.value_and_grad(a, mode)
                assert v == pytest.approx(float(value), rel=1e-14)
                np.testing.assert_allclose(g, grad, rtol=1e-13)
    assert staged.value(a) == pytest.approx(float(value), rel=1e-14)


def test_v08_eager_backward_of_linear_reuse_doubles_per_layer():
    """The per-backward derivative trace keeps the replayed forward: y <- 0.7y + 0.3y costs 2x per layer."""
    rt = engine.EagerRuntime()
    counts = []
    with engine.profile("v08"):
        for depth in (8, 9, 10):
            x = rt.variable(np.full((3, 3), 0.5))
            with rt.session():
                y = x
                for _ in range(depth):
                    y = 0.7 * y + 0.3 * y
                loss = xnp.sum(y)
            with engine.counters.measure() as m:
                loss.backward()
            np.testing.assert_allclose(x.grad, np.ones((3, 3)), rtol=1e-12)
            counts.append(m.key_comparisons)
    assert counts[2] / counts[1] == pytest.approx(2.0, rel=0.02), counts
    assert counts[1] / counts[0] == pytest.approx(2.0, rel=0.03), counts
