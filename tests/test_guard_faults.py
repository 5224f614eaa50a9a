"""The guard's fault suite through the real CLI (benchmarks/guard_faults.py): a chain or a program healthy up to
a depth, then hanging, sleeping or F times slower, never passes ``adprof guard``; its healthy twin does.

The default run keeps a hang on the engine under a tight budget and a jump on a time-decided ``--cmd`` program
(the healthy twins' representative is tests/test_censored_evidence.py's simulated twin); ``-m slow`` adds a jump
on the engine's counters, the CLI twins and the suite's quick subset (every fault kind at depth 5, both backends);
the whole suite is the benchmark.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("guard_faults", ROOT / "benchmarks" / "guard_faults.py")
faults = importlib.util.module_from_spec(_spec)
sys.modules["guard_faults"] = faults  # dataclasses resolve their module by name
_spec.loader.exec_module(faults)  # type: ignore[union-attr]

TIGHT = ("budget 3 cap 0.25", ("--budget", "3", "--cap", "0.25"))
ROOMY = ("budget 20 cap 2", ("--budget", "20", "--cap", "2"))


@pytest.mark.parametrize(
    ("backend", "kind", "k", "setting"),
    [
        ("engine", "hang", 5, TIGHT),
        ("cmd", "jump10", 8, ROOMY),
        pytest.param("engine", "jump100", 5, ROOMY, marks=pytest.mark.slow),
        pytest.param("engine", "none", 1, ROOMY, marks=pytest.mark.slow),
        pytest.param("cmd", "none", 1, ROOMY, marks=pytest.mark.slow),
    ],
)
def test_a_fault_fails_the_guard_and_its_healthy_twin_passes(tmp_path, backend, kind, k, setting):
    run = faults.run_one(tmp_path, backend, kind, k, setting)
    assert run.ok, run
    assert "Traceback" not in run.line
    if kind != "none":
        assert run.line.startswith("FAIL"), run.line


@pytest.mark.slow
def test_the_quick_fault_suite_has_no_false_pass_and_no_false_fail():
    assert faults.main(["--quick", "--jobs", "2"]) == 0
