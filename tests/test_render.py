"""Renderers: console, JSON round trip, plots, self-contained HTML (all on hand-built results)."""

from __future__ import annotations

import importlib.util
import io
import json
import re

import pytest
from extras import requires
from rich.console import Console

from adprof import model
from adprof.analysis.classify import decide, sweep_table
from adprof.model import Point, PointStatus, Report, Result, Series, Stop, StopReason
from adprof.render import (
    load_report,
    render_halving,
    render_html,
    render_ratio_table,
    render_report,
    report_to_json,
)
from adprof.render.plot import simple_svg

HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=120, color_system=None), buf


def _traced(depths, kc, **kw) -> Series:
    pts = []
    for d in depths:
        c = float(kc(d))
        pts.append(
            Point(
                depth=d,
                times={"record": 1e-4, "transform": c * 1e-6, "compile": 1e-3, "run": 1e-5, "drop": c * 1e-6},
                counters={
                    "transform": {"key_comparisons": c, "metadata_lookups": 2 * d, "nodes_visited": 4 * d},
                    "drop": {"key_comparisons": c},
                },
                ops={"value_ops": 3 * d, "derivative_ops": 9 * d, "program_ops": 8 * d},
            )
        )
    return Series(chain=kw.pop("chain", "mul"), backend="engine", profile="v08", mode="traced", points=pts, **kw)


def _eager(depths, kc) -> Series:
    pts = []
    for d in depths:
        c = float(kc(d))
        pts.append(
            Point(
                depth=d,
                times={
                    "forward0": 1e-5 * d,
                    "backward0": 3e-7 * c,
                    "forward": 1e-5 * d,
                    "backward": 1e-7 * c,
                },
                counters={"backward0": {"metadata_lookups": 3 * c}, "backward": {"metadata_lookups": c}},
                extra={
                    "backward_calls": [3e-7 * c] + [1e-7 * c] * 5,
                    "backward_call_counters": [{"metadata_lookups": 3 * c}] + [{"metadata_lookups": c}] * 5,
                    "cache": {"hits": 5, "misses": 1},
                },
            )
        )
    return Series(chain="sin", backend="engine", profile="v08", mode="eager", points=pts)


def _result(s: Series, predicted: float | None = None) -> Result:
    return Result(series=s, verdict=decide(s, predicted))


def make_report() -> Report:
    mul = _traced(range(1, 13), lambda d: 5 * 2**d + 30 * d, declared_reuse=2, params={"k": 2}, chain="reuse")
    mul.points.append(Point(depth=13, times={"transform": 9.0}, status=PointStatus.CENSORED))
    mul.stop = Stop(StopReason.CAP, after=12, phase="transform", seconds=1.6, limit=1.5)
    results = [
        _result(mul, 2.0),
        _result(_traced(range(1, 11), lambda d: 3**d, declared_reuse=3, params={"k": 3}, chain="reuse"), 3.0),
        _result(_eager([50, 100, 200, 400], lambda d: 3 * d * d + 50 * d)),
        _result(_traced([8, 16, 32, 64, 128], lambda d: 40 + 6 * d, chain="healthy")),
        _result(_traced([1, 2], lambda d: d, chain="short")),
        _result(Series(chain="broken", backend="jax", profile=None, mode="compile", error="ImportError: no jax")),
    ]
    return Report(
        results=results,
        sweeps=sweep_table(results),
        environment={"python": "3.11.7", "platform": "linux"},
        budget_seconds=60.0,
        elapsed_seconds=12.5,
        notes=["synthetic report"],
    )


@pytest.fixture
def report() -> Report:
    return make_report()


def test_console_report_contains_verdicts_and_numbers(report):
    console, buf = _console()
    render_report(report, console)
    out = buf.getvalue()
    for kind in (
        model.EXPONENTIAL_TRANSFORM,
        model.SUPERLINEAR_BACKWARD,
        model.LINEAR,
        model.INCONCLUSIVE,
        model.ERROR,
    ):
        assert kind in out
    assert re.search(r"x(1\.9\d|2\.0\d)/layer", out) and "x3.00/layer" in out
    assert re.search(r"d\^1\.9\d", out)
    assert "12 (>=13 cens.)" in out
    assert ">=9.00 s" in out
    assert "ImportError: no jax" in out
    assert "not amortized" in out
    assert "cause:" in out and "remedy 1:" in out
    assert "measured base" in out  # sweep table
    assert "elapsed 12.5 s of 60 s budget" in out


