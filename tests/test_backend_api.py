"""The public backend interface: declarations, the repeat policy and statistic, and third-party backends
found through the ``adprof.backends`` entry-point group (a real *.dist-info on PYTHONPATH, used by the
parent and by the worker), including a broken plugin reported in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof import backends
from adprof.backends.base import REPEATS, Backend, RepeatPolicy, count_python_calls, lower_quartile
from adprof.backends.builtin import BUILTIN_BACKENDS

ROOT = Path(__file__).resolve().parents[1]


def test_builtin_declarations_are_consistent():
    for name, cls in BUILTIN_BACKENDS.items():
        b = cls()
        assert b.name == name and b.modes and set(b.phases) == set(b.modes)
        for mode in b.modes:
            assert b.phases[mode], (name, mode)
            reported = set(b.metrics.get(mode, ()))
            assert set(b.deciding_metrics.get(mode, ())) <= reported, (name, mode)
            # every reported metric either may decide or says why not
            for metric in reported - set(b.deciding_metrics.get(mode, ())):
                assert b.metric_notes[mode][metric], (name, mode, metric)
            fields = b.series_fields(mode)
            assert set(b.lower_bound_metrics.get(mode, ())) <= reported, (name, mode)
            assert set(fields) == {"deciding_metrics", "lower_bound_metrics", "metric_notes", "statistic", "clock"}
            assert fields["clock"] == "wall (perf_counter)" and fields["statistic"]
    assert backends.KNOWN_BACKENDS[:5] == ("engine", "jax", "torch", "autograd", "tinygrad")
    assert backends.series_fields("jax", "compile")["deciding_metrics"] == []
    assert backends.series_fields("jax", "traced")["deciding_metrics"] == ["python_calls"]
    assert "XLA" in backends.series_fields("jax", "compile")["metric_notes"]["python_calls"]


def test_unknown_mode_and_profile_are_one_line():
    jax_backend = BUILTIN_BACKENDS["jax"]()
    with pytest.raises(ValueError, match=r"^unknown mode 'nope' for the jax backend; known: traced, compile, eager$"):
        jax_backend.check_arguments("nope", None)
    with pytest.raises(ValueError, match="has no cost profiles"):
        jax_backend.check_arguments("traced", "fixed")
    with pytest.raises(backends.UnknownBackendError, match="unknown backend 'nosuch'; known backends: engine"):
        backends.check_backend("nosuch")


@settings(deadline=None)
@given(
    st.lists(st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_subnormal=False), min_size=1, max_size=50)
)
def test_lower_quartile_is_an_order_statistic_below_the_median(xs):
    q = lower_quartile(xs)
    assert q in xs
    assert sum(x < q for x in xs) <= (len(xs) - 1) // 4  # at most a quarter of the samples below it
    assert q <= sorted(xs)[(len(xs) - 1) // 2]


@settings(deadline=None)
@given(st.lists(st.floats(min_value=1e-6, max_value=2.0, allow_subnormal=False), min_size=1, max_size=20))
def test_repeat_policy_bounds(run_times):
    """Replaying run times through the policy: at most 7 runs, 1 when the first is slow, at least 3 when cheap."""
    policy = RepeatPolicy()
    samples: list[float] = []
    for t in run_times:
        if not policy.more(samples):
            break
        samples.append(t)
    n = len(samples)
    assert 1 <= n <= policy.most
    if samples[0] > policy.single_over:
        assert n == 1
    elif n < len(run_times) or not policy.more(samples):  # the policy stopped by itself
        assert n >= min(policy.least, len(run_times))
        assert n == policy.most or sum(samples) >= policy.budget or n >= policy.least
    assert REPEATS.describe().startswith("lower quartile of 1-7 repeats")


def test_python_calls_counts_exactly():
    def work():
        return [abs(i) for i in range(100)]  # the list comprehension, 100 abs calls

    counts = {count_python_calls(work)[0] for _ in range(3)}
    assert len(counts) == 1
    (n,) = counts
    assert 101 <= n <= 106  # work, its comprehension (3.11: a function), 100 x abs, profiler overhead


# --------------------------------------------------------------------------- plugins

PLUGIN = '''
"""A third-party backend: the chain run on numpy, gradient by central differences."""
import numpy as np

from adprof.backends.base import Backend, measure_phase
from adprof.backends.peer_common import failure
from adprof.model import Point


class NumpyFD(Backend):
    name = "numpyfd"
    modes = ("traced",)
    phases = {"traced": ("record", "transform")}
    metrics = {"traced": ("python_calls",)}
    deciding_metrics = {"traced": ("python_calls",)}
    requires = ("numpy",)
    install_hint = "pip install numpy"

    def measure_point(self, chain, mode, depth, profile=None, *, calls=6, on_phase=None, counter_budget=None,
                      repeats=None):
        self.check_arguments(mode, profile)
        on_phase = on_phase or (lambda name, call: None)
        pt = Point(depth=depth)
        a = chain.make_input()
        try:
            y = measure_phase(pt, "record", lambda: chain(np, a, depth), on_phase, python_calls=True)
            pt.extra["value"] = float(y)

            def fd():
                g = np.zeros_like(a)
                for i in np.ndindex(a.shape):
                    e = np.zeros_like(a)
                    e[i] = 1e-6
                    g[i] = (chain(np, a + e, depth) - chain(np, a - e, depth)) / 2e-6
                return g

            measure_phase(pt, "transform", fd, on_phase, repeats=repeats, python_calls=True)
        except Exception as exc:
            raise failure(exc, chain, depth, "transform", pt) from None
        return pt
'''


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """A directory with an installed-looking distribution declaring two entry points (one broken)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "numpyfd_backend.py").write_text(PLUGIN)
    info = root / "adprof_numpyfd-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adprof-numpyfd\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[adprof.backends]\nnumpyfd = numpyfd_backend:NumpyFD\nbroken = no_such_module_xyz:Backend\n"
    )
    return root


