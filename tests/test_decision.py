"""The typed decision: ``Series.stop`` and ``Point.status`` instead of sentences, one :func:`decide` that owns
hangs, runaways, empty series and the time-vs-metric contradiction, and one measuring path for both guards."""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from params import property_twins

from adprof import model, words
from adprof.analysis.classify import decide
from adprof.cli import main
from adprof.model import (
    CensorReason,
    Fit,
    Point,
    PointStatus,
    Result,
    Series,
    Stop,
    StopReason,
    Verdict,
)
from adprof.render.jsonout import load_report, report_to_json

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "adprof"
BAD = Path(__file__).resolve().parent / "chains_bad"


# ----------------------------------------------------------------------------------- no control flow on text

#: Fields that hold sentences: no code may branch on their content.
TEXT_FIELDS = {"stopped", "reason", "extra", "error", "cause", "evidence", "message"}


def _names_text_field(node: ast.AST) -> bool:
    """``x.stopped``, ``x.extra[...]``, ``x.extra.get(...)``, ``x.reason``: an expression reading a text field."""
    if isinstance(node, ast.Attribute):
        return node.attr in TEXT_FIELDS or _names_text_field(node.value)
    if isinstance(node, ast.Subscript):
        return _names_text_field(node.value)
    if isinstance(node, ast.Call):
        return _names_text_field(node.func)
    return False


def _text_tests(tree: ast.AST) -> list[int]:
    """Lines that compare a text field with a string literal, or test a literal ``in`` one, or call
    ``startswith``/``endswith``/``find`` on one with a literal, inside an ``if``/``while``/conditional/bool."""
    lines = []
    tests: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
            tests.append(node.test)
        elif isinstance(node, ast.comprehension):
            tests.extend(node.ifs)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values)
    for test in tests:
        for n in ast.walk(test):
            if isinstance(n, ast.Compare):
                sides = [n.left, *n.comparators]
                literal = any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides)
                if literal and any(_names_text_field(s) for s in sides):
                    lines.append(n.lineno)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                if n.func.attr in ("startswith", "endswith", "find", "count") and _names_text_field(n.func.value):
                    lines.append(n.lineno)
    return lines


