"""The time schedule (adprof.measure.time_schedule) on simulated measurements, and the model choice of the
noisy reading (adprof.analysis.choice) on generated series (hypothesis).

The schedule is pure (the next depth from the points so far and the current fit), so a loop here drives it
with a known law and the real analysis (``assess_series``), as the series loop does; the end-to-end runs
through the CLI are in tests/test_accuracy_cli.py.
"""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adprof.analysis.costs import assess_series
from adprof.analysis.growth import fit_growth
from adprof.measure.time_schedule import (
    CONFIRM,
    EXPLORE,
    FILL,
    REFINE,
    REPEAT,
    SHAKY_CHANCE,
    SWEEP,
    Deepening,
    TimeSchedule,
    informative,
    shaky_chance,
    time_decided,
)
from adprof.model import CHOICE_EDGE, MODEL_CHOICES, Fit, Point, PointStatus, Series

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("synth_law", ROOT / "benchmarks" / "synth_law.py")
synth = importlib.util.module_from_spec(_spec)  # the accuracy benchmark's program: its laws and its noise
_spec.loader.exec_module(synth)  # type: ignore[union-attr]

CAP, TIMEOUT = 1.5, 6.0


def _point(depth: int, cost: float) -> Point:
    return Point(depth=depth, times={"transform": 0.6 * cost, "drop": 0.4 * cost})


def _drive(law, a, c, noise=0.0, seed=0, max_points=80, hi=256):
    """Run the schedule against ``law`` (synth_law's) as the series loop would (no budget): the points, and
    the largest cost it ever asked for (the kill at the timeout is the safety net, never the plan)."""
    sched = TimeSchedule(1, hi, "traced", CAP, TIMEOUT)
    s = Series(chain="synth", backend="cmd", profile=None, mode="traced")
    rng = random.Random(seed)
    worst, fit = 0.0, None
    while len(s.points) < max_points:
        fit = assess_series(s, False) if len({p.depth for p in s.points}) >= 2 else None
        step = sched.next_step(s.points, fit)
        if step is None or step.why in (SWEEP, REFINE):  # deepening and filling are what these tests look at
            break
        cost = synth.cost(law, step.depth, a, c) * synth.noise_factor(noise, rng)
        worst = max(worst, cost)
        if cost > TIMEOUT:
            pt = Point(depth=step.depth, times={"transform": TIMEOUT}, status=PointStatus.KILLED)
        else:
            pt = _point(step.depth, cost)
        s.points.append(pt)
    return s, worst, sched.frontier(s.points, fit)


def test_a_noisy_flat_start_is_explored_by_doublings_to_the_deepest_depth():
    # the first law: 0.02 + 0.0004·d looked flat at depths 1..8 and stopped on a pinned d^8 model
    s, worst, front = _drive("linear", 0.02, 0.0004, noise=1.0, seed=3)
    order = [p.depth for p in s.points]
    assert order[:4] == [1, 2, 4, 8] and 256 in order, order
    assert front.reason is Deepening.MAX_DEPTH and worst < CAP


def test_an_exponential_under_an_overhead_is_filled_in_with_consecutive_depths():
    # the second law: 0.005 + 1e-5·2^d hides under the overhead until depth 8, then x86 by depth 16
    s, worst, front = _drive("exp2", 0.005, 1e-5, noise=0.15, seed=1)
    depths = sorted({p.depth for p in s.points})
    assert set(range(8, max(depths) + 1)) <= set(depths), depths  # consecutive from the jump on
    assert max(depths) >= 16 and worst < TIMEOUT, (depths, worst)
    assert front.reason in (Deepening.CAP, Deepening.PREDICTED), front


