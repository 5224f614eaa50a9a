"""Renderers: console, JSON round trip, plots, self-contained HTML (all on hand-built results)."""

from __future__ import annotations

import importlib.util
import io
import json
import re

import pytest
from rich.console import Console

from adprof import model
from adprof.analysis.classify import classify
from adprof.model import Point, Report, Result, Series
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
    return Result(series=s, verdict=classify(s, predicted))


def make_report() -> Report:
    mul = _traced(range(1, 13), lambda d: 5 * 2**d + 30 * d, declared_reuse=2, params={"k": 2}, chain="reuse")
    mul.points.append(Point(depth=13, times={"transform": 9.0}, extra={"censored": True}))
    mul.stopped = "stopped after depth 12: transform > 1500 ms cap"
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
    console, buf = _console()
    render_halving(report.results[2].series, console)
    out = buf.getvalue()
    assert "400" in out and "200" in out and "100" in out
    assert "below 1/3: superlinear cost of graph size, not arithmetic" in out
    # points alone work too, and linear reads about 1/2
    console, buf = _console()
    render_halving(report.results[3].series.points, console)
    assert "about 1/2: linear" in buf.getvalue()


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
    data["results"][0]["counter_fit"]["future_fit_field"] = 2
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
    assert html.count("<svg") >= len(report.results)
    assert "Remedies" in html and "Evidence" in html
    assert re.search(r"x(1\.9\d|2\.0\d)/layer", html)


def test_html_falls_back_to_hand_made_svg(report, monkeypatch):
    import adprof.render.html as h

    def missing(_):
        raise RuntimeError("plots need matplotlib: pip install 'adprof[plot]'")

    monkeypatch.setattr(h, "result_svg", missing)
    html = h.render_html(report)
    _assert_self_contained(html)
    assert "<polyline" in html


def test_simple_svg():
    svg = simple_svg(_result(_traced(range(1, 8), lambda d: 2**d)))
    assert svg.startswith("<svg") and svg.endswith("</svg>") and "<polyline" in svg
    assert "no points" in simple_svg(_result(Series(chain="e", backend="b", profile=None, mode="traced")))


@pytest.mark.skipif(not HAS_MPL, reason="matplotlib not installed")
def test_plot_report_and_svg(report, tmp_path):
    from adprof.render.plot import plot_report, result_svg

    out = plot_report(report, tmp_path / "report.png")
    assert out.exists() and out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = result_svg(report.results[0])
    assert svg.startswith("<svg") and "</svg>" in svg
    assert "exponential-transform" in svg and "exponential fit" in svg
    assert "<metadata" not in svg
    empty = plot_report(Report(), tmp_path / "empty.svg")
    assert empty.exists()
