"""The hunt's generator language: JSON round-trip, validation, static analysis, the chain files it writes, and
instantiation on every backend (the same value and gradient everywhere; peers skip without the extra)."""

from __future__ import annotations

import importlib.util
import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof.chain import load_chains
from adprof.hunt.gen import ChainOptions, Generator, GeneratorError, Node, chain_source, instantiate
from adprof.hunt.mutate import mutate, random_generator, reductions
from adprof.hunt.targets import Target, runs_on

MUL = Generator((Node("mul", (0, 0)),))
CUBE = Generator((Node("mul", (0, 0)), Node("mul", (1, 0))))
FIB = Generator((Node("add", (0, 1)),), window=2)  # y_{n+1} = y_n + y_{n-1}
TWO_OUT = Generator((Node("add", (0, 1)), Node("mul", (0, 1))), outputs=(2, 3), window=2, shape=(2,))
ORDER = Generator((Node("sin", (0,)), Node("exp", (0,)), Node("mul", (1, 2))), scale="order")
MATRIX = Generator(
    (Node("matmul", (0, 0)), Node("tanh", (1,)), Node("transpose", (0,)), Node("add", (2, 3))), shape=(3, 3)
)
SCAN = Generator((Node("mul", (0, 1)), Node("tanh", (2,))), window=2, loop="scan")  # lax.scan on JAX
#: LAPACK's sign convention of singular vectors differs between libraries: compared on the engine (numpy's) only.
SVD = Generator((Node("svd_u", (0,)), Node("add", (1, 0))), shape=(3, 3))


def _drawn(seed: int) -> Generator:
    rng = random.Random(seed)
    gen = random_generator(rng)
    for _ in range(rng.randint(0, 6)):
        gen = mutate(gen, rng)
    return gen


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**6))
def test_every_drawn_generator_round_trips_through_json(seed):
    gen = _drawn(seed)
    text = gen.to_json()
    back = Generator.from_json(text)
    assert back == gen and back.key == gen.key
    assert json.loads(text) == gen.to_dict()
    assert Generator.from_dict(json.loads(json.dumps(gen.to_dict()))) == gen
    compile(chain_source([(gen, ChainOptions(name="c"))]), "<gen>", "exec")  # it writes a valid chain file


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6))
def test_reductions_are_valid_and_never_larger(seed):
    gen = _drawn(seed)
    for r in reductions(gen):
        r.validate()
        assert r.size <= gen.size and r.key != gen.key


@pytest.mark.parametrize(
    "data, message",
    [
        ({"nodes": [{"op": "frobnicate", "args": [0]}]}, "unknown op 'frobnicate'"),
        ({"nodes": [{"op": "sin", "args": [1]}]}, "not an earlier value"),
        ({"nodes": [{"op": "add", "args": [0]}]}, "add takes 2 values"),
        ({"nodes": [{"op": "matmul", "args": [0, 0]}], "shape": [3]}, "needs a square matrix"),
        ({"nodes": [{"op": "total", "args": [0], "const": 0.1}]}, "reduced value"),
        ({"nodes": [{"op": "scale", "args": [0]}]}, "needs a constant"),
        ({"nodes": [{"op": "sin", "args": [0]}], "outputs": [0]}, "copies a state"),
        ({"nodes": [{"op": "sin", "args": [0]}, {"op": "cos", "args": [1]}], "window": 2, "outputs": [2, 2]}, "twice"),
        ({"nodes": [{"op": "sin", "args": [0]}, {"op": "cos", "args": [0]}], "window": 2, "outputs": [2, 3]}, "ride"),
        ({"nodes": [{"op": "sin", "args": [0]}], "scale": "sideways"}, "scale must be"),
        ({"nodes": [{"op": "sin", "args": [0]}], "window": 9}, "window must be"),
        ({"nodes": [{"op": "sin", "args": [0]}], "colour": "red"}, "unknown generator field"),
        ({"nodes": "sin"}, "not a generator description"),
        ([1, 2], "is a JSON object"),
    ],
)
def test_bad_descriptions_are_one_line_errors(data, message):
    with pytest.raises(GeneratorError, match=message) as info:
        Generator.from_dict(data)
    assert "\n" not in str(info.value)


def test_static_analysis_counts_uses_and_predicts_the_base():
    assert (MUL.uses, MUL.predicted_base, MUL.axis) == (2, 2.0, "layer")
    assert (CUBE.uses, CUBE.predicted_base) == (3, 3.0)
    assert FIB.axis == "unroll" and math.isclose(FIB.predicted_base, (1 + 5**0.5) / 2, rel_tol=1e-6)
    assert math.isclose(TWO_OUT.predicted_base, 2.0, rel_tol=1e-6)  # [[1, 1], [1, 1]]
    linear = Generator((Node("sin", (0,)), Node("scale", (1,), 0.5)))
    assert linear.predicted_base == 1.0 and not linear.reuses and linear.uses == 1
    assert ORDER.axis == "order"
    assert SCAN.axis == "unroll" and SCAN.size == MUL.size + 3  # a node, a state and the scan more


def test_canonical_form_drops_dead_nodes_and_unread_states():
    dead = Generator((Node("cos", (0,)), Node("mul", (0, 0))))  # cos(y) is never used
    assert dead.canonical() == MUL and dead.key == MUL.key
    unread = Generator((Node("mul", (1, 0)),), window=3)  # y2 is never read
    assert unread.canonical() == Generator((Node("mul", (1, 0)),), window=2)
    with pytest.raises(GeneratorError, match="ride along"):  # no node reads y1: not an unroll at all
        Generator((Node("mul", (0, 0)),), window=2)


