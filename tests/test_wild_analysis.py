"""What the zoo of documented pathologies needs from the analysis: named depth axes, lower-bound metrics, the
growing phase of a multi-phase mode, and the chain options (per-backend modes, declared depths, own cap).

The classification properties run over generated series (hypothesis): a lower-bound metric that reads linear
never changes a verdict; one that grows exponentially decides, with its own base.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adprof
from adprof import model, words
from adprof.analysis import explain
from adprof.analysis.classify import decide as classify
from adprof.analysis.growth import interval_text
from adprof.chain import ChainError
from adprof.model import Point, Series

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _time_series(depths, seconds, metric=None, *, axis="layer", lower_bounds=(), rng=None, mode="eager") -> Series:
    """Eager points whose steady backward takes ``seconds(d)`` (5 noisy repeats) and, optionally, carries a
    deterministic ``nodes`` metric ``metric(d)``."""
    rng = rng or np.random.default_rng(0)
    pts = []
    for d in depths:
        reps = [seconds(d) * math.exp(rng.normal(0.0, 0.03)) for _ in range(5)]
        pt = Point(depth=d, times={"backward": min(reps)}, samples={"backward": reps})
        if metric is not None:
            pt.metrics["backward"] = {"nodes": float(metric(d))}
        pts.append(pt)
    return Series(
        chain="c",
        backend="torch",
        profile=None,
        mode=mode,
        points=pts,
        axis=axis,
        lower_bound_metrics=list(lower_bounds),
        statistic="lower quartile",
        clock="wall (perf_counter)",
    )


# --------------------------------------------------------------------------- lower-bound metrics


@SETTINGS
@given(base=st.floats(1.6, 3.5), seed=st.integers(0, 2**16))
def test_a_growing_lower_bound_decides_with_its_own_base(base, seed):
    rng = np.random.default_rng(seed)
    depths = list(range(1, 10))
    # time is dominated by a fixed overhead at these depths; the graph the backward must walk doubles
    s = _time_series(
        depths, lambda d: 0.05 + 1e-6 * base**d, lambda d: 3 + 7 * base**d, lower_bounds=["nodes"], rng=rng
    )
    v = classify(s)
    assert v.kind == model.EXPONENTIAL_BACKWARD
    assert v.fit is v.metric_fits["nodes"] and v.fit.base == pytest.approx(base, rel=0.02)
    assert v.base == (v.rate_fit or v.fit).base  # the rate given is the cost's where its time reads one (issue 35)
    assert any("lower bound" in line for line in v.evidence)


@SETTINGS
@given(slope=st.floats(1.0, 50.0), p=st.sampled_from([1.0, 2.0]), seed=st.integers(0, 2**16))
def test_a_linear_lower_bound_never_changes_the_verdict(slope, p, seed):
    depths = [8, 11, 16, 23, 32, 45, 64, 91, 128]
    plain = _time_series(depths, lambda d: 1e-4 * d**p, lambda d: slope * d, rng=np.random.default_rng(seed))
    bound = _time_series(
        depths, lambda d: 1e-4 * d**p, lambda d: slope * d, lower_bounds=["nodes"], rng=np.random.default_rng(seed)
    )
    a, b = classify(plain), classify(bound)
    assert (a.kind, a.fit.source, a.exponent) == (b.kind, b.fit.source, b.exponent)
    assert b.fit.source == "time"  # a linear count proves nothing about the work it does not see


# --------------------------------------------------------------------------- the depth axis


def test_the_axis_names_every_figure():
    s = _time_series(range(1, 10), lambda d: 1e-3 * 2.0**d, lambda d: 9 * 2.0**d, axis="order", lower_bounds=["nodes"])
    v = classify(s)
    assert interval_text(v.fit) == "x2.00/order" and words.proxy_text(v) == "nodes x2.00/order"  # the proxy decided
    assert v.interval_text.startswith("x2.0") and v.interval_text.endswith("]")  # the cost's rate, with its interval
    assert v.rate_fit is not None and v.rate_fit.source == "time" and "/order" in v.interval_text
    assert any("x2.00 per order" in line for line in v.evidence)
    assert "x2.00 per order" in v.cause and "per layer" not in v.cause
    assert explain.TAYLOR_MODE in v.remedies
    power = classify(_time_series([8, 16, 32, 64, 128], lambda d: 1e-5 * d**2, axis="seq_len"))
    assert power.interval_text.startswith("seq_len^") and "seq_len^" in power.cause


# --------------------------------------------------------------------------- the growing phase


def _compile_series(depths, phase_seconds, backend="torch") -> Series:
    pts = []
    for d in depths:
        times = {ph: f(d) for ph, f in phase_seconds.items()}
        pts.append(Point(depth=d, times=times, samples={ph: [t] for ph, t in times.items()}))
    return Series(chain="fib", backend=backend, profile=None, mode="compile", points=pts, axis="unroll")


def test_the_cause_names_the_growing_phase():
    phases = {
        "dynamo": lambda d: 0.01 * d,
        "aot_autograd": lambda d: 0.02 * d,
        "inductor_codegen": lambda d: 0.05 * 3.0**d,
        "inductor_compile": lambda d: 1.5,
    }
    v = classify(_compile_series(range(1, 8), phases))
    assert v.growing_phase == "inductor_codegen" and v.phase_shares["inductor_codegen"] > 0.9
    assert set(v.phase_shares) == set(phases) and v.phase_fits["inductor_codegen"].kind == "exponential"
    assert explain.phase_name("torch", "compile", "inductor_codegen") in v.cause
    assert any(line.startswith("phases, share of the time's growth") for line in v.key_evidence)
    assert explain.REGIONAL_COMPILE in v.remedies


def test_no_phase_is_named_when_the_growth_is_spread():
    flat = {"transform": lambda d: 0.01 * d, "lower": lambda d: 0.01 * d, "compile": lambda d: 0.012 * d}
    v = classify(_compile_series([8, 16, 32, 64, 128], flat, backend="jax"))
    assert v.growing_phase == "" and max(v.phase_shares.values()) < 0.5


# --------------------------------------------------------------------------- chain options


def test_chain_options_round_trip_through_metadata():
    @adprof.chain(
        input_shape=(),
        axis="order",
        modes={"jax": ("traced",), "torch": ("eager", "compile")},
        depths=(1, 2, 3),
        adaptive=False,
        cap=30,
        cost_phases=("forward",),
    )
    def order(xp, x, depth):
        return xp.sum(x)

    meta = order.metadata()
    assert meta["axis"] == "order" and meta["adaptive"] is False and meta["cap"] == 30.0
    assert meta["backend_modes"] == {"jax": ["traced"], "torch": ["eager", "compile"]}
    assert order.modes_on("torch") == ("eager", "compile") and order.modes_on("autograd") == ()
    assert meta["cost_phases"] == ["forward"] and order.modes == ("traced", "eager", "compile")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"axis": "Per Order"}, "axis must be a short lowercase word"),
        ({"modes": {"jax": ("bogus",)}}, "unknown mode(s) ['bogus']"),
        ({"modes": {}}, "modes must name at least one backend"),
        ({"cap": -1}, "cap: expected a positive number"),
        ({"adaptive": "no"}, "adaptive must be True or False"),
        ({"cost_phases": (1,)}, "cost_phases must be phase names"),
    ],
)
def test_bad_chain_options_are_one_line(option, message):
    with pytest.raises(ChainError) as err:
        adprof.chain(**option)(lambda xp, x, depth: x)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_every_renderer_names_the_axis():
    from rich.console import Console

    from adprof.model import Report, Result
    from adprof.render import load_report, render_html, render_report, report_to_json

    s = _time_series(range(1, 10), lambda d: 1e-3 * 2.0**d, lambda d: 9 * 2.0**d, axis="order", lower_bounds=["nodes"])
    report = Report(results=[Result(series=s, verdict=classify(s))])
    console = Console(record=True, width=200)
    render_report(report, console, verbose=True)
    text = console.export_text()
    assert "x2.00/order" in text and "x2.00 per order" in text and "per layer" not in text.split("growth:")[0]
    assert "x2.00/order" in render_html(report)
    data = report_to_json(report)
    row = data["results"][0]
    assert row["axis"] == "order" and row["proxy_text"] == "nodes x2.00/order" and "/order [" in row["interval_text"]
    back = load_report(data).results[0].verdict
    assert (
        back.interval_text == row["interval_text"] and words.proxy_text(back) == "nodes x2.00/order"
    )  # fits keep the axis
