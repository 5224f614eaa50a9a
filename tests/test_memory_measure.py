"""The memory measurement (docs/memory.md, "What is measured"): saved-for-backward bytes per backend, exact
(identical in two runs, constant per-layer differences on the standard chains), the bytes retained per eager call
(pytorch#7343's leak and its two leak-free forms), the worker's peak, the --cmd protocol keys, and that memory is
measured outside what the time verdict reads (the engine's counters are the same with and without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from extras import require

from adprof.backends import get_backend, memory_asked, memory_notes
from adprof.backends.cmd.process import CommandFailure
from adprof.backends.cmd.protocol import apply_protocol
from adprof.backends.memory import FIGURES, NOT_ASKED, PeakWatch, Retained, numpy_buffer, numpy_bytes, peak_supported
from adprof.chain import load_chains
from adprof.model import Point

ROOT = Path(__file__).resolve().parents[1]
CHAINS = {c.name: c for c in load_chains(str(ROOT / "probes" / "chains.py"))}
WILD = {c.name: c for c in load_chains(str(ROOT / "probes" / "wild.py"))}
#: The standard chains whose every layer is one shape (reuse's variants included).
STANDARD = [v for c in CHAINS.values() for v in c.variants()]
DEPTHS = (1, 2, 3, 4, 5)


def saved(backend: str, chain, mode: str, depth: int, profile: str | None = None) -> float:
    pt = get_backend(backend).measure_point(chain, mode, depth, profile, memory=True)
    assert "memory_error" not in pt.extra, pt.extra["memory_error"]
    return pt.memory["saved_bytes"]


def differences(values: list[float]) -> list[float]:
    return [b - a for a, b in zip(values, values[1:], strict=False)]


def variant(name: str, **params):
    return WILD[name].variant(**params) if params else WILD[name]


# --------------------------------------------------------------------------- the engine


def engine_saved(chain, mode: str, depth: int, profile: str) -> int:
    """What the engine backend stores as ``saved_bytes`` (its functions, without the timed phases around them)."""
    import engine

    a = chain.make_input()
    with engine.profile(profile):
        if mode == "traced":
            x = engine.input(a.shape, a.dtype)
            return engine.residual_bytes(chain(engine.numpy, x, depth), x)
        rt = engine.EagerRuntime()
        x = rt.variable(a)
        with rt.session():
            loss = chain(engine.numpy, x, depth)
        return engine.tape_bytes(loss)


@pytest.mark.parametrize("profile", ["fixed", "v08"])
@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_engine_saved_bytes_are_exact_and_linear_in_depth_on_every_standard_chain(mode, profile):
    for ch in STANDARD:
        first = [engine_saved(ch, mode, d, profile) for d in DEPTHS]
        again = [engine_saved(ch, mode, d, profile) for d in DEPTHS]
        assert first == again, ch.name  # exact: identical in two runs
        steps = differences(first)
        assert len(set(steps)) == 1 and steps[0] > 0, (ch.name, first)  # one residual set per layer


@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_the_engine_backend_reports_those_bytes(mode):
    for name in ("linear", "svd2"):
        ch = CHAINS[name]
        assert [saved("engine", ch, mode, d, "v08") for d in (2, 3)] == [
            engine_saved(ch, mode, d, "v08") for d in (2, 3)
        ]


def test_engine_traced_saved_bytes_are_the_gradients_residuals():
    """sin: the backward of y <- sin(y) reads each layer's input (cos of it): one (10,) float64 per layer."""
    assert [engine_saved(CHAINS["sin"], "traced", d, "fixed") for d in DEPTHS] == [80 * d for d in DEPTHS]


def counts(pt: Point) -> dict:
    """The point's counters without their seconds (``transform_seconds``, ...: clocks, not counts)."""
    return {ph: {k: v for k, v in c.items() if not k.endswith("_seconds")} for ph, c in pt.counters.items()}


