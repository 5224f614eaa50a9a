"""The jax and torch peer backends: point fields, agreement with the engine, linear verdicts, CLI JSON
fields and the "not installed" message. Skipped when jax or torch is not installed."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from extras import missing_reason

pytest.importorskip("jax", reason=missing_reason("jax"))
pytest.importorskip("torch", reason=missing_reason("torch"))
pytest.importorskip("array_api_compat", reason=missing_reason("array_api_compat"))

import engine
from adprof import backends
from adprof.analysis.classify import decide
from adprof.backends import jax_backend as jb
from adprof.backends import series_fields
from adprof.backends import torch_backend as tb
from adprof.model import INCONCLUSIVE, LINEAR, Point, Series
from probes import chains

ROOT = Path(__file__).resolve().parents[1]
CHAINS = str(ROOT / "probes" / "chains.py")
#: Peer depths for time-only fits: a 16x span of doublings.
DEPTHS = (8, 16, 32, 64, 128)


def test_jax_traced_point_fields():
    pt = jb.measure_point(chains.mul, "traced", 4, None)
    assert isinstance(pt, Point) and pt.depth == 4 and pt.counters == {}
    assert set(pt.times) == {"record", "transform", "drop"} and all(t >= 0 for t in pt.times.values())
    assert pt.ops["value_ops"] > 0 and pt.ops["derivative_ops"] > pt.ops["value_ops"]
    assert pt.extra["value"] == pytest.approx(float(chains.mul(np, chains.mul.make_input(), 4)))
    assert set(pt.samples) == set(pt.times)  # every phase keeps its repeats; times = their lower quartile


def test_jax_compile_and_eager_point_fields():
    pt = jb.measure_point(chains.sin, "compile", 8, None)
    assert {"transform", "lower", "compile", "run"} <= set(pt.times) and pt.ops["derivative_ops"] > 0
    pt = jb.measure_point(chains.sin, "eager", 8, None, calls=3)
    assert {"forward0", "backward0", "forward", "backward"} <= set(pt.times)
    assert len(pt.extra["backward_calls"]) >= 3 and pt.extra["finite_gradient"] is True


def test_torch_eager_point_fields():
    pt = tb.measure_point(chains.sin, "eager", 16, None, calls=4)
    assert pt.counters == {} and {"forward0", "backward0", "forward", "backward"} <= set(pt.times)
    assert len(pt.extra["backward_calls"]) == pt.calls >= 4
    assert pt.extra["finite_gradient"] is True
    assert pt.extra["value"] == pytest.approx(float(chains.sin(np, chains.sin.make_input(), 16)))


def test_torch_traced_is_a_real_transform():
    pt = tb.measure_point(chains.mul, "traced", 3, None)
    assert {"record", "transform", "drop"} <= set(pt.times)
    assert pt.ops["derivative_ops"] > pt.ops["value_ops"] > 0


def test_modes_profiles_and_bad_arguments():
    assert jb.MODES == ("traced", "compile", "eager") and tb.MODES == ("traced", "eager", "compile")
    assert jb.PROFILES == tb.PROFILES == (None,)
    with pytest.raises(ValueError, match="no cost profiles"):
        jb.measure_point(chains.mul, "traced", 2, "fixed")
    with pytest.raises(ValueError, match="unknown mode 'staged'"):
        tb.measure_point(chains.mul, "staged", 2, None)


def _engine_value_grad(chain, depth):
    a = chain.make_input()
    x = engine.input(a.shape, a.dtype)
    y = chain(engine.numpy, x, depth)
    value, grad = engine.compile([y, engine.grad(y, x)], inputs=[x]).prepare()(a)
    return float(np.asarray(value)), np.asarray(grad)


@pytest.mark.parametrize("chain", [chains.mul, chains.svd3, chains.sin], ids=lambda c: c.name)
def test_values_and_gradients_agree_with_the_engine(chain):
    import jax
    import torch

    depth = 3
    value, grad = _engine_value_grad(chain, depth)
    a = chain.make_input()
    jv, jg = jax.value_and_grad(lambda x: chain(jb.xp, x, depth))(jax.numpy.asarray(a))
    x = torch.tensor(a, requires_grad=True)
    tv = chain(tb.xp, x, depth)
    tv.backward()
    for v, g in ((float(jv), np.asarray(jg)), (float(tv.detach()), x.grad.numpy())):
        assert v == pytest.approx(value, rel=1e-10, abs=1e-300)
        np.testing.assert_allclose(g, grad, rtol=1e-8, atol=1e-12)


def test_torch_namespace_shim():
    import torch

    xp = tb.xp
    m = xp.asarray(np.arange(6.0).reshape(2, 3))
    u, s, vt = xp.linalg.svd(m)  # reduced by default, like the engine's
    assert u.shape == (2, 2) and s.shape == (2,) and vt.shape == (2, 3)
    assert xp.linalg.svd(m, full_matrices=True)[2].shape == (3, 3)
    t = xp.asarray(np.zeros((2, 3, 4)))
    assert xp.transpose(t).shape == (4, 3, 2) and xp.transpose(t, (1, 2, 0)).shape == (3, 4, 2)
    assert xp.asarray(0.3).dtype == torch.float64 and xp.sin is torch.sin
    u, s, vt = jb.xp.linalg.svd(jb.xp.asarray(np.arange(6.0).reshape(2, 3)))
    assert u.shape == (2, 2) and vt.shape == (2, 3)


def _series(backend, chain, mode, three: bool = True):
    """Points at DEPTHS, swept up, down and up again; per depth the cheapest of the three (a load
    burst on a shared machine hits one sweep, not all). ``three=False``: one sweep."""
    name = backend.__name__.rsplit(".", 1)[-1].removesuffix("_backend")
    key = "transform" if mode == "traced" else "backward"
    best: dict[int, Point] = {}
    sweeps = (DEPTHS, DEPTHS[::-1], DEPTHS) if three else (DEPTHS,)
    for d in (d for sweep in sweeps for d in sweep):
        pt = backend.measure_point(chain, mode, d, None, calls=6)
        if d not in best or pt.times[key] < best[d].times[key]:
            best[d] = pt
    pts = [best[d] for d in DEPTHS]
    return Series(chain=chain.name, backend=name, profile=None, mode=mode, points=pts, **series_fields(name, mode))


_PEER_CASES = [
    pytest.param(
        b,
        m,
        c,
        id=f"{c.name}-{bid}",
        marks=() if (c.name, bid) == ("mul", "jax-traced") else pytest.mark.slow,
    )
    for b, m, bid in ((jb, "traced", "jax-traced"), (tb, "eager", "torch-eager"))
    for c in [v for ch in chains.STANDARD for v in ch.variants()]
]


@pytest.mark.parametrize(("backend", "mode", "chain"), _PEER_CASES)
def test_standard_chains_are_linear_on_the_peers(backend, mode, chain):
    """Every standard chain is linear on JAX traced and torch eager (one representative case runs
    by default, JAX traced's mul; all with ``-m slow``). Where a deterministic metric decides (JAX traced: Python call
    counts) the verdict is exactly linear; where wall time decides (torch eager: the C++ backward) a
    loaded machine may widen the interval to inconclusive, but never to a pathology."""
    metric = bool(series_fields(backend.__name__.rsplit(".", 1)[-1].removesuffix("_backend"), mode)["deciding_metrics"])
    # where a deterministic metric decides, one sweep is enough quiet; the verdict also reads the times for jumps,
    # and under load one sweep showed a 7x record time at one depth (an unconfirmed jump: inconclusive): then the
    # verdict is read again on three fresh sweeps, as where time decides
    s = _series(backend, chain, mode, three=not metric)
    v = decide(s)
    if metric and v.kind != LINEAR:
        s = _series(backend, chain, mode)
        v = decide(s)
    key = "transform" if mode == "traced" else "backward"
    why = (v.kind, [(p.depth, p.times[key]) for p in s.points], v.evidence)
    if v.fit is not None and v.fit.source == "time":
        assert v.kind in (LINEAR, INCONCLUSIVE), why
    else:
        assert v.fit is not None and v.fit.source == "metric" and v.kind == LINEAR, why


@pytest.mark.slow  # jax and torch workers through the CLI (20 s); the in-process peer tests stay in the default run
def test_cli_json_fields():
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "adprof",
            "check",
            f"{CHAINS}::sin",
            "--backend",
            "jax,torch",
            "--mode",
            "eager",
            "--depths",
            "8,16,32,64",
            "--budget",
            "30",
            "--no-structure",
            "--json",
            "-",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode in (0, 1), p.stderr
    rows = json.loads(p.stdout)["results"]
    assert {(r["backend"], r["profile"], r["mode"]) for r in rows} == {("jax", None, "eager"), ("torch", None, "eager")}


def test_not_installed_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` now raises ImportError
    with pytest.raises(backends.BackendNotInstalledError, match=r"pip install 'adprof\[jax\]'"):
        backends.check_backend("jax")
    monkeypatch.delitem(sys.modules, "adprof.backends.jax_backend")
    with pytest.raises(ImportError, match=r"backend 'jax' is not installed .*pip install 'adprof\[jax\]'"):
        importlib.import_module("adprof.backends.jax_backend")
    monkeypatch.setattr(backends, "check_backend", lambda name: name)  # as if the package were found
    with pytest.raises(backends.BackendNotInstalledError, match=r"pip install 'adprof\[jax\]'"):
        backends.get_backend("jax")
