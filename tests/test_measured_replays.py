"""Series measured through the real CLI, decided again from their JSON: the readings that flipped between runs.

``data/jax_unrolled_loop_quiet.json``: jax-ml/jax#2777's unrolled loop under ``--mode compile`` on a quiet machine
(flip_rate's zoo/unrolled_loop, the JSON trimmed to its points): XLA's compile is 2.3 s at 75 unrolls, 17.0 s at
76 and 12.9 s at 81, and 90 was killed at its 32 s timeout. Under the busy loop it read superlinear-transform
5 of 5 times; quiet, the tail's misfit made the model inconclusive and the kill a runaway.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from adprof.analysis import consistency
from adprof.model import Fit
from adprof.render.jsonout import load_report
from adprof.report import build_report

DATA = Path(__file__).parent / "data"


def _decided(name: str):
    series = load_report(json.loads((DATA / name).read_text())).results[0].series
    return build_report([series], {}).results[0].verdict


def test_a_compile_that_jumps_past_its_superlinear_model_stays_superlinear(monkeypatch):
    v = _decided("jax_unrolled_loop_quiet.json")
    assert v.kind == "superlinear-transform" and v.killed
    assert 1.3 <= v.fit.interval[0] and v.fit.interval[0] <= 2.45 <= v.fit.interval[1]  # the busy runs' 2.13-2.74
    assert any("at least the model's" in n for n in v.fit.notes)
    monkeypatch.setattr(consistency, "_above_a_finding", lambda *a: False)
    assert _decided("jax_unrolled_loop_quiet.json").kind == "runaway"  # what the quiet run read


def test_a_tail_under_the_model_still_contradicts_it():
    """The rule is one-sided: deepest points under a superlinear model (a cost that stops growing) are no evidence
    of the model's growth."""
    fit = Fit(metric="t", kind="superlinear", exponent=2.0, overhead=0.0, scale=64.0**2, model="a + c*d^p")
    fit.depths = [8, 16, 32, 64]
    d = np.array(fit.depths, float)

    def law(x):
        return x**2

    assert consistency._above_a_finding(d, law(d) * 1.5, fit, law)
    assert not consistency._above_a_finding(d, np.array([64.0, 256.0, 1024.0, 1100.0]), fit, law)
    fit.kind = "linear"
    assert not consistency._above_a_finding(d, law(d) * 1.5, fit, law)