def test_ratio_table_seed_001_columns(report):
    console, buf = _console()
    table = render_ratio_table(report.results[0].series, console)
    out = buf.getvalue()
    assert table.row_count == 13
    for col in (
        "depth",
        "value ops",
        "transform ms",
        "ratio",
        "derivative ops",
        "drop ms",
        "key comparisons",
    ):
        assert col in out
    # transform time doubles per layer (5*2^d dominates): ratio column ~2
    assert re.search(r"\b1\.9\d\b|\b2\.00\b", out)
    assert "13 (censored)" in out
    assert "stopped after depth 12" in out


def test_halving_table_reading(report):
    from adprof.analysis.halving import halving_rows

    console, buf = _console()
    rows = halving_rows(report.results[2].series.points, ("backward",))
    assert [r.depth for r in rows] == [400, 200, 100]
    assert rows[0].ratio == pytest.approx(rows[0].counters / rows[1].counters)  # counters decide the ratio
    render_halving(rows, console, ("backward",))
    out = buf.getvalue()
    assert "400" in out and "200" in out and "100" in out
    assert rows[0].reading == "below 1/3 when halved: superlinear cost of graph size, not arithmetic"
    assert "below 1/3 when halved" in out
    # linear reads about 1/2
    console, buf = _console()
    rows = halving_rows(report.results[3].series.points, ("transform", "drop"))
    render_halving(rows, console)
    assert rows[0].reading == "about 1/2 when halved: linear" and "about 1/2 when halved" in buf.getvalue()


def test_concise_report_paragraphs_for_pathologies_lines_for_the_rest(report):
    console, buf = _console()
    render_report(report, console)
    out = buf.getvalue()
    # a pathology gets its cause and remedies; linear series appear in the table only
    assert out.count("remedy 1:") == sum(r.verdict.kind in model.PATHOLOGIES for r in report.results)
    healthy = report.results[3]
    assert healthy.verdict.kind == model.LINEAR
    assert f"{healthy.series.chain} [engine/v08, traced]" not in out  # no paragraph or line for it
    # an inconclusive series gets one line with its reason
    short = report.results[4]
    assert short.verdict.kind == model.INCONCLUSIVE
    line = next(x for x in out.splitlines() if x.startswith("short [engine/v08, traced]"))
    assert short.verdict.fit.reason in line
    # --verbose prints every evidence line of every series
    console, buf = _console()
    render_report(report, console, verbose=True)
    full = buf.getvalue()
    assert all(e[:60] in full.replace("\n", "") or e[:40] in full for r in report.results for e in r.verdict.evidence)


def test_user_strings_are_not_markup(report):
    report.results[-1].series.error = "FileNotFoundError: could not load weights [/data/weights.npy] [bold]x[/bold]"
    report.results[-1].verdict.evidence = [report.results[-1].series.error]
    report.results[-1].verdict.reason = report.results[-1].series.error
    console, buf = _console()
    render_report(report, console)
    assert "[/data/weights.npy] [bold]x[/bold]" in buf.getvalue()


def test_render_empty_report():
    console, buf = _console()
    render_report(Report(), console)
    assert "adprof summary" in buf.getvalue()
    html = render_html(Report())
    assert "No results" in html


def test_json_round_trip(report):
    data = report_to_json(report)
    text = json.dumps(data)
    back = load_report(json.loads(text))
    assert back == report
    r0 = data["results"][0]
    for key in (
        "chain",
        "backend",
        "profile",
        "mode",
        "verdict",
        "base",
        "exponent",
        "halving_ratio",
        "predicted_base",
        "stopped",
        "cause",
        "remedies",
        "evidence",
        "error",
        "params",
        "points",
    ):
        assert key in r0
    assert r0["verdict"] == model.EXPONENTIAL_TRANSFORM
    assert r0["params"] == {"k": 2}
    assert r0["points"][0]["depth"] == 1 and "transform" in r0["points"][0]["counters"]
    for key in ("adprof_version", "environment", "budget_seconds", "elapsed_seconds"):
        assert key in data
    assert data["results"][-1]["verdict"] == model.ERROR and data["results"][-1]["error"] == "ImportError: no jax"


