"""``adprof guard --baseline`` (the limits are the baseline's own figures), ``--junit`` (JUnit XML, read back by
junitparser) and ``--markdown`` (rendered by markdown-it-py): the rules on hand-made results, property tests
against the comparison's own classification, and the command on a real chain."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof import model
from adprof.comparison import MEMORY_SEVERITY, SEVERITY, Side, State, classify, classify_memory
from adprof.guard import GuardLimits, GuardReport, check_against_baseline, guard_checks
from adprof.render.guard import (
    baseline_text,
    guard_markdown,
    junit_xml,
    limit_text,
    measured_text,
    memory_limit_text,
    memory_reason_text,
    reason_text,
    xml_safe,
)
from tests.compare_helpers import EXPONENTIAL, NO_FIT, report, result
from tests.extras import require

REPO = Path(__file__).resolve().parents[1]
LIMITS = GuardLimits()
DECIDED = [k for k in SEVERITY if k not in NO_FIT]


def test_a_linear_baseline_may_not_become_superlinear():
    base = result(kind=model.LINEAR, rate=1.0, interval=(0.99, 1.01))
    worse = check_against_baseline(result(kind=model.SUPERLINEAR_TRANSFORM, rate=1.5), base, LIMITS)
    assert not worse.ok and "worse than the baseline's linear" in reason_text(worse)
    assert "linear d^1.00" in baseline_text(worse)
    drift = check_against_baseline(result(kind=model.LINEAR, rate=1.12), base, LIMITS)
    assert not drift.ok and "1.12 > 1.11" in reason_text(drift)  # the interval's top 1.01 + 0.1
    assert check_against_baseline(result(kind=model.LINEAR, rate=1.05), base, LIMITS).ok


def test_an_exponential_baseline_allows_its_own_base_and_no_more():
    base = result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.0, interval=(1.99, 2.01))
    same = check_against_baseline(result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.05), base, LIMITS)
    assert same.ok and "base at most 2.11" in limit_text(same)  # the normal limits (max base 1.1) would fail it
    assert not check_against_baseline(result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.05), None, LIMITS).ok
    more = check_against_baseline(result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.2), base, LIMITS)
    assert not more.ok and "base 2.20 > 2.11" in reason_text(more)
    assert check_against_baseline(result(kind=model.LINEAR, rate=1.0), base, LIMITS).ok  # better
    looser = check_against_baseline(result(kind=model.EXPONENTIAL_TRANSFORM, rate=2.2), base, LIMITS, tolerance=0.3)
    assert looser.ok


def test_a_series_without_baseline_figures_gets_the_normal_limits_and_says_so():
    new = result(kind=model.LINEAR, rate=1.2)
    absent = check_against_baseline(new, None, LIMITS, where="the baseline b.json")
    assert absent.ok and baseline_text(absent) == "not in the baseline b.json: the normal limits"
    assert "max exponent 1.30" in limit_text(absent)
    inconclusive = check_against_baseline(new, result(kind=model.INCONCLUSIVE, rate=1.0), LIMITS)
    assert inconclusive.ok and "reads inconclusive, without figures: the normal limits" in baseline_text(inconclusive)
    errored = check_against_baseline(result(kind=model.LINEAR, rate=1.5), result(kind=model.ERROR, rate=None), LIMITS)
    assert not errored.ok and "the normal limits" in baseline_text(errored)  # 1.5 > max exponent 1.3


def test_an_undecided_series_fails_against_any_baseline():
    base = result(kind=model.LINEAR, rate=1.0)
    for kind in (model.INCONCLUSIVE, model.ERROR, model.RUNAWAY):
        check = check_against_baseline(result(kind=kind, rate=None if kind in NO_FIT else 1.0), base, LIMITS)
        assert not check.ok and measured_text(check) == {"runaway": "runaway", "error": "error"}.get(
            kind, "inconclusive"
        )


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.sampled_from(DECIDED),
    st.sampled_from(DECIDED),
    st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 0.3, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 0.5, allow_nan=False, allow_subnormal=False),
)
def test_the_baseline_guard_fails_exactly_where_compare_says_regressed(before, after, x, y, width, tol):
    rate_b = 1.0 + x if before in EXPONENTIAL else x
    rate_a = 1.0 + y if after in EXPONENTIAL else y
    base = result(kind=before, rate=rate_b, interval=(rate_b - width, rate_b + width))
    new = result(kind=after, rate=rate_a)
    check = check_against_baseline(new, base, LIMITS, tolerance=tol)
    state, _ = classify(Side.of(base), Side.of(new), tol)
    assert check.ok == (state is not State.REGRESSED), (reason_text(check), state)


def test_guard_checks_pair_the_baseline_as_compare_does():
    baseline = report(result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="v08"))
    measured = report(
        result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="v08"),
        result("cube", model.EXPONENTIAL_TRANSFORM, 3.0, profile="v08"),
    )
    guard = guard_checks(measured, LIMITS, baseline, 0.1, "the baseline b.json")
    assert [c.ok for c in guard.checks] == [True, False]
    assert baseline_text(guard.checks[1]) == "not in the baseline b.json: the normal limits"
    assert guard.report is measured


def _with_memory(r: model.Result, kind: str, exponent: float) -> model.Result:
    """``r`` with a measured memory verdict of ``kind`` whose saved bytes grow like depth^exponent."""
    fit = model.Fit(metric="saved_bytes", kind="linear" if exponent < 1.3 else "superlinear", exponent=exponent)
    fit.interval, fit.depths, fit.values = [exponent, exponent], [1, 2, 4, 8], [8.0 * d**exponent for d in (1, 2, 4, 8)]
    r.verdict.memory = model.MemoryVerdict(kind=kind, measured=True, decided_by=model.SAVED_BYTES, fit=fit)
    return r


def test_a_baseline_guard_fails_a_memory_regression_the_time_verdict_does_not_show():
    base = _with_memory(result(kind=model.LINEAR, rate=1.0, interval=(0.99, 1.01)), model.MEMORY_LINEAR, 1.0)
    worse = _with_memory(result(kind=model.LINEAR, rate=1.0), model.SUPERLINEAR_MEMORY, 2.0)
    guard = guard_checks(report(worse), LIMITS, report(base), 0.1, "the baseline b.json")
    (check,) = guard.checks
    assert check.time_ok and not check.ok and check.memory is not None and not check.memory.ok
    assert "worse memory verdict" in memory_reason_text(
        check
    ) and "the baseline b.json's memory linear" in memory_limit_text(check)
    same = _with_memory(result(kind=model.LINEAR, rate=1.0), model.MEMORY_LINEAR, 1.05)
    assert guard_checks(report(same), LIMITS, report(base), 0.1).ok
    unmeasured = result(kind=model.LINEAR, rate=1.0)  # this report did not measure memory: nothing to compare
    check = guard_checks(report(unmeasured), LIMITS, report(base), 0.1).checks[0]
    assert check.ok and check.memory is None


MEMORY_KINDS = [k for k in MEMORY_SEVERITY if k != model.LEAK_PER_CALL]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from(MEMORY_KINDS),
    st.sampled_from(MEMORY_KINDS),
    st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 3.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 0.5, allow_nan=False, allow_subnormal=False),
)
def test_the_baseline_guard_fails_memory_exactly_where_compare_says_it_regressed(before, after, x, y, tol):
    base = _with_memory(result(kind=model.LINEAR, rate=1.0, interval=(0.9, 1.1)), before, x)
    new = _with_memory(result(kind=model.LINEAR, rate=1.0), after, y)
    check = guard_checks(report(new), LIMITS, report(base), tol).checks[0]
    state, _ = classify_memory(Side.of(base), Side.of(new), tol)
    assert check.ok == (state is not State.REGRESSED), (check.memory, state)


# --------------------------------------------------------------------------- JUnit XML and Markdown


HOSTILE = 'a<b>&"c"]]>\x1b[31m|*x*\nline'


def _hostile_guard() -> GuardReport:
    measured = report(
        result(HOSTILE, model.EXPONENTIAL_TRANSFORM, 2.0, versions={"adprof": "0.1.0", "numpy": "2.4.6"}),
        result("fine", model.LINEAR, 1.0),
    )
    measured.results[0].verdict.evidence = ["grows x2.00 per layer \x07 over depths 1..4"]
    return guard_checks(measured, LIMITS)


def test_junit_xml_is_read_back_by_a_junit_library():
    require("junitparser")
    import junitparser

    text = junit_xml(_hostile_guard())
    ET.fromstring(text.encode())  # well-formed XML 1.0, the escape character included
    xml = junitparser.JUnitXml.fromstring(text)
    suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
    (suite,) = suites
    assert (suite.name, suite.tests, suite.failures, suite.errors) == ("adprof guard", 2, 1, 0)
    cases = list(suite)
    assert [c.name for c in cases] == [xml_safe(f"{HOSTILE} [engine/fixed, traced]"), "fine [engine/fixed, traced]"]
    assert cases[0].classname == "adprof.guard.chains"
    (failure,) = cases[0].result
    assert isinstance(failure, junitparser.Failure) and failure.type == "exponential-transform"
    assert "max base 1.10" in failure.message and "x2.00 per layer > 1.10" in failure.message
    assert "- limit" in failure.text and "+ measured base 2.00 per layer" in failure.text
    assert "\\x07" in failure.text and "\x07" not in text  # a control character, written out
    assert cases[1].is_passed
    props = {p.name: p.value for p in suite.properties()}
    assert props == {"adprof": "0.1.0", "numpy": "2.4.6"}


def _cells(markdown: str) -> list[list[str]]:
    require("markdown_it")
    import markdown_it

    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(markdown)
    rows, row = [], None
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type == "inline" and row is not None and tokens[i - 1].type in ("td_open", "th_open"):
            row.append("".join(c.content for c in t.children if c.type in ("text", "code_inline")))
    return rows


def test_guard_markdown_is_one_table_with_the_names_as_written():
    rows = _cells(guard_markdown(_hostile_guard()))
    assert rows[0] == ["result", "chain", "backend/profile", "mode", "verdict", "measured", "limit", "why"]
    fail, ok = rows[1], rows[2]
    assert fail[0] == "FAIL" and fail[1] == 'a<b>&"c"]]> [31m|*x* line'  # one cell; whitespace folded
    assert fail[4] == "exponential-transform" and fail[5] == "base 2.00 per layer"
    assert ok[0] == "ok" and ok[1] == "fine"


# --------------------------------------------------------------------------- the command


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


CHAINS = str(REPO / "probes" / "chains.py")
DEPTHS = ("--depths", "1,2,3,4,5,6", "--mode", "traced")


def test_guard_baseline_junit_and_markdown_on_the_engine(tmp_path):
    """v08's mul fails the normal limits; against its own saved guard it holds (its base is the baseline's),
    while cube, not in the baseline, gets the normal limits and fails."""
    first = adprof("guard", f"{CHAINS}::mul", "--profile", "v08", *DEPTHS, "--json", "v08.json", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    saved = json.loads((tmp_path / "v08.json").read_text())
    assert saved["environment"]["versions"]["adprof"] and saved["results"][0]["versions"]["numpy"]
    held = adprof(
        "guard",
        f"{CHAINS}::mul",
        f"{CHAINS}::cube",
        "--profile",
        "v08",
        *DEPTHS,
        "--baseline",
        "v08.json",
        "--junit",
        "guard.xml",
        "--markdown",
        "guard.md",
        cwd=tmp_path,
    )
    assert held.returncode == 1, held.stderr  # cube: not in the baseline, x3.00 > max base 1.1
    assert "1 of 2 held (baseline v08.json, tolerance 0.1" in held.stdout
    assert "not in the baseline v08.json: the normal limits" in held.stdout
    root = ET.parse(tmp_path / "guard.xml").getroot()
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["mul [engine/v08, traced]", "cube [engine/v08, traced]"]
    assert cases[0].find("failure") is None and cases[1].find("failure") is not None
    rows = _cells((tmp_path / "guard.md").read_text())
    assert [r[0] for r in rows[1:]] == ["FAIL", "ok"] and rows[1][1] == "cube"


@pytest.mark.slow
def test_guard_against_a_healthy_baseline_fails_a_pathology(tmp_path):
    """mul alone against its v08 baseline holds; v08 against a fixed baseline is a worse verdict."""
    adprof("guard", f"{CHAINS}::mul", "--profile", "v08", *DEPTHS, "--json", "v08.json", cwd=tmp_path)
    alone = adprof("guard", f"{CHAINS}::mul", "--profile", "v08", *DEPTHS, "--baseline", "v08.json", cwd=tmp_path)
    assert alone.returncode == 0 and "1 of 1 held" in alone.stdout, alone.stdout
    adprof("guard", f"{CHAINS}::mul", "--profile", "fixed", *DEPTHS, "--json", "fixed.json", cwd=tmp_path)
    worse = adprof("guard", f"{CHAINS}::mul", "--profile", "v08", *DEPTHS, "--baseline", "fixed.json", cwd=tmp_path)
    assert worse.returncode == 1 and "worse than the baseline's linear" in worse.stdout


def test_guard_rejects_a_bad_baseline_before_measuring(tmp_path):
    (tmp_path / "bad.json").write_text('{"results": [')
    run = adprof("guard", f"{CHAINS}::mul", "--baseline", "bad.json", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.strip().startswith("adprof: error: bad.json: not a JSON report")
    assert "Traceback" not in run.stderr
    xml = adprof("guard", "x.py", "--junit", "out.txt", cwd=tmp_path)
    assert xml.returncode == 2 and "--junit out.txt: unknown file type '.txt'; use .xml" in xml.stderr
