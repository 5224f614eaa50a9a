"""Verdicts on hand-built Series (traced, compile, eager; counters and time-only backends)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from params import property_twins

from adprof import model, words
from adprof.analysis import explain
from adprof.analysis.classify import decide, sweep_table
from adprof.model import Point, PointStatus, Result, Series, Stop, StopReason


def traced_series(depths, kc, *, with_counters=True, noise=None, mode="traced", **kw) -> Series:
    """Traced points whose transform+drop key comparisons follow kc(d); times follow them too."""
    pts = []
    for i, d in enumerate(depths):
        c = float(kc(d))
        f = 1.0 if noise is None else float(noise[i])
        times = {
            "record": 1e-4 * d,
            "transform": 1e-3 + c * 1e-6 * f,
            "compile": 1e-3,
            "run": 1e-5,
            "drop": c * 1e-6 * f,
        }
        counters = {}
        if with_counters:
            counters = {
                "transform": {"key_comparisons": c, "metadata_lookups": 3 * d, "nodes_visited": 5 * d},
                "drop": {"key_comparisons": c, "metadata_lookups": d},
            }
        pts.append(Point(depth=d, times=times, counters=counters, ops={"value_ops": 3 * d, "derivative_ops": 9 * d}))
    kw.setdefault("chain", "mul")
    kw.setdefault("backend", "engine")
    kw.setdefault("profile", "v08")
    return Series(mode=mode, points=pts, **kw)


def eager_series(depths, per_call, *, call0=None, warm=1.0, **kw) -> Series:
    """Eager points: steady backward counter = per_call(d); calls 2..5 cost warm * call 1."""
    pts = []
    for d in depths:
        c = float(per_call(d))
        c0 = float(call0(d)) if call0 else 3 * c
        calls = [c0, c] + [c * warm] * 4
        steady = float(np.median(calls[1:]))
        pts.append(
            Point(
                depth=d,
                times={
                    "forward0": 1e-5 * d,
                    "backward0": c0 * 1e-7,
                    "forward": 1e-5 * d,
                    "backward": steady * 1e-7,
                },
                counters={
                    "forward0": {},
                    "backward0": {"metadata_lookups": c0},
                    "forward": {},
                    "backward": {"metadata_lookups": steady},
                },
                extra={
                    "backward_calls": [x * 1e-7 for x in calls],
                    "backward_call_counters": [{"metadata_lookups": x} for x in calls],
                    "cache": {"hits": 5, "misses": 1},
                },
            )
        )
    kw.setdefault("chain", "sin")
    kw.setdefault("backend", "engine")
    kw.setdefault("profile", "v08")
    return Series(mode="eager", points=pts, **kw)


def test_mul_chain_exponential_transform():
    s = traced_series(range(1, 19), lambda d: 5 * 2**d + 30 * d, declared_reuse=2)
    v = decide(s, predicted_base=2.0)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert v.base == pytest.approx(2.0, abs=0.15)
    assert v.predicted_base == 2.0
    assert v.reuse_agrees is True
    assert v.counter_fit.kind == "exponential" and v.time_fit.kind == "exponential"
    text = "\n".join(v.evidence)
    assert "x2.00 per layer over depths 16..18" in text
    assert "declared reuse 2 vs measured base 2.00: agrees" in text
    assert "key_comparisons" in text  # dominant counter share
    assert "x2.0 per layer" in v.cause and "used 2 times" in v.cause
    assert explain.STAGING in v.remedies and explain.FIXED_PROFILE in v.remedies
    assert explain.TRACED not in v.remedies


def test_cube_and_svd3_base_three_and_disagreeing_declared_reuse():
    s = traced_series(range(1, 11), lambda d: 7 * 3**d + 20 * d, declared_reuse=2, chain="svd3")
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert v.base == pytest.approx(3.0, abs=0.15)
    assert v.reuse_agrees is False
    assert any("disagrees" in e for e in v.evidence)


def test_fixed_profile_linear_no_remedies():
    depths = [8, 16, 32, 64, 128, 256, 512]
    s = traced_series(depths, lambda d: 40 + 6 * d, profile="fixed")
    v = decide(s)
    assert v.kind == model.LINEAR
    assert v.exponent == pytest.approx(1.0, abs=0.05)
    assert v.base is None and v.remedies == []
    assert "linear" in v.cause


def test_zero_counters_linear():
    s = traced_series([1, 2, 3, 4, 5], lambda d: 0)
    for p in s.points:  # nothing at all counted
        p.counters = {"transform": {"key_comparisons": 0}, "drop": {}}
    v = decide(s)
    assert v.kind == model.LINEAR


def test_time_only_backend_uses_wall_time():
    rng = np.random.default_rng(7)
    depths = [8, 16, 32, 64, 128, 256]
    s = traced_series(
        depths,
        lambda d: 50 * d,
        with_counters=False,
        noise=np.exp(rng.normal(0, 0.05, 6)),
        backend="jax",
        profile=None,
        mode="compile",
    )
    v = decide(s)
    assert v.counter_fit is None and v.time_fit is not None
    assert v.kind == model.LINEAR
    assert v.metric.startswith("time: transform+compile+drop")  # the phases that carry times
    assert explain.FIXED_PROFILE not in v.remedies


def test_compile_mode_exponential_is_transform():
    s = traced_series(range(1, 12), lambda d: 2**d, with_counters=False, backend="jax", profile=None, mode="compile")
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert v.base == pytest.approx(2.0, abs=0.2)


def test_counter_time_disagreement_recorded():
    # counters exponential, times flat (e.g. a noisy machine): counters decide, disagreement noted
    s = traced_series(range(1, 12), lambda d: 2**d)
    for p in s.points:
        p.times["transform"], p.times["drop"] = 1e-3, 1e-3
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert any("disagrees with counters (exponential)" in e for e in v.evidence)


def test_eager_superlinear_backward_not_amortized():
    s = eager_series([50, 100, 200, 400], lambda d: 3 * d * d + 50 * d)
    v = decide(s)
    assert v.kind == model.SUPERLINEAR_BACKWARD
    assert 1.7 <= v.exponent <= 2.1
    assert v.halving_ratio >= 3
    assert v.amortized is False
    assert v.warm_to_call1 == pytest.approx(1.0)
    text = "\n".join(v.evidence)
    assert "below 1/3 when halved" in text
    assert "not amortized" in text
    assert explain.TRACED in v.remedies
    assert "every eager backward" in v.cause


def test_eager_warm_calls_cheaper_are_amortized():
    s = eager_series([50, 100, 200, 400], lambda d: 3 * d * d, warm=0.1)
    v = decide(s)
    assert v.amortized is True
    assert v.warm_to_call1 == pytest.approx(0.1)


def test_eager_exponential_backward():
    s = eager_series(range(1, 12), lambda d: 2**d + 10 * d)
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_BACKWARD
    assert v.base == pytest.approx(2.0, abs=0.15)


def test_eager_only_call0_grows_is_transform():
    s = eager_series(range(1, 12), lambda d: 100 + 4 * d, call0=lambda d: 3**d)
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert v.base == pytest.approx(3.0, abs=0.15)
    assert v.call0_fit is not None and v.call0_fit.kind == "exponential"
    assert any("only call 0 grows" in e for e in v.evidence)


def test_inconclusive_two_points():
    v = decide(traced_series([1, 2], lambda d: 2**d))
    assert v.kind == model.INCONCLUSIVE


def test_error_verdicts():
    v = decide(Series(chain="x", backend="engine", profile="v08", mode="traced", error="ValueError: boom"))
    assert v.kind == model.ERROR and "boom" in v.cause
    v = decide(Series(chain="x", backend="engine", profile="v08", mode="traced"))
    assert v.kind == model.INCONCLUSIVE and not v.is_finding  # nothing measured is not a failing chain
    s = traced_series(range(1, 10), lambda d: 2**d)
    s.error = "worker crashed at depth 10"
    assert decide(s).kind == model.ERROR


def test_censored_points_support_exponential():
    s = traced_series(range(1, 8), lambda d: 4**d if d < 5 else 4**5)
    s.points[-2].status = s.points[-1].status = PointStatus.CENSORED
    s.stop = Stop(StopReason.CAP, after=5, phase="transform", seconds=2.0, limit=1.5)
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM
    assert v.counter_fit.censored_depths == [6, 7]
    assert 6 not in v.counter_fit.depths
    assert words.stopped_text(s) in v.evidence


def test_sweep_table_rows():
    results = []
    for k in (3, 1, 2):
        s = traced_series(
            range(1, 12), lambda d, k=k: k**d + 10 * d if k > 1 else 10 * d, params={"k": k}, chain="reuse"
        )
        results.append(Result(series=s, verdict=decide(s, predicted_base=float(k))))
    results.append(Result(series=traced_series(range(1, 6), lambda d: d), verdict=model.Verdict(kind="linear")))
    rows = sweep_table(results)
    assert [r["k"] for r in rows] == [1, 2, 3]
    assert [r["verdict"] for r in rows] == [
        model.LINEAR,
        model.EXPONENTIAL_TRANSFORM,
        model.EXPONENTIAL_TRANSFORM,
    ]
    assert rows[2]["base"] == pytest.approx(3.0, abs=0.15)
    assert rows[1]["predicted_base"] == 2.0
    assert all(r["agrees"] for r in rows)


def test_two_exact_points_that_agree_with_the_structure_are_exponential():
    """Whole-graph TRG on v08: x24 per step, so only steps 1-2 fit under the cap."""
    from adprof.model import Point

    def pt(d, kc):
        return Point(
            depth=d,
            times={"transform": 0.02 * kc / 21599, "drop": 0.01},
            counters={"transform": {"key_comparisons": kc}, "drop": {"key_comparisons": kc}},
        )

    s = Series(
        "trg",
        "engine",
        "v08",
        "traced",
        points=[pt(1, 21599), pt(2, 519534)],
        stop=Stop(StopReason.PREDICTED_CAP, after=2, depth=3, phase="transform", seconds=14.0, limit=1.5),
    )
    # the structure's tree sizes (the key DAG unfolded, counted at 4 depths without a transform) grow x24
    tree = {"depths": [1, 2, 3, 4], "tree_sizes": [2 * 21599, 2 * 519534, 2 * 12_468_816, 2 * 299_251_584]}
    v = decide(s, predicted_base=24.0, structure=tree)
    assert v.kind == "exponential-transform"
    assert v.base == pytest.approx(24.05, abs=0.1)
    assert any("proportional to the structure's tree size" in e for e in v.evidence)
    # the predicted base alone decides nothing: two points stay inconclusive
    assert decide(s, predicted_base=24.0).kind == "inconclusive"
    # nor does a structure whose tree sizes the counters do not follow
    other = {"depths": [1, 2, 3, 4], "tree_sizes": [10, 30, 90, 270]}
    assert decide(s, predicted_base=3.0, structure=other).kind == "inconclusive"
    s.stop = None  # not stopped by the cap: it could have measured more
    assert decide(s, predicted_base=24.0).kind == "inconclusive"


def test_counters_that_are_zero_at_the_measured_depths_never_crash_the_tree_rule():
    from adprof.model import Point

    pts = [Point(depth=d, counters={"transform": {"key_comparisons": 0}}, times={"transform": 1e-3}) for d in (1, 2)]
    s = Series("z", "engine", "fixed", "traced", points=pts)
    tree = {"depths": [1, 2, 3, 4], "tree_sizes": [2, 6, 18, 54]}
    assert decide(s, structure=tree).kind in ("inconclusive", "linear")


def _exact_backward(values: dict[int, float]) -> Series:
    pts = [
        Point(
            depth=d, times={"forward": v * 1e-9, "backward": v * 1e-9}, counters={"backward": {"metadata_lookups": v}}
        )
        for d, v in values.items()
    ]
    return Series(chain="gen", backend="engine", profile="fixed", mode="eager", points=pts)


KNEE_DEPTHS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=st.floats(1.0, 1.1, allow_subnormal=False),
    scale=st.floats(1.0, 1e4, allow_subnormal=False),
    overhead=st.floats(0.0, 100.0, allow_subnormal=False),
)
def test_a_gently_convex_exact_count_is_no_change_of_regime(q, scale, overhead):
    """An exact count ``a*d^q + c`` with q in the linear band sits over any line through its first depths, so every
    deeper depth exceeds that line: that is no knee, and it reads linear (a hypothesis run found d^1.0625 + 7
    read ``superlinear-backward`` past a "knee" at depth 5)."""
    v = decide(_exact_backward({d: scale * d**q + overhead for d in KNEE_DEPTHS}))
    assert v.kind == model.LINEAR and v.knee is None, (v.kind, v.evidence[:1])


def _time_series(values: dict[int, float]) -> Series:
    pts = [Point(depth=d, times={"transform": v}, samples={"transform": [v] * 5}) for d, v in values.items()]
    return Series(chain="gen", backend="jax", profile=None, mode="traced", points=pts, statistic="lower quartile of 5")


def _an_overhead_plus_a_power_law_reads_its_own_law_not_a_knee(p, overhead, depths):
    """``a + (d/top)^p`` is flat while the overhead dominates, then grows: one law fits every depth exactly, so the
    verdict is that law's exponent, not a "change of regime" past the flat part (1 + (d/128)^1.5 read d^1.61
    past 23 while its deciding fit said d^1.50)."""
    top = depths[-1]
    v = decide(_time_series({d: overhead + (d / top) ** p for d in depths}))
    assert v.knee is None, (v.kind, v.evidence[:1])
    assert v.fit is not None and v.exponent == v.fit.exponent


# 10 examples by default, 40 under -m slow
test_an_overhead_plus_a_power_law_reads_its_own_law_not_a_knee, test_an_overhead_plus_a_power_law_many = property_twins(
    _an_overhead_plus_a_power_law_reads_its_own_law_not_a_knee,
    {
        "p": st.floats(1.4, 2.5, allow_subnormal=False),
        "overhead": st.floats(0.0, 3.0, allow_subnormal=False),
        "depths": st.sampled_from([[8, 11, 16, 23, 32, 45, 64, 91, 128], [2, 4, 8, 16, 32, 64, 128, 256], KNEE_DEPTHS]),
    },
    quick=10,
    many=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_a_line_then_a_quadratic_onset_is_still_a_change_of_regime():
    """Linear up to depth 8, then a quadratic excess: the knee is found and the law past it is read."""
    v = decide(_exact_backward({d: 100.0 * d + (0.0 if d <= 8 else 50.0 * (d - 8) ** 2) for d in KNEE_DEPTHS}))
    assert v.knee is not None and v.knee.depth == 8 and v.kind == model.SUPERLINEAR_BACKWARD, (v.kind, v.evidence)


@pytest.mark.parametrize(
    ("stop", "says_budget"),
    [
        (Stop(StopReason.BUDGET_SHARE, after=16, depth=32, seconds=17.5, limit=3.8), True),
        (Stop(StopReason.BUDGET, after=8, depth=16, phase="compile_forward", seconds=2.5), True),
        (Stop(StopReason.CAP, after=16, depth=16, phase="compile", seconds=70.0, limit=60.0), False),
    ],
)
def test_too_few_depths_cut_by_the_budget_says_the_budget_not_the_cap(stop, says_budget):
    """torch compile at the default 60 s budget over three chains: two depths each, stopped by the budget share;
    the advice is more budget (with about how much), not "raise --cap"."""
    s = traced_series([8, 16], lambda d: 50 * d, with_counters=False, backend="torch", profile=None, mode="compile")
    for p in s.points:
        p.wall_seconds = 7.5
    s.stop = stop
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE
    assert ("budget ran out first" in v.reason) is says_budget
    if says_budget:
        assert "about 7.5 s more would measure 1 more" in v.reason and "--budget" in v.reason
        assert "raise --cap" not in v.reason and v.reason in v.evidence
