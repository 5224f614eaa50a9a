"""Issue 34: torch.compile over a size axis. The compile's Python calls are not a law at small sizes (Inductor
specializes small shapes), then constant; the reading leaves those depths out, says so, and never hides a growth.
Deterministic (the counts measured on probes/scaling.py, replayed) and hypothesis properties."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adprof import backends
from adprof.analysis.classify import decide
from adprof.analysis.settle import MIN_SETTLED, SETTLED_SPAN, settle, settled_from
from adprof.model import Point, Report, Result, Series
from adprof.render.jsonout import load_report, report_to_json

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

DEPTHS = [1, 2, 3, 4, 6, 8, 16, 32, 64]
#: ``compile`` python_calls of probes/scaling.py under ``--backend torch --mode compile`` (torch 2.13, one run at
#: --budget 300, /work/notes/scaling_compile2.json), and the program's size (ops) at every depth.
MEASURED = {
    "attention": (11, [1526726, 1434194, 1711948, 1864989, 1473522, 1261426, 1261531, 1261422, 1270747]),
    "pairs": (7, [782811, 1134721, 1261742, 1394388, 1607288, 1078872, 1078872, 1079046, 1079046]),
    "dense4": (10, [1387983, 1480133, 1492942, 1462630, 1484946, 1479510, 1479510, 1478850, 1479372]),
}


def _series(values, ops, backend="torch", mode="compile", depths=DEPTHS, axis="seq_len") -> Series:
    pts = []
    for d, v, o in zip(depths, values, ops, strict=True):
        times = {"dynamo": 0.09, "aot_autograd": 0.17, "inductor_codegen": 0.33, "inductor_compile": 5.2}
        pts.append(
            Point(
                depth=d,
                times=dict(times),
                samples={k: [t] for k, t in times.items()},
                metrics={"compile": {"python_calls": float(v)}},
                program=None if o is None else {"ops": o, "flops": 10.0 * d * d},
            )
        )
    return Series(
        chain="c",
        backend=backend,
        profile=None,
        mode=mode,
        points=pts,
        axis=axis,
        deciding_metrics=["python_calls"],
        backend_info=backends.backend_info(backend, mode),
    )


# --------------------------------------------------------------------------- the measured counts, replayed


def test_the_measured_compiles_read_flat_from_the_depth_they_settle_on():
    expected = {"attention": [1, 2, 3, 4, 6], "pairs": [1, 2, 3, 4, 6], "dense4": [1, 2, 3, 4]}
    for name, (ops, values) in MEASURED.items():
        v = decide(_series(values, [ops] * len(values)))
        assert v.kind == "linear" and v.fit is not None and v.fit.exponent == 0.0, (name, v.kind, v.reason)
        st_ = v.fit.settled
        assert st_ is not None and st_.dropped == expected[name], (name, st_)
        assert st_.depth == DEPTHS[len(expected[name])] and st_.ops == ops
        assert st_.dropped_values == [float(x) for x in values[: len(expected[name])]]
        assert st_.spread <= 0.01
        line = next(e for e in v.key_evidence if "left out" in e)
        assert f"depths {', '.join(map(str, expected[name]))} left out" in line
        assert f"the same {ops} ops at every depth" in line and f"from depth {st_.depth} on" in line
        assert "unroll_reductions_threshold" in line  # the backend's words for why


def test_without_the_rule_the_attention_compile_was_inconclusive():
    """The same counts on a backend that declares no shape specialization: read over every depth, as before."""
    ops, values = MEASURED["attention"]
    s = _series(values, [ops] * len(values))
    s.backend_info = backends.backend_info("jax", "compile")
    s.backend = "jax"
    v = decide(s)
    assert v.fit is not None and v.fit.settled is None
    assert v.kind == "inconclusive" and "only one growing step" in v.fit.reason


def test_a_program_that_changes_with_depth_is_never_settled():
    """Fibonacci's compile over layers: the program grows, every depth counts (exponential, nothing left out)."""
    depths = [1, 2, 3, 4, 5, 6, 7, 8]
    fib = [1.0, 1.0]
    while len(fib) < len(depths) + 2:
        fib.append(fib[-1] + fib[-2])
    values = [1e6 + 5e4 * f for f in fib[2:]]
    v = decide(_series(values, [3 * d for d in depths], depths=depths, axis="layer"))
    assert v.fit is not None and v.fit.settled is None
    assert v.kind.startswith("exponential"), (v.kind, v.reason)


