"""Measuring: engine points in both modes, the worker protocol, the depth schedule, caps, timeouts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adprof.backends import UnknownBackendError, check_backend
from adprof.backends.engine import PointFailure, measure_point
from adprof.measure import (
    Budget,
    MeasureConfig,
    Schedule,
    SeriesSpec,
    Worker,
    halving_depths,
    list_chains,
    predict_next,
    run_series,
)
from adprof.model import CensorReason, Point, PointStatus, StopReason
from probes.chains import mul

BAD = Path(__file__).parent / "chains_bad"
CHAINS = str(Path(__file__).resolve().parent.parent / "probes" / "chains.py")
TRACED = ("record", "transform", "compile", "run", "drop")
EAGER = ("forward0", "backward0", "forward", "backward")


@pytest.fixture
def worker():
    w = Worker()
    yield w
    w.close()


@pytest.mark.parametrize("profile", ["v08", "fixed"])
def test_traced_point_fields_and_counters(profile):
    p = measure_point(mul, "traced", 6, profile)
    assert p.depth == 6
    assert set(p.times) == set(TRACED) and set(p.counters) == set(TRACED)
    assert all(t >= 0 for t in p.times.values())
    assert set(p.ops) == {"value_ops", "derivative_ops", "program_ops"}
    assert p.ops["value_ops"] == 13  # 2 ops per layer + sum
    assert p.counters["transform"]["derivative_traces_built"] == 1
    assert p.counters["drop"]["derivative_traces_dropped"] == 1
    kc = p.counters["transform"]["key_comparisons"] + p.counters["drop"]["key_comparisons"]
    assert (kc > 500) if profile == "v08" else (kc == 0)
    assert p.counters["run"]["ops_executed"] == p.ops["program_ops"]


@pytest.mark.parametrize("profile", ["v08", "fixed"])
def test_eager_point_fields_and_counters(profile):
    p = measure_point(mul, "eager", 5, profile, calls=4)
    assert set(p.times) == set(EAGER) and set(p.counters) == set(EAGER)
    assert len(p.extra["backward_calls"]) == 4
    assert len(p.extra["backward_call_counters"]) == 4
    assert all(isinstance(c, dict) and "metadata_lookups" in c for c in p.extra["backward_call_counters"])
    assert p.extra["cache"]["misses"] == 1 and p.extra["cache"]["hits"] == 3
    rebuilds = [c["trace_rebuilds"] for c in p.extra["backward_call_counters"]]
    assert rebuilds == ([1, 1, 1, 1] if profile == "v08" else [1, 0, 0, 0])


def test_scalar_input_and_failures():
    from adprof.chain import chain

    @chain(input=0.3)
    def scalar(xp, x, depth):
        y = x
        for _ in range(depth):
            y = y * 0.5 + 0.1
        return y

    assert measure_point(scalar, "traced", 3, "fixed").ops["value_ops"] > 0
    assert measure_point(scalar, "eager", 3, "fixed", calls=2).times["backward"] >= 0

    @chain(input_shape=(2,))
    def vector(xp, x, depth):
        return x * 2.0

    with pytest.raises(PointFailure) as e:
        measure_point(vector, "traced", 1, "v08")
    assert e.value.kind == "output" and "not a scalar" in e.value.message
    with pytest.raises(PointFailure) as e:
        measure_point(mul, "traced", 12, "v08", counter_budget=1000)
    assert e.value.kind == "budget" and e.value.phase == "transform"
    assert "record" in e.value.point.times


def test_worker_protocol_point_and_events(worker):
    events = []
    ans = worker.request(
        {
            "op": "point",
            "file": CHAINS,
            "chain": "mul",
            "backend": "engine",
            "profile": "v08",
            "mode": "traced",
            "depth": 3,
        },
        30,
        events.append,
    )
    assert ans["ok"], ans
    assert set(ans["point"]["times"]) == set(TRACED)
    assert [e["phase"] for e in events if e["event"] == "phase"][:2] == ["record", "transform"]
    ans = worker.request(
        {
            "op": "point",
            "file": CHAINS,
            "chain": "reuse[k=2]",
            "backend": "engine",
            "profile": "fixed",
            "mode": "eager",
            "depth": 2,
            "calls": 3,
        },
        30,
    )
    assert ans["ok"] and ans["point"]["calls"] == 3
    metas = list_chains(CHAINS, None, worker)
    names = [m["name"] for m in metas]
    assert "reuse[k=3]" in names and "mul" in names
    assert next(m for m in metas if m["name"] == "reuse[k=3]")["reuse"] == 3


def test_schedule_unit_steps_then_doublings():
    def pts(depths, f):
        return [Point(depth=d, counters={"transform": {"key_comparisons": f(d)}}) for d in depths]

    s = Schedule(400, "traced")
    assert s.next_depth([]) == 1
    assert s.next_depth(pts(range(1, 5), lambda d: 10 * d)) == 5
    assert s.next_depth(pts(range(1, 9), lambda d: 10 * d)) == 12  # linear: doublings down from 400
    assert halving_depths(400, 8) == [12, 25, 50, 100, 200, 400]
    s = Schedule(14, "traced")
    assert s.next_depth(pts(range(1, 9), lambda d: 2**d)) == 9  # exponential: keep unit steps
    assert s.next_depth(pts(range(1, 15), lambda d: 2**d)) is None  # the declared depths bound it
    s = Schedule(400, "traced")
    assert s.next_depth(pts(range(1, 9), lambda d: d**3)) == 12  # power law: ratios decay
    assert Schedule(50, "traced", explicit=[2, 4, 8]).next_depth(pts([2, 4], lambda d: d)) == 8
    assert Schedule(50, "traced", unit_steps=True).next_depth(pts(range(1, 20), lambda d: d)) == 20


def test_predict_next_and_budget_share():
    p1 = Point(depth=10, times={"transform": 0.1}, counters={"transform": {"key_comparisons": 1000}})
    p2 = Point(depth=11, times={"transform": 0.2}, counters={"transform": {"key_comparisons": 2000}})
    assert predict_next([p1, p2], 12, exponential=True)["transform"] == pytest.approx(0.4)
    p1 = Point(depth=100, times={"backward": 0.1})
    p2 = Point(depth=200, times={"backward": 0.4})
    assert predict_next([p1, p2], 400, exponential=False)["backward"] == pytest.approx(1.6)
    b = Budget(60, lanes=2)
    b.add(10)
    assert b.claim() == pytest.approx(12, rel=0.01)  # 60 s * 2 lanes / 10 series


def _spec(file, chain, profile="v08", mode="traced", max_depth=14):
    return SeriesSpec(file=str(file), chain=chain, backend="engine", profile=profile, mode=mode, max_depth=max_depth)


def test_series_stops_at_cap_and_says_why(worker):
    cfg = MeasureConfig(cap=0.02, budget=30)  # a 80 ms timeout: depth 1 is never killed on a loaded machine
    s = run_series(_spec(CHAINS, "mul"), worker, cfg, allowance=30)
    assert s.error is None
    assert s.stop.after == s.points[-1].depth and s.stop.limit == 0.02
    assert s.stop.reason in (StopReason.CAP, StopReason.PREDICTED_CAP)
    assert [p.depth for p in s.points] == list(range(1, len(s.points) + 1))
    assert len(s.points) < 14


def test_series_counter_budget_is_censored(worker):
    cfg = MeasureConfig(cap=5, budget=30, counter_budget=20_000)
    s = run_series(_spec(CHAINS, "mul"), worker, cfg, allowance=30)
    assert s.points[-1].status is PointStatus.CENSORED and s.points[-1].censor_reason is CensorReason.COUNTER_BUDGET
    assert s.stop.reason is StopReason.COUNTER_BUDGET and s.stop.depth == s.points[-1].depth


def test_hang_is_killed_at_the_timeout(worker):
    cfg = MeasureConfig(cap=0.1, budget=30)  # hard timeout 0.4 s per phase
    t0 = time.monotonic()
    s = run_series(_spec(BAD / "late_hang.py", "late_hang", profile="fixed"), worker, cfg, allowance=30)
    assert time.monotonic() - t0 < 5
    assert [p.depth for p in s.points] == [1, 2, 3]
    assert s.points[-1].status is PointStatus.KILLED and s.points[0].status is PointStatus.EXACT
    assert (s.stop.reason, s.stop.after, s.stop.depth, s.stop.phase) == (StopReason.TIMEOUT, 2, 3, "record")
    assert s.killed is s.stop and s.stop.limit == pytest.approx(0.4)
    s = run_series(_spec(BAD / "hang.py", "hangs", profile="fixed"), worker, cfg, allowance=30)
    assert s.error and "killed" in s.error and not s.points


def test_worker_crash_is_a_finding(worker):
    cfg = MeasureConfig(cap=1, budget=30)
    s = run_series(_spec(BAD / "crash.py", "segfault", profile="fixed", mode="eager"), worker, cfg, 30)
    assert [p.depth for p in s.points] == [1]
    assert "crashed" in s.error and "SIGSEGV" in s.error
    ans = worker.request({"op": "ping"}, 30)  # a fresh worker replaced the dead one
    assert ans["ok"]


def test_unknown_backend():
    assert check_backend("engine") == "engine"
    with pytest.raises(UnknownBackendError, match="unknown backend 'nosuch'; known backends: engine"):
        check_backend("nosuch")
