"""Issue #35, time that resists load: the round-robin passes over fixed depths that time decides, the lower
envelope the fit reads, and the thread's CPU time recorded beside each wall-clock repeat (``Point.cpu_samples``).

The series runner is driven by a simulated worker on a simulated clock (no wall time is read or asserted on): the
order of the points, the passes' end and the budget are deterministic.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof.analysis.classify import assess_series
from adprof.analysis.costs import CPU_CLOCK, covered_share, cpu_clock, fit_cost
from adprof.analysis.growth import fit_growth
from adprof.backends import base
from adprof.backends.peer_common import eager_summary
from adprof.measure import series as series_mod
from adprof.measure.config import MeasureConfig
from adprof.measure.series import MAX_OPEN_PASSES, SeriesSpec, pass_order, point_from_dict, run_series
from adprof.measure.time_schedule import MIN_PASSES, SWEEP
from adprof.model import Point, ScheduleEnd, Series, wait_key
from adprof.plain import to_plain

DEPTHS = (2, 4, 8, 16, 32)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


class _EagerWorker:
    """Answers point requests with a torch-eager-like point: no counters, no deciding metric (time decides), a
    linear backward cost with a little noise on each of 5 warm calls, their CPU seconds beside them; each request
    advances the simulated clock by ``per_point`` seconds. ``counters``: engine-like points (counters decide)."""

    def __init__(self, clock: _Clock, seed: int, per_point: float = 0.05, counters: bool = False) -> None:
        self.clock, self.rng, self.per_point, self.counters = clock, random.Random(seed), per_point, counters
        self.depths: list[int] = []

    def count_instructions(self, counting: bool) -> None:
        return None

    def request(self, req, timeout, on_event=None, hard_deadline=None, first_timeout=None):
        d = int(req["depth"])
        self.depths.append(d)
        walls = [(1e-4 + 2e-5 * d) * self.rng.uniform(1.0, 1.2) for _ in range(5)]
        cpus = [w * 0.98 for w in walls]
        fwd = [w / 2 for w in walls]
        self.clock.now += self.per_point
        point = {
            "depth": d,
            "times": {"forward": min(fwd), "backward": min(walls)},
            "samples": {"forward": fwd, "backward": walls},
            "cpu_samples": {"forward": [c / 2 for c in cpus], "backward": cpus},
            "calls": 6,
        }
        if self.counters:
            point["counters"] = {"backward": {"key_comparisons": 10 * d}}
        return {"ok": True, "point": point}


def _run(monkeypatch, *, budget: float = 60.0, per_point: float = 0.05, counters: bool = False, seed: int = 0):
    clock = _Clock()
    monkeypatch.setattr(series_mod, "time", clock)
    spec = SeriesSpec("sim.py", "sim", "torch", None, "eager", max(DEPTHS), depths=DEPTHS)
    spec.required_depths = DEPTHS
    cfg = MeasureConfig(cap=5.0, budget=budget, started=0.0, assess=assess_series)
    worker = _EagerWorker(clock, seed, per_point, counters)
    s = run_series(spec, worker, cfg, allowance=budget, hard_deadline=budget)  # type: ignore[arg-type]
    return s, worker


# --------------------------------------------------------------------------- the order of a pass


@given(
    depths=st.lists(st.integers(min_value=1, max_value=10_000), min_size=1, max_size=30),
    done=st.integers(min_value=0, max_value=50),
)
def test_a_pass_measures_every_depth_once_alternating_direction(depths, done):
    order = pass_order(depths, done)
    assert sorted(order) == sorted(set(depths))  # every depth, once
    assert order == sorted(order, reverse=done % 2 == 1)  # after the first (upward) pass: down, up, down, ...
    assert pass_order(depths, done + 1) == order[::-1]  # the next pass starts where this one ended


def _passes(depths_measured: list[int], n: int) -> list[list[int]]:
    return [depths_measured[i : i + n] for i in range(0, len(depths_measured), n)]


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_fixed_time_decided_depths_are_measured_round_robin(seed):
    with pytest.MonkeyPatch.context() as mp:
        s, worker = _run(mp, seed=seed)
    assert s.error is None and s.stop is None
    passes = _passes(worker.depths, len(DEPTHS))
    assert passes[0] == list(DEPTHS)  # the fixed depths first, as planned
    assert len(passes) >= MIN_PASSES
    for i, p in enumerate(passes):
        if len(p) == len(DEPTHS):
            assert p == pass_order(DEPTHS, i)  # round-robin: never two runs of a depth in a row within a pass
    assert all(p.scheduled == SWEEP for p in s.points[len(DEPTHS) :])
    assert all(p.scheduled == "" for p in s.points[: len(DEPTHS)])
    assert s.schedule_end in (ScheduleEnd.SETTLED, ScheduleEnd.PASSES)
    assert len(passes) <= MAX_OPEN_PASSES


def test_counter_decided_fixed_depths_get_no_passes(monkeypatch):
    s, worker = _run(monkeypatch, counters=True)
    assert worker.depths == list(DEPTHS)
    assert s.schedule_end is None


def test_passes_stop_at_the_budget(monkeypatch):
    s, worker = _run(monkeypatch, budget=1.0, per_point=0.1)  # room for about 10 points
    assert len(DEPTHS) < len(worker.depths) < 3 * len(DEPTHS)
    assert s.schedule_end is ScheduleEnd.BUDGET
    assert s.stop is None  # the passes' end is no stop of the series: every planned depth is measured


# --------------------------------------------------------------------------- the lower envelope


@settings(max_examples=30, deadline=None)
@given(
    runs=st.lists(
        st.lists(st.floats(min_value=1e-6, max_value=1.0, allow_subnormal=False), min_size=1, max_size=6),
        min_size=4,
        max_size=4,
    ),
    extra=st.lists(st.floats(min_value=1e-6, max_value=1.0, allow_subnormal=False), min_size=1, max_size=6),
)
def test_the_fit_reads_the_least_run_of_each_depth_over_all_its_points(runs, extra):
    depths = [2, 4, 8, 16, 2]  # depth 2 measured twice (two passes): its runs are pooled
    values = [*runs, extra]
    fit = fit_growth(depths, values, bootstrap=False)
    want = {2: min(runs[0] + extra), 4: min(runs[1]), 8: min(runs[2]), 16: min(runs[3])}
    if fit.depths:
        assert dict(zip(fit.depths, fit.values, strict=True)) == pytest.approx(want)


# --------------------------------------------------------------------------- CPU time beside wall time


def test_eager_summary_keeps_each_calls_cpu_time_beside_its_wall_time():
    fwd = [{"seconds": 0.3 + i, "cpu_seconds": 0.2 + i} for i in range(5)]
    bwd = [{"seconds": 0.5 + i, "cpu_seconds": 0.4 + i} for i in range(5)]
    pt = eager_summary(Point(depth=3), fwd, bwd)
    for name, calls in (("forward", fwd), ("backward", bwd)):
        assert pt.cpu_samples[name] == [c["cpu_seconds"] for c in calls[1:]]
        assert len(pt.cpu_samples[name]) == len(pt.samples[name])
        assert pt.cpu_samples[f"{name}0"] == [calls[0]["cpu_seconds"]]


def test_measure_phase_records_cpu_samples_and_they_survive_json():
    pt = Point(depth=1)
    base.measure_phase(pt, "run", lambda: sum(range(100)), repeats=4)
    assert len(pt.cpu_samples["run"]) == len(pt.samples["run"]) == 4
    assert all(c >= 0 for c in pt.cpu_samples["run"])
    again = point_from_dict(to_plain(pt))
    assert again.cpu_samples == pt.cpu_samples


# --------------------------------------------------------------------------- the CPU clock where it covers the wall


def _timed_series(walls: dict[int, list[float]], cpus: dict[int, list[float]] | None) -> Series:
    points = []
    for d, w in walls.items():
        p = Point(depth=d, times={"backward": min(w)}, samples={"backward": list(w)})
        if cpus is not None:
            p.cpu_samples = {"backward": list(cpus[d])}
        points.append(p)
    return Series("c", "torch", None, "eager", points=points)


SLOWDOWNS = st.lists(st.floats(min_value=0.0, max_value=5.0, allow_subnormal=False), min_size=5, max_size=5)


@settings(max_examples=30, deadline=None)
@given(slow=st.lists(SLOWDOWNS, min_size=5, max_size=5))
def test_where_cpu_covers_the_wall_the_fit_reads_the_cpu_time_whatever_the_preemptions(slow):
    depths = [2, 4, 8, 16, 32]
    cpus = {d: [1e-4 + 2e-5 * d * (1 + 0.01 * i) for i in range(5)] for d in depths}
    # preemption only adds wall time; the fastest run of each depth was not preempted (it covers its CPU time)
    walls = {d: [c * (1 + s) for c, s in zip(cpus[d], row, strict=True)] for d, row in zip(depths, slow, strict=True)}
    for d in depths:
        i = min(range(5), key=lambda k: cpus[d][k])
        walls[d][i] = cpus[d][i]
        walls[d] = [max(w, walls[d][i]) for w in walls[d]]
    s = _timed_series(walls, cpus)
    assert cpu_clock(s, ("backward",))
    fit = fit_cost(s, ("backward",), "time", bootstrap=False)
    assert fit is not None and fit.clock == CPU_CLOCK
    assert fit.values == pytest.approx([min(cpus[d]) for d in depths])


def test_the_wall_clock_where_cpu_time_is_missing_or_does_not_cover_it():
    depths = [2, 4, 8, 16, 32]
    walls = {d: [1e-4 * d, 1.1e-4 * d] for d in depths}
    assert not cpu_clock(_timed_series(walls, None), ("backward",))  # no CPU samples (an older report)
    threads = {d: [0.3 * w for w in walls[d]] for d in depths}  # the work runs on other threads: 30% here
    s = _timed_series(walls, threads)
    assert not cpu_clock(s, ("backward",))
    fit = fit_cost(s, ("backward",), "time", bootstrap=False)
    assert fit is not None and fit.clock != CPU_CLOCK and fit.values == pytest.approx([min(walls[d]) for d in depths])
    short = {d: c[:1] for d, c in threads.items()}  # not one CPU reading per run: never mixed
    assert not cpu_clock(_timed_series(walls, {d: [w[0]] for d, w in walls.items()} | short), ("backward",))


# --------------------------------------------------------------------------- the run-queue wait: load, not the work's


def _waited_series(cpus: dict[int, list[float]], busy: list[float], waits_share: list[float], sleeps: list[float]):
    """Points whose every run spent ``cpu`` on the core, ``busy * cpu`` waiting for a core (preempted: kept as the
    run-queue wait) and ``sleep * cpu`` neither (the work waiting on something else)."""
    points = []
    for (d, cs), b, k, z in zip(cpus.items(), busy, waits_share, sleeps, strict=True):
        waits = [c * b * k for c in cs]
        walls = [c * (1 + b + z) for c in cs]
        p = Point(depth=d, times={"backward": min(walls)}, samples={"backward": walls})
        p.cpu_samples = {"backward": list(cs)}
        p.extra[wait_key("backward")] = waits
        points.append(p)
    return Series("c", "tinygrad", None, "eager", points=points)


LOADS = st.lists(st.floats(min_value=0.0, max_value=20.0, allow_subnormal=False), min_size=5, max_size=5)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(busy=LOADS)
def test_a_long_call_preempted_on_a_loaded_machine_reads_its_cpu_time_when_its_waits_are_kept(busy):
    # calls longer than a scheduler slice are preempted in every run at a load of 10+ on 2 cores (tinygrad's 40-500
    # ms backward: wall 4-7x the CPU time): the wall never covers the CPU time, the run-queue wait says why
    depths = [2, 4, 8, 16, 32]
    cpus = {d: [0.02 * d * (1 + 0.01 * i) for i in range(5)] for d in depths}
    s = _waited_series(cpus, busy, [1.0] * 5, [0.0] * 5)
    assert cpu_clock(s, ("backward",))
    fit = fit_cost(s, ("backward",), "time", bootstrap=False)
    assert fit is not None and fit.clock == CPU_CLOCK
    assert fit.values == pytest.approx([min(cpus[d]) for d in depths])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(busy=LOADS, sleep=st.floats(min_value=0.3, max_value=20.0, allow_subnormal=False))
def test_a_call_that_waits_on_something_else_than_a_core_keeps_the_wall_clock(busy, sleep):
    # the work in other threads, a sleep, I/O: neither on the core nor runnable; the load's waits do not hide it
    depths = [2, 4, 8, 16, 32]
    cpus = {d: [0.02 * d] * 3 for d in depths}
    s = _waited_series(cpus, busy, [1.0] * 5, [sleep * (1 + b) for b in busy])
    assert not cpu_clock(s, ("backward",))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    wall=st.floats(min_value=1e-6, max_value=1e3, allow_subnormal=False),
    cpu=st.floats(min_value=0.0, max_value=1.0, allow_subnormal=False),
    wait=st.floats(min_value=0.0, max_value=1.0, allow_subnormal=False),
)
def test_the_covered_share_counts_the_wait_only_where_it_was_measured(wall, cpu, wait):
    c, w = cpu * wall, wait * (1 - cpu) * wall
    assert covered_share(wall, c) == pytest.approx(cpu)
    assert covered_share(wall, c, w) == pytest.approx(cpu + wait * (1 - cpu))
    assert covered_share(wall, c, w) >= covered_share(wall, c)


def test_timed_block_keeps_the_threads_run_queue_wait_where_the_kernel_says():
    with base.timed_block() as t:
        sum(range(1000))
    if base.run_queue_wait() is None:
        assert "wait_seconds" not in t
    else:
        assert t["wait_seconds"] >= 0.0


def test_eager_summary_keeps_each_calls_wait_beside_its_samples_and_they_survive_json():
    fwd = [{"seconds": 0.3 + i, "cpu_seconds": 0.1, "wait_seconds": 0.01 * i} for i in range(5)]
    bwd = [{"seconds": 0.5 + i, "cpu_seconds": 0.2, "wait_seconds": 0.02 * i} for i in range(5)]
    pt = eager_summary(Point(depth=3), fwd, bwd)
    for name, calls in (("forward", fwd), ("backward", bwd)):
        assert pt.extra[wait_key(name)] == [c["wait_seconds"] for c in calls[1:]]
        assert len(pt.extra[wait_key(name)]) == len(pt.samples[name])
        assert pt.extra[wait_key(f"{name}0")] == [calls[0]["wait_seconds"]]
    assert point_from_dict(to_plain(pt)).extra == pt.extra
    older = eager_summary(Point(depth=3), [{"seconds": 1.0, "cpu_seconds": 1.0}] * 3, [])  # no waits: no key
    assert wait_key("forward") not in older.extra