def test_the_growth_emerging_from_the_overhead_is_bisected_before_the_next_doubling():
    sched = TimeSchedule(1, 256, "traced", CAP, TIMEOUT)
    pts = [_point(d, 0.5 + (0.07 if d == 8 else 0.0)) for d in (1, 2, 4, 8)]  # +14% at 8 only
    step = sched.next_step(pts, None)
    # one run above the overhead may be a slow run (one in five 30-60% slower): a second run there first
    assert step is not None and step.why == CONFIRM and step.depth == 8
    step = sched.next_step([*pts, _point(8, 0.57)], None)  # it holds: the growth has emerged
    assert step is not None and step.why == FILL and 4 < step.depth < 8
    step = sched.next_step([*pts, _point(8, 0.5)], None)  # a slow run: deeper, no bisecting towards it
    assert step is not None and step.why == EXPLORE and step.depth > 8


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    fast=st.integers(1, 6),
    slow=st.integers(0, 8),
    lift=st.floats(1.3, 1.6, allow_subnormal=False),
)
def test_a_minimum_resting_on_few_fast_runs_is_shaky(fast, slow, lift):
    """The chance that as many new runs all miss the fast mode, at the slow share measured: what the bootstrap of
    a minimum sees (2 fast of 4: 6%, a resample of 4 misses both that often)."""
    assert shaky_chance([1.0, 1.01, 1.4, 1.5]) == pytest.approx(0.0625)  # 2 fast of 4: a resample misses both
    assert shaky_chance([1.0, 1.01, 1.02, 1.4, 1.5]) == pytest.approx(0.4**5) and 0.4**5 < SHAKY_CHANCE
    runs = [1.0 + 0.01 * i for i in range(fast)] + [lift] * slow
    n = fast + slow
    assert shaky_chance(runs) == pytest.approx((slow / n) ** n if n >= 2 else 0.0)
    assert (shaky_chance(runs) > SHAKY_CHANCE) == (n >= 2 and (slow / n) ** n > SHAKY_CHANCE)


def _open_linear(depths: list[int]) -> Fit:
    fit = Fit(metric="t", kind="inconclusive", model="a + c*d^p", exponent=1.05, overhead=0.4, scale=0.6)
    fit.depths, fit.interval = depths, [0.7, 1.45]
    return fit


def test_an_open_reading_repeats_its_deepest_depths_whose_minimum_is_shaky_and_passes_ignore_those_runs():
    sched = TimeSchedule(1, 4096, "traced", CAP, TIMEOUT)
    depths = [1, 2, 3, 256, 512, 1024, 2048, 4096]
    pts = [_point(d, 0.4 + 0.00015 * d) for d in depths for _ in range(2)]
    pts += [_point(4096, 1.55), _point(4096, 1.35)]  # 4096: two fast runs of four (a bootstrap of it is shaky)
    fit = _open_linear(depths)
    step = sched.next_step(pts, fit)
    assert step is not None and step.why == REPEAT and step.depth == 4096
    repeat = _point(4096, 1.01)  # a third fast run of five: (2/5)^5 = 1%, firm
    repeat.scheduled = REPEAT  # as the series loop marks the point
    pts.append(repeat)
    step = sched.next_step(pts, fit)
    assert step is not None and step.why != REPEAT
    # the passes count without the repeats: two passes of every depth, and one more run of 4096
    two = [_point(d, 0.4 + 0.00015 * d) for d in depths for _ in range(2)]
    counting = TimeSchedule(1, 4096, "traced", CAP, TIMEOUT)
    assert counting.passes([*two, _point(4096, 1.0)], fit) == 0
    extra = _point(4096, 1.0)
    extra.scheduled = REPEAT
    assert counting.passes([*two, extra], fit) == 2
    assert TimeSchedule(1, 4096, "traced", CAP, TIMEOUT).passes([*two, extra], fit) == 2  # the points say it: resumable
    settled = Fit(metric="t", kind="linear", model="a + c*d^p", exponent=1.0, overhead=0.4, scale=0.6)
    settled.depths, settled.interval = depths, [0.95, 1.05]
    fresh = TimeSchedule(1, 4096, "traced", CAP, TIMEOUT)
    shaky = [_point(d, 0.4 + 0.00015 * d) for d in depths for _ in range(2)] + [_point(4096, 1.5), _point(4096, 1.4)]
    step = fresh.next_step(shaky, settled)  # a settled reading spends nothing on repeats
    assert step is None or step.why != REPEAT


