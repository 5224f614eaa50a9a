"""Issue-level acceptance of ``adprof check`` on the shipped probes (through the CLI, JSON output)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def check_json(*args):
    r = subprocess.run(
        [sys.executable, "-m", "adprof", "check", *args, "--json", "-"], capture_output=True, text=True, timeout=600
    )
    assert r.returncode in (0, 1), r.stderr
    return {(x["chain"], x["profile"], x["mode"]): x for x in json.loads(r.stdout)["results"]}


def test_whole_graph_trg_is_exponential_on_v08_traced_and_linear_on_fixed():
    res = check_json("probes/trg.py", "--mode", "traced")
    v08 = res[("trg", "v08", "traced")]
    assert v08["verdict"] == "exponential-transform"
    assert v08["base"] > 10  # seed 001: about 20 per step
    assert res[("trg", "fixed", "traced")]["verdict"] == "linear"


@pytest.mark.slow  # both modes (the eager v08 backward at step 2 takes ~3 s); traced stays in the default run
def test_whole_graph_trg_is_exponential_on_v08_in_both_modes_and_linear_on_fixed():
    res = check_json("probes/trg.py")
    for mode, kind in (("traced", "exponential-transform"), ("eager", "exponential-backward")):
        v08 = res[("trg", "v08", mode)]
        assert v08["verdict"] == kind
        assert v08["base"] > 10  # seed 001: about 20 per step
        assert res[("trg", "fixed", mode)]["verdict"] == "linear"


@pytest.mark.slow  # tests/test_cli.py::test_halve_reads_seed_000 checks the same verdict in the default run
def test_seed_000_sin_chain_eager_v08_superlinear_backward():
    res = check_json("probes/chains.py::sin", "--mode", "eager")
    v = res[("sin", "v08", "eager")]
    assert v["verdict"] == "superlinear-backward"
    assert 1.7 < v["exponent"] < 2.2 and v["halving_ratio"] >= 3
    assert res[("sin", "fixed", "eager")]["verdict"] == "linear"


@pytest.mark.slow
def test_every_standard_chain_within_the_default_budget():
    import time

    t0 = time.monotonic()
    res = check_json("probes/chains.py")
    assert time.monotonic() - t0 < 75
    expected_base = {"mul": 2, "cube": 3, "svd3": 3}
    for (chain, profile, mode), r in res.items():
        if profile == "fixed":
            assert r["verdict"] == "linear", (chain, mode, r["evidence"])
        elif chain in ("sin", "linear", "matmul", "reuse[k=1]"):
            assert r["verdict"].startswith("superlinear"), (chain, mode)
        else:
            assert r["verdict"].startswith("exponential"), (chain, mode)
            if chain in expected_base:
                assert r["base"] == pytest.approx(expected_base[chain], abs=0.15)
