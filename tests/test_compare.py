"""Comparing two reports (adprof.comparison, ``adprof compare``): the classification of a pair, the pairing of the
series, and the command on saved reports (its outputs, exit status and bad input). Property tests over generated
reports and pairs; the command on real measurements in test_compare_cli.py."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adprof import model
from adprof.cli import main
from adprof.comparison import (
    DEFAULT_TOLERANCE,
    SEVERITY,
    SeriesKey,
    Side,
    State,
    classify,
    compare_reports,
    compare_results,
    pair_results,
)
from adprof.render.jsonout import report_text
from tests.compare_helpers import EXPONENTIAL, NO_FIT, report, result
from tests.extras import require

REPO = Path(__file__).resolve().parents[1]
RANKED = sorted(SEVERITY)
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


# --------------------------------------------------------------------------- strategies


@st.composite
def results(draw: st.DrawFn) -> model.Result:
    kind = draw(st.sampled_from([*model.VERDICTS]))
    rate = None if kind in NO_FIT else draw(st.floats(0.0, 5.0, allow_nan=False, allow_subnormal=False))
    width = draw(st.one_of(st.none(), st.floats(0.0, 0.5, allow_nan=False, allow_subnormal=False)))
    interval = None if rate is None or width is None else (max(rate - width, 0.0), rate + width)
    return result(
        chain=draw(st.sampled_from(["mul", "sin", "reuse", "a|b"])),
        kind=kind,
        rate=rate,
        interval=interval,
        backend=draw(st.sampled_from(["engine", "jax"])),
        profile=draw(st.sampled_from(["v08", "fixed", None])),
        mode=draw(st.sampled_from(["traced", "eager"])),
        file=draw(st.sampled_from(["/a/chains.py", "/b/chains.py", "/a/other.py", None])),
        source=draw(st.sampled_from(["counters", "time"])),
    )


def side(kind: str, rate: float | None = 1.0, interval: tuple[float, float] | None = None) -> Side:
    return Side.of(result(kind=kind, rate=rate, interval=interval))


def rate_for(kind: str, x: float) -> float:
    return 1.0 + x if kind in EXPONENTIAL else x


# --------------------------------------------------------------------------- classification


@SETTINGS
@given(
    st.sampled_from(RANKED),
    st.sampled_from(RANKED),
    st.floats(0.0, 4.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 4.0, allow_nan=False, allow_subnormal=False),
)
def test_a_worse_verdict_is_always_regressed_and_a_better_one_improved(before, after, x, y):
    b, a = side(before, rate_for(before, x)), side(after, rate_for(after, y))
    state, _ = classify(b, a)
    if SEVERITY[after] > SEVERITY[before]:
        assert state is State.REGRESSED
    elif SEVERITY[after] < SEVERITY[before]:
        assert state is State.IMPROVED
    # and swapping the sides swaps the two states
    back, _ = classify(a, b)
    if state is State.REGRESSED and SEVERITY[after] != SEVERITY[before]:
        assert back is State.IMPROVED


@SETTINGS
@given(
    st.sampled_from(RANKED),
    st.floats(0.0, 4.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 4.0, allow_nan=False, allow_subnormal=False),
    st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False),
)
def test_the_same_verdict_regresses_exactly_when_the_rate_leaves_the_interval_by_the_tolerance(kind, x, y, tol):
    if kind in NO_FIT:
        state, _ = classify(side(kind, None), side(kind, None), tol)
        assert state is State.UNCHANGED  # an error stays an error: no rate to compare
        return
    b, a = (
        side(kind, rate_for(kind, x), (rate_for(kind, x) - 0.05, rate_for(kind, x) + 0.05)),
        side(kind, rate_for(kind, y)),
    )
    state, reason = classify(b, a, tol)
    top, bottom = b.interval[1] + tol, b.interval[0] - tol
    expected = State.REGRESSED if a.rate > top else State.IMPROVED if a.rate < bottom else State.UNCHANGED
    assert state is expected, reason
    # a larger tolerance never turns an unchanged pair into a regression
    if state is not State.REGRESSED:
        assert classify(b, a, tol + 0.5)[0] is not State.REGRESSED


@SETTINGS
@given(st.sampled_from(RANKED), st.sampled_from([*model.VERDICTS]))
def test_inconclusive_on_either_side_is_not_compared(kind, other):
    """Issue 39: an open verdict is never unchanged against a closed one (inconclusive on both sides is)."""
    for b, a in ((model.INCONCLUSIVE, kind), (other, model.INCONCLUSIVE)):
        rb = None if b in NO_FIT else 1.0
        ra = None if a in NO_FIT else 1.0
        state, reason = classify(side(b, rb), side(a, ra))
        assert "inconclusive" in reason
        if b == a == model.INCONCLUSIVE:
            assert state is State.UNCHANGED
        elif a == model.INCONCLUSIVE:
            assert state is State.REGRESSED
        else:
            assert state is (State.IMPROVED if a == model.LINEAR else State.REGRESSED)


def test_the_ordering_of_verdicts():
    order = [model.LINEAR, model.MILD_TRANSFORM, model.SUPERLINEAR_TRANSFORM, model.EXPONENTIAL_TRANSFORM]
    assert [SEVERITY[k] for k in order] == sorted(SEVERITY[k] for k in order)
    assert (
        SEVERITY[model.RUNAWAY] > SEVERITY[model.EXPONENTIAL_BACKWARD]
        and SEVERITY[model.ERROR] > SEVERITY[model.RUNAWAY]
    )
    assert SEVERITY[model.MILD_BACKWARD] == SEVERITY[model.MILD_TRANSFORM]
    assert model.INCONCLUSIVE not in SEVERITY
    assert set(SEVERITY) | {model.INCONCLUSIVE} == set(model.VERDICTS)


def test_a_rate_beyond_the_interval_by_more_than_the_tolerance():
    base = side(model.EXPONENTIAL_TRANSFORM, 2.0, (1.99, 2.01))
    assert classify(base, side(model.EXPONENTIAL_TRANSFORM, 2.10))[0] is State.UNCHANGED  # 2.10 <= 2.01 + 0.1
    state, reason = classify(base, side(model.EXPONENTIAL_TRANSFORM, 2.12))
    assert state is State.REGRESSED and "2.12 > 2.11" in reason
    assert classify(base, side(model.EXPONENTIAL_TRANSFORM, 1.5))[0] is State.IMPROVED
    assert classify(base, side(model.EXPONENTIAL_TRANSFORM, 2.12), tolerance=0.2)[0] is State.UNCHANGED
    assert DEFAULT_TOLERANCE == 0.1


# --------------------------------------------------------------------------- pairing


@SETTINGS
@given(st.lists(results(), max_size=12))
def test_a_report_compared_with_itself_is_all_unchanged(rs):
    changes = compare_results(rs, rs)
    assert len(changes) == len(rs)
    assert all(c.state is State.UNCHANGED for c in changes), [(c.label, c.state, c.reason) for c in changes]
    assert all(c.matched_without == [] for c in changes)


@SETTINGS
@given(st.lists(results(), max_size=10), st.lists(results(), max_size=10), st.integers(0, 1000))
def test_every_series_is_in_exactly_one_change_whatever_the_order(base, new, seed):
    pairs = pair_results(base, new)
    paired_new = [n for b, n, _ in pairs if n is not None]
    paired_base = [b for b, n, _ in pairs if b is not None]
    assert sorted(map(id, paired_new)) == sorted(map(id, new))
    assert sorted(map(id, paired_base)) == sorted(map(id, base))
    changes = compare_results(base, new)
    assert sum(c.state is State.NEW for c in changes) + sum(
        b is not None and n is not None for b, n, _ in pairs
    ) == len(new)
    # the states do not depend on the order of the new report when every key is distinct
    keys = [SeriesKey.of(r) for r in [*base, *new]]
    if len(set(keys)) == len(keys) or not base:
        shuffled = list(new)
        random.Random(seed).shuffle(shuffled)
        states = sorted((c.key.label, c.state.value) for c in compare_results(base, shuffled))
        assert states == sorted((c.key.label, c.state.value) for c in changes)


def test_series_pair_across_profiles_and_files_only_when_unambiguous():
    base = [
        result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="v08"),
        result("sin", model.LINEAR, 1.0, profile="v08"),
    ]
    new = [result("mul", model.LINEAR, 1.0, profile="fixed"), result("sin", model.LINEAR, 1.0, profile="fixed")]
    changes = compare_results(base, new)
    assert [(c.key.chain, c.state, c.matched_without) for c in changes] == [
        ("mul", State.IMPROVED, ["profile"]),
        ("sin", State.UNCHANGED, ["profile"]),
    ]
    assert [c.state for c in compare_results(base, new, exact=True)] == [State.NEW, State.NEW, State.GONE, State.GONE]
    # two candidates on one side: no guess
    two = [result("mul", model.LINEAR, 1.0, profile="v08"), result("mul", model.LINEAR, 1.0, profile="fixed")]
    one = [result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, profile="other")]
    assert sorted(c.state.value for c in compare_results(two, one)) == ["gone", "gone", "new"]
    # a renamed file pairs; the same names in the same file pair on the whole key
    moved = compare_results([result(file="/a/old.py")], [result(file="/b/new.py")])
    assert [(c.state, c.matched_without) for c in moved] == [(State.UNCHANGED, ["file"])]


def test_sweep_values_are_part_of_the_key():
    base = [result("powers", model.EXPONENTIAL_TRANSFORM, 2.0, params={"k": 2})]
    new = [result("powers", model.EXPONENTIAL_TRANSFORM, 3.0, params={"k": 3})]
    assert sorted(c.state.value for c in compare_results(base, new)) == ["gone", "new"]


def test_the_series_not_compared_are_counted_in_a_note():
    base = report(result("mul", model.EXPONENTIAL_TRANSFORM, 2.0), result("sin", model.LINEAR, 1.0))
    new = report(result("mul", model.INCONCLUSIVE, 1.0), result("sin", model.LINEAR, 1.0))
    c = compare_reports(base, new)
    assert [ch.state for ch in c.changes] == [State.REGRESSED, State.UNCHANGED]  # issue 39: a lost decision
    assert "1 series inconclusive in one report only" in " ".join(c.notes)
    assert not any("not compared" in n for n in compare_reports(base, base).notes)


def test_versions_before_and_after():
    base = report(result(), versions={"adprof": "0.1.0", "torch": "2.12.0"})
    new = report(result(), versions={"adprof": "0.1.0", "torch": "2.13.0", "numpy": "2.4.6"})
    c = compare_reports(base, new)
    assert c.version_rows() == [("adprof", "0.1.0", "0.1.0"), ("numpy", "-", "2.4.6"), ("torch", "2.12.0", "2.13.0")]
    # without an environment's versions: read from the series
    c = compare_reports(report(result(versions={"jax": "0.4.30"})), report(result(versions={"jax": "0.5.0"})))
    assert c.version_rows() == [("jax", "0.4.30", "0.5.0")]


# --------------------------------------------------------------------------- the command on saved reports


def adprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m adprof ARGS`` as a user runs it (a process of its own)."""
    return subprocess.run(
        [sys.executable, "-m", "adprof", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


@pytest.fixture
def run_in_process(monkeypatch, capsys):
    """``adprof ARGS`` through :func:`adprof.cli.main` in this process (the same code, no interpreter start-up)."""

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("COLUMNS", "200")
        capsys.readouterr()
        code = main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out.out, out.err)

    return run


@pytest.fixture
def saved(tmp_path):
    """base.json (linear, with torch 2.12) and new.json (the same chain exponential, torch 2.13), plus others."""
    base = report(
        result("mul", model.LINEAR, 1.0, (0.99, 1.01)),
        result("gone_one", model.LINEAR, 1.0),
        versions={"adprof": "0.1.0", "torch": "2.12.0"},
    )
    new = report(
        result("mul", model.EXPONENTIAL_TRANSFORM, 2.0, (1.99, 2.01)),
        result("a|b *c* <d>", model.LINEAR, 1.0),
        versions={"adprof": "0.1.0", "torch": "2.13.0"},
    )
    (tmp_path / "base.json").write_text(report_text(base))
    (tmp_path / "new.json").write_text(report_text(new))
    return tmp_path


def test_compare_exits_1_on_a_regression_and_writes_every_output(saved):
    run = adprof(
        "compare", "base.json", "new.json", "--json", "c.json", "--html", "c.html", "--markdown", "c.md", cwd=saved
    )
    assert run.returncode == 1, run.stderr
    assert "1 regressed, 0 improved, 0 unchanged, 1 new, 1 gone" in run.stdout
    assert "2.12.0" in run.stdout and "2.13.0" in run.stdout  # the versions, before and after
    data = json.loads((saved / "c.json").read_text())
    assert data["regressed"] is True and data["counts"]["regressed"] == 1
    states = {s["key"]["chain"]: s["state"] for s in data["series"]}
    assert states == {"mul": "regressed", "a|b *c* <d>": "new", "gone_one": "gone"}
    mul = next(s for s in data["series"] if s["key"]["chain"] == "mul")
    assert mul["before"]["verdict"] == "linear" and mul["after"]["verdict"] == "exponential-transform"
    assert mul["before"]["interval"] == [0.99, 1.01] and mul["after"]["rate"] == 2.0
    assert data["versions"] == {
        "before": {"adprof": "0.1.0", "torch": "2.12.0"},
        "after": {"adprof": "0.1.0", "torch": "2.13.0"},
    }
    html = (saved / "c.html").read_text()
    assert 'class="state state-regressed">regressed<' in html and "&lt;d&gt;" in html and "<d>" not in html
    # reversed: the regression is an improvement, and nothing regressed
    back = adprof("compare", "new.json", "base.json", cwd=saved)
    assert back.returncode == 0 and "0 regressed, 1 improved" in back.stdout


def test_compare_markdown_renders_as_a_table_with_the_names_as_written(saved, run_in_process):
    require("markdown_it")
    import markdown_it

    run = run_in_process("compare", "base.json", "new.json", "--markdown", "-", cwd=saved)
    assert run.returncode == 1
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(run.stdout)
    rows, row = [], None
    for i, t in enumerate(tokens):
        if t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type == "inline" and row is not None and tokens[i - 1].type in ("td_open", "th_open"):
            row.append("".join(c.content for c in t.children if c.type in ("text", "code_inline")))
    header = rows[0]
    assert header[:2] == ["state", "chain"]
    by_chain = {r[1]: r for r in rows[1:] if len(r) == len(header)}
    assert by_chain["a|b *c* <d>"][0] == "new"  # one cell, as written: the pipe, the stars and the brackets
    assert by_chain["mul"][0] == "regressed"
    assert by_chain["mul"][5] == "exponential-transform x2.00/layer"
    # the regression is in bold
    assert any(c.type == "strong_open" for t in tokens for c in t.children or ())


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"results": [', "not a JSON report"),  # truncated
        ("not json at all", "not a JSON report"),
        ('{"foo": 1}', "not an adprof JSON report"),
        ('{"schema": 1, "results": []}', "written with JSON schema 1"),
        ('{"schema": 2, "results": [{"chain": 3}]}', "does not fit schema 2"),
        ('{"adprof_version": "0.1.0", "comparison_schema": 1, "series": []}', "not an adprof JSON report"),
    ],
    ids=["truncated", "not-json", "not-a-report", "other-schema", "bad-field", "a-comparison"],
)
def test_compare_rejects_what_is_not_a_report_with_one_line(saved, content, expected, run_in_process):
    (saved / "bad.json").write_text(content)
    for args in (("bad.json", "new.json"), ("base.json", "bad.json")):
        run = run_in_process("compare", *args, cwd=saved)
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("adprof: error: bad.json: ") and expected in lines[0], lines
        assert "Traceback" not in run.stderr and run.stdout == ""


def test_compare_bad_options_and_files(saved, run_in_process):
    missing = run_in_process("compare", "base.json", "nope.json", cwd=saved)
    assert missing.returncode == 2 and "nope.json: cannot read it" in missing.stderr
    neg = adprof("compare", "base.json", "new.json", "--tolerance", "-1", cwd=saved)  # argparse: its own exit 2
    assert neg.returncode == 2 and "expected a number >= 0" in neg.stderr
    same = run_in_process("compare", "base.json", "new.json", "--json", "base.json", cwd=saved)
    assert same.returncode == 2 and "is an input of this run" in same.stderr
    both = run_in_process("compare", "base.json", "new.json", "--json", "-", "--markdown", "-", cwd=saved)
    assert both.returncode == 2 and "both ask for stdout" in both.stderr
    one = adprof("compare", "base.json", cwd=saved)  # argparse: the usage line, exit 2
    assert one.returncode == 2 and "the following arguments are required" in one.stderr