def test_memory_does_not_change_the_engines_counters():
    """Memory is measured after the timed calls, on objects of its own: the counters the verdict reads are the
    same with and without it, call by call."""
    engine = get_backend("engine")
    for mode in ("traced", "eager"):
        for profile in ("v08", "fixed"):
            plain = engine.measure_point(CHAINS["mul"], mode, 6, profile, calls=3)
            with_memory = engine.measure_point(CHAINS["mul"], mode, 6, profile, calls=3, memory=True)
            assert counts(plain) == counts(with_memory), (mode, profile)
            assert plain.extra.get("cache") == with_memory.extra.get("cache")
            assert plain.memory == {} and plain.retained == []
            assert with_memory.memory["saved_bytes"] > 0


def test_engine_eager_retains_nothing_per_call():
    pt = get_backend("engine").measure_point(CHAINS["linear"], "eager", 8, "fixed", memory=True)
    assert pt.retained == [0.0] * pt.calls and pt.calls >= 2  # one entry per timed call


def test_dense_history_saves_bytes_quadratic_in_depth_on_the_engine():
    ch = WILD["dense_history"]
    for mode in ("traced", "eager"):
        values = [engine_saved(ch, mode, d, "fixed") for d in DEPTHS]
        second = differences(differences(values))
        assert len(set(second)) == 1 and second[0] > 0, (mode, values)  # one new array per pair of layers


# --------------------------------------------------------------------------- the helpers


def test_retained_counts_the_live_buffers_once_and_forgets_the_dead():
    tracker = Retained(size=numpy_bytes, key=numpy_buffer)
    a, b = np.zeros(100), np.zeros(50)
    view = a[10:20]
    tracker.track([a, b, view, None])
    assert tracker.held() == 800 + 400  # the view is a's buffer
    del a
    assert tracker.held() == 800 + 400  # the view keeps a's buffer alive
    del view
    assert tracker.held() == 400
    del b
    assert tracker.held() == 0


def test_the_peak_is_reset_per_point_and_sees_an_allocation():
    if not peak_supported():
        pytest.skip("no /proc/self/clear_refs here")
    watch = PeakWatch()
    watch.start()
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
    del block
    assert watch.bytes() >= 60 * 2**20
    watch.start()
    assert watch.bytes() < 60 * 2**20  # reset: the earlier block does not count


def test_memory_defaults_and_notes_per_backend():
    assert memory_asked("engine", None) and memory_asked("engine", True) and not memory_asked("engine", False)
    assert not memory_asked("no-such-backend", None)
    assert memory_notes("engine", "traced", False) == dict.fromkeys(FIGURES, NOT_ASKED)
    assert set(memory_notes("engine", "traced", True)) == {"retained"}  # traced: no calls to leave bytes behind
    assert memory_notes("engine", "eager", True) == {}
    assert set(memory_notes("tinygrad", "eager", True)) == {"saved_bytes", "retained"}
    assert set(memory_notes("torch", "compile", True)) == {"saved_bytes", "retained"}


# --------------------------------------------------------------------------- --cmd


def test_cmd_protocol_reads_the_memory_keys():
    pt = Point(depth=3)
    obj = {"backward_seconds": [0.1, 0.1], "saved_bytes": 4096, "peak_bytes": 1.5e6, "retained": [0, 64, 128]}
    assert apply_protocol(pt, obj, "eager")
    assert pt.memory == {"saved_bytes": 4096.0, "peak_bytes": 1.5e6}
    assert pt.retained == [0.0, 64.0, 128.0]
    assert "unknown_keys" not in pt.extra
    for bad in ({"saved_bytes": -1}, {"peak_bytes": "many"}, {"retained": 12}, {"saved_bytes": float("nan")}):
        with pytest.raises(CommandFailure):
            apply_protocol(Point(depth=1), bad, "traced")


# --------------------------------------------------------------------------- the CLI


