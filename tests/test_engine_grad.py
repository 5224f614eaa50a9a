"""Gradients of every primitive against central finite differences, and jvp against vjp."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
import engine.numpy as xnp
from engine import ops


def _fd_check(f, shape, rng, low=0.5, high=1.5, tol=1e-6):
    """grad(f) vs central differences, and the JVP along a random direction vs <grad, v>."""
    x = engine.input(shape)
    y = f(x)
    value = engine.compile(y, inputs=[x]).prepare()
    g = engine.compile(engine.grad(y, x), inputs=[x]).prepare()
    t = engine.input(shape)
    _, tangent = engine.jvp(y, x, t)
    jv = engine.compile(tangent, inputs=[x, t]).prepare()
    a = rng.uniform(low, high, size=shape)
    grad = g(a)[0]
    eps = 1e-6
    fd = np.zeros(shape)
    for i in np.ndindex(*shape):
        e = np.zeros(shape)
        e[i] = eps
        fd[i] = (value(a + e)[0] - value(a - e)[0]) / (2 * eps)
    scale = max(1.0, float(np.max(np.abs(fd))))
    assert np.max(np.abs(grad - fd)) < tol * scale
    v = rng.normal(size=shape)
    assert jv(a, v)[0] == pytest.approx(float(np.sum(grad * v)), rel=1e-9, abs=1e-11)
    return grad


def C(*shape):
    return xnp.asarray(np.arange(1, 1 + np.prod(shape), dtype=float).reshape(shape) / 7.0)


CASES = {
    "add_sub": (lambda x: xnp.sum((x + C(4)) * (x - 2.0) - (1.0 - x)), (4,)),
    "mul_div": (lambda x: xnp.sum(x * C(4) / (x + 1.0) + 2.0 / x), (4,)),
    "neg_scale_pow": (lambda x: xnp.sum(-x * 3.0 + x**3 - x**2 * 0.5 + x**-2), (4,)),
    "sin_cos": (lambda x: xnp.sum(xnp.sin(x) * xnp.cos(2.0 * x)), (5,)),
    "exp_log": (lambda x: xnp.sum(xnp.exp(x) * xnp.log(x)), (5,)),
    "sqrt_tanh": (lambda x: xnp.sum(xnp.sqrt(x) / xnp.tanh(x)), (5,)),
    "reduce_sum_axis": (lambda x: xnp.sum(xnp.sum(x * x, axis=0) * C(3)), (2, 3)),
    "reduce_max": (lambda x: xnp.sum(xnp.max(x * C(2, 3), axis=1)) + xnp.max(x), (2, 3)),
    "broadcast": (
        lambda x: xnp.sum(xnp.broadcast_to(x, (4, 3)) * C(4, 3)) + xnp.sum(xnp.reshape(x, (3, 1)) * C(3, 3)),
        (3,),
    ),
    "reshape_transpose": (lambda x: xnp.sum(xnp.transpose(xnp.reshape(x, (2, 3, 2)), (2, 0, 1)) * C(2, 2, 3)), (12,)),
    "matmul": (lambda x: xnp.sum((x @ C(3, 2)) * (C(4, 4) @ x @ C(3, 2))), (4, 3)),
    "matvec": (lambda x: xnp.sum(xnp.matmul(x, C(3)) * C(2)), (2, 3)),
    "einsum": (lambda x: xnp.sum(xnp.einsum("ab,bc,cd->ad", x, C(3, 3), x) * C(3, 3)), (3, 3)),
    "einsum_outer_only": (lambda x: xnp.sum(xnp.einsum("ab,c->abc", x, C(2)) * C(2, 2, 2)), (2, 2)),
    "where_compare": (lambda x: xnp.sum(xnp.where(x > 1.0, x * x, -x) + xnp.where(x <= 0.9, 1.0, x)), (6,)),
    "norm": (lambda x: xnp.linalg.norm(x * C(3, 2)), (3, 2)),
    "svd_square": (
        lambda x: (lambda u, s, vt: xnp.sum(u * C(3, 3)) + xnp.sum(s * C(3)) + xnp.sum(vt * vt * C(3, 3)))(
            *xnp.linalg.svd(x)
        ),
        (3, 3),
    ),
    "svd_tall": (
        lambda x: (lambda u, s, vt: xnp.sum(u * C(4, 3)) + xnp.sum(s * s) + xnp.sum(vt * C(3, 3)))(*xnp.linalg.svd(x)),
        (4, 3),
    ),
    "svd_wide": (lambda x: (lambda u, s, vt: xnp.sum(u * C(2, 2)) + xnp.sum(vt * C(2, 4)))(*xnp.linalg.svd(x)), (2, 4)),
    "svd_s_only": (lambda x: xnp.sum(xnp.linalg.svd(x)[1] * C(3)), (3, 3)),
    "qr_square": (lambda x: (lambda q, r: xnp.sum(q * C(3, 3)) + xnp.sum(r * r))(*xnp.linalg.qr(x)), (3, 3)),
    "qr_tall": (lambda x: (lambda q, r: xnp.sum(q * C(4, 2)) + xnp.sum(r * C(2, 2)))(*xnp.linalg.qr(x)), (4, 2)),
    "qr_r_only": (lambda x: xnp.sum(xnp.linalg.qr(x)[1] * C(3, 3)), (3, 3)),
    "tril_triu_diag": (
        lambda x: (
            xnp.sum(ops.tril(x) * C(3, 3))
            + xnp.sum(ops.triu(x, 1) * x)
            + xnp.sum(ops.diag(x) * C(3))
            + xnp.sum(ops.diag_embed(ops.diag(x)) * C(3, 3))
        ),
        (3, 3),
    ),
    "solve_triangular": (
        lambda x: xnp.sum(ops.solve_triangular(ops.triu(x) + 3.0 * ops.eye(x, 3), C(3, 2), False) * C(3, 2)),
        (3, 3),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    f, shape = CASES[name]
    _fd_check(f, shape, np.random.default_rng(abs(hash(name)) % 2**32))


def _primitives_of(f, shape) -> set[str]:
    """The primitives in the compiled program of one case: what its gradient check exercises."""
    x = engine.input(shape)
    return {eqn.prim.name for eqn in engine.compile(f(x), inputs=[x]).eqns}


def test_every_primitive_has_both_rules_and_a_test():
    covered = set().union(*(_primitives_of(f, shape) for f, shape in CASES.values()))
    assert covered <= set(ops.PRIMITIVES)
    for name, prim in ops.PRIMITIVES.items():
        assert prim in ops.SHAPE_RULES and prim in ops.IMPL_RULES, name
        has_rules = prim in ops.JVP_RULES and prim in ops.VJP_RULES
        assert has_rules is prim.differentiable, name  # transforms skip the others
        assert name in covered, f"primitive {name} appears in no CASES program: it has no gradient test"


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_elementwise_chain_random_shapes(rows, cols, seed):
    def f(x):
        return xnp.sum(xnp.sin(x) * x * x + xnp.exp(-x) / (x + 2.0) + xnp.tanh(x) ** 2)

    _fd_check(f, (rows, cols), np.random.default_rng(seed), low=-1.5, high=1.5)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(2, 4), n=st.integers(2, 4), seed=st.integers(0, 2**16))
def test_svd_random_shapes(m, n, seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(m, min(m, n)))

    def f(x):
        u, s, vt = xnp.linalg.svd(x)
        return xnp.sum(u * u * xnp.asarray(w)) + xnp.sum(s) + xnp.sum(vt * vt)

    # well-separated singular values: a random matrix plus a diagonal ramp
    x = rng.normal(size=(m, n)) * 0.1
    x[np.arange(min(m, n)), np.arange(min(m, n))] += np.arange(1, min(m, n) + 1)
    xin = engine.input((m, n))
    y = f(xin)
    g = engine.compile(engine.grad(y, xin), inputs=[xin]).prepare()(x)[0]
    value = engine.compile(y, inputs=[xin]).prepare()
    eps = 1e-6
    for idx in np.ndindex(m, n):
        e = np.zeros((m, n))
        e[idx] = eps
        assert g[idx] == pytest.approx((value(x + e)[0] - value(x - e)[0]) / (2 * eps), abs=1e-6)


def test_seed_003_one_grad():
    """y = sum(x*x): the grad graph has 4 ops, the compiled program 3, and the gradient is 2x."""
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            x = engine.input((3,))
            y = xnp.sum(x * x)
            g = engine.grad(y, x)
            assert engine.value_op_count([y]) == 2
            assert engine.value_op_count([g]) == 4
            p = engine.compile(g, inputs=[x])
            assert p.op_count == 3
            assert [e.prim.name for e in p.eqns] == ["broadcast_in_dim", "mul", "add"]
            np.testing.assert_array_equal(p.prepare()(np.array([1.0, 2.0, 3.0]))[0], [2.0, 4.0, 6.0])


def test_svd_gradient_finite_at_degenerate_singular_values():
    """Exactly repeated singular values (where PyTorch's rule gives nan): finite and correct."""
    x = engine.input((3, 3))
    u, s, vt = xnp.linalg.svd(x)
    w = np.array([0.5, -1.0, 2.0])
    y = xnp.sum(s) + xnp.sum(s * s) + xnp.sum((u * u) @ xnp.asarray(w)) + xnp.sum(vt * vt)
    g = engine.compile(engine.grad(y, x), inputs=[x]).prepare()
    for a in (np.eye(3), np.diag([2.0, 2.0, 1.0]), np.diag([1.0, 1.0, 0.0])):
        grad = g(a)[0]
        assert np.all(np.isfinite(grad))
        # at a diagonal input the u and vt terms have zero gradient; d sum(s) = U V^T, d sum(s^2) = 2A
        uu, _, vv = np.linalg.svd(a)
        np.testing.assert_allclose(grad, uu @ vv + 2 * a, atol=1e-9)


def test_vjp_with_placeholder_cotangent_matches_grad():
    x = engine.input((3,))
    y = xnp.sin(x) * x
    ct = engine.input((3,))
    (gx,) = engine.vjp(y, x, ct)
    run = engine.compile(gx, inputs=[x, ct]).prepare()
    a, c = np.array([0.3, 0.7, 1.1]), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(run(a, c)[0], c * (np.cos(a) * a + np.sin(a)), rtol=1e-14)


def test_grad_with_respect_to_several_inputs_and_unused_input():
    x, w, unused = engine.input((2,)), engine.input((2,)), engine.input((2,))
    y = xnp.sum(x * w * w)
    gx, gw, gu = engine.grad(y, [x, w, unused])
    run = engine.compile([gx, gw, gu], inputs=[x, w, unused]).prepare()
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    rx, rw, ru = run(a, b, np.zeros(2))
    np.testing.assert_allclose(rx, b * b)
    np.testing.assert_allclose(rw, 2 * a * b)
    np.testing.assert_array_equal(ru, 0.0)


def test_second_order_traced_grad_of_grad():
    x = engine.input(())
    y = xnp.sin(x) * x
    g = engine.grad(y, x)
    h = engine.grad(g, x)
    run = engine.compile([g, h], inputs=[x]).prepare()
    a = 0.7
    g1, h1 = run(np.array(a))
    assert g1 == pytest.approx(np.cos(a) * a + np.sin(a))
    assert h1 == pytest.approx(-np.sin(a) * a + 2 * np.cos(a))


def test_prepared_execution_skips_exact_redundancy_without_changing_bits():
    """The compiled program keeps its ops; the prepared run skips x*1 and swapped duplicates."""
    from engine.program import execution_plan

    x = engine.input((5,))
    y = xnp.sum(xnp.sin(x) * x * x)
    program = engine.compile(engine.grad(y, x), inputs=[x])
    eqns, _ = execution_plan(program)
    assert program.op_count == 11 and len(eqns) == 7
    a = np.linspace(-2.0, 2.0, 5)
    expected = np.cos(a) * a * a + (np.sin(a) * a + np.sin(a) * a)
    assert np.array_equal(program.prepare()(a)[0], expected)


def _reference_run(program, *arrays):
    """Every equation of ``program`` in order, each result a new array (no plan, no reuse)."""
    env = dict(zip(program.inputs, arrays, strict=True))
    env.update(program.bindings)
    for e in program.eqns:
        out = ops.IMPL_RULES[e.prim](*[env[i] for i in e.ins], **e.params)
        env.update(zip(e.outs, out if e.prim.nout > 1 else (out,), strict=True))
    return [env[o] for o in program.outputs]


_STEP = st.tuples(st.sampled_from("sin cos tanh add mul sub matmul T reshape svd".split()), st.integers(0, 99))


@settings(max_examples=10, deadline=None)
@given(st.lists(_STEP, min_size=4, max_size=14))
def test_prepared_storage_reuse_keeps_bits_and_inputs(steps):
    """Large intermediates reuse slots and ufunc buffers (``out=``) only where no view or later use can
    see it: random programs of ufuncs, matmul, views (transpose, reshape) and a multi-output SVD whose
    results go partly unused run bit for bit like an equation-by-equation evaluation, inputs intact."""
    from engine.program import LARGE_BYTES, StoragePlan, execution_plan

    n = 96  # 96 x 96 float64 = 72 KiB: every matrix counts as large
    assert n * n * 8 >= LARGE_BYTES
    x = engine.input((n, n))
    vals = [x]
    for op, pick in steps:
        a, b = vals[pick % len(vals)], vals[(pick // 7) % len(vals)]
        if op in ("sin", "cos", "tanh"):
            vals.append(getattr(xnp, op)(a))
        elif op in ("add", "mul", "sub"):
            vals.append({"add": a + b, "mul": a * b, "sub": a - b}[op])
        elif op == "matmul":
            vals.append((a @ b) * 0.01)
        elif op == "T":
            vals.append(xnp.transpose(a))
        elif op == "reshape":
            vals.append(xnp.reshape(xnp.reshape(a, (n * n,)), (n, n)))
        else:
            u, _, vt = xnp.linalg.svd(xnp.tanh(a) * 0.01)
            vals.append(u + vt)
    y = xnp.sum(xnp.sin(vals[-1]) * vals[len(vals) // 2])
    a = np.random.default_rng(len(steps)).uniform(-1.0, 1.0, (n, n))
    kept = a.copy()
    for program in (engine.compile(y, inputs=[x]), engine.compile(engine.grad(y, x), inputs=[x])):
        got = program.prepare()(a)
        assert np.array_equal(a, kept)
        for g, ref in zip(got, _reference_run(program, a), strict=True):
            assert np.asarray(g).tobytes() == np.asarray(ref).tobytes()
        eqns, outputs = execution_plan(program)
        plan = StoragePlan(program, eqns, outputs)
        assert plan.n_slots <= len(eqns) + len(program.inputs) + len(program.bindings)


def test_prepared_storage_reuses_slots_and_buffers():
    """The storage plan of the n = 1e6 gradient: results take dying operands' buffers (``out=``) and
    the deep sin chain's gradient runs in a handful of locals."""
    from engine.program import StoragePlan, execution_plan

    x = engine.input((100_000,))
    program = engine.compile(engine.grad(xnp.sum(xnp.sin(x) * x * x), x), inputs=[x])
    eqns, outputs = execution_plan(program)
    plan = StoragePlan(program, eqns, outputs)
    assert len(plan.inplace) == 4 and plan.n_slots == 4
    x = engine.input((10,))
    h = x
    for _ in range(200):
        h = xnp.sin(h)
    program = engine.compile(engine.grad(xnp.sum(h), x), inputs=[x])
    eqns, outputs = execution_plan(program)
    plan = StoragePlan(program, eqns, outputs)
    assert not plan.inplace and not plan.dead_after  # small values: freed by rebinding their local
    assert plan.n_slots < len(eqns) // 2
