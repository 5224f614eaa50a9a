"""A censored point is evidence: a point stopped by the budget or a timeout, or one that jumps far over what the
depths below it predict, is never read as ``linear``, and a guard never passes on the depths before it.

Two levels: :func:`adprof.analysis.classify.decide` on hand-built series, and the real series runner
(:func:`adprof.measure.series.run_series`: its stop rules, censoring and the re-measuring of jumps) driven by a
simulated worker on a simulated clock, then decided and guarded as ``adprof guard`` does (hypothesis over faults,
depths, budgets and caps). The same faults through the real CLI are in tests/test_guard_faults.py.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adprof import model
from adprof.analysis.classify import assess_series, decide, predicted_growth
from adprof.analysis.jumps import BEYOND_FACTOR, RUNAWAY_FACTOR, time_jumps, unconfirmed_jumps
from adprof.guard import GuardLimits, check_result, guard_checks, missing_depths
from adprof.measure import series as series_mod
from adprof.measure.client import WorkerTimeout
from adprof.measure.config import MeasureConfig
from adprof.measure.series import SeriesSpec, run_series
from adprof.model import CensorReason, Point, PointStatus, Result, Series, Stop, StopReason
from adprof.render.guard import measured_text, reason_text
from adprof.report import build_report

OVERHEAD = 0.003  # seconds of a point's wall outside its phases (gc, sleeps, the request)


def _healthy(d: int) -> dict[str, float]:
    return {"record": 1e-4 * d, "transform": 2e-4 * d, "drop": 5e-5 * d}


def _point(d: int, times: dict[str, float] | None = None, **kw) -> Point:
    times = times or _healthy(d)
    return Point(
        depth=d,
        times=times,
        counters={"transform": {"key_comparisons": 10 * d}, "drop": {"key_comparisons": 2 * d}},
        wall_seconds=sum(times.values()) + OVERHEAD,
        **kw,
    )


def _series(n: int) -> Series:
    return Series("c", "engine", "fixed", "traced", points=[_point(d) for d in range(1, n + 1)])


def _stopped(s: Series, depth: int, seconds: float, reason: CensorReason, stop: StopReason) -> None:
    status = PointStatus.KILLED if reason is CensorReason.TIMEOUT else PointStatus.CENSORED
    s.points.append(
        Point(
            depth=depth,
            times={"record": seconds},
            wall_seconds=seconds,
            status=status,
            censor_reason=reason,
            censored_phase="record",
        )
    )
    s.stop = Stop(stop, after=depth - 1, depth=depth, phase="record", seconds=seconds, limit=15.0)


# ------------------------------------------------------------------------------------------------- decide()


def test_a_budget_cut_far_over_the_model_is_a_runaway():
    s = _series(8)
    _stopped(s, 9, 38.9, CensorReason.BUDGET, StopReason.CENSORED)
    v = decide(s)
    assert v.kind == model.RUNAWAY and v.killed and v.is_finding
    assert v.fit.kind == "linear"  # the reading of the measured depths is kept
    (j,) = v.jumps
    assert j.depth == 9 and j.bound and j.ratio > RUNAWAY_FACTOR
    assert "depth 9" in v.reason and v.key_evidence[0] == v.reason


def test_a_budget_cut_a_little_over_the_model_is_inconclusive_saying_where_and_how_much():
    s = _series(8)
    predicted = sum(_healthy(9).values()) + OVERHEAD
    _stopped(s, 9, 6 * predicted, CensorReason.BUDGET, StopReason.BUDGET)
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and not v.is_finding
    (j,) = v.jumps
    assert BEYOND_FACTOR <= j.ratio < RUNAWAY_FACTOR
    assert "depth 9" in v.reason and f"{j.ratio:.0f}x" in v.reason


def test_a_budget_cut_within_the_model_leaves_the_reading():
    s = _series(8)
    _stopped(s, 9, 0.5 * (sum(_healthy(9).values()) + OVERHEAD), CensorReason.BUDGET, StopReason.BUDGET)
    v = decide(s)
    assert v.kind == model.LINEAR and not v.jumps


def test_a_kill_at_the_timeout_is_a_runaway_whatever_the_margin():
    s = _series(8)
    _stopped(s, 9, 4 * (sum(_healthy(9).values()) + OVERHEAD), CensorReason.TIMEOUT, StopReason.TIMEOUT)
    v = decide(s)
    assert v.kind == model.RUNAWAY and v.killed


def test_a_kill_the_model_predicts_is_not_a_hang():
    """Fixed depths may ask for a point the model expects to run past the timeout: its kill is no finding."""
    s = _series(8)
    _stopped(s, 400, 0.2, CensorReason.TIMEOUT, StopReason.TIMEOUT)  # the model predicts ~0.29 s there
    v = decide(s)
    assert v.kind == model.LINEAR and not v.killed and not v.jumps
    assert any("not a hang" in e for e in v.evidence)


def test_a_confirmed_jump_in_a_phase_no_counter_sees_is_inconclusive():
    s = _series(8)
    times = {**_healthy(9), "record": 8.0}
    s.points.append(_point(9, times, confirm_walls=[8.01, 8.0]))
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and "--trust" in v.reason and "depth 9" in v.reason
    assert v.jumps[0].phase == "record" and not v.jumps[0].bound
    assert decide(s, trust="counters").kind == model.LINEAR  # the user's choice


def test_an_unconfirmed_one_off_slow_point_is_not_a_jump():
    s = _series(8)
    s.points.append(_point(9, {**_healthy(9), "record": 0.05}))
    assert decide(s).kind == model.LINEAR


def test_a_jump_that_persists_needs_no_confirmation():
    s = _series(8)
    for d in (9, 10, 11):
        s.points.append(_point(d, {**_healthy(d), "record": 0.05 * d}))
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and v.jumps[0].depth == 9
    s.points[-1] = _point(11)  # a burst over two points (9, 10), then the cost as before: no jump
    assert decide(s).kind == model.LINEAR


def test_growth_in_a_phase_no_counter_sees_contradicts_the_counters():
    """Counters linear, the chain's own forward sleeping 0.0005 * 2**depth: the whole point's time decides."""
    s = Series("c", "engine", "fixed", "traced")
    for d in range(1, 13):
        times = {**_healthy(d), "record": 0.0005 * 2**d}
        s.points.append(_point(d, times))
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and "whole point" in v.reason and "--trust" in v.reason


def test_missing_planned_depths_fail_the_guard_with_the_budget_that_would_measure_them():
    s = _series(8)
    s.planned_depths = list(range(1, 13))
    s.stop = Stop(StopReason.BUDGET, after=8)
    r = Result(s, decide(s))
    assert r.verdict.kind == model.LINEAR and missing_depths(r) == [9, 10, 11, 12]
    c = check_result(r, GuardLimits(), budget=30.0)
    assert not c.ok and measured_text(c) == "missing depths"
    assert "depths 9-12 not measured" in reason_text(c) and "--budget" in reason_text(c)


# --------------------------------------------------------------------- the series runner, on a simulated clock


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


@dataclass
class Fault:
    depth: int  # from this depth on
    kind: str  # "hang" | "jump" | "sleep" (from depth 1: sleeps factor * 2^depth, no CPU time)
    factor: float = 1.0  # jump: the cost multiplies by this
    phase: str = "record"  # the phase that grows (record: no counter sees it)


class _SimWorker:
    """Answers point requests with an engine-like point (linear counters, linear times, a little noise), a fault
    from some depth, and bursts of load (every request for the next 20-200 ms far slower: a loaded machine's) that
    begin, in a third of the requests, where the last one ended."""

    def __init__(self, clock: _Clock, fault: Fault | None, seed: int, burst: float = 0.0) -> None:
        self.clock, self.fault, self.rng, self.burst = clock, fault, random.Random(seed), burst
        self.burst_until = -1.0  # the end of the current burst (simulated time)

    def count_instructions(self, counting: bool) -> None:
        return None

    def request(self, req, timeout, on_event=None, hard_deadline=None, first_timeout=None):
        d = int(req["depth"])
        times = {k: v * self.rng.uniform(1.0, 1.3) for k, v in _healthy(d).items()}
        f = self.fault
        if f is not None and d >= f.depth:
            if f.kind == "hang":
                times[f.phase] = math.inf
            elif f.kind == "jump":
                times[f.phase] *= f.factor
        cpu = dict(times)  # the thread's CPU time: what a load burst (or a sleep) does not inflate
        if f is not None and f.kind == "sleep":  # the chain sleeps factor * 2^depth seconds: wall time only
            times[f.phase] += f.factor * 2.0**d
        if self.burst and self.clock.now > self.burst_until and self.rng.random() < 0.3:
            self.burst_until = self.clock.now + self.rng.uniform(0.02, 0.2)
        if self.clock.now <= self.burst_until:
            times["transform"] += self.burst
        start, elapsed = self.clock.now, 0.0
        for phase, t in times.items():
            limit = timeout
            if hard_deadline is not None:
                limit = min(limit, hard_deadline - self.clock.now)
            if t > limit:
                self.clock.now += max(limit, 0.0)
                to = WorkerTimeout(phase, None, max(limit, 0.0), max(limit, 0.0))
                to.total = self.clock.now - start
                to.by_deadline = hard_deadline is not None and limit < timeout
                raise to
            self.clock.now += t
            elapsed += t
        self.clock.now += OVERHEAD
        counters = {"transform": {"key_comparisons": 10 * d}, "drop": {"key_comparisons": 2 * d}}
        return {"ok": True, "point": {"depth": d, "times": times, "counters": counters, "cpu_times": cpu}}


def _guard_run(monkeypatch, fault: Fault | None, depths: list[int], budget: float, cap: float, seed: int, burst=0.0):
    """One guarded series through the real series runner, decided and checked as ``adprof guard`` does."""
    clock = _Clock()
    monkeypatch.setattr(series_mod, "time", clock)
    spec = SeriesSpec("sim.py", "sim", "engine", "fixed", "traced", max(depths), depths=tuple(depths))
    spec.required_depths = tuple(depths)
    cfg = MeasureConfig(
        cap=cap,
        budget=budget,
        started=0.0,
        predictor=predicted_growth,
        assess=assess_series,
        jumps=unconfirmed_jumps,
    )
    worker = _SimWorker(clock, fault, seed, burst)
    s = run_series(spec, worker, cfg, allowance=budget, hard_deadline=budget)  # type: ignore[arg-type]
    report = build_report([s], {}, budget_seconds=budget)
    return report, guard_checks(report, GuardLimits())


faults = st.builds(
    Fault,
    depth=st.integers(min_value=2, max_value=14),
    kind=st.sampled_from(["hang", "jump"]),
    factor=st.sampled_from([10.0, 100.0, 1000.0, 10000.0]),
    phase=st.sampled_from(["record", "transform"]),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fault=faults,
    last=st.integers(min_value=6, max_value=14),
    budget=st.floats(min_value=5.0, max_value=200.0, allow_subnormal=False),
    cap=st.floats(min_value=0.5, max_value=20.0, allow_subnormal=False),
    seed=st.integers(min_value=0, max_value=10**6),
)
def test_no_fault_past_a_healthy_prefix_reads_linear_or_passes_the_guard(monkeypatch, fault, last, budget, cap, seed):
    fault.depth = min(fault.depth, last)
    depths = list(range(1, last + 1))
    report, guard = _guard_run(monkeypatch, fault, depths, budget, cap, seed)
    (r,) = report.results
    assert r.verdict.kind != model.LINEAR, (r.verdict.evidence, [p.depth for p in r.series.points])
    assert not guard.ok


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    last=st.integers(min_value=6, max_value=14),
    cap=st.floats(min_value=0.5, max_value=20.0, allow_subnormal=False),
    burst=st.sampled_from([0.0, 0.005, 0.05]),
    seed=st.integers(min_value=0, max_value=10**6),
)
def test_the_healthy_twin_passes_even_with_one_off_slow_runs(monkeypatch, last, cap, burst, seed):
    """The same series without the fault (an ample budget): linear, and the guard passes; a burst of load over a
    few points is re-measured at the end of the series, so it never reads as a jump."""
    report, guard = _guard_run(monkeypatch, None, list(range(1, last + 1)), 60.0, cap, seed, burst)
    (r,) = report.results
    assert r.verdict.kind == model.LINEAR and guard.ok, r.verdict.evidence
    assert not time_jumps(r.series, r.verdict.fit)


@pytest.mark.parametrize("burst", [0.0, 0.05])
def test_a_chain_that_sleeps_longer_with_depth_fails_the_guard_though_its_cpu_time_is_linear(monkeypatch, burst):
    """The issue's example: counters linear, the chain sleeping 0.0005 * 2**depth seconds. Its CPU time is flat, its
    wall time grows: the deepest depths are re-measured (load would not repeat), then time contradicts the
    counters."""
    report, guard = _guard_run(monkeypatch, Fault(1, "sleep", 0.0005), list(range(1, 13)), 60.0, 15.0, 3, burst)
    (r,) = report.results
    assert r.verdict.kind == model.INCONCLUSIVE and "wall time of the whole point" in r.verdict.reason
    assert not guard.ok
    assert all(p.confirm_walls for p in r.series.points if p.depth >= 11)


@pytest.mark.parametrize("kind", ["hang", "jump"])
def test_check_guard_and_fixture_decide_the_same_series_alike(monkeypatch, kind):
    """The three entry points share build_report -> decide: one measured series, one verdict."""
    from adprof.cli.run import make_report
    from adprof.measure.pool import Measured

    report, _ = _guard_run(monkeypatch, Fault(9, kind, 1000.0), list(range(1, 13)), 40.0, 15.0, seed=1)
    (s,) = [r.series for r in report.results]
    as_check = make_report(Measured(series=[s], structures={}, notes=[], elapsed=1.0), MeasureConfig(), ["check"])
    as_fixture = build_report([s], {}, budget_seconds=40.0)  # what adprof.guard.guard_targets builds
    kinds = {as_check.results[0].verdict.kind, as_fixture.results[0].verdict.kind, report.results[0].verdict.kind}
    assert len(kinds) == 1 and kinds != {model.LINEAR}
