"""Each cost read against what should explain it (adprof/analysis/explained.py): a gradient that grows with its
program is never a finding, one that outgrows it by the thresholds always is; a linear program changes nothing."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adprof import model, words
from adprof.analysis.classify import decide
from adprof.analysis.explained import RATIO_FLAT, excess, explain_series, ratio_slope
from adprof.model import Fit, Point, Result, Series
from adprof.render.jsonout import load_report, report_text

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
POWER_DEPTHS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64]
EXP_DEPTHS = list(range(1, 17))


def series(depths, backward, forward, flops, *, mode="eager", intermediates=None, saved=None) -> Series:
    """Exact points: the gradient's deterministic cost ``backward(d)`` (eager: the steady backward's counters;
    traced: the transform's), the forward's time ``forward(d)`` and the program's FLOPs ``flops(d)``."""
    pts = []
    for d in depths:
        b, f = float(backward(d)), float(forward(d))
        if mode == "eager":
            times = {"forward": f * 1e-9, "backward": b * 1e-9}
            counters = {"forward": {}, "backward": {"metadata_lookups": b}}
        else:
            times = {"record": f * 1e-9, "transform": b * 1e-9, "drop": b * 1e-10}
            counters = {"transform": {"key_comparisons": b}, "drop": {"key_comparisons": 0.0}}
        p = Point(depth=d, times=times, counters=counters)
        p.program = {
            "ops": float(flops(d)) if mode != "eager" else 10.0 * d,
            "flops": float(flops(d)),
            "bytes": None,
            "intermediate_bytes": float(intermediates(d)) if intermediates else 8.0 * d,
        }
        if saved is not None:
            p.memory = {model.SAVED_BYTES: float(saved(d))}
        pts.append(p)
    return Series(chain="gen", backend="engine", profile="fixed", mode=mode, points=pts)


def read(s: Series) -> model.Verdict:
    from adprof.analysis.memory import decide_memory

    v = decide(s)
    v.memory = decide_memory(s)
    v.explained = explain_series(s, v)
    return v


power = st.floats(1.0, 3.0, allow_subnormal=False)
base = st.floats(1.2, 1.8, allow_subnormal=False)
factor = st.floats(1.0, 5.0, allow_subnormal=False)


@SETTINGS
@given(q=power, k=factor, mode=st.sampled_from(["eager", "traced"]))
def test_a_gradient_proportional_to_a_power_law_forward_is_never_a_finding(q, k, mode):
    def fwd(d):
        return 100.0 * d**q

    v = read(series(POWER_DEPTHS, lambda d: k * fwd(d) + 7, fwd, fwd, mode=mode))
    assert not v.is_finding, (v.kind, v.explained)
    assert v.kind in (model.LINEAR, model.MILD_BACKWARD, model.MILD_TRANSFORM) or q < 1.15
    assert v.explained is not None and v.explained.ratio_flat is True


@SETTINGS
@given(b=base, k=factor, mode=st.sampled_from(["eager", "traced"]))
def test_a_gradient_proportional_to_an_exponential_forward_is_never_a_finding(b, k, mode):
    def fwd(d):
        return 100.0 * b**d

    v = read(series(EXP_DEPTHS, lambda d: k * fwd(d), fwd, fwd, mode=mode))
    assert not v.is_finding, (v.kind, v.explained)
    assert v.explained is not None and v.explained.superlinear and v.explained.ratio_flat is True


@SETTINGS
@given(q=power, extra=st.floats(0.45, 1.5, allow_subnormal=False), k=factor, mode=st.sampled_from(["eager", "traced"]))
def test_a_gradient_that_outgrows_a_power_law_forward_by_the_thresholds_is_always_a_finding(q, extra, k, mode):
    def fwd(d):
        return 100.0 * d**q

    v = read(series(POWER_DEPTHS, lambda d: k * fwd(d) * d**extra, fwd, fwd, mode=mode))
    assert v.is_finding and v.kind in model.PATHOLOGIES, (v.kind, v.explained)
    ex = v.explained
    assert ex is not None and ex.ratio_flat is False
    if ex.superlinear:  # the excess: p' = p - q + 1
        assert ex.excess_exponent == pytest.approx(1 + extra, abs=0.1)


