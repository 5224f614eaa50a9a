"""Scaling facts of the traced transform, on deterministic counters (never on time)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from params import representatives

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


@pytest.mark.parametrize("name", representatives(sorted(SEED_001), {"mul", "svd3"}, sorted(SEED_001)))
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


@pytest.mark.slow  # iterative walks at depth: the fixed 5000-layer tests stay in the default run
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


def average(x, depth):
    y = x
    for _ in range(depth):
        y = 0.7 * y + 0.3 * y  # two uses, both linear: no VJP rule reads y
    return xnp.sum(y)


def two_state_mix(x, depth):
    """(r, s) <- (r/2 + s/4, r/4 - s/2 + r/10): use matrix [[1, 1], [2, 1]], spectral radius 1 + sqrt 2."""
    r, s = x, x * 1.0
    for _ in range(depth):
        r, s = r * 0.5 + s * 0.25, r * 0.25 - s * 0.5 + r * 0.1
    return xnp.sum(r + s)


@pytest.mark.parametrize(("chain", "base"), [(average, 2.0), (two_state_mix, 1 + 2**0.5)], ids=["average", "mix"])
def test_v08_linear_reuse_grows_by_the_use_matrix_radius(chain, base):
    """The rebuilt derivative trace keeps every replayed forward equation (tenferro's semantic VJP
    re-imports the whole forward), so linear reuse blows up too, although no VJP rule reads y."""
    with engine.profile("v08"):
        counts = [transform_counters(chain, d)[0].key_comparisons for d in (8, 9, 10)]
    assert counts[2] / counts[1] == pytest.approx(base, rel=0.02), counts
    with engine.profile("fixed"):
        fixed = [transform_counters(chain, d)[0] for d in (10, 20)]
    assert fixed[0].key_comparisons == fixed[1].key_comparisons == 0


@pytest.mark.parametrize(("name", "per_layer"), [("mul", 6), ("svd3", 36)])
def test_derivative_ops_per_layer_both_ways(name, per_layer):
    """v08 rebuilds and registers every derivative equation; fixed only the live ones; both equal
    here (every replayed forward value of these chains is read by a VJP rule or the next layer)."""
    chain, _ = SEED_001[name]
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            a, b = (transform_counters(chain, d)[0] for d in (6, 7))
        assert b.derivative_ops_rebuilt - a.derivative_ops_rebuilt == per_layer
        assert b.derivative_ops_live - a.derivative_ops_live == per_layer


def test_v08_keeps_dead_forward_equations_but_the_compiled_program_does_not():
    with engine.profile("v08"):
        x = engine.input((3, 3))
        y = average(x, 5)
        with engine.counters.measure() as m:
            g = engine.grad(y, x)
        program_v08 = engine.compile(g, inputs=[x])
    with engine.profile("fixed"):
        x = engine.input((3, 3))
        y = average(x, 5)
        with engine.counters.measure() as f:
            g = engine.grad(y, x)
        program_fixed = engine.compile(g, inputs=[x])
    # 3 forward ops per layer plus the output sum are replayed, none of them read by a VJP rule
    assert m.derivative_ops_rebuilt - m.derivative_ops_live == 3 * 5 + 1
    assert f.derivative_ops_rebuilt == f.derivative_ops_live == m.derivative_ops_live
    assert program_v08.op_count == program_fixed.op_count
    a = np.random.default_rng(0).random((3, 3))
    np.testing.assert_array_equal(program_v08.prepare()(a)[0], program_fixed.prepare()(a)[0])


def test_counter_budget_stops_one_huge_comparison_during_the_walk():
    """Two separately built 40-layer y*y key chains: one == would visit 2**41 nodes; the budget
    stops it within keys.BUDGET_CHECK_EVERY visits of the limit."""
    from engine import keys
    from engine.ops import mul_p

    def chain_key(leaf, depth):
        k = leaf
        for _ in range(depth):
            k = keys.ValueKey(keys.OpKey(mul_p, (), (k, k)), 0)
        return k

    leaf = keys.InputKey()
    a, b = chain_key(leaf, 40), chain_key(leaf, 40)
    start = engine.counters.COUNTERS.key_comparisons
    with pytest.raises(engine.counters.CounterBudgetExceeded), engine.counters.budget(50_000):
        _ = a == b
    spent = engine.counters.COUNTERS.key_comparisons - start
    assert 50_000 < spent <= 50_000 + keys.BUDGET_CHECK_EVERY + 1
    assert chain_key(leaf, 6) == chain_key(leaf, 6)  # small comparisons still complete