def test_a_compile_that_grows_on_the_same_program_is_read_over_every_depth():
    """The same program at every size, a compile growing with the size: a real cost, nothing left out."""
    values = [1e6 + 2e3 * d * d for d in DEPTHS]
    v = decide(_series(values, [11] * len(values)))
    assert v.fit is not None and v.fit.settled is None and v.kind != "linear"


def test_points_without_a_program_are_never_settled():
    ops, values = MEASURED["attention"]
    v = decide(_series(values, [None] * len(values)))
    assert v.fit is not None and v.fit.settled is None and v.kind == "inconclusive"


def test_settled_depths_survive_the_json_report():
    ops, values = MEASURED["attention"]
    s = _series(values, [ops] * len(values))
    rep = Report(results=[Result(series=s, verdict=decide(s))])
    back = load_report(json.loads(json.dumps(report_to_json(rep))))
    fit = back.results[0].verdict.fit
    assert fit is not None and fit.settled is not None
    assert fit.settled.dropped == [1, 2, 3, 4, 6] and fit.settled.depth == 8
    assert report_to_json(rep)["results"][0]["fit"]["settled"]["dropped"] == [1, 2, 3, 4, 6]


def test_censored_points_stay_in_the_reading():
    ops, values = MEASURED["pairs"]
    d, v, c, st_ = settle(DEPTHS + [128], values + [2e6], [False] * 9 + [True], [ops] * 10)
    assert st_ is not None and st_.dropped == [1, 2, 3, 4, 6]
    assert d == [8, 16, 32, 64, 128] and c == [False, False, False, False, True]


# --------------------------------------------------------------------------- properties

_depths = st.lists(st.integers(1, 4096), min_size=MIN_SETTLED + 1, max_size=12, unique=True).map(sorted)


@SETTINGS
@given(
    prefix=st.lists(
        st.one_of(st.floats(0.2, 0.95, allow_subnormal=False), st.floats(1.05, 5.0, allow_subnormal=False)),
        min_size=1,
        max_size=6,
    ),
    tail_len=st.integers(MIN_SETTLED, 6),
    level=st.floats(1e3, 1e8, allow_subnormal=False),
    wobble=st.lists(st.floats(0.0, 0.0099, allow_subnormal=False), min_size=6, max_size=6),
    ops=st.integers(1, 500),
)
def test_any_prefix_before_a_settled_count_is_left_out_and_the_rest_reads_flat(prefix, tail_len, level, wobble, ops):
    """Whatever the compiles below do (off the level by 5% or more), a count constant within 1% from a depth on (over
    3+ depths spanning 4x or more, not rising at every step) reads flat, from that depth or below it."""
    depths = [2**i for i in range(len(prefix) + tail_len)]
    tail = [level * (1 + w) for w in wobble[:tail_len]]
    tail[1] = min(tail[0], tail[1])  # does not rise at every step
    values = [level * f for f in prefix] + tail
    first = settled_from(depths, values, [ops] * len(depths))
    assert first is not None and first <= len(prefix)
    v = decide(_series(values, [ops] * len(values), depths=depths))
    assert v.kind == "linear" and v.fit is not None and v.fit.exponent == 0.0, (v.kind, v.reason, values)


