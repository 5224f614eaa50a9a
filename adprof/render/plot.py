"""Plots of cost against depth on a log y axis, with the fitted curve (matplotlib, imported lazily).

Uses ``matplotlib.figure.Figure`` directly (no pyplot, no global backend switch), so it is safe in
headless processes. ``simple_svg`` draws the same picture by hand when matplotlib is missing.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from adprof import words
from adprof.model import Fit, Report, Result
from adprof.report import chain_label
from adprof.util.files import encodable, write_atomic
from adprof.util.text import terminal_safe

MISSING = "plots need matplotlib: pip install 'adprof[plot]'"


def _figure_cls() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - exercised only without matplotlib
        raise RuntimeError(MISSING) from e
    return Figure


def plot_text(text: str) -> str:
    """A user's string (a chain name, a sweep value, a ``--cmd`` name) as matplotlib draws it literally: control
    characters shown as ``\\xNN`` (as on the terminal), a lone surrogate as ``\\udcNN`` (matplotlib refuses it),
    ``$`` not read as the start of mathtext."""
    return encodable(terminal_safe(text)).replace("$", r"\$")


@contextlib.contextmanager
def _quiet_glyphs() -> Iterator[None]:
    """No "Glyph ... missing from font" warning on the user's terminal: a name in a script the font lacks is drawn
    as boxes; the report's text has it whole."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        yield


def plotted_fit(result: Result, memory: bool = False) -> Fit | None:
    """The fit a plot shows: the deciding model (never a re-fit); ``memory``: the memory verdict's deciding model
    (bytes against depth), None without one."""
    if memory:
        mv = result.verdict.memory
        return mv.fit if mv is not None else None
    return result.verdict.fit


def forward_fit(result: Result) -> Fit | None:
    """The curve drawn beside the cost: the program figure its cost is read against (the forward's size or
    arithmetic against depth, :attr:`adprof.model.Explained.program_fit`), None without one."""
    ex = result.verdict.explained
    fit = ex.program_fit if ex is not None else None
    return fit if fit is not None and fit.depths else None


def has_memory(results: list[Result]) -> bool:
    """True when one of the results has a memory model against depth (its panel gets a memory plot beside)."""
    return any((f := plotted_fit(r, memory=True)) is not None and f.depths for r in results)


def chain_key(result: Result) -> str:
    """The panel a result belongs to: its chain, with its sweep values."""
    s = result.series
    return chain_label(s)


def group_by_chain(results: list[Result]) -> list[tuple[str, list[Result]]]:
    """Results grouped into one panel per chain (in report order)."""
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(chain_key(r), []).append(r)
    return list(groups.items())


def _label(result: Result, memory: bool = False) -> str:
    s, v = result.series, result.verdict
    bp = f"{s.backend}/{s.profile}" if s.profile else s.backend
    if memory and v.memory is not None:
        return f"{bp} {s.mode} ({v.memory.decided_by or '-'}): {words.memory_summary(v.memory)}".rstrip()
    src = v.fit.source if v.fit is not None else "-"
    return f"{bp} {s.mode} ({src}): {v.kind} {v.interval_text}".rstrip()


def _normalized(fit: Fit) -> tuple[float, list[float], list[float], list[float]]:
    """The fit's values, censored bounds and curve divided by its first positive value (1 for a flat zero)."""
    ref = next((v for v in fit.values if v > 0), 0.0)
    if ref <= 0:  # a cost that is zero at every depth (e.g. no bookkeeping left): drawn flat at 1
        return 0.0, [1.0] * len(fit.values), [], []
    return (
        ref,
        [v / ref for v in fit.values],
        [v / ref for v in fit.censored_values],
        [v / ref for v in fit.curve_values],
    )


def _bytes(fit: Fit) -> tuple[float, list[float], list[float], list[float]]:
    """A memory fit's values as they are (bytes: the axis says how much the gradient holds)."""
    return 1.0, list(fit.values), list(fit.censored_values), list(fit.curve_values)


