"""Plots of cost against depth on a log y axis, with the fitted curve (matplotlib, imported lazily).

Uses ``matplotlib.figure.Figure`` directly (no pyplot, no global backend switch), so it is safe in
headless processes. ``simple_svg`` draws the same picture by hand when matplotlib is missing.
"""

from __future__ import annotations

import html
import io
import math
import re
from pathlib import Path
from typing import Any

from adprof.analysis.fit import predict
from adprof.model import Fit, Report, Result

MISSING = "plots need matplotlib: pip install 'adprof[plot]'"


def _figure_cls() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise RuntimeError(MISSING) from e
    return Figure


def plotted_fit(result: Result) -> Fit | None:
    """The fit a plot shows: the counters when present, else wall time."""
    v = result.verdict
    return v.counter_fit or v.time_fit


def _title(result: Result) -> str:
    s = result.series
    bp = f"{s.backend}/{s.profile}" if s.profile else s.backend
    params = "" if not s.params else " " + ",".join(f"{k}={x}" for k, x in s.params.items())
    return f"{s.chain}{params} [{bp}, {s.mode}]"


def _curve(fit: Fit) -> tuple[list[float], list[float]]:
    if not fit.depths:
        return [], []
    lo, hi = min(fit.depths), max(fit.depths + fit.censored_depths)
    xs = [lo + (hi - lo) * i / 60 for i in range(61)]
    pairs = [(x, predict(fit, x)) for x in xs]
    pairs = [(x, y) for x, y in pairs if y is not None and y > 0 and math.isfinite(y)]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _draw(ax: Any, result: Result) -> None:
    fit = plotted_fit(result)
    ax.set_title(f"{_title(result)}\n{result.verdict.kind}", fontsize=9)
    ax.set_xlabel("depth")
    if fit is None or not fit.depths:
        ax.text(0.5, 0.5, result.series.error or "no points", ha="center", va="center", transform=ax.transAxes)
        return
    pos = [(d, v) for d, v in zip(fit.depths, fit.values, strict=True) if v > 0]
    label = fit.metric.split(":")[0] if fit.metric else ("counters" if fit.method == "marginal" else "seconds")
    if label == "time":
        label = "seconds (" + fit.metric.split(":", 1)[1].strip() + ")"
    ax.set_ylabel(label)
    if pos:
        ax.plot([d for d, _ in pos], [v for _, v in pos], "o", color="C0", label="measured")
    cens = [(d, v) for d, v in zip(fit.censored_depths, fit.censored_values, strict=True) if v > 0]
    if cens:
        ax.plot([d for d, _ in cens], [v for _, v in cens], "^", color="C3", label="censored (lower bound)")
    xs, ys = _curve(fit)
    if xs and fit.kind != "inconclusive":
        model = "exponential" if fit.kind == "exponential" else "power law"
        ax.plot(xs, ys, "-", color="C1", label=f"{model} fit")
    if pos or cens:
        ax.set_yscale("log")
    ax.legend(fontsize=7)


def plot_report(report: Report, path: str | Path) -> Path:
    """Save a grid of cost-vs-depth plots (one per result, log y, fitted curve) to ``path``.

    The format follows the extension (png, svg, pdf). Raises RuntimeError if matplotlib is missing.
    """
    Figure = _figure_cls()
    n = max(len(report.results), 1)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.6 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    fig.subplots_adjust(left=0.1 / ncols + 0.04, right=0.98, wspace=0.35, hspace=0.6, bottom=0.12 / nrows + 0.03)
    for i, ax in enumerate(axes.flat):
        if i < len(report.results):
            _draw(ax, report.results[i])
        elif report.results:
            ax.set_visible(False)
        else:
            ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
    path = Path(path)
    fig.savefig(path)
    return path


def _clean_svg(svg: str) -> str:
    """Strip the XML prolog, doctype and metadata block so the SVG inlines in HTML."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)


def result_svg(result: Result) -> str:
    """One result's plot as an inline SVG string (no external references)."""
    Figure = _figure_cls()
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "adprof"}):
        fig = Figure(figsize=(5.0, 3.4))  # fixed margins: constrained layout is slow per figure
        fig.subplots_adjust(left=0.16, right=0.97, bottom=0.14, top=0.84)
        _draw(fig.add_subplot(1, 1, 1), result)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return _clean_svg(buf.getvalue())


def simple_svg(result: Result, width: int = 420, height: int = 260) -> str:
    """A hand-made SVG (points and polyline, log y) for when matplotlib is not installed."""
    fit = plotted_fit(result)
    title = html.escape(f"{_title(result)}: {result.verdict.kind}")
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>{title}</title>'
        f'<text x="8" y="16" font-size="12" font-family="sans-serif">{title}</text>'
    )
    pts = [] if fit is None else [(d, v) for d, v in zip(fit.depths, fit.values, strict=True) if v > 0]
    if len(pts) < 1:
        return head + '<text x="8" y="40" font-size="12">no points</text></svg>'
    x0, x1 = min(d for d, _ in pts), max(d for d, _ in pts)
    l0, l1 = min(math.log10(v) for _, v in pts), max(math.log10(v) for _, v in pts)
    if x1 == x0:
        x1 = x0 + 1
    if l1 == l0:
        l1 = l0 + 1
    m, top = 40, 28

    def sx(d: float) -> float:
        return m + (d - x0) / (x1 - x0) * (width - 2 * m)

    def sy(v: float) -> float:
        return height - m + (top - (height - m)) * (math.log10(v) - l0) / (l1 - l0)

    poly = " ".join(f"{sx(d):.1f},{sy(v):.1f}" for d, v in pts)
    dots = "".join(f'<circle cx="{sx(d):.1f}" cy="{sy(v):.1f}" r="3" fill="#1f77b4"/>' for d, v in pts)
    axes = (
        f'<line x1="{m}" y1="{height - m}" x2="{width - m}" y2="{height - m}" stroke="#444"/>'
        f'<line x1="{m}" y1="{top}" x2="{m}" y2="{height - m}" stroke="#444"/>'
        f'<text x="{m}" y="{height - m + 14}" font-size="10">{x0:g}</text>'
        f'<text x="{width - m}" y="{height - m + 14}" font-size="10" text-anchor="end">depth {x1:g}</text>'
        f'<text x="2" y="{height - m}" font-size="10">{10**l0:.3g}</text>'
        f'<text x="2" y="{top + 8}" font-size="10">{10**l1:.3g}</text>'
    )
    line = f'<polyline points="{poly}" fill="none" stroke="#ff7f0e" stroke-width="1.5"/>'
    return head + axes + line + dots + "</svg>"