@SETTINGS
@given(b=base, g=st.floats(1.3, 1.6, allow_subnormal=False), k=factor)
def test_a_gradient_that_outgrows_an_exponential_forward_by_the_thresholds_is_always_a_finding(b, g, k):
    def fwd(d):
        return 100.0 * b**d

    v = read(series(EXP_DEPTHS, lambda d: k * fwd(d) * g**d, fwd, fwd))
    assert v.kind == model.EXPONENTIAL_BACKWARD, (v.kind, v.explained)
    assert v.explained is not None and v.explained.excess_base == pytest.approx(g, rel=0.05)


def test_a_linear_program_changes_nothing():
    """The compatibility rule: over a linear program the verdict, its rate and its evidence are today's."""
    s = series(POWER_DEPTHS, lambda d: 5 * d**2, lambda d: 100.0 * d, lambda d: 100.0 * d)
    before = decide(s)
    after = read(series(POWER_DEPTHS, lambda d: 5 * d**2, lambda d: 100.0 * d, lambda d: 100.0 * d))
    assert after.kind == before.kind == model.SUPERLINEAR_BACKWARD
    assert after.interval_text == before.interval_text and after.cause == before.cause
    assert after.explained is not None and not after.explained.superlinear and after.explained.excess_kind == ""


def test_the_program_grows_superlinearly_is_reported_not_a_finding():
    s = series(POWER_DEPTHS, lambda d: 5 * d**2 + 3, lambda d: 40.0 * d**2, lambda d: 2.0 * d**2)
    v = read(s)
    ex = v.explained
    assert v.kind == model.LINEAR and ex is not None and ex.raw_kind == model.SUPERLINEAR_BACKWARD
    assert ex.basis == "flops" and words.program_text(ex) == "d^2.00: its arithmetic"
    assert ex.excess_exponent == pytest.approx(1.0, abs=0.02)
    assert "the program grows d^2.00: its arithmetic" in v.cause and not v.remedies
    assert v.interval_text == "d^2.00"  # the rate stays the raw growth against depth


def test_saved_bytes_read_against_the_intermediates():
    """n^2 saved bytes against n^2 intermediates are linear; against linear intermediates, a finding as today."""
    quad = series(
        POWER_DEPTHS,
        lambda d: 5 * d,
        lambda d: d,
        lambda d: d,
        intermediates=lambda d: 64.0 * d**2,
        saved=lambda d: 32.0 * d**2,
    )
    v = read(quad)
    assert v.memory is not None and v.memory.kind == model.MEMORY_LINEAR and not v.memory_finding
    assert v.explained is not None and v.explained.memory_raw_kind == model.SUPERLINEAR_MEMORY
    lin = read(series(POWER_DEPTHS, lambda d: 5 * d, lambda d: d, lambda d: d, saved=lambda d: 32.0 * d**2))
    assert lin.memory is not None and lin.memory.kind == model.SUPERLINEAR_MEMORY


def test_whose_cost_when_the_forward_grows_the_same_way():
    """A transform growing d^3 over a linear program whose forward's recording grows d^3 too: a finding, and the
    evidence says the forward's cost grows the same way."""
    s = series(POWER_DEPTHS, lambda d: 5 * d**3, lambda d: 9 * d**3, lambda d: 100.0 * d, mode="traced")
    v = read(s)
    assert v.kind == model.SUPERLINEAR_TRANSFORM
    assert v.explained is not None and v.explained.forward_phase == "record"
    assert words.whose_text(v.explained) in v.evidence
    same = "grows the same way"
    assert words.whose_text(v.explained) == f"the forward's recording {same}: the engine's, not the gradient's"
    v.explained.forward_phase = "forward_compile"  # compile mode: the forward's own compile (issue #34's own words)
    assert words.whose_text(v.explained) == f"the forward's compile {same}: the compiler's, not the gradient's"


