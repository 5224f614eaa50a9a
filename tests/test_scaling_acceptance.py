"""Issue #34 acceptance through the real CLI: a pathology under superlinear arithmetic is still found."""

from __future__ import annotations

import json
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
