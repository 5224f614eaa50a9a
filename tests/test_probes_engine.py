"""Every standard chain on the engine, traced and eager, both profiles: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import engine
import engine.numpy as xnp
from probes import chains
from tests import numpy_xp

VARIANTS = [v for c in chains.STANDARD for v in c.variants()]
DEPTH = {"sin": 6, "linear": 5, "matmul": 5}


def _traced(chain, a, depth):
    x = engine.input(a.shape)
    y = chain(xnp, x, depth)
    value, grad = engine.compile([y, engine.grad(y, x)], inputs=[x]).prepare()(a)
    return float(value), grad


def _eager(chain, a, depth):
    rt = engine.EagerRuntime()
    x = rt.variable(a)
    with rt.session():
        loss = chain(xnp, x, depth)
    loss.backward()
    return float(loss), x.grad


@pytest.mark.parametrize("profile", ["v08", "fixed"])
@pytest.mark.parametrize("chain", VARIANTS, ids=[v.name for v in VARIANTS])
def test_standard_chain_values_and_gradients(chain, profile):
    depth = DEPTH.get(chain.name, 3)
    a = chain.make_input()
    expected = float(chain(numpy_xp, a, depth))
    with engine.profile(profile):
        tv, tg = _traced(chain, a, depth)
        ev, eg = _eager(chain, a, depth)
    assert tv == pytest.approx(expected, rel=1e-12)
    assert ev == pytest.approx(expected, rel=1e-12)
    assert np.array_equal(tg, eg)  # same derivative program: bitwise equal across modes
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd[i] = (chain(numpy_xp, a + e, depth) - chain(numpy_xp, a - e, depth)) / (2 * eps)
    np.testing.assert_allclose(tg, fd, rtol=1e-5, atol=1e-7)