def test_ratio_slope_and_flat_threshold():
    depths = [1, 2, 4, 8, 16, 32]
    assert ratio_slope(depths, [3.0] * 6) == pytest.approx(0.0)
    assert abs(ratio_slope(depths, [3.0 * d**0.5 for d in depths])) > RATIO_FLAT
    assert ratio_slope([1, 2], [1.0, 2.0]) is None


def test_excess_algebra():
    cost = Fit(metric="", kind="superlinear", exponent=2.5, interval=[2.4, 2.6])
    assert excess(cost, Fit(metric="", kind="superlinear", exponent=2.0))[:3] == ("superlinear", 1.5, [1.4, 1.6])
    assert excess(cost, Fit(metric="", kind="linear", exponent=1.0))[1] == pytest.approx(2.5)
    expo = Fit(metric="", kind="exponential", base=2.0)
    assert excess(expo, Fit(metric="", kind="exponential", base=2.0))[0] == "linear"
    assert excess(expo, Fit(metric="", kind="superlinear", exponent=3.0))[3] == 2.0
    assert excess(cost, Fit(metric="", kind="exponential", base=1.5))[0] == "linear"


def test_json_round_trip_of_explained():
    s = series(POWER_DEPTHS, lambda d: 5 * d**2 + 3, lambda d: 40.0 * d**2, lambda d: 2.0 * d**2)
    v = read(s)
    report = model.Report(results=[Result(series=s, verdict=v)])
    data = json.loads(report_text(report))
    assert data["schema"] == 4 and data["results"][0]["explained"]["basis"] == "flops"
    again = load_report(data)
    assert again.results[0].verdict.explained == v.explained
    data["schema"] = 3
    del data["results"][0]["explained"]
    assert load_report(data).results[0].verdict.explained is None
    assert math.isfinite(data["results"][0]["points"][0]["depth"])


def test_every_renderer_shows_the_program_beside_the_gradient():
    from rich.console import Console

    from adprof.render.console import render_report
    from adprof.render.html import render_html
    from adprof.render.markdown import report_markdown
    from adprof.render.plot import simple_svg

    s = series(POWER_DEPTHS, lambda d: 5 * d**2 + 3, lambda d: 40.0 * d**2, lambda d: 2.0 * d**2)
    result = Result(series=s, verdict=read(s))
    report = model.Report(results=[result])
    console = Console(record=True, width=250, no_color=True)
    render_report(report, console, verbose=True)
    text = console.export_text()
    assert "program" in text and "d^2.00: its arithmetic; gradient" in text
    md = report_markdown(report)
    assert "| program |" in md and "d^2.00: its arithmetic" in md
    assert 'class="program"' in render_html(report)
    assert 'class="forward"' in simple_svg("gen", [result])


def test_guards_hold_the_excess_by_default_and_the_raw_growth_with_absolute():
    from adprof.model import held_memory_exponent, held_rate

    s = series(POWER_DEPTHS, lambda d: 5 * d**2 + 3, lambda d: 40.0 * d**2, lambda d: 2.0 * d**2,
               intermediates=lambda d: 64.0 * d**2, saved=lambda d: 32.0 * d**2)  # fmt: skip
    v = read(s)
    kind, exponent, base, against = held_rate(v)
    assert kind == model.LINEAR and exponent == pytest.approx(1.0, abs=0.02) and against
    kind, exponent, _, against = held_rate(v, absolute=True)
    assert kind == model.SUPERLINEAR_BACKWARD and exponent == pytest.approx(2.0, abs=0.02) and not against
    assert held_memory_exponent(v)[0] == pytest.approx(1.0, abs=0.05)
    assert held_memory_exponent(v, absolute=True)[0] == pytest.approx(2.0, abs=0.05)
    linear = read(series(POWER_DEPTHS, lambda d: 5 * d**2, lambda d: 100.0 * d, lambda d: 100.0 * d))
    assert held_rate(linear) == held_rate(linear, absolute=True)  # a linear program: the same either way


