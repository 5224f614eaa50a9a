"""The memory verdict in every renderer (console, concise summary, JSON schema 3 and schema 2 read back, Markdown,
HTML, plots), the exit status it counts in, and ``adprof compare`` on it, on hand-built series."""

from __future__ import annotations

import io
import json

import pytest
from extras import requires
from rich.console import Console

from adprof import model
from adprof.comparison import State, compare_reports
from adprof.model import Point, Series
from adprof.render import load_report, render_html, render_report
from adprof.render.jsonout import READ_SCHEMAS, SCHEMA, SchemaError, report_text
from adprof.render.markdown import report_markdown
from adprof.render.plot import simple_svg
from adprof.report import build_report

DEPTHS = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32]


def _series(name, saved=None, retained=None, backend="torch", notes=None) -> Series:
    points = [
        Point(
            depth=d,
            times={"backward": 1e-4 * d},
            counters={"backward": {"key_comparisons": 10 * d}},  # the counters decide the time verdict (cheap)
            samples={"backward": [1e-4 * d] * 3},
            memory={"saved_bytes": float(saved(d))} if saved else {},
            retained=list(retained(d)) if retained else [],
        )
        for d in DEPTHS
    ]
    return Series(name, backend, None, "eager", points=points, memory_notes=dict(notes or {}))


@pytest.fixture(scope="module")
def report() -> model.Report:
    return build_report(
        [
            _series("line", lambda d: 800 * d, lambda d: [0, 0, 0]),
            _series("concat", lambda d: 800 * d * d),
            _series("tanh", lambda d: 800 * d, lambda d: [4096 * d * (i + 1) for i in range(3)]),
            _series("nomem", backend="autograd", notes={"saved_bytes": "autograd keeps no countable tape"}),
        ],
        {},
    )


def _console_text(report, verbose=False) -> str:
    buf = io.StringIO()
    render_report(report, Console(file=buf, width=200, color_system=None), verbose=verbose)
    return buf.getvalue()


def test_the_console_shows_a_memory_verdict_beside_the_time_verdict_in_every_row(report):
    text = _console_text(report)
    assert "│ memory" in text or "┃ memory" in text
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.startswith("│")}
    assert "linear d^1.00" in rows["line"]
    assert "superlinear-memory d^2.00" in rows["concat"]
    assert "leak-per-call +128.0 KiB/call at depth 32" in rows["tanh"]
    assert "not measured" in rows["nomem"]
    # the concise summary: a paragraph per memory finding, with its cause and remedies
    assert "concat [torch, eager]: linear" in text and "; memory superlinear-memory d^2.00" in text
    assert "torch.utils.checkpoint" in text and "torch.autograd.grad" in text
    assert "line [torch, eager]" not in text.split("adprof summary")[1].split("└")[-1]  # healthy: the table only


def test_verbose_details_carry_the_memory_evidence(report):
    text = _console_text(report, verbose=True)
    assert "memory: not measured" in text and "saved_bytes not measured: autograd keeps no countable tape" in text
    assert "retained bytes grow with the calls at a fixed depth" in text


def test_a_report_without_memory_has_no_memory_column():
    plain = build_report([Series("t", "engine", "fixed", "eager", points=[Point(depth=d) for d in DEPTHS])], {})
    plain.results[0].verdict.memory = None  # a schema 2 report
    assert "memory" not in _console_text(plain) and "memory" not in report_markdown(plain)


def test_the_exit_status_counts_a_memory_finding(report):
    from adprof.cli.common import EXIT_FINDING, EXIT_OK, exit_code

    assert exit_code(report) == EXIT_FINDING
    healthy = build_report([_series("line", lambda d: 800 * d, lambda d: [0, 0, 0])], {})
    assert exit_code(healthy) == EXIT_OK


def test_json_schema_3_round_trip(report):
    data = json.loads(report_text(report))
    assert data["schema"] == SCHEMA == 4 and 2 in READ_SCHEMAS and 3 in READ_SCHEMAS
    by = {r["chain"]: r for r in data["results"]}
    assert by["concat"]["memory"]["kind"] == "superlinear-memory" and by["concat"]["memory"]["finding"] is True
    assert by["concat"]["finding"] is True and by["concat"]["verdict"] == "linear"
    assert by["tanh"]["memory"]["bytes_per_call"] == 4096 * 32
    assert by["line"]["memory"]["exponent"] == pytest.approx(1.0)
    assert by["nomem"]["memory"]["measured"] is False and by["nomem"]["memory_notes"]
    first = by["line"]["points"][0]
    assert first["memory"] == {"saved_bytes": 800.0} and first["retained"] == [0, 0, 0]
    loaded = load_report(data)
    assert loaded == report
    assert [r.verdict.memory for r in loaded.results] == [r.verdict.memory for r in report.results]


def test_a_schema_2_report_still_loads(report):
    data = json.loads(report_text(report))
    data["schema"] = 2
    for r in data["results"]:  # what adprof wrote before memory
        for key in ("memory", "memory_notes"):
            r.pop(key)
        for p in r["points"]:
            p.pop("memory"), p.pop("retained")
    loaded = load_report(data)
    assert all(r.verdict.memory is None for r in loaded.results)
    assert [r.verdict.kind for r in loaded.results] == [r.verdict.kind for r in report.results]
    assert "memory" not in _console_text(loaded)
    data["schema"] = 1
    with pytest.raises(SchemaError, match="reads schemas 2, 3"):
        load_report(data)


def test_a_bad_memory_kind_is_refused(report):
    data = json.loads(report_text(report))
    data["results"][0]["memory"]["kind"] = "leaky"
    with pytest.raises(SchemaError, match="memory.kind: 'leaky' is not one of"):
        load_report(data)


def test_markdown_shows_the_memory_column(report):
    md = report_markdown(report)
    assert "| verdict | growth | memory | decided by |" in md
    assert "**superlinear-memory d^2.00**" in md and "**leak-per-call +128.0 KiB/call at depth 32**" in md
    assert "| not measured |" in md
    assert "4 series, 2 findings" in md


def test_html_shows_memory_beside_time(report):
    page = render_html(model.Report(results=report.results[1:]))  # three chains: three plots, not four
    assert "<th>memory</th>" in page
    assert 'class="verdict verdict-superlinear-memory"' in page and 'class="verdict verdict-leak-per-call"' in page
    assert "concat: memory" in page  # the plot's memory panel beside the time panel
    assert "Memory: " in page and "memory-not-measured" in page


def test_the_hand_made_plot_draws_memory_beside_time(report):
    svg = simple_svg("concat", [r for r in report.results if r.series.chain == "concat"])
    assert svg.count("<svg") == 2 and "concat: memory" in svg


@requires("matplotlib")
def test_the_plot_has_a_memory_panel_per_chain(report):
    from adprof.render.plot import report_figure

    fig = report_figure(report)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert "concat: memory" in titles and "concat" in titles and "nomem: memory" not in titles


def test_compare_counts_a_memory_regression():
    before = build_report([_series("c", lambda d: 800 * d)], {})
    after = build_report([_series("c", lambda d: 800 * d * d)], {})
    comparison = compare_reports(before, after)
    (change,) = comparison.changes
    assert change.state is State.REGRESSED and "memory" in change.reason
    assert comparison.regressed
    back = compare_reports(after, before)
    assert back.changes[0].state is State.IMPROVED