def _draw_panel(ax: Any, title: str, results: list[Result], memory: bool = False) -> None:
    ax.set_title(plot_text(f"{title}: memory" if memory else title), fontsize=9)
    ax.set_xlabel("depth")
    ylabel = "bytes (saved for backward, or peak)" if memory else "cost / cost at the first depth (deciding metric)"
    ax.set_ylabel(ylabel, fontsize=8)
    drawn = False
    for k, r in enumerate(results):
        fit, color = plotted_fit(r, memory), f"C{k % 10}"
        if fit is None or not fit.depths:
            missing = "memory not measured" if memory else r.series.error or "no points"
            ax.plot([], [], "x", color=color, label=plot_text(f"{_label(r, memory)}: {missing}"[:90]))
            continue
        _, vals, cens, curve = _bytes(fit) if memory else _normalized(fit)
        if memory and not any(v > 0 for v in vals + curve):
            vals = [1.0] * len(vals)  # nothing held at any depth: drawn flat at 1 byte on the log axis
        ax.plot(fit.depths, vals, "o", color=color, ms=4, label=plot_text(_label(r, memory)[:90]))
        if cens:
            ax.plot(fit.censored_depths, cens, "^", color=color, ms=5)
        if curve and fit.kind != "inconclusive":
            ax.plot(fit.curve_depths, curve, "-", color=color, lw=1.2)
        fwd = None if memory else forward_fit(r)
        if fwd is not None:  # the forward's program beside the cost, normalized the same way
            _, fvals, _, _ = _normalized(fwd)
            ex = r.verdict.explained
            what = f"{ex.basis} {words.program_figure(ex)}" if ex is not None else ""
            ax.plot(fwd.depths, fvals, "--", color=color, lw=0.9, alpha=0.7, label=plot_text(f"forward: {what}"[:90]))
        drawn = True
    if drawn:
        ax.set_yscale("log")
    from matplotlib.transforms import offset_copy

    # under the axes (below the depth label), never over the curves: the figure leaves it room (_rows_layout)
    below = offset_copy(ax.transAxes, fig=ax.figure, y=-BELOW_AXES, units="inches")
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=below, frameon=False)
    ax.tick_params(which="both", labelsize=8)


#: The legend's font (points: 12.5 px at the default 100 dpi) and where it starts under its axes (inches: below the
#: tick labels and the depth label).
LEGEND_PT = 9
BELOW_AXES = 0.45
#: A panel's axes height and the room over it (the title), in inches.
AXES_IN, TITLE_IN = 3.0, 0.4


def _legend_in(entries: int) -> float:
    """The height of a legend of ``entries`` lines (a line: the font and half of it between lines), in inches."""
    return entries * LEGEND_PT * 1.5 / 72 + 0.1


def _rows_layout(fig: Any, nrows: int, entries: int, width: float, **adjust: float) -> None:
    """Size ``fig`` for ``nrows`` rows of panels, each with a legend of ``entries`` lines under its axes, and place
    the axes so that no legend covers another panel."""
    under = BELOW_AXES + _legend_in(entries) + 0.1
    row = TITLE_IN + AXES_IN + under
    height = nrows * row
    fig.set_size_inches(width, height)
    fig.subplots_adjust(top=1 - TITLE_IN / height, bottom=under / height, hspace=(TITLE_IN + under) / AXES_IN, **adjust)


def plot_report(report: Report, path: str | Path) -> Path:
    """Save one panel per chain (its backends/profiles/modes on their deciding metric, normalized to the
    first depth, log y, each with the deciding model's curve) to ``path``. The format follows the
    extension (png, svg, pdf). Raises RuntimeError if matplotlib is missing."""
    fig = report_figure(report)
    path = Path(path)
    buf = io.BytesIO()
    with _quiet_glyphs():
        fig.savefig(buf, format=path.suffix.lstrip(".").lower() or "png")
    write_atomic(path, buf.getvalue())  # a reader never sees half a plot
    return path


def report_figure(report: Report) -> Any:
    """The figure of :func:`plot_report` (a ``matplotlib.figure.Figure``, no pyplot). Raises RuntimeError if
    matplotlib is missing."""
    Figure = _figure_cls()
    groups = group_by_chain(report.results)
    # each chain's time panel, and its memory panel beside it where memory was measured against depth
    panels = [(title, rs, memory) for title, rs in groups for memory in ((False, True) if has_memory(rs) else (False,))]
    n = max(len(panels), 1)
    ncols = min(2, n)
    nrows = math.ceil(n / ncols)
    fig = Figure()
    entries = max((len(rs) for _, rs, _ in panels), default=1)
    _rows_layout(fig, nrows, entries, 6.4 * ncols, left=0.08, right=0.98, wspace=0.25)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i < len(panels):
            _draw_panel(ax, *panels[i])
        elif panels:
            ax.set_visible(False)
        else:
            ax.text(0.5, 0.5, "no results", ha="center", va="center", transform=ax.transAxes)
    return fig