def test_a_derivative_order_axis_is_never_explained_by_its_program():
    """Along ``order`` the forward is the previous order's gradient: its exponential program is autodiff's own
    growth (jax-ml/jax#520), so the transform keeps its raw reading."""

    def fwd(d):
        return 100.0 * 2.0**d

    s = series(EXP_DEPTHS, lambda d: 3 * fwd(d), fwd, fwd, mode="traced")
    s.axis = "order"
    v = read(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM and v.explained is not None and not v.explained.superlinear


def test_the_guards_limits_hold_the_excess_and_absolute_the_raw_growth(tmp_path):
    """``--max-exponent 1.3`` on a program whose arithmetic grows d^2 holds the gradient's d^2 (its excess d^1.00);
    ``--absolute`` (pyproject ``absolute = true``, the fixture's ``absolute=``) holds the raw d^2 and fails."""
    from adprof.cli import parse_command
    from adprof.guard import GuardLimits, check_result, memory_check
    from adprof.render.guard import measured_text, reason_text

    s = series(POWER_DEPTHS, lambda d: 5 * d**2 + 3, lambda d: 40.0 * d**2, lambda d: 2.0 * d**2,
               intermediates=lambda d: 64.0 * d**2, saved=lambda d: 32.0 * d**2)  # fmt: skip
    r = Result(series=s, verdict=read(s))
    held = check_result(r, GuardLimits(max_exponent=1.3, max_memory_exponent=1.2))
    assert held.ok and "against its program" in reason_text(held)
    raw = check_result(r, GuardLimits(max_exponent=1.3, absolute=True))
    assert not raw.ok and "2.00" in measured_text(raw)
    assert memory_check(r, GuardLimits(max_memory_exponent=1.2)).ok
    assert not memory_check(r, GuardLimits(max_memory_exponent=1.2, absolute=True)).ok
    linear = series(POWER_DEPTHS, lambda d: 5 * d**2, lambda d: 100.0 * d, lambda d: 100.0 * d)
    lr = Result(series=linear, verdict=read(linear))
    for absolute in (False, True):  # a linear program: the same outcome either way, as before
        assert not check_result(lr, GuardLimits(max_exponent=1.3, absolute=absolute)).ok
    (tmp_path / "pyproject.toml").write_text("[tool.adprof.guard]\nabsolute = true\n")
    assert GuardLimits.from_pyproject(tmp_path).absolute is True
    assert parse_command(["guard", "x.py", "--absolute"]).absolute is True
    assert not parse_command(["guard", "x.py"]).absolute


# --------------------------------------------------------------------------- time: a growth that shows late

#: `check probes/scaling.py::dense4 --backend torch --mode eager` (torch 2.13, a quiet machine, --jobs 2): the
#: steady backward's and the forward's time (us, the lower quartile of each depth's calls) and the program's FLOPs.
#: The backward is a constant ~210 us until the matmuls show at the widest sizes, and its deepest point ran slow
#: (607 us, beside 381 at 215): it read `superlinear-backward width^4.12 [3.18, 5.38]` (width^3.12 against its
#: arithmetic's width^2.00), one run of four.
DENSE4_DEPTHS = [8, 10, 12, 14, 15, 16, 19, 23, 27, 32, 38, 45, 54, 64, 76, 91, 108, 128, 152, 181, 215, 256]
DENSE4_BACKWARD = [207, 221, 193, 191, 195, 209, 262, 219, 253, 237, 240, 255, 246, 215, 203, 209, 221, 256, 255, 321]
DENSE4_BACKWARD += [381, 607]
DENSE4_FORWARD = [217, 240, 216, 222, 215, 229, 280, 254, 295, 319, 337, 393, 432, 451, 552, 695, 875, 1137, 1488]
DENSE4_FORWARD += [1981, 2843, 4067]
SPREAD = (1.0, 1.02, 1.05, 1.1, 1.2)  # each depth's calls around its fastest


def timed_series(depths, backward_us, forward_us, flops) -> Series:
    """torch eager points decided on time: each depth's backward and forward calls (:data:`SPREAD` around the
    given time), the program's FLOPs, no counters."""
    pts = []
    for d, b, f, fl in zip(depths, backward_us, forward_us, flops, strict=True):
        samples = {"backward": [b * 1e-6 * s for s in SPREAD], "forward": [f * 1e-6 * s for s in SPREAD]}
        p = Point(depth=d, times={k: v[0] for k, v in samples.items()}, samples=samples, wall_seconds=0.01)
        p.program = {"ops": 10.0, "flops": float(fl), "bytes": None, "intermediate_bytes": 8.0 * fl}
        pts.append(p)
    return Series(chain="dense4", backend="torch", profile=None, mode="eager", points=pts, axis="width")


def test_a_growth_that_shows_only_at_the_widest_sizes_is_no_finding():
    flops = [32.0 * d * d for d in DENSE4_DEPTHS]
    v = read(timed_series(DENSE4_DEPTHS, DENSE4_BACKWARD, DENSE4_FORWARD, flops))
    assert v.explained is not None and v.explained.raw_kind in model.FINDINGS  # the raw reading: width^4
    assert not v.is_finding and v.kind == model.LINEAR, (v.kind, v.evidence[:2])
    assert "its growth shows above the overhead only over depths" in v.evidence[0]
    # the guard holds its growth against its forward (flat: 1.0), not the undecided width^3.12 against arithmetic
    assert model.held_rate(v)[1] == pytest.approx(1.0) and model.held_rate(v, absolute=True)[1] > 4.0


@SETTINGS
@given(extra=st.floats(0.6, 1.5, allow_subnormal=False), overhead=st.floats(0.0, 0.5, allow_subnormal=False))
def test_a_time_growth_that_outgrows_its_arithmetic_over_a_wide_span_stays_a_finding(extra, overhead):
    """The late-growth rule takes nothing from a backward whose excess shows over the whole range (its growing part
    above a quarter of the overhead from 16 of 8..256): the hooked pathology over a size axis."""
    depths = [8, 11, 16, 23, 32, 45, 64, 91, 128, 181, 256]
    top = 256.0
    back = [100.0 * overhead + 1000.0 * (d / top) ** (2.0 + extra) for d in depths]
    fwd = [100.0 + 1000.0 * (d / top) ** 2.0 for d in depths]
    v = read(timed_series(depths, back, fwd, [32.0 * d * d for d in depths]))
    assert v.is_finding and v.kind in (model.SUPERLINEAR_BACKWARD, model.MILD_BACKWARD), (v.kind, v.evidence[:2])


#: `check probes/scaling.py --backend jax --mode compile`: the saved bytes of the compiled gradient and the forward's
#: intermediates per size. XLA's fusion changes what is saved from one size to the next (pairs: 0.12x the
#: intermediates at 24, 0.45x at 32), so the exact reading of the saved bytes is `inconclusive` ("emerging").
XLA_SAVED = {
    "attention": {8: (2688, 3848), 12: (5088, 7688), 16: (8192, 12808), 32: (28672, 46088), 49: (83016, 103888),
                  73: (130656, 224848), 146: (516608, 876008), 256: (1581312, 2662408)},
    "pairs": {8: (1280, 6408), 16: (3328, 24072), 24: (6400, 53000), 32: (42240, 93192), 44: (79104, 174600),
              69: (157088, 425600), 138: (618496, 1689128), 256: (2113792, 5791752)},
}  # fmt: skip


@pytest.mark.parametrize("chain", sorted(XLA_SAVED))
def test_saved_bytes_never_over_the_intermediates_are_the_programs_memory(chain):
    table = XLA_SAVED[chain]
    depths = sorted(table)
    s = series(depths, lambda d: 50.0 * d, lambda d: 100.0 * d * d, lambda d: 10.0 * d * d, mode="traced",
               intermediates=lambda d: table[d][1], saved=lambda d: table[d][0])  # fmt: skip
    v = read(s)
    assert v.memory is not None and v.explained is not None
    assert v.explained.memory_raw_kind == model.INCONCLUSIVE  # the exact reading alone cannot say
    assert v.memory.kind == model.MEMORY_LINEAR and not v.memory.is_finding
    assert v.explained.memory_bound == pytest.approx(max(a / b for a, b in table.values()))
    assert model.held_memory_exponent(v)[0] == 1.0


def test_saved_bytes_over_the_intermediates_keep_their_reading():
    """The same uneven steps with the saved bytes over the intermediates at one depth: no bound, still undecided."""
    table = dict(XLA_SAVED["pairs"])
    table[256] = (7_000_000, 5791752)
    depths = sorted(table)
    s = series(depths, lambda d: 50.0 * d, lambda d: 100.0 * d * d, lambda d: 10.0 * d * d, mode="traced",
               intermediates=lambda d: table[d][1], saved=lambda d: table[d][0])  # fmt: skip
    v = read(s)
    assert v.memory is not None and v.memory.kind != model.MEMORY_LINEAR
    assert v.explained is not None and v.explained.memory_bound is not None and v.explained.memory_bound > 1


def test_a_ratio_that_rises_only_as_its_forward_falls_is_bounded():
    """XLA compiles an all-pairs program's gradient in ~85 ms at every size and its forward in 70 ms up to 44
    particles, 28 ms from 88: the ratio rises 1.2x -> 3x, the gradient's own cost does not grow. A gradient that
    grows while its forward stays put is growing."""
    depths = [8, 16, 24, 32, 44, 88, 176, 256]

    def fwd(d):
        return 70.0 if d <= 44 else 28.0

    flat = read(series(depths, lambda d: 85.0 + 0.01 * d, fwd, lambda d: 60.0 * d * d, mode="traced"))
    ex = flat.explained
    assert ex is not None and ex.gradient_grows is False and ex.ratio_slope >= RATIO_FLAT
    assert ex.ratio_flat is True and words.ratio_text(ex).endswith("rising only as its forward falls")
    grows = read(series(depths, lambda d: 85.0 * d**0.5, lambda d: 70.0, lambda d: 60.0 * d * d, mode="traced"))
    ex = grows.explained
    assert ex is not None and ex.gradient_grows is True and ex.ratio_flat is False
    assert words.ratio_text(ex).endswith("growing")


def _call0(size_power: float, flops_power: float, call0_power: float) -> Series:
    """Eager: the steady backward linear, call 0 (the cache miss: recording and transforming the program, then the
    first backward) growing as d^call0_power; the program's ops growing as d^size_power, its FLOPs d^flops_power."""
    pts = []
    for d in (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64):
        b0 = 100.0 * d**call0_power
        times = {"forward0": 1e-6 * d, "forward": 1e-6 * d, "backward0": b0 * 1e-9, "backward": 1e-6 * d}
        counters = {"backward0": {"metadata_lookups": b0}, "backward": {"metadata_lookups": 50.0 * d}}
        p = Point(depth=d, times=times, counters=counters, calls=6)
        p.program = {"ops": 20.0 * d**size_power, "flops": 64.0 * d**flops_power, "intermediate_bytes": 8.0 * d}
        pts.append(p)
    return Series(chain="history", backend="engine", profile="fixed", mode="eager", points=pts)


def test_an_eager_call_0_is_read_against_the_programs_size():
    """A chain whose every layer reads every earlier output, eager: only call 0 grows (d^1.9), as the program's
    size does (d^1.94), faster than its arithmetic (d^1.59). It read superlinear-backward against the arithmetic
    (and 'steady calls are linear'); against its size it is linear, the program's own growth."""
    v = read(_call0(1.94, 1.59, 1.9))
    assert v.explained is not None and v.explained.basis == "ops"
    assert v.kind == model.LINEAR, (v.kind, v.evidence[:2])
    v = read(_call0(1.0, 1.0, 1.9))  # a program that grows linearly: call 0's d^1.9 is the cache miss' own
    assert v.kind == model.SUPERLINEAR_TRANSFORM, (v.kind, v.evidence[:2])
