"""Issue 35: the same answer twice. A noisy figure is never the only evidence for a finding (peak bytes alone read
``peak-only``), predictions that cannot run away, verdicts that need a span, the proxy that never sets the rate.
Deterministic: verdict kinds and exit codes, never wall time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from extras import requires

REPO = Path(__file__).resolve().parents[1]
FLIP = str(REPO / "benchmarks" / "flip_chains.py")


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"},
    )


@pytest.mark.slow
@requires("torch")
def test_torch_traced_ordinary_chains_read_no_memory_finding(tmp_path):
    """The issue's three torch traced chains (tanh MLP layer, gated layer, nn.Linear + relu): torch traced measures
    only the peak, so the memory verdict is peak-only with its figure, never a finding, exit 0."""
    targets = [f"{FLIP}::{name}" for name in ("mlp", "gated", "linear_relu")]
    run = adprof(
        "check", *targets, "--backend", "torch", "--mode", "traced", "--memory", "--depths", "2,4,8,16",
        "--cap", "10", "--budget", "120", "--json", "out.json", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    assert {r["chain"] for r in results} == {"mlp", "gated", "linear_relu"}
    for r in results:
        mv = r["memory"]
        assert mv["kind"] == "peak-only" and not mv["finding"] and mv["decided_by"] == "peak_bytes", r["chain"]
        assert not mv["remedies"] and "no memory finding" in mv["reason"]
