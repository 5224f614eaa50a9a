"""Issue 35: the same answer twice. A noisy figure is never the only evidence for a finding (peak bytes alone read
``peak-only``), predictions that cannot run away, verdicts that need a span, the proxy that never sets the rate.
Deterministic: verdict kinds and exit codes, never wall time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from extras import requires, run_cli

REPO = Path(__file__).resolve().parents[1]
FLIP = str(REPO / "benchmarks" / "flip_chains.py")


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, timeout=900)


@pytest.mark.slow
@requires("torch")
def test_torch_traced_ordinary_chains_read_no_memory_finding(tmp_path):
    """The issue's three torch traced chains (tanh MLP layer, gated layer, nn.Linear + relu): torch traced counts its
    saved bytes in the joint graph (fxmem), so the memory verdict is linear, decided by them (not by the peak), exit 0.
    """
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
        assert mv["kind"] == "linear" and not mv["finding"] and mv["decided_by"] == "saved_bytes", r["chain"]
        assert mv["exponent"] == pytest.approx(1.0, abs=0.01) and not mv["remedies"]


# --------------------------------------------------------------------------- predictions that cannot run away

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from adprof.analysis.growth import fit_growth  # noqa: E402
from adprof.analysis.span import MIN_EXPONENTIAL_DEPTHS, MIN_SPAN, require_span, span_shortfall  # noqa: E402
from adprof.measure import bounds  # noqa: E402
from adprof.model import Fit  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
LAWS = {
    "flat": lambda d: 1.0,
    "linear": lambda d: float(d),
    "square": lambda d: float(d * d),
    "x1.5": lambda d: 1.5**d,
    "x2": lambda d: 2.0**d,
}


@SETTINGS
@given(
    law=st.sampled_from(sorted(LAWS)),
    depths=st.lists(st.integers(1, 24), min_size=2, max_size=8, unique=True).map(sorted),
    noise=st.lists(st.floats(1.0, 1.6, allow_subnormal=False), min_size=8, max_size=8),
    step=st.integers(1, 24),
    prediction=st.floats(0.0, 1e12, allow_subnormal=False),
)
def test_a_capped_prediction_never_exceeds_twice_the_steepest_law_and_holds_the_true_one(
    law, depths, noise, step, prediction
):
    """Whatever a model predicts, the capped prediction is at most MARGIN x the steepest law through the noisy points
    (never a runaway), at least MARGIN x the deepest point, and a prediction under the bound is left as it is."""
    f = LAWS[law]
    values = [f(d) * n for d, n in zip(depths, noise, strict=False)]
    x = depths[-1] + step
    bound = bounds.law_bound(depths, values, x)
    assert bound is not None and bound >= bounds.MARGIN * values[-1] * (1 - 1e-12)
    assert bounds.capped(prediction, depths, values, x) <= max(bound, 0.0) + 1e-9 * bound
    assert bounds.capped(prediction, depths, values, x) == min(prediction, bound)


@SETTINGS
@given(base=st.floats(1.2, 3.0, allow_subnormal=False), top=st.integers(3, 20), step=st.integers(1, 8))
def test_an_exact_exponential_is_never_capped_below_its_own_next_value(base, top, step):
    depths = list(range(1, top + 1))
    values = [base**d for d in depths]
    x = top + step
    assert bounds.capped(base**x, depths, values, x) == pytest.approx(base**x)


def test_the_issues_runaways_are_capped():
    # "next point (depth 128) predicted 20.96 s" after points of 0.13 and 0.26 s at depths 32 and 64
    assert bounds.capped(20.96, [16, 32, 64], [0.07, 0.13, 0.26], 128) < 3.0  # not 20.96
    # "predicted forward0 81.47 s > 10 s cap" after 0.055 and 0.063 s at depths 2 and 3
    assert bounds.capped(81.47, [2, 3], [0.055, 0.063], 4) < 0.2
    assert bounds.law_bound([3], [0.06], 4) is None  # one point bounds nothing


# --------------------------------------------------------------------------- verdicts need a span


def _time_fit(kind: str, depths: list[int]) -> Fit:
    fit = Fit(metric="time: compile", kind=kind, source="time", base=2.0, exponent=2.0, predicts=True)
    fit.depths = list(depths)
    return fit


@SETTINGS
@given(
    kind=st.sampled_from(["exponential", "superlinear", "mild", "linear", "inconclusive"]),
    depths=st.lists(st.integers(1, 64), min_size=1, max_size=12),
    source=st.sampled_from(["time", "counters", "metric"]),
)
def test_a_time_reading_claims_a_growth_only_over_depths_that_span_it(kind, depths, source):
    fit = _time_fit(kind, depths)
    fit.source = source
    out = require_span(fit)
    distinct = sorted(set(depths))
    short = (kind == "exponential" and len(distinct) < MIN_EXPONENTIAL_DEPTHS) or (
        kind in ("superlinear", "mild") and distinct[-1] < MIN_SPAN * distinct[0]
    )
    if source == "time" and short:
        assert out.kind == "inconclusive" and not out.predicts and "add depths" in out.reason
        assert span_shortfall(kind, depths)
    else:
        assert out.kind == kind and out.predicts


def test_the_rk4_reading_from_three_depths_is_inconclusive():
    """JAX compile of an RK4 solver: x2.01/step from repeats of depths 1-3 only."""
    depths = [1, 2, 3] * 10
    values = [[0.05 * 2.01**d * (1 + 0.01 * (i % 3))] for i, d in enumerate(depths)]
    fit = require_span(fit_growth(depths, values, metric="time: compile", source="time"))
    assert fit.kind == "inconclusive" and "3 distinct depths" in fit.reason and not fit.predicts


@SETTINGS
@given(
    level=st.integers(10_000, 10**7),
    bumps=st.lists(st.tuples(st.integers(0, 17), st.integers(1, 2)), min_size=1, max_size=3),
)
def test_a_flat_count_with_a_few_calls_of_jitter_reads_flat(level, bumps):
    """86,657 / 86,658 / 86,659 Python calls: flat, not 'only one growing step'."""
    depths = list(range(1, 19))
    values = [level] * 18
    for i, b in bumps:
        values[i] = level + b
    values[0] = level  # never rising at every step
    fit = fit_growth(depths, values, metric="python_calls", exact=True, source="metric")
    assert fit.kind == "linear" and fit.exponent == 0.0, (fit.kind, fit.reason)


@SETTINGS
@given(
    level=st.integers(1_000, 10**7),
    shares=st.lists(st.floats(-0.0045, 0.0045, allow_subnormal=False), min_size=5, max_size=5),
)
def test_a_flat_count_wobbling_under_a_percent_reads_flat(level, shares):
    """JAX eager's backward python_calls of dense4 read 4,483 / 4,467 x4 / 4,483 across depths in one worker (how
    many calls a cache saves depends on what the worker ran before): flat, not 'only one growing step'."""
    depths = [8, 16, 32, 64, 128, 256]
    values = [float(level)] + [level * (1 + s) for s in shares]
    values[2] = min(values[1], values[2])  # not rising at every step
    fit = fit_growth(depths, values, metric="python_calls", exact=True, source="metric")
    assert fit.kind == "linear" and fit.exponent == 0.0, (fit.kind, fit.reason, values)


def test_the_dense4_wobble_reads_flat():
    values = [4483, 4467, 4467, 4467, 4467, 4483]
    fit = fit_growth([8, 16, 32, 64, 128, 256], values, metric="python_calls", exact=True, source="metric")
    assert fit.kind == "linear" and fit.exponent == 0.0, (fit.kind, fit.reason)


def test_a_steady_small_rise_on_a_large_count_is_not_jitter():
    depths = list(range(1, 19))
    fit = fit_growth(depths, [86_657 + 2.0**d for d in depths], metric="python_calls", exact=True, source="metric")
    assert fit.kind == "exponential"


# --------------------------------------------------------------------------- the guard line says "loaded"


def test_the_guard_line_says_loaded_where_check_marks_the_row_loaded():
    from adprof.guard import GuardLimits, guard_checks
    from adprof.model import Point, Series
    from adprof.render.guard import guard_text
    from adprof.report import build_report

    s = Series("gated", "torch", None, "eager", points=[])
    for d in (2, 4, 8, 16, 32, 64):
        s.points.append(Point(depth=d, times={"backward": 1e-4 * d}, samples={"backward": [1e-4 * d] * 3}))
    report = build_report([s], {})
    report.results[0].verdict.loaded_machine = True  # time decided while the load per core was high
    text = guard_text(guard_checks(report, GuardLimits()))
    assert text.splitlines()[0].split(":")[0].endswith("gated [torch, eager] (loaded)"), text
    report.results[0].verdict.loaded_machine = False
    assert "(loaded)" not in guard_text(guard_checks(report, GuardLimits()))
