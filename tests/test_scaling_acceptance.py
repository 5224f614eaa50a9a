"""Issue #34 acceptance through the real CLI: a pathology under superlinear arithmetic is still found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GROWING = str(Path(__file__).with_name("growing_reuse.py"))


def check_json(*args: str) -> dict[tuple[str, str, str], dict]:
    r = subprocess.run(
        [sys.executable, "-m", "adprof", "check", *args, "--json", "-"], capture_output=True, text=True, timeout=600
    )
    assert r.returncode in (0, 1), r.stderr
    return {(x["chain"], x["profile"], x["mode"]): x for x in json.loads(r.stdout)["results"]}


def test_v08_reuse_under_growing_arrays_is_found_and_fixed_is_not() -> None:
    """``sin(y*y)`` on arrays of shape (depth, 4): the arithmetic grows ~depth², the program is superlinear, and
    still the v08 transform reads exponential (x2 per layer: the excess over the program), decided on the engine's
    deterministic counters; ``fixed`` on the same chain reads no finding."""
    res = check_json(f"{GROWING}::grow_reuse", "--profile", "v08,fixed", "--mode", "traced")
    v08, fixed = res[("grow_reuse", "v08", "traced")], res[("grow_reuse", "fixed", "traced")]
    assert v08["verdict"] == "exponential-transform", v08["evidence"]
    assert v08["finding"] is True
    assert 1.9 < v08["base"] < 2.1
    assert v08["decided_by"] == "counter_fit"
    assert fixed["verdict"] == "linear", fixed["evidence"]
    assert fixed["finding"] is False
    for r in (v08, fixed):  # the program grows superlinearly: its arithmetic explains the arrays, not the reuse
        arith = r["explained"]["program_fits"]["flops"]
        assert arith["exponent"] > 1.5, arith


@pytest.mark.slow  # ~14 s; the traced test above is the default run's representative
def test_v08_eager_backward_outgrows_superlinear_arithmetic() -> None:
    """Eager: the backward is read against the arithmetic (~depth^1.7, superlinear), and its excess is still x2 per
    layer: exponential-backward; ``fixed`` reads linear."""
    res = check_json(f"{GROWING}::grow_reuse", "--profile", "v08,fixed", "--mode", "eager")
    v08, fixed = res[("grow_reuse", "v08", "eager")], res[("grow_reuse", "fixed", "eager")]
    assert v08["verdict"] == "exponential-backward", v08["evidence"]
    ex = v08["explained"]
    assert ex["superlinear"] is True and ex["basis"] == "flops"
    assert ex["excess_kind"] == "exponential" and 1.9 < ex["excess_base"] < 2.1
    assert fixed["verdict"] == "linear" and fixed["finding"] is False


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}  # one line per sentence
    return subprocess.run([sys.executable, "-m", "adprof", *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow  # three CLI runs (~15 s quiet); tests/test_explained.py holds the same rule on the guard's checks
def test_guard_holds_the_excess_on_a_size_axis_and_absolute_the_raw_growth_as_check_reads_them(tmp_path) -> None:
    """Self-attention over seq_len (engine fixed, eager): the saved bytes grow ~n² as the forward's intermediates do.
    ``guard`` holds the excess by default (~n^1: passes a 1.2 memory exponent), ``--absolute`` the raw growth (~n²:
    fails it); ``check`` prints the same two readings (the memory verdict is the excess', the raw fit beside it)."""
    target = "probes/scaling.py::attention"
    opts = ("--mode", "eager", "--depths", "8,16,32,64", "--no-color")
    held = _run("guard", target, *opts, "--max-memory-exponent", "1.2", "--json", str(tmp_path / "g.json"))
    assert held.returncode == 0, held.stdout + held.stderr
    raw = _run("guard", target, *opts, "--max-memory-exponent", "1.2", "--absolute", "--json", str(tmp_path / "a.json"))
    assert raw.returncode == 1, raw.stdout + raw.stderr
    assert "limited to depth^1.2" in raw.stdout
    checked = _run("check", target, "--profile", "fixed", *opts, "--json", str(tmp_path / "c.json"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (c,) = json.loads((tmp_path / "c.json").read_text())["results"]
    (g,) = json.loads((tmp_path / "g.json").read_text())["results"]
    for r in (c, g):  # the same reading in both: the excess over the intermediates linear, the raw growth ~n²
        assert r["memory"]["kind"] == "linear", r["memory"]
        assert r["explained"]["memory_excess_exponent"] < 1.2
        assert r["memory"]["fit"]["exponent"] > 1.8
    assert f"{g['explained']['memory_excess_exponent']:.2f} <= 1.20" in held.stdout
    assert f"grow as depth^{c['memory']['fit']['exponent']:.2f} over depths" in raw.stdout