def test_load_ignores_unknown_keys(report):
    data = report_to_json(report)
    data["results"][0]["future_field"] = 1
    data["results"][0]["fit"]["future_fit_field"] = 2
    assert load_report(data) == report


def _assert_self_contained(html: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script" not in html.lower()
    assert "<link" not in html.lower()
    assert "@import" not in html


def test_html_self_contained_with_verdicts(report):
    html = render_html(report)
    assert html.startswith("<!DOCTYPE html>")
    _assert_self_contained(html)
    verdicts = re.findall(r'<span class="verdict verdict-[a-z-]+">([a-z-]+)</span>', html)
    assert model.EXPONENTIAL_TRANSFORM in verdicts and model.SUPERLINEAR_BACKWARD in verdicts
    assert model.ERROR in verdicts and model.LINEAR in verdicts
    chains = {r.series.chain for r in report.results}
    assert html.count("<svg") >= len(chains)  # one panel per chain
    assert 'class="remedies"' in html and "All evidence" in html
    # same order as the console: findings before the one-line series, then the plots and all evidence
    assert html.index("Findings") < html.index("Inconclusive, runaway, error and mild") < html.index("All evidence")
    assert re.search(r"x(1\.9\d|2\.0\d)/layer", html)


def test_html_falls_back_to_hand_made_svg(report, monkeypatch):
    import adprof.render.html as h

    def missing(*_):
        raise RuntimeError("plots need matplotlib: pip install 'adprof[plot]'")

    monkeypatch.setattr(h, "chain_svg", missing)
    html = h.render_html(report)
    _assert_self_contained(html)
    assert "<polyline" in html


def test_simple_svg():
    r = _result(_traced(range(1, 8), lambda d: 2**d))
    svg = simple_svg("mul", [r])
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<polyline" in svg
    assert "no points" in simple_svg("e", [_result(Series(chain="e", backend="b", profile=None, mode="traced"))])


@requires("matplotlib")
def test_plot_one_panel_per_chain_with_the_deciding_curve(report, tmp_path):
    from matplotlib.figure import Figure

    from adprof.render.plot import _draw_panel, chain_svg, group_by_chain, plot_report

    groups = group_by_chain(report.results)
    assert [k for k, _ in groups] == ["reuse[k=2]", "reuse[k=3]", "sin", "healthy", "short", "broken"]
    ax = Figure().add_subplot(1, 1, 1)
    title, results = groups[0]
    _draw_panel(ax, title, results)
    fit = results[0].verdict.fit
    curve = [line for line in ax.get_lines() if line.get_linestyle() == "-"]
    assert len(curve) == 1  # the deciding model's curve, normalized to the first depth
    assert list(curve[0].get_xdata()) == fit.curve_depths
    assert curve[0].get_ydata()[-1] == pytest.approx(fit.curve_values[-1] / fit.values[0])
    # a constant series is drawn (flat at 1), not skipped
    zero = _traced([8, 16, 32, 64], lambda d: 0.0, chain="flat")
    for p in zero.points:
        p.counters = {"transform": {"key_comparisons": 0}, "drop": {"key_comparisons": 0}}
    flat = _result(zero)
    assert flat.verdict.kind == model.LINEAR and flat.verdict.interval_text == "flat"
    ax2 = Figure().add_subplot(1, 1, 1)
    _draw_panel(ax2, "flat", [flat])
    pts = [line for line in ax2.get_lines() if line.get_marker() == "o"]
    assert list(pts[0].get_ydata()) == [1.0, 1.0, 1.0, 1.0]
    out = plot_report(report, tmp_path / "report.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = chain_svg(title, results)
    assert svg.startswith("<svg") and "exponential-transform" in svg and "<metadata" not in svg