def test_a_model_pinned_at_its_grid_edge_predicts_nothing_and_stops_nothing():
    pinned = Fit(metric="t", kind="superlinear", model="a + c*d^p", exponent=8.0, overhead=0.0, scale=1.0)
    pinned.depths, pinned.predicts = [1, 2, 4, 8], False  # d^8: depth 16 would cost 256 s by this model
    sched = TimeSchedule(1, 256, "traced", CAP, TIMEOUT)
    pts = [_point(d, 0.02 + 1e-3 * (d == 8)) for d in (1, 2, 4, 8)]
    assert sched.frontier(pts, pinned).reason is Deepening.OPEN
    step = sched.next_step(pts, pinned)
    assert step is not None and step.depth > 8 and step.why == EXPLORE
    pinned.predicts = True  # the same model, were it to fit, predicts 256 s at depth 16 ...
    # ... but the points themselves are flat: no prediction may exceed twice their own steepest law (bounds)
    assert sched.frontier(pts, pinned).reason is Deepening.OPEN
    steep = [_point(d, 1e-3 + 2e-8 * d**8) for d in (1, 2, 4, 8)]  # points that do follow d^8: it stops them
    assert sched.frontier(steep, pinned).reason is Deepening.PREDICTED


def test_sweeps_alternate_down_and_up_over_the_informative_depths():
    sched = TimeSchedule(1, 4, "traced", CAP, TIMEOUT)
    pts = [_point(d, 1e-3 * d) for d in (1, 2, 3, 4)]
    order = []
    for _ in range(8):
        step = sched.next_step(pts, None)
        assert step is not None and step.why == SWEEP
        order.append(step.depth)
        pts.append(_point(step.depth, 1e-3 * step.depth))
    assert order == [4, 3, 2, 1, 1, 2, 3, 4]


def test_repeats_go_where_the_growth_shows_and_to_the_overhead_anchors():
    fit = Fit(metric="t", kind="superlinear", model="a + c*d^p", exponent=2.0, overhead=1.0, scale=0.2)
    fit.depths = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    keep = informative(fit.depths, fit)
    assert {1, 2, 4} <= keep and {128, 256} <= keep and 16 not in keep


def test_counters_or_a_deciding_metric_keep_the_exact_schedule():
    p = _point(1, 1e-3)
    assert time_decided(p, "traced", ())
    p.counters["transform"] = {"key_comparisons": 3}
    assert not time_decided(p, "traced", ())
    q = _point(1, 1e-3)
    q.metrics["process"] = {"instructions": 1000}
    assert not time_decided(q, "traced", ("instructions",)) and time_decided(q, "traced", ())


# -- the model choice on generated series ---------------------------------------------------------------------

# Noisy series: a 95% interval is wrong now and then by design (a linear law with 10% noise read superlinear
# in 2 of 240 seeds), and a random search finds those seeds in some run. The default run draws a fixed set
# of examples (derandomize); a study that explores more sets it False and raises max_examples.
SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def _noisy(law, depths, a, c, noise, repeats, seed):
    rng = random.Random(seed)
    return [[synth.cost(law, d, a, c) * synth.noise_factor(noise, rng) for _ in range(repeats)] for d in depths]