def test_written_chain_file_loads_with_the_real_loader(tmp_path):
    path = tmp_path / "gens.py"
    path.write_text(
        chain_source(
            [
                (MUL, ChainOptions("mul_chain", max_depth=12)),
                (TWO_OUT, ChainOptions("fib_chain", depths=(1, 2, 3))),
                (ORDER, ChainOptions("order_chain", depths=(1, 2, 3, 4), cap=30.0)),
            ],
            "A generated file.",
        )
    )
    chains = {c.name: c for c in load_chains(path)}
    assert chains["mul_chain"].reuse == 2 and chains["mul_chain"].max_depth == 12
    assert chains["fib_chain"].axis == "unroll" and chains["fib_chain"].depths == (1, 2, 3)
    assert not chains["fib_chain"].adaptive
    assert chains["order_chain"].axis == "order" and chains["order_chain"].cap == 30.0
    assert set(chains["mul_chain"].modes) == {"traced", "eager", "compile"}


def _numpy_value(gen: Generator, depth: int, x: np.ndarray | None = None) -> float:
    """The layer by hand in numpy (the chain's semantics, independent of its code)."""
    x = np.random.default_rng(0).uniform(0.5, 1.0, size=gen.shape) if x is None else x
    hist = [x * (1.0 - 0.25 * k) for k in range(gen.window)][::-1]  # oldest first
    ops = {
        "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "exp": np.exp,
        "add": np.add, "sub": np.subtract, "mul": np.multiply,
        "matmul": np.matmul, "transpose": np.transpose,
        "svd_u": lambda a: np.linalg.svd(a, full_matrices=False)[0],
    }  # fmt: skip
    for _ in range(depth):
        values = [hist[-1 - k] for k in range(gen.window)]
        for node in gen.nodes:
            values.append(ops[node.op](*(values[a] for a in node.args)))
        hist = (hist + [values[o] for o in gen.outputs])[-gen.window :]
    return float(sum(np.sum(s) for s in hist))


@pytest.mark.parametrize(
    "gen", [MUL, CUBE, FIB, TWO_OUT, MATRIX, SVD, SCAN], ids=["mul", "cube", "fib", "two_out", "matrix", "svd", "scan"]
)
def test_instantiated_chain_computes_the_layer(gen):
    import engine

    chain = instantiate(gen, "g")
    x = engine.EagerRuntime().variable(chain.make_input())
    value = float(chain(engine.numpy, x, 3).item())
    assert math.isclose(value, _numpy_value(gen, 3), rel_tol=1e-9)


def _value_and_grad(backend: str, chain, a: np.ndarray, depth: int) -> tuple[float, np.ndarray]:
    """The chain's value and gradient at ``a`` on ``backend``'s own namespace and gradient."""
    if backend == "engine":
        import engine

        x = engine.EagerRuntime().variable(a)
        y = chain(engine.numpy, x, depth)
        y.backward()
        return float(y.item()), np.asarray(x.grad)
    if backend == "jax":
        import jax

        from adprof.backends.jax_backend import xp

        value, grad = jax.value_and_grad(lambda x: chain(xp, x, depth))(jax.numpy.asarray(a))
        return float(value), np.asarray(grad)
    if backend == "torch":
        import torch

        from adprof.backends.torch_backend import xp

        x = torch.tensor(a, requires_grad=True)
        y = chain(xp, x, depth)
        y.backward()
        return float(y.detach()), x.grad.numpy()
    if backend == "autograd":
        import autograd

        from adprof.backends.autograd_backend import xp

        value, grad = autograd.value_and_grad(lambda x: chain(xp, x, depth))(a)
        return float(value), np.asarray(grad)
    from adprof.backends.tinygrad_backend import Tensor, _gradient, xp

    x = Tensor(a)
    y = chain(xp, x, depth)
    return float(y.numpy()), _gradient(y, x).numpy()


def _finite_differences(f, a: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


_PEERS = ("jax", "torch", "autograd", "tinygrad")


@pytest.mark.parametrize("backend", ["engine", *_PEERS])
def test_instantiation_on_every_backend(backend):
    """Every generator each backend can run (:func:`runs_on`) gives, at depth 3, the value of the layer computed by
    hand and the gradient of finite differences, on the backend's own namespace and gradient."""
    if backend in _PEERS and importlib.util.find_spec(backend) is None:  # not imported here: the backend module
        pytest.skip(f"the {backend} backend needs the peers extra: pip install 'adprof[peers]'")  # sets its env first
    mode = "compile" if backend == "tinygrad" else "eager"
    ran = 0
    for gen in (TWO_OUT, ORDER, MATRIX, SCAN):
        if runs_on(Target(backend, None, mode), gen) is not None:
            continue
        chain = instantiate(gen, "g")
        a = chain.make_input()
        value, grad = _value_and_grad(backend, chain, a, 3)
        if gen.scale == "order":
            expected, fd = _order_value(3, a), _finite_differences(lambda v: _order_value(3, v), a)
        else:
            expected = _numpy_value(gen, 3)
            fd = _finite_differences(lambda v, gen=gen: _numpy_value(gen, 3, v), a)
        assert math.isclose(value, expected, rel_tol=1e-9), (backend, gen.summary(), value, expected)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7, err_msg=f"{backend}: {gen.summary()}")
        ran += 1
    assert ran >= 2


def _order_value(depth: int, x: np.ndarray | None = None) -> float:
    """sum of the (depth-1)-th derivative of sin(x)*exp(x), by its closed form
    (d^n [sin(x) e^x] = 2^(n/2) e^x sin(x + n pi/4))."""
    x = np.random.default_rng(0).uniform(0.5, 1.0, size=(3,)) if x is None else x
    n = depth - 1
    return float(np.sum(2 ** (n / 2) * np.exp(x) * np.sin(x + n * np.pi / 4)))