def _clean_svg(svg: str) -> str:
    """Strip the XML prolog, doctype and metadata block so the SVG inlines in HTML."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)


def chain_svg(title: str, results: list[Result]) -> str:
    """One chain's panel as an inline SVG string (no external references)."""
    Figure = _figure_cls()
    import matplotlib

    memory = has_memory(results)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "adprof"}):
        fig = Figure()  # fixed margins: constrained layout is slow per figure
        _rows_layout(fig, 1, len(results), 12.8 if memory else 6.4, left=0.12 / (2 if memory else 1), right=0.98)
        fig.subplots_adjust(wspace=0.25)
        _draw_panel(fig.add_subplot(1, 2 if memory else 1, 1), title, results)
        if memory:  # memory against depth beside time
            _draw_panel(fig.add_subplot(1, 2, 2), title, results, memory=True)
        buf = io.StringIO()
        with _quiet_glyphs():
            fig.savefig(buf, format="svg", metadata={"Date": None})
    return _clean_svg(buf.getvalue())


def simple_svg(title: str, results: list[Result], width: int = 480, height: int = 280, memory: bool = False) -> str:
    """A hand-made SVG of one chain's panel (normalized points and model curves, log y) without matplotlib; where
    memory was measured against depth, its panel (bytes, log y) follows beside it (``memory``: that panel alone)."""
    if not memory and has_memory(results):
        time_panel = _simple_panel(title, results, width, height, False)
        return time_panel + _simple_panel(f"{title}: memory", results, width, height, True)
    return _simple_panel(title, results, width, height, memory)


def _simple_panel(title: str, results: list[Result], width: int, height: int, memory: bool) -> str:
    """One hand-made panel: the deciding models (``memory``: the memory verdicts' models, in bytes)."""
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>{html.escape(terminal_safe(title))}</title>'
        f'<text x="8" y="16" font-size="12" font-family="sans-serif">{html.escape(terminal_safe(title))}</text>'
    )
    series = []
    forwards: list[list[tuple[float, float]]] = []  # the forward's program beside each cost (time panels)
    for r in results:
        fit = plotted_fit(r, memory)
        if fit is not None and fit.depths:
            _, vals, _, curve = _bytes(fit) if memory else _normalized(fit)
            series.append(
                (fit, list(zip(fit.depths, vals, strict=True)), list(zip(fit.curve_depths, curve, strict=True)))
            )
            fwd = None if memory else forward_fit(r)
            forwards.append(list(zip(fwd.depths, _normalized(fwd)[1], strict=True)) if fwd is not None else [])
    pts = [(d, v) for _, p, c in series for d, v in p + c if v > 0]
    pts += [(d, v) for f in forwards for d, v in f if v > 0]
    if not pts:
        return head + '<text x="8" y="40" font-size="12">no points</text></svg>'
    x0, x1 = min(d for d, _ in pts), max(d for d, _ in pts)
    l0, l1 = min(math.log10(v) for _, v in pts), max(math.log10(v) for _, v in pts)
    x1, l1 = (x1 if x1 > x0 else x0 + 1), (l1 if l1 > l0 else l0 + 1)
    m, top = 40, 28

    def xy(d: float, v: float) -> str:
        x = m + (d - x0) / (x1 - x0) * (width - 2 * m)
        y = height - m + (top - (height - m)) * (math.log10(v) - l0) / (l1 - l0)
        return f"{x:.1f},{y:.1f}"

    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
    body = []
    for k, (fit, p, c) in enumerate(series):
        col = colors[k % len(colors)]
        body += [
            f'<circle cx="{xy(d, v).split(",")[0]}" cy="{xy(d, v).split(",")[1]}" r="3" fill="{col}"/>'
            for d, v in p
            if v > 0
        ]
        if c and fit.kind != "inconclusive":
            poly = " ".join(xy(d, v) for d, v in c if v > 0)
            body.append(f'<polyline points="{poly}" fill="none" stroke="{col}" stroke-width="1.2"/>')
        if fwd := forwards[k]:
            poly = " ".join(xy(d, v) for d, v in fwd if v > 0)
            body.append(
                f'<polyline class="forward" points="{poly}" fill="none" stroke="{col}" stroke-width="0.9" '
                'stroke-dasharray="4 3"/>'
            )
    axes = (
        f'<line x1="{m}" y1="{height - m}" x2="{width - m}" y2="{height - m}" stroke="#444"/>'
        f'<line x1="{m}" y1="{top}" x2="{m}" y2="{height - m}" stroke="#444"/>'
        f'<text x="{m}" y="{height - m + 14}" font-size="10">{x0:g}</text>'
        f'<text x="{width - m}" y="{height - m + 14}" font-size="10" text-anchor="end">depth {x1:g}</text>'
    )
    return head + axes + "".join(body) + "</svg>"