def test_no_control_flow_reads_message_text():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line in _text_tests(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert not offenders, "control flow on message text: " + ", ".join(offenders)


def test_the_text_scan_finds_what_it_looks_for():
    bad = textwrap.dedent(
        """
        if "budget" in series.stopped: pass
        ok = [p for p in pts if p.extra.get("killed")] if s.reason == "x" else []
        while r.series.stopped.startswith("stopped"): pass
        """
    )
    assert len(_text_tests(ast.parse(bad))) == 3
    assert _text_tests(ast.parse("if series.stop.reason is StopReason.BUDGET: pass")) == []


# ----------------------------------------------------------------------------------- typed state and JSON


def _series(values, mode="traced", phase="transform", **kw) -> Series:
    s = Series("c", "engine", "fixed", mode, **kw)
    for d, v in values:
        s.points.append(Point(depth=d, times={phase: v * 1e-6}, counters={phase: {"key_comparisons": v}}))
    return s


def test_stop_sentences_are_renderings_of_the_typed_stop():
    stop = Stop(StopReason.CAP, after=25, phase="transform", seconds=1.62, limit=1.5)
    assert words.stop_text(stop) == "stopped after depth 25: transform 1.62 s > 1.5 s cap"
    hang = Stop(StopReason.TIMEOUT, after=2, depth=3, phase="record", seconds=0.41, limit=0.4)
    assert "depth 3 killed in record after the 0.4 s timeout" in words.stop_text(hang)
    assert words.stop_text(Stop(StopReason.NOT_MEASURED, interrupt="SIGTERM")) == "not measured: interrupted by SIGTERM"
    # every reason renders (no reason falls through to a wrong sentence)
    for reason in StopReason:
        text = words.stop_text(Stop(reason, after=4, depth=5, phase="transform", seconds=2.0, limit=1.5))
        assert text and "None" not in text, (reason, text)


def test_json_round_trip_keeps_the_typed_state_and_stores_the_deciding_fit_once():
    s = _series([(d, 2**d) for d in range(1, 9)])
    s.points.append(
        Point(depth=9, times={"transform": 9.0}, status=PointStatus.KILLED, censor_reason=CensorReason.TIMEOUT)
    )
    s.stop = Stop(StopReason.TIMEOUT, after=8, depth=9, phase="transform", seconds=6.0, limit=6.0)
    report = model.Report(results=[Result(s, decide(s))])
    data = json.loads(json.dumps(report_to_json(report)))
    row = data["results"][0]
    assert row["stop"]["reason"] == "timeout" and row["points"][-1]["status"] == "killed"
    assert row["killed"] and row["finding"] and row["decided_by"] == "counter_fit" and row["counter_fit"] is None
    back = load_report(data)
    assert back == report
    assert back.results[0].verdict.counter_fit is back.results[0].verdict.fit  # identity restored
    assert back.results[0].series.killed is not None


# ----------------------------------------------------------------------------------- decide() owns the decision


def test_empty_series_is_inconclusive_not_an_error():
    s = Series("c", "engine", "fixed", "traced", stop=Stop(StopReason.NOT_MEASURED))
    v = decide(s)
    assert v.kind == model.INCONCLUSIVE and not v.is_finding and "not measured" in v.reason


def test_a_killed_point_after_healthy_depths_is_a_runaway_finding():
    s = _series([(d, 10 * d) for d in range(1, 7)])
    s.points.append(Point(depth=7, times={"transform": 6.0}, status=PointStatus.KILLED))
    s.stop = Stop(StopReason.TIMEOUT, after=6, depth=7, phase="transform", seconds=6.0, limit=6.0)
    v = decide(s)
    assert v.kind == model.RUNAWAY and v.killed and v.is_finding
    assert v.fit.kind == "linear"  # the reading of the measured depths is kept, not rewritten
    assert v.key_evidence[0] == v.reason and "depth 7 killed" in v.reason


def test_a_killed_point_after_exponential_depths_stays_exponential_and_a_finding():
    s = _series([(d, 2**d) for d in range(1, 9)])
    s.points.append(Point(depth=9, times={"transform": 6.0}, status=PointStatus.KILLED))
    s.stop = Stop(StopReason.TIMEOUT, after=8, depth=9, phase="transform", seconds=6.0, limit=6.0)
    v = decide(s)
    assert v.kind == model.EXPONENTIAL_TRANSFORM and v.killed and v.is_finding
    assert any("consistent with the exponential growth" in e for e in v.evidence)


def _contradicting(trust=None):
    """Counters flat, time x2 per layer (the metric is blind to the work that grows)."""
    s = Series("c", "cmd", None, "traced")
    for d in range(1, 11):
        t = 1e-4 * 2**d
        s.points.append(
            Point(
                depth=d,
                times={"transform": t},
                samples={"transform": [t, t * 1.01, t * 1.02]},
                counters={"transform": {"steps": 100.0}},
            )
        )
    return decide(s, trust=trust)


def test_time_contradicting_a_healthy_metric_is_inconclusive_unless_trusted():
    v = _contradicting()
    assert v.kind == model.INCONCLUSIVE and "--trust" in v.reason and v.key_evidence[0] == v.reason
    assert v.fit.source == "counters" and v.fit.kind == "linear"
    assert _contradicting("counters").kind == model.LINEAR
    trusted = _contradicting("time")
    assert trusted.kind == model.EXPONENTIAL_TRANSFORM and trusted.fit.source == "time"
    assert trusted.base == pytest.approx(2.0, rel=0.05)


@settings(max_examples=25, deadline=None)
@given(
    law=st.sampled_from(["lin", "quad", "exp", "flat"]),
    killed=st.booleans(),
    n=st.integers(min_value=3, max_value=10),
    error=st.booleans(),
)
def test_verdict_fields_agree_with_each_other(law, killed, n, error):
    f = {"lin": lambda d: 5 * d, "quad": lambda d: d * d, "exp": lambda d: 2**d, "flat": lambda d: 7}[law]
    s = _series([(d, f(d)) for d in range(1, n + 1)], error="boom" if error else None)
    if killed:
        s.points.append(Point(depth=n + 1, times={"transform": 9.0}, status=PointStatus.KILLED))
        s.stop = Stop(StopReason.TIMEOUT, after=n, depth=n + 1, phase="transform", seconds=9.0, limit=6.0)
    v = decide(s)
    assert v.kind in model.VERDICTS
    assert v.is_finding == (v.kind in model.FINDINGS or v.killed)
    if error:
        assert v.kind == model.ERROR and v.fit is None
        return
    assert v.killed == killed
    if killed:
        assert v.is_finding  # a hang is never healthy
    if v.base is not None:  # the numbers are read from the one deciding fit
        assert v.fit.kind == "exponential" and v.base == v.fit.base
    assert v.interval_text == model.fit_figure(v.fit)
    assert v.presentation == ("paragraph" if v.kind in model.PATHOLOGIES else "row" if v.kind == "linear" else "line")


def test_verdict_numbers_have_one_source():
    fit = Fit(metric="m", kind="exponential", base=2.0, depths=[1, 2, 3], values=[2, 4, 8])
    v = Verdict(model.EXPONENTIAL_TRANSFORM, fit=fit)
    fit.base = 3.0
    assert v.base == 3.0 and v.metric == "m"
    with pytest.raises(AttributeError):
        v.base = 1.0  # type: ignore[misc]


# ----------------------------------------------------------------------------------- end to end


def _check(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.json"
    code = main([*argv, "--no-color", "--json", str(out)])
    return code, json.loads(out.read_text())


def test_structure_hang_at_depth_3_keeps_the_depths_and_is_a_runaway(tmp_path, capsys):
    code, data = _check(
        tmp_path, "check", f"{BAD / 'late_hang.py'}", "--profile", "fixed", "--mode", "traced", "--cap", "0.1"
    )
    (row,) = data["results"]
    assert row["verdict"] == "runaway" and row["killed"] and code == 1
    assert [p["depth"] for p in row["points"]] == [1, 2, 3] and row["points"][-1]["status"] == "killed"
    assert row["stop"]["reason"] == "timeout" and not row["error"]


def test_counters_flat_while_time_doubles_is_inconclusive_and_fails_the_guard(tmp_path, capsys):
    prog = tmp_path / "blind.py"
    prog.write_text(
        "import json, sys\nd = int(sys.argv[1])\n"
        'print(json.dumps({"transform_seconds": 1e-4 * 2 ** d, "counters": {"steps": 100}}))\n'
    )
    cmd = f"{sys.executable} {prog} {{depth}}"
    code, data = _check(tmp_path, "check", "--cmd", cmd, "--mode", "traced", "--max-depth", "10")
    (row,) = data["results"]
    assert row["verdict"] == "inconclusive" and "--trust" in row["reason"], row["evidence"]
    printed = capsys.readouterr().out
    assert "blind to the work that grows" in printed and "--trust" in printed  # said by default, not only -v
    code, data = _check(tmp_path, "check", "--cmd", cmd, "--mode", "traced", "--max-depth", "10", "--trust", "time")
    assert data["results"][0]["verdict"] == "exponential-transform" and code == 1
    code = main(["guard", "--cmd", cmd, "--mode", "traced", "--depths", "1,2,3,4,5,6,7,8", "--no-color"])
    out = capsys.readouterr().out
    assert code == 1 and "0 of 1 held" in out and "inconclusive" in out


def test_the_pytest_guard_measures_in_a_supervised_worker(pytester):
    """A chain that hangs fails the test (killed at the guard's timeout) instead of hanging pytest."""
    pytester.makepyfile(
        hangmod="""
        import adprof

        @adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4, 5, 6, 7, 8))
        def hang7(xp, x, depth):
            y = x
            for _ in range(depth):
                y = xp.sin(y)
            while depth >= 7:
                pass
            return xp.sum(y)
        """,
        test_it="""
        def test_hang(adprof_guard):
            adprof_guard.scaling("hangmod.py::hang7", mode="traced", cap=0.2)

        def test_local(adprof_guard):
            def inner(xp, x, depth):
                return xp.sum(x)
            adprof_guard.scaling(inner, mode="traced")
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*FAIL hang7 [[]engine/fixed, traced[]]: hang*depth 7 killed*", "*module level*"])


def _one_slow_point_never_contradicts_exact_counters(n, burst, noise):
    """A load burst on the deepest point (any size) and right-skewed noise elsewhere: the counters decide."""
    s = Series("c", "engine", "fixed", "traced")
    for d in range(1, n + 1):
        t = (2e-4 + 5e-5 * d) * noise[d - 1] * (burst if d == n else 1.0)
        s.points.append(Point(depth=d, times={"transform": t}, counters={"transform": {"key_comparisons": 10 * d}}))
    v = decide(s)
    assert v.kind == model.LINEAR, v.reason


# 10 examples by default, 40 under -m slow
test_one_slow_point_never_contradicts_exact_counters, test_one_slow_point_many = property_twins(
    _one_slow_point_never_contradicts_exact_counters,
    {
        "n": st.integers(min_value=5, max_value=14),
        "burst": st.floats(min_value=1.0, max_value=200.0),
        "noise": st.lists(st.floats(min_value=1.0, max_value=1.9), min_size=14, max_size=14),
    },
    quick=10,
    many=40,
    deadline=None,
)