def _check_json(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "adprof", "check", *args, "--no-structure", "--json", "-"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_check_carries_memory_by_default():
    target = f"{ROOT / 'probes' / 'chains.py'}::sin"
    on = _check_json(target, "--profile", "fixed", "--depths", "2,4,8")
    assert {r["mode"] for r in on["results"]} == {"traced", "eager"}
    for r in on["results"]:
        figures = [p["memory"]["saved_bytes"] for p in r["points"]]
        if r["mode"] == "traced":
            assert figures == [160.0, 320.0, 640.0]  # cos(y) of each layer: (10,) float64
        else:  # the tape: every value recorded (the leaf, each layer's sin)
            assert differences(figures) == [160.0, 320.0]
        assert all(p["memory"]["peak_bytes"] >= 0 for p in r["points"]) or not peak_supported()
        assert r["memory_notes"] == ({} if r["mode"] == "eager" else {"retained": r["memory_notes"]["retained"]})
        if r["mode"] == "eager":
            assert all(p["retained"] == [0.0] * p["calls"] for p in r["points"])
        assert all(p["extra"]["memory_seconds"] >= 0 for p in r["points"])  # what it cost


@pytest.mark.slow
def test_check_with_no_memory_measures_none_and_says_why():
    target = f"{ROOT / 'probes' / 'chains.py'}::sin"
    off = _check_json(target, "--profile", "fixed", "--depths", "2,4", "--mode", "traced", "--no-memory")
    (r,) = off["results"]
    assert all(p["memory"] == {} and p["retained"] == [] for p in r["points"])
    assert all("memory_seconds" not in p["extra"] for p in r["points"])
    assert r["memory_notes"] == dict.fromkeys(FIGURES, NOT_ASKED)


# --------------------------------------------------------------------------- the peers


def jax_saved(chain, mode: str, depth: int) -> int:
    """What the JAX backend stores as ``saved_bytes`` in traced and eager mode (its functions, untimed)."""
    import jax

    from adprof.backends import jax_backend as jb

    f, x = jb._fn(chain, depth), jb._input(chain)
    if mode == "traced":
        return jb.residual_bytes(f, x)
    _, vjp_fn = jax.vjp(f, x)
    return sum(int(r.nbytes) for r in jb.vjp_residual_arrays(vjp_fn))


@pytest.mark.parametrize("mode", ["traced", "eager"])
def test_jax_saved_bytes_are_exact_and_linear(mode):
    require("jax")
    for name in ("linear", "matmul", "sin", "mul"):
        first = [jax_saved(CHAINS[name], mode, d) for d in DEPTHS]
        assert first == [jax_saved(CHAINS[name], mode, d) for d in DEPTHS], name
        steps = differences(first)
        assert len(set(steps)) == 1 and steps[0] > 0, (name, first)
    assert saved("jax", CHAINS["linear"], mode, 3) == jax_saved(CHAINS["linear"], mode, 3)  # what the backend says


def test_jax_scan_keeps_one_residual_set_per_step_and_checkpointing_flattens_it():
    """jax-ml/jax#3186: grad of lax.scan keeps residuals per step; jax.checkpoint on the body keeps the carry only,
    on the whole loop only its input."""
    require("jax")
    depths = (4, 8, 16)
    per_step = {}
    for remat in ("none", "body", "loop"):
        ch = variant("scan_residuals", remat=remat)
        values = [jax_saved(ch, "traced", d) for d in depths]
        assert values == [jax_saved(ch, "eager", d) for d in depths], remat  # the vjp function holds them
        per_step[remat] = (values[2] - values[1]) / 8
        assert values[1] - values[0] == per_step[remat] * 4, (remat, values)  # exactly linear
    assert per_step["none"] == 3 * 16 * 16 * 8  # three (16, 16) float64 residuals per step
    assert per_step["body"] == 16 * 16 * 8  # the carry
    assert per_step["loop"] == 0  # flat


def torch_saved(chain, depth: int) -> int:
    """What the torch backend stores as eager ``saved_bytes``: the saved-tensor hooks around one forward."""
    import torch

    from adprof.backends import torch_backend as tb

    hooks = tb.SavedTensors()
    x = torch.tensor(chain.make_input(), requires_grad=True)
    with hooks.hooks():
        tb._fn(chain, depth)(x)
    return hooks.bytes()


def test_torch_eager_saved_bytes_are_exact_and_linear():
    require("torch")
    for name in ("linear", "matmul", "sin", "mul"):
        first = [torch_saved(CHAINS[name], d) for d in DEPTHS]
        assert first == [torch_saved(CHAINS[name], d) for d in DEPTHS], name
        steps = differences(first)
        assert len(set(steps)) == 1 and steps[0] > 0, (name, first)
    assert saved("torch", CHAINS["linear"], "eager", 3) == torch_saved(CHAINS["linear"], 3)  # what the backend says


def test_torch_create_graph_through_tanh_leaks_per_call_and_its_other_forms_do_not():
    """pytorch/pytorch#7343: backward(create_graph=True) through tanh makes the cycle x -> x.grad -> grad_fn -> x
    (in C++: gc.collect() cannot free it); x + 1 and torch.autograd.grad leave nothing behind."""
    require("torch")
    torch = get_backend("torch")
    pts = {
        form: torch.measure_point(variant("create_graph_leak", form=form), "eager", 4, calls=3, memory=True)
        for form in ("tanh", "add", "grad")
    }
    leak = pts["tanh"].retained
    per_call = differences(leak)
    assert leak[0] > 0 and len(set(per_call)) == 1 and per_call[0] == leak[0], leak  # the same bytes every call
    assert per_call[0] >= 2 * 256 * 8  # at least the leaf and its gradient
    assert pts["add"].retained == [0.0, 0.0, 0.0]
    assert pts["grad"].retained == [0.0, 0.0, 0.0]


def autograd_saved(chain, depth: int) -> int:
    """What the autograd backend stores as ``saved_bytes``: the arrays of the tape behind ``make_vjp``."""
    from autograd.core import make_vjp

    from adprof.backends import autograd_backend as ab

    vjp, _ = make_vjp(ab._fn(chain, depth), chain.make_input())
    return sum(int(a.nbytes) for a in ab.tape_arrays(vjp))


def test_autograd_saved_bytes_are_exact_and_linear():
    require("autograd")
    for name in ("linear", "matmul", "sin", "mul"):
        first = [autograd_saved(CHAINS[name], d) for d in DEPTHS]
        assert first == [autograd_saved(CHAINS[name], d) for d in DEPTHS], name
        steps = differences(first[1:])  # depth 1's tape may hold the input alone
        assert len(set(steps)) == 1 and steps[0] > 0, (name, first)
    assert saved("autograd", CHAINS["linear"], "eager", 3) == autograd_saved(CHAINS["linear"], 3)


def test_autograd_219_does_not_reproduce_the_backwards_own_peak_is_flat_in_depth():
    """HIPS/autograd#219: the backward kept every processed node's out-gradient. On the installed version
    backward_pass pops each one: the peak of the backward above the tape is the same at every depth
    (tracemalloc traces numpy's buffers; a (64, 64) float64 array is 32 KiB)."""
    require("autograd")
    import tracemalloc

    from autograd.core import make_vjp

    from adprof.backends.autograd_backend import xp

    ch = WILD["outgrad_chain"]
    peaks = []
    for depth in (4, 8, 16, 32):
        x = ch.make_input()
        vjp, _ = make_vjp(lambda x, depth=depth: ch(xp, x, depth), x)
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            g = vjp(1.0)
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()
        del g, vjp
    assert max(peaks) < 8 * 64 * 64 * 8, peaks  # a few arrays, not one per layer (32 layers: 1 MiB)
    assert max(peaks) - min(peaks) < 2 * 64 * 64 * 8, peaks


def test_dense_history_is_quadratic_on_torch_and_jax():
    require("torch", "jax")
    ch = WILD["dense_history"]
    for backend, mode in (("torch", "eager"), ("jax", "traced")):
        values = [torch_saved(ch, d) if backend == "torch" else jax_saved(ch, mode, d) for d in DEPTHS]
        second = differences(differences(values))
        assert len(set(second)) == 1 and second[0] > 0, (backend, values)


def test_every_memory_case_names_a_series_its_chain_has_and_a_memory_verdict():
    from probes import wild

    verdicts = {"linear", "flat", "superlinear-memory", "exponential-memory", "leak-per-call"}
    for name, case in wild.CASES.items():
        ch = getattr(wild, name)
        for series, verdict in case.memory.items():
            backend, _, rest = series.partition("/")
            mode, _, param = rest.partition("[")
            assert mode in ch.modes_on(backend), (name, series)
            if param:
                key, _, value = param.rstrip("]").partition("=")
                assert value in [str(v) for v in ch.sweep[key]], (name, series)
            assert verdict in verdicts, (name, series, verdict)
