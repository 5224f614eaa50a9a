"""A time jump is a cost that its explanation does not predict: a phase that runs the program is read against its
arithmetic, any other against its size (adprof/analysis/jumps.py). Self-attention over the sequence length on the
engine's traced mode: the transform's counters stay flat (the program's size does not grow) while the run grows
with its n x n scores. Read against the flat counters alone, the run at 256 "jumped" (16-19x) and the healthy layer
read ``inconclusive`` in 5 of 16 runs, failing its guard; read against its arithmetic it is no jump."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from adprof import model
from adprof.analysis.classify import decide
from adprof.model import Point, Series

DEPTHS = (8, 16, 32, 64, 128, 256)


def _point(d: int, run: float, flops: float | None, confirmed: bool, ops: float = 40.0) -> Point:
    times = {"record": 2e-4, "transform": 3e-4, "drop": 1e-4, "run": run}
    wall = sum(times.values()) + 0.003
    return Point(
        depth=d,
        times=dict(times),
        cpu_times=dict(times),
        counters={"transform": {"key_comparisons": 265}, "drop": {"key_comparisons": 40}},
        wall_seconds=wall,
        confirm_walls=[wall] if confirmed else [],
        program=None if flops is None else {"ops": ops, "flops": flops, "bytes": 8.0 * flops},
    )


def _attention(
    power: float = 2.0,
    noise: dict[int, float] | None = None,
    jump: dict[int, float] | None = None,
    figures: bool = True,
) -> Series:
    """Counters flat; the run's CPU time 1 ms at 128 growing as d^power (times ``noise`` and ``jump`` at their
    depths), the FLOPs as d^power: the arithmetic explains the run. The two deepest depths were re-measured (as the
    measuring does where a phase jumps)."""
    noise, jump = noise or {}, jump or {}
    points = []
    for d in DEPTHS:
        flops = 50.0 * d**power
        run = 1e-3 * (d / 128) ** power * noise.get(d, 1.0) * jump.get(d, 1.0) + 1e-6
        points.append(_point(d, run, flops if figures else None, confirmed=d >= 128))
    return Series("self_attention", "engine", "fixed", "traced", points=points, axis="seq_len")


def test_a_run_that_grows_with_its_arithmetic_is_no_jump():
    v = decide(_attention())
    assert v.kind == model.LINEAR and not v.jumps, (v.kind, v.reason)


def test_without_the_programs_figures_the_same_run_jumps_over_the_flat_counters():
    """What the reading was: the run at 256 against the flat model of the counters (the test above can fail)."""
    v = decide(_attention(figures=False))
    assert v.kind == model.INCONCLUSIVE and v.jumps and v.jumps[0].phase == "run", (v.kind, v.reason)


def test_a_run_far_over_its_arithmetic_still_jumps():
    v = decide(_attention(jump={128: 12.0, 256: 12.0}))
    assert v.kind == model.INCONCLUSIVE and v.jumps[0].phase == "run" and v.jumps[0].depth == 128, v.reason


@settings(max_examples=40, deadline=None)
@given(
    power=st.floats(1.0, 3.0),
    noise=st.lists(st.floats(1.0, 1.6), min_size=len(DEPTHS), max_size=len(DEPTHS)),
)
def test_no_run_proportional_to_its_arithmetic_jumps(power, noise):
    v = decide(_attention(power, dict(zip(DEPTHS, noise, strict=True))))
    assert v.kind == model.LINEAR and not v.jumps, (v.kind, v.reason)


@settings(max_examples=40, deadline=None)
@given(
    power=st.floats(1.0, 3.0),
    factor=st.floats(8.0, 50.0),
    noise=st.lists(st.floats(1.0, 1.4), min_size=len(DEPTHS), max_size=len(DEPTHS)),
)
def test_a_run_that_outgrows_its_arithmetic_by_the_jump_factor_always_jumps(power, factor, noise):
    v = decide(_attention(power, dict(zip(DEPTHS, noise, strict=True)), jump={128: factor, 256: factor}))
    assert v.kind == model.INCONCLUSIVE and v.jumps, (v.kind, v.reason)
    assert (v.jumps[0].phase, v.jumps[0].depth) == ("run", 128)


# ------------------------------------------------------------------- time against counters, read against arithmetic

EAGER_DEPTHS = (1, 2, 3, 4, 5, 6, 8, 10)


def _eager(time_power: float, flops_power: float) -> Series:
    """An eager backward whose counters grow linearly and whose CPU time grows as d^time_power (the forward as the
    FLOPs), on a program whose FLOPs grow as d^flops_power: the TRG's backward grows as its bond dimension does."""
    points = []
    for d in EAGER_DEPTHS:
        t = {"forward0": 1e-3 * d**time_power, "forward": 1e-3 * d**time_power, "backward0": 2e-3 * d**time_power}
        t["backward"] = 1e-3 * d**time_power
        counters = {ph: {"key_comparisons": 100 * d, "nodes_visited": 40 * d} for ph in ("backward0", "backward")}
        flops = 1e3 * d**flops_power
        points.append(
            Point(
                depth=d,
                times=dict(t),
                cpu_times=dict(t),
                counters=counters,
                wall_seconds=sum(t.values()) + 0.003,
                calls=6,
                program={"ops": 50.0 * d, "flops": flops, "bytes": 8 * flops},
            )
        )
    return Series("trg_like", "engine", "fixed", "eager", points=points)


def test_a_backward_whose_time_grows_with_its_arithmetic_does_not_contradict_linear_counters():
    v = decide(_eager(4.0, 4.0))
    assert v.kind == model.LINEAR, (v.kind, v.reason)


def test_a_backward_whose_time_outgrows_its_arithmetic_still_contradicts_the_counters():
    v = decide(_eager(4.0, 1.0))
    assert v.kind == model.INCONCLUSIVE and "may be blind" in v.reason, (v.kind, v.reason)