@SETTINGS
@given(
    depths=_depths,
    p=st.floats(1.05, 4.0, allow_subnormal=False),
    base=st.floats(1.16, 3.0, allow_subnormal=False),
    exponential=st.booleans(),
    a=st.floats(0.0, 1e6, allow_subnormal=False),
    ops_growth=st.booleans(),
)
def test_a_growing_count_is_never_left_out(depths, p, base, exponential, a, ops_growth):
    """A count that grows (a power law or an exponential, over any overhead) keeps every depth, whether its program
    is the same at every depth or not; and a program that changes with depth never settles anything."""
    c = 1e3
    values = [a + c * (base ** min(d, 200) if exponential else d**p) for d in depths]
    ops = [float(d) for d in depths] if ops_growth else [7.0] * len(depths)
    tail = values[-MIN_SETTLED:]
    rises = all(b > a_ for a_, b in zip(tail, tail[1:], strict=False))
    if rises:
        assert settled_from(depths, values, ops) is None
    flat = [1e6] * len(depths)
    flat[0] = 3e6
    if ops_growth:
        assert settled_from(depths, flat, ops) is None
    elif depths[-1] / depths[1] >= SETTLED_SPAN and len(depths) - 1 >= MIN_SETTLED:
        assert settled_from(depths, flat, ops) is not None


def test_a_size_axis_starts_where_the_chain_says_not_at_the_modes_first_step():
    """torch compile's mode depths start at 1 (a compile costs seconds: small layer steps); a chain that declares
    its sizes from 8 is planned from 8, so the default budget is not spent on sizes Inductor specializes and the
    reading then drops (measured at --budget 60: depths 1, 2, 3, 4 and nothing settled, `inconclusive`)."""
    from adprof.chain.loader import load_chains
    from adprof.measure.plan import plan_series

    metas = [{**c.metadata(), "file": "probes/scaling.py"} for c in load_chains("probes/scaling.py")]
    specs = plan_series(metas, ["torch"], None, "compile", [])
    mode_depths = backends.backend_declaration("torch").mode_depths["compile"]
    assert mode_depths[0] == 1
    for spec in specs:
        assert spec.depths == tuple(d for d in mode_depths if d >= 8), spec.chain
        assert len(spec.depths) >= 3 and spec.depths[-1] / spec.depths[0] >= 4  # enough to settle
    # a layer chain declaring nothing keeps the mode's steps; one declared from 1 too
    layer = {**metas[0], "depths": list(range(1, 9)), "declared_depths": False, "axis": "layer"}
    (spec,) = plan_series([layer], ["torch"], None, "compile", [])
    assert spec.depths == tuple(mode_depths)
    short = {**metas[0], "depths": [32, 64, 128, 256], "declared_depths": True}  # few mode steps past 32
    (spec,) = plan_series([short], ["torch"], None, "compile", [])
    assert spec.depths == (32, 64, 128, 256)


def test_check_without_budget_gets_what_torch_compile_series_declare():
    """60 s for three torch.compile series measured one or two depths of each (`inconclusive: the budget ran out
    first`); without --budget, check gives each series the 100 s its mode declares, and says so in a note."""
    import argparse

    from adprof.chain.loader import load_chains
    from adprof.cli.check import _declared_budget
    from adprof.measure import MeasureConfig
    from adprof.measure.plan import declared_budget, plan_series

    metas = [{**c.metadata(), "file": "probes/scaling.py"} for c in load_chains("probes/scaling.py")]
    specs = plan_series(metas, ["torch"], None, "compile", [])
    assert declared_budget(specs) == (300.0, "3 torch compile series x 100 s")
    args, cfg = argparse.Namespace(budget=60.0), MeasureConfig(budget=60.0)
    note = _declared_budget(args, cfg, specs)
    assert cfg.budget == args.budget == 300.0 and note is not None and "budget 300 s (3 torch compile" in note
    eager = plan_series(metas, ["torch"], None, "eager", [])
    assert declared_budget(eager) is None and _declared_budget(args, MeasureConfig(budget=60.0), eager) is None


def test_an_exact_count_whose_marginal_cost_shrinks_reads_flat_not_a_negative_power():
    """torch compile dense4's compile python_calls over widths 8..64 (settled from 8: nothing left out): the
    marginal reading's local power is negative (-1.96); the growth column said `width^-1.96`."""
    from adprof.model import fit_figure

    values = [1478402.0, 1478886.0, 1479188.0, 1479220.0]
    v = decide(_series(values, [10] * 4, depths=[8, 16, 32, 64], axis="width"))
    assert v.kind == "linear" and v.fit is not None and v.fit.source != "time"
    assert fit_figure(v.fit) == "flat"
