"""Scaling facts of the traced transform, on deterministic counters (never on time)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import engine
import engine.numpy as xnp
from engine import metadata


def mul(x, depth):
    y = x
    for _ in range(depth):
        y = (y * y) * 0.5
    return xnp.sum(y)


def cube(x, depth):
    y = x
    for _ in range(depth):
        y = (y * y * y) * 0.5
    return xnp.sum(y)


def svd1(x, depth):
    y = x
    for _ in range(depth):
        u, _, _ = xnp.linalg.svd(y)
        y = u + y
    return xnp.sum(y)


def svd2(x, depth):
    y = x
    for _ in range(depth):
        u, s, _ = xnp.linalg.svd(y)
        y = xnp.tanh(u * xnp.reshape(s, (1, 3)))
    return xnp.sum(y)


def svd3(x, depth):
    y = x
    for _ in range(depth):
        u, s, vt = xnp.linalg.svd(y)
        y = u * xnp.reshape(s, (1, 3)) + vt
    return xnp.sum(y)


def qr2(x, depth):
    y = x
    for _ in range(depth):
        q, r = xnp.linalg.qr(y)
        y = q + r
    return xnp.sum(y)


def sin_chain(x, depth):
    h = x
    for _ in range(depth):
        h = xnp.sin(h)
    return xnp.sum(h)


SEED_001 = {
    "mul": (mul, 2),
    "cube": (cube, 3),
    "svd1": (svd1, 2),
    "svd2": (svd2, 2),
    "svd3": (svd3, 3),
    "qr2": (qr2, 2),
}


def transform_counters(chain, depth, shape=(3, 3)):
    """(counters of grad, counters of dropping the derivative graph, table size change)."""
    gc.collect()
    x = engine.input(shape)
    y = chain(x, depth)
    before = metadata.table_size()
    with engine.counters.measure() as transform:
        g = engine.grad(y, x)
    with engine.counters.measure() as drop:
        del g
    return transform, drop, metadata.table_size() - before


@pytest.mark.parametrize("name", sorted(SEED_001))
def test_v08_transform_grows_by_the_reuse_count_per_layer(name):
    chain, reuse = SEED_001[name]
    depths = (7, 8, 9) if reuse == 3 else (11, 12, 13)
    with engine.profile("v08"):
        counts = [transform_counters(chain, d)[0].key_comparisons for d in depths]
    ratios = [b / a for a, b in zip(counts, counts[1:], strict=False)]
    for r in ratios:
        assert r == pytest.approx(reuse, abs=0.05), (name, counts)


@pytest.mark.parametrize("name", ["mul", "svd3"])
def test_v08_drop_costs_as_much_again_and_restores_the_table(name):
    chain, _ = SEED_001[name]
    with engine.profile("v08"):
        transform, drop, table_change = transform_counters(chain, 9)
    assert transform.key_comparisons > 1000
    assert 0.9 < drop.key_comparisons / transform.key_comparisons < 1.1
    assert drop.derivative_traces_dropped == 1
    assert table_change == 0


@pytest.mark.parametrize("name", sorted(SEED_001))
def test_fixed_transform_is_linear(name):
    chain, _ = SEED_001[name]
    with engine.profile("fixed"):
        a, _, change_a = transform_counters(chain, 10)
        b, _, change_b = transform_counters(chain, 20)
        c, _, _ = transform_counters(chain, 40)
    assert a.key_comparisons == b.key_comparisons == c.key_comparisons == 0
    # metadata work is proportional to the size of the derivative graph
    grow_10_20 = b.metadata_lookups - a.metadata_lookups
    assert (c.metadata_lookups - b.metadata_lookups) == pytest.approx(2 * grow_10_20, rel=0.02)
    assert change_a == change_b == 0


def test_v08_chain_without_reuse_is_quadratic_not_exponential():
    """No reuse: each rebuilt key still compares down the chain once, O(depth) each -> O(depth^2)."""
    with engine.profile("v08"):
        k = [transform_counters(sin_chain, d, (4,))[0].key_comparisons for d in (50, 100, 200)]
    assert k[1] / k[0] == pytest.approx(4, rel=0.1)
    assert k[2] / k[1] == pytest.approx(4, rel=0.1)


def test_fixed_5000_layer_chain_transforms_compiles_and_runs():
    with engine.profile("fixed"):
        x = engine.input((3,))
        y = sin_chain(x, 5000)
        g = engine.grad(y, x)
        run = engine.compile([y, g], inputs=[x]).prepare()
        a = np.array([0.1, 0.5, 1.0])
        value, grad = run(a)
        # compare with numpy directly
        h, d = a.copy(), np.ones(3)
        for _ in range(5000):
            d *= np.cos(h)
            h = np.sin(h)
        assert value == pytest.approx(h.sum(), rel=1e-12)
        np.testing.assert_allclose(grad, d, rtol=1e-10)
        del g, y, run


def test_v08_2000_layer_sin_chain_transform_completes():
    with engine.profile("v08"):
        x = engine.input((2,))
        y = sin_chain(x, 2000)
        with engine.counters.measure() as m:
            g = engine.grad(y, x)
        assert m.key_comparisons > 2000 * 2000 // 2  # quadratic, walked with an explicit stack
        assert engine.compile(g, inputs=[x]).op_count > 2000
        del g


def test_checkpoint_chain_grows_exponentially_in_v08_and_linearly_in_fixed():
    for profile, expected in (("v08", 2**10 - 1), ("fixed", 10)):
        with engine.profile(profile):
            x = engine.constant(np.full((2, 2), 0.9))
            y = x
            for _ in range(10):
                y = engine.checkpoint((y * y) * 0.5)
            assert engine.remedies.chain_length(y) == expected


def test_checkpoint_keeps_gradients_and_cuts_the_transform():
    a = np.array([[0.9, 0.8], [0.7, 0.95]])
    with engine.profile("v08"):
        x = engine.constant(a)
        y = x
        for i in range(12):
            y = (y * y) * 0.5
            if i % 3 == 2:
                y = engine.checkpoint(y)
        loss = xnp.sum(y)
        with engine.counters.measure() as m:
            g = engine.grad(loss, x)
        checkpointed = engine.compile(g).prepare()()[0]
        plain = transform_counters(mul, 12, (2, 2))[0]
    expected = np.ones_like(a)
    h = a.copy()
    hs = []
    for _ in range(12):
        hs.append(h)
        h = h * h * 0.5
    for hh in reversed(hs):
        expected = expected * hh
    np.testing.assert_allclose(checkpointed, expected, rtol=1e-12)
    assert m.key_comparisons * 20 < plain.key_comparisons


def test_counter_budget_stops_a_runaway_transform():
    with engine.profile("v08"):
        x = engine.input((2, 2))
        y = mul(x, 30)
        with pytest.raises(engine.counters.CounterBudgetExceeded), engine.counters.budget(100_000):
            engine.grad(y, x)


def test_v08_constants_do_not_hide_the_blowup():
    """Rebuilt derivative traces keep the source constants' keys, as they keep the inputs' keys."""
    half = np.full((3, 3), 0.5)

    def mul_by_constant(x, depth):
        c = xnp.asarray(half)
        y = x
        for _ in range(depth):
            y = (y * y) * c
        return xnp.sum(y)

    with engine.profile("v08"):
        counts = [transform_counters(mul_by_constant, d)[0].key_comparisons for d in (8, 9, 10)]
    assert counts[2] / counts[1] == pytest.approx(2, abs=0.05)
    assert counts[1] / counts[0] == pytest.approx(2, abs=0.05)


def test_fixed_interned_keys_are_freed_with_their_graph():
    from engine import keys

    with engine.profile("fixed"):
        gc.collect()
        before = len(keys._op_interner), len(keys._value_interner)
        x = engine.input((3,))
        g = engine.grad(sin_chain(x, 300), x)
        assert len(keys._op_interner) > before[0] + 300
        del g, x
        gc.collect()
        assert (len(keys._op_interner), len(keys._value_interner)) == before