def _env(plugin_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_path), str(ROOT)])
    return env


def test_plugin_is_discovered_in_the_parent(plugin_path, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_path))
    backends.plugin_entry_points.cache_clear()
    backends.backend_declaration.cache_clear()
    try:
        assert {"numpyfd", "broken"} <= set(backends.known_backends())
        assert backends.check_backend("numpyfd") == "numpyfd"
        b = backends.get_backend("numpyfd")
        assert isinstance(b, Backend) and b.series_fields("traced")["deciding_metrics"] == ["python_calls"]
        with pytest.raises(backends.BrokenBackendError) as info:
            backends.check_backend("broken")
        msg = str(info.value)
        assert "\n" not in msg
        assert msg.startswith("plugin backend 'broken' (no_such_module_xyz:Backend, from adprof-numpyfd)")
        assert "failed to load: ModuleNotFoundError: No module named 'no_such_module_xyz'" in msg
    finally:
        backends.plugin_entry_points.cache_clear()
        backends.backend_declaration.cache_clear()


def test_plugin_measures_in_the_worker_and_a_broken_one_is_one_line(plugin_path, tmp_path):
    chains = tmp_path / "chains.py"
    chains.write_text(
        textwrap.dedent(
            """
            from adprof.chain import chain

            @chain(input_shape=(4,), depths=(8, 16, 32, 64))
            def sin(xp, x, depth):
                y = x
                for _ in range(depth):
                    y = xp.sin(y)
                return xp.sum(y)
            """
        )
    )
    cmd = [sys.executable, "-m", "adprof", "check", f"{chains}::sin", "--backend", "numpyfd", "--no-structure"]
    proc = subprocess.run(
        [*cmd, "--json", "-", "--budget", "40"], capture_output=True, text=True, env=_env(plugin_path), timeout=120
    )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    (result,) = report["results"]
    assert result["backend"] == "numpyfd" and result["error"] is None
    calls = [p["metrics"]["transform"]["python_calls"] for p in result["points"]]
    depths = [p["depth"] for p in result["points"]]
    assert all(len(p["samples"]["transform"]) >= 1 for p in result["points"])
    assert len(depths) >= 3
    # central differences: 2 x 4 chain runs per gradient, each a few calls per layer: exactly linear in depth
    pairs = list(zip(depths, calls, strict=True))
    steps = {(c2 - c1) / (d2 - d1) for (d1, c1), (d2, c2) in zip(pairs, pairs[1:], strict=False)}
    assert len(steps) == 1, steps
    cmd[cmd.index("numpyfd")] = "broken"
    bad = subprocess.run(cmd, capture_output=True, text=True, env=_env(plugin_path), timeout=60)
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "plugin backend 'broken'" in lines[0] and "failed to load" in lines[0], bad.stderr
    assert "Traceback" not in bad.stderr


def test_plugins_load_only_when_named(plugin_path):
    """Importing adprof.backends (and reading its tables for built-ins) lists plugins without importing them."""
    probe = (
        "import sys, adprof.backends as b; b.BACKEND_MODES['engine']; "
        "assert 'numpyfd' in b.known_backends(); "
        "assert 'numpyfd_backend' not in sys.modules, 'loaded at import'; "
        "assert b.BACKEND_MODES['numpyfd'] and 'numpyfd_backend' in sys.modules; "
        "assert 'broken' not in b.BACKEND_MODES"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=_env(plugin_path))
    assert proc.returncode == 0, proc.stderr