@SETTINGS
@given(
    base=st.sampled_from([1.3, 1.5, 2.0, 3.0]),
    share=st.sampled_from([0.0, 0.5, 0.9]),
    noise=st.sampled_from([0.0, 0.15, 1.0]),
    repeats=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_exponentials_are_never_read_linear_and_name_their_base_when_clean(base, share, noise, repeats, seed):
    top = int(math.log(1000) / math.log(base))  # consecutive depths over a 1000x growth
    depths = list(range(1, top + 1))
    grow_top = base**top
    a = share / (1 - share) * grow_top if share else 0.0
    fit = fit_growth(depths, _noisy(f"exp{base:g}", depths, a, 1.0, noise, repeats, seed), source="time", seed=seed)
    assert fit.kind != "linear", (fit.kind, fit.exponent, fit.notes)
    assert fit.model_choice in MODEL_CHOICES
    if noise == 0.0:
        assert fit.kind == "exponential" and fit.base == pytest.approx(base, rel=0.05)
    if "power" in fit.grid_edge:  # a power law pinned at its grid edge is never the reading
        assert fit.model != "a + c*d^p" or fit.kind == "inconclusive"


@SETTINGS
@given(
    law=st.sampled_from(["linear", "p1.5", "p2", "p3"]),
    share=st.sampled_from([0.0, 0.5, 0.9]),
    noise=st.sampled_from([0.0, 0.15, 1.0]),
    repeats=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
)
def test_power_laws_keep_their_family_and_linear_is_never_a_pathology(law, share, noise, repeats, seed):
    depths = sorted({round(2 ** (k / 3)) for k in range(0, 25)})  # 1..256 in 2^(1/3) steps
    top = synth.LAWS[law](256)
    a = share / (1 - share) * top if share else 0.0
    fit = fit_growth(depths, _noisy(law, depths, a, 1.0, noise, repeats, seed), source="time", seed=seed)
    if law == "linear":
        assert fit.kind not in ("superlinear", "exponential"), (fit.kind, fit.exponent, fit.interval)
    else:
        assert fit.kind not in ("linear", "exponential"), (law, fit.kind, fit.base, fit.exponent, fit.model_choice)
    if noise == 0.0 and share == 0.0:
        p = {"linear": 1.0, "p1.5": 1.5, "p2": 2.0, "p3": 3.0}[law]
        assert fit.model == "a + c*d^p" and fit.exponent == pytest.approx(p, abs=0.05)
    if fit.model_choice == CHOICE_EDGE:
        assert fit.grid_edge  # the evidence it names is there


def test_a_predicting_model_is_neither_pinned_nor_open_at_the_top():
    rng = np.random.default_rng(0)
    depths = [1, 2, 3, 4, 5, 6, 7, 8]
    noisy_flat = [0.02 * (1 + 0.3 * rng.random()) for _ in depths]  # noise only: the d^8.00 [0.00, 8.00]
    fit = fit_growth(depths, noisy_flat, source="time", bootstrap=False)
    if fit.model == "a + c*d^p" and fit.exponent is not None and fit.exponent >= 7.9:
        assert not fit.predicts
    clean = fit_growth(depths, [0.01 + 1e-3 * d**2 for d in depths], source="time", bootstrap=False)
    assert clean.predicts and clean.kind == "superlinear"


# -- the CPU-time check of eager time ---------------------------------------------------------------------------


def _eager_series(wall_power: float, cpu_power: float) -> Series:
    """Torch-like eager points: 7 calls per depth, the wall time growing as d^wall_power (preempted long
    calls on a loaded machine), the thread's CPU time as d^cpu_power."""
    pts = []
    for d in (25, 50, 100, 200, 400, 800):
        wall = [1e-5 * d**wall_power * (1 + 0.01 * k) for k in range(7)]
        cpu = [1e-5 * d**cpu_power * (1 + 0.01 * k) for k in range(7)]
        p = Point(depth=d, times={"forward0": wall[0], "backward0": wall[0], "forward": wall[1], "backward": wall[1]})
        p.samples = {"backward": wall[1:], "forward": wall[1:]}
        p.extra.update(backward_calls=wall, backward_cpu_calls=cpu, forward_calls=wall)
        p.calls = 7
        pts.append(p)
    return Series(chain="c", backend="torch", profile=None, mode="eager", points=pts)


def test_a_wall_time_pathology_that_cpu_time_does_not_show_is_a_loaded_machine():
    from adprof.analysis.classify import decide

    v = decide(_eager_series(1.6, 1.0))
    assert v.kind == "inconclusive" and v.fit is not None
    assert v.fit.cpu_kind == "linear" and "CPU time" in v.fit.reason
    real = decide(_eager_series(1.6, 1.6))  # the work itself grows: the pathology stands
    assert real.kind == "superlinear-backward" and real.fit.cpu_kind == "superlinear"


# -- a flat reading needs a wide span of depths ----------------------------------------------------------------


def test_an_exponential_hidden_under_the_overhead_over_a_narrow_span_is_not_linear():
    """The case hypothesis found: 2^d under a 90% overhead at loaded-machine noise, one repeat, depths 1..9
    (the cost grows 11%, within the bursts). A constant fits, but over 9x it proves nothing: not linear."""
    depths = list(range(1, 10))
    a = 0.9 / 0.1 * 2.0**9
    fit = fit_growth(depths, _noisy("exp2", depths, a, 1.0, 1.0, 1, 196), source="time", seed=196)
    assert fit.kind == "inconclusive" and "add depths" in fit.reason, (fit.kind, fit.notes)


def test_a_constant_is_flat_over_a_wide_span_and_inconclusive_over_a_narrow_one():
    """A constant cost with small noise: `linear` (flat) over 1..256, `inconclusive` over 1..4, never a finding."""
    rng = random.Random(3)
    for depths, kind in (([1, 2, 4, 8, 16, 32, 64, 128, 256], "linear"), ([1, 2, 3, 4], "inconclusive")):
        values = [[1e-3 * (1 + 0.05 * rng.random()) for _ in range(3)] for _ in depths]
        fit = fit_growth(depths, values, source="time", seed=3)
        assert fit.kind == kind, (depths, fit.kind, fit.interval, fit.notes, fit.reason)


# -- read against the program (issue #34) ---------------------------------------------------------------------------


def _eager(depth: int, cost: float, flops: float | None) -> Point:
    """An eager point (cost phase: backward) carrying its program's arithmetic (``flops``; None: no figures)."""
    pt = Point(depth=depth, times={"forward": 0.5 * cost, "backward": cost})
    if flops is not None:
        pt.program = {"ops": 12.0, "flops": flops, "bytes": 8.0 * flops, "intermediate_bytes": 4.0 * flops}
    return pt


def _quadratic(depth: int) -> float:
    """A healthy program whose arithmetic grows d²: its backward costs an overhead plus a constant per FLOP."""
    return 1e-3 + 6e-5 * depth**2


@pytest.mark.parametrize("read", [True, False], ids=["against-arithmetic", "raw"])
def test_a_healthy_quadratic_arithmetic_doubles_to_the_cap_when_read_against_it(read):
    """d² arithmetic, its cost a constant per FLOP: from 8..64 the next doubling (128: 0.98 s, under the 1.5 s cap)
    is predicted as the arithmetic grows (about x4), not as the steep per-layer rate a d² series shows from a shallow
    depth (x16: over the cap, a runaway it is not). Without program figures the raw reading stays as it was."""
    sched = TimeSchedule(8, 256, "eager", CAP, TIMEOUT)
    pts = [_eager(d, _quadratic(d), 100.0 * d * d + 50.0 * d if read else None) for d in (8, 16, 32, 64)]
    step = sched.next_step(pts, None)
    assert step is not None and step.why in (EXPLORE, "deepen")
    if read:
        assert step.depth == 128, step
        assert _quadratic(128) <= step.expected < 1.5 * _quadratic(128), step  # still pessimistic, not a runaway
    else:
        assert step.depth < 100 and step.expected > 2 * _quadratic(step.depth), step  # today's raw reading
    assert (sched.doubling_cost(pts) < 1.5 * 4 * _quadratic(128)) is read  # extend() reads the same


def test_an_excess_over_the_arithmetic_is_still_extrapolated_steeply():
    """A cost that outgrows its d² arithmetic by x1.05 per layer: the excess is continued at its own rate (never
    under the true cost), so a runaway over the program is still stopped before it passes the cap."""
    from adprof.measure.time_schedule import explanation

    def cost(d: int) -> float:
        return 1e-3 + 1e-6 * d * d * 1.05**d

    sched = TimeSchedule(8, 256, "eager", CAP, TIMEOUT)
    pts = [_eager(d, cost(d), 100.0 * d * d) for d in (8, 16, 32, 64)]
    ex = explanation(pts, "eager")
    assert ex is not None and ex.figure == "flops" and ex.exponent == pytest.approx(2.0)
    step = sched.next_step(pts, None)
    assert step is not None and step.expected >= cost(step.depth), step
    assert step.depth < 128  # x1.05^64 more: far over the cap at 128


def test_a_linear_program_reads_the_raw_costs_as_before():
    """A program that grows linearly explains nothing: the schedule is exactly today's."""
    from adprof.measure.time_schedule import explanation

    linear = [_eager(d, _quadratic(d), 100.0 * d + 7) for d in (8, 16, 32, 64)]
    bare = [_eager(d, _quadratic(d), None) for d in (8, 16, 32, 64)]
    assert explanation(linear, "eager") is None
    a, b = TimeSchedule(8, 256, "eager", CAP, TIMEOUT), TimeSchedule(8, 256, "eager", CAP, TIMEOUT)
    assert a.next_step(linear, None) == b.next_step(bare, None)
    # a transform is read against the program's size (its ops), not its arithmetic: constant ops explain nothing
    traced = [
        Point(depth=d, times={"transform": _quadratic(d)}, program={"ops": 12.0, "flops": 1.0 * d * d}) for d in (8, 16)
    ]
    assert explanation(traced, "traced") is None


def test_a_model_reading_a_runaway_through_a_quadratic_arithmetic_is_bounded_by_the_excess():
    """An exponential model fitted to the raw costs of a d² arithmetic (an overhead hides the law at shallow depths)
    predicts a runaway one doubling deeper; read against the arithmetic, its prediction is bounded by the steepest law
    of the excess (flat here): at most twice the arithmetic's own growth."""
    depths = (8, 16, 32, 64)
    fit = Fit(metric="t", kind="exponential", model="a + c*b^d", base=1.045, overhead=1e-3, scale=_quadratic(64) - 1e-3)
    fit.depths, fit.predicts = list(depths), True
    with_program = TimeSchedule(8, 256, "eager", CAP, TIMEOUT)
    bare = TimeSchedule(8, 256, "eager", CAP, TIMEOUT)
    with_program.frontier([_eager(d, _quadratic(d), 100.0 * d * d) for d in depths], fit)
    bare.frontier([_eager(d, _quadratic(d), None) for d in depths], fit)
    read, raw = with_program.model_prediction(fit, 128), bare.model_prediction(fit, 128)
    assert read is not None and raw is not None
    assert read <= 2 * 4 * _quadratic(64) < raw


def test_noisy_unit_steps_charge_the_next_point_no_more_than_the_points_own_law():
    """JAX compile of attention over seq_len: compile 0.55 / 0.30 / 0.32 / 0.64 s at depths 8, 10, 11, 12 (noise:
    its program is flat). The marginal cost's rate between 10-11 and 11-12 is x30/layer, and that extrapolation
    charged depth 13 with 31.8 s and stopped a healthy series. What the step is expected to cost stays under twice
    the steepest law through the measured points (x1.9/layer here); the step itself may stay cautious."""
    from adprof.measure import bounds

    costs = {8: 0.55, 10: 0.30, 11: 0.32, 12: 0.64}
    pts = [Point(depth=d, times={"transform": 0.01, "compile": c}) for d, c in costs.items()]
    pts.append(Point(depth=12, times={"transform": 0.01, "compile": 0.70}))  # depth 12 confirmed, as measured
    sched = TimeSchedule(8, 256, "compile", 60.0, 120.0)
    step = sched.next_step(pts, None)
    assert step is not None and step.expected is not None and step.depth > 12
    depths = sorted(costs)
    low = [costs[d] + 0.01 for d in depths]
    bound = bounds.law_bound(depths, low, step.depth)
    assert bound is not None and step.expected <= bound * (1 + 1e-9), (step, bound)
    assert step.expected >= low[-1]  # never charged less than the deepest point cost
