"""The tinygrad backend never reaches for a C compiler: ``DEV=PYTHON`` everywhere, constant gradients included.

A gradient that does not depend on the input (``y = 0.7*y + 0.3*y``) has no device in tinygrad 0.14, and
tinygrad realizes a device-less tensor on ``CPU``, which compiles with clang (``FileNotFoundError: 'clang'``
where only gcc is installed). Fake compilers on ``PATH`` record any call: the real CLI runs the chain in
every mode the backend declares, and none of them is called.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from extras import missing_reason

if (_missing := missing_reason("tinygrad")) is not None:  # not importorskip: the backend sets DEV before its import
    pytest.skip(_missing, allow_module_level=True)

from adprof.backends import BACKEND_MODES

ROOT = Path(__file__).resolve().parents[1]
COMPILERS = ("clang", "clang++", "gcc", "g++", "cc", "c++")

CHAIN = '''
import adprof

@adprof.chain(input_shape=(3, 3))
def affine(xp, x, depth):
    """y <- 0.7*y + 0.3*y: the gradient is a constant (no device in tinygrad)."""
    y = x
    for _ in range(depth):
        y = 0.7 * y + 0.3 * y
    return xp.sum(y)
'''


@pytest.fixture
def fake_compilers(tmp_path):
    """A directory of fake compilers that append their name to ``calls.log`` and fail."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for name in COMPILERS:
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho {name} "$@" >> {log}\nexit 1\n')
        script.chmod(0o755)
    return bin_dir, log


def test_constant_gradient_stays_on_the_python_device():
    from adprof.backends import tinygrad_backend as tgb

    x = tgb.Tensor(np.ones((3, 3)))
    (g,) = (0.7 * x + 0.3 * x).sum().gradient(x)
    assert g.device is None  # what tinygrad gives: realizing it would pick CPU (clang)
    placed = tgb.on_device(g, x)
    assert placed.device == x.device == "PYTHON"
    np.testing.assert_allclose(placed.numpy(), np.ones((3, 3)))


def test_every_mode_runs_without_a_compiler(tmp_path, fake_compilers):
    bin_dir, log = fake_compilers
    chain = tmp_path / "affine.py"
    chain.write_text(CHAIN)
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX", "DEV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    modes = ",".join(BACKEND_MODES["tinygrad"])
    proc = subprocess.run(
        [sys.executable, "-m", "adprof", "check", str(chain), "--backend", "tinygrad", "--mode", modes]
        + ["--depths", "1,2", "--no-structure", "--json", "-", "--cap", "30", "--budget", "120"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    report = json.loads(proc.stdout)
    assert sorted(r["mode"] for r in report["results"]) == sorted(BACKEND_MODES["tinygrad"])
    for r in report["results"]:
        assert r["error"] is None, r["error"]
        # the depths asked for (two: every op the chain has runs at both), in order; time decides here, so
        # round-robin passes (#35) and re-measures of a noisy depth may measure them again
        why = (r["stop"], r["reason"])
        assert list(dict.fromkeys(p["depth"] for p in r["points"]))[:2] == [1, 2], why
        assert {p["depth"] for p in r["points"]} == {1, 2}, why
    assert not log.exists(), log.read_text()
