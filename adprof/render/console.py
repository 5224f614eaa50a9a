"""Console rendering with rich: the summary table, per-result evidence, the seed-001 ratio table and
the depth-halving table. Renderers only read results; they never measure."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from adprof import model
from adprof.analysis.classify import sweep_table
from adprof.model import (
    Point,
    Report,
    Result,
    Series,
    cost_phases,
    counter_totals,
    counter_value,
    fmt_seconds,
    time_value,
)
from adprof.report import SWEEP_COLUMNS, backend_label, depth_reached, fmt_growth, worst_time_text

VERDICT_STYLE = {
    model.EXPONENTIAL_TRANSFORM: "bold red",
    model.EXPONENTIAL_BACKWARD: "bold red",
    model.SUPERLINEAR_TRANSFORM: "bold yellow",
    model.SUPERLINEAR_BACKWARD: "bold yellow",
    model.LINEAR: "green",
    model.INCONCLUSIVE: "dim",
    model.ERROR: "magenta",
}


def summary_table(report: Report) -> Table:
    """One row per result."""
    t = Table(title="adprof summary", show_lines=False)
    for col in ("chain", "backend/profile", "mode", "verdict", "base / exponent", "depth", "worst time"):
        t.add_column(col, no_wrap=col in ("verdict", "base / exponent", "depth", "worst time"))
    t.add_column("stopped", overflow="fold")
    for r in report.results:
        s, v = r.series, r.verdict
        chain = s.chain + ("" if not s.params else " " + ",".join(f"{k}={x}" for k, x in s.params.items()))
        t.add_row(
            chain,
            backend_label(s),
            s.mode,
            Text(v.kind, style=VERDICT_STYLE.get(v.kind, "")),
            fmt_growth(r),
            depth_reached(s),
            worst_time_text(s),
            s.error or s.stopped or "",
        )
    return t


def sweep_rich_table(results: list[Result]) -> Table | None:
    rows = sweep_table(results)
    if not rows:
        return None
    t = Table(title="sweeps: measured vs predicted base")
    for col in SWEEP_COLUMNS:
        t.add_column(col)
    for row in rows:
        bp = f"{row['backend']}/{row['profile']}" if row["profile"] else row["backend"]
        t.add_row(
            row["chain"],
            bp,
            row["mode"],
            str(row["k"]),
            "-" if row["base"] is None else f"{row['base']:.2f}",
            "-" if row["predicted_base"] is None else f"{row['predicted_base']:.2f}",
            row["verdict"],
            {True: "yes", False: "NO", None: "-"}[row["agrees"]],
        )
    return t


def render_result_details(result: Result, console: Console) -> None:
    """Evidence, cause and remedies of one result."""
    s, v = result.series, result.verdict
    head = Text(f"{s.chain} [{backend_label(s)}, {s.mode}]: ", style="bold")
    head.append(v.kind, style=VERDICT_STYLE.get(v.kind, ""))
    console.print(head)
    if s.error:
        console.print(f"  error: {s.error}")
    for e in v.evidence:
        console.print(Text(f"  - {e}"))
    if v.cause:
        console.print(Text(f"  cause: {v.cause}"))
    for i, rem in enumerate(v.remedies, 1):
        console.print(Text(f"  remedy {i}: {rem}"))


def render_report(report: Report, console: Console) -> None:
    """Print the summary table, the sweep table (if any), then each result's evidence."""
    console.print(summary_table(report))
    sw = sweep_rich_table(report.results)
    if sw is not None:
        console.print(sw)
    for r in report.results:
        console.print()
        render_result_details(r, console)
    if report.elapsed_seconds is not None:
        budget = f" of {report.budget_seconds:g} s budget" if report.budget_seconds else ""
        console.print(f"\nelapsed {report.elapsed_seconds:.1f} s{budget}")
    for n in report.notes:
        console.print(Text(f"note: {n}"))


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _count(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _phase_counter(p: Point, phases: Sequence[str], key: str) -> float | None:
    totals = counter_totals(p.counters, phases, (key,))
    return None if totals is None else totals[key]


def render_ratio_table(series: Series, console: Console | None = None) -> Table:
    """The seed-001 table: depth, value ops, transform ms, per-layer ratio, derivative ops, drop ms,
    key comparisons, lookups. Eager series show steady backward ms and forward ms instead.
    Printed on ``console`` when given; returned either way."""
    eager = series.mode == "eager"
    main, second = ("backward", "forward") if eager else ("transform", "drop")
    phases = ("backward",) if eager else ("transform", "drop")
    t = Table(title=escape(f"{series.chain} [{backend_label(series)}, {series.mode}]: per-layer ratios"))
    for col in ("depth", "value ops", f"{main} ms", "ratio", "derivative ops", f"{second} ms",
                "key comparisons", "lookups"):  # fmt: skip
        t.add_column(col, justify="right")
    prev: dict[int, float] = {}
    for p in sorted(series.points, key=lambda q: q.depth):
        tm = p.times.get(main)
        ratio = "-"
        if tm is not None and prev.get(p.depth - 1):
            ratio = f"{tm / prev[p.depth - 1]:.2f}"
        if tm is not None:
            prev[p.depth] = tm
        depth = f"{p.depth}" + (" (censored)" if p.extra.get("censored") else "")
        t.add_row(
            depth,
            _count(p.ops.get("value_ops")),
            _ms(tm),
            ratio,
            _count(p.ops.get("derivative_ops")),
            _ms(p.times.get(second)),
            _count(_phase_counter(p, phases, "key_comparisons")),
            _count(_phase_counter(p, phases, "metadata_lookups")),
        )
    if series.stopped:
        t.caption = series.stopped
    if console is not None:
        console.print(t)
    return t


def _nearest(points: list[Point], depth: float) -> Point | None:
    cands = [p for p in points if depth / 1.5 <= p.depth <= depth * 1.5]
    return min(cands, key=lambda p: abs(p.depth - depth)) if cands else None


def halving_reading(ratio: float) -> str:
    if ratio > 3:
        return "below 1/3: superlinear cost of graph size, not arithmetic"
    if ratio <= 2.3:
        return "about 1/2: linear"
    return "between 1/3 and 1/2: mildly superlinear"


def render_halving(
    series_or_points: Series | Sequence[Point],
    console: Console | None = None,
    phases: Sequence[str] | None = None,
) -> Table:
    """Cost at the deepest depth d, at d/2 and at d/4 (nearest measured), with the halving ratios and
    the reading "below 1/3: superlinear cost of graph size, not arithmetic".

    phases: the timed phases to sum; default from the series mode (points alone: ``backward`` when
    timed, else transform+drop). Printed on ``console`` when given; returned either way.
    """
    if isinstance(series_or_points, Series):
        pts = list(series_or_points.points)
        phases = tuple(phases or cost_phases(series_or_points.mode))
    else:
        pts = list(series_or_points)
        if phases is None:
            phases = ("backward",) if any("backward" in p.times for p in pts) else ("transform", "drop")
        phases = tuple(phases)
    pts = sorted((p for p in pts if not p.extra.get("censored")), key=lambda q: q.depth)
    t = Table(title=f"depth halving ({'+'.join(phases)})")
    for col in ("depth", "time", "counters", "halving ratio", "reading"):
        t.add_column(col, justify="right" if col != "reading" else "left")
    if not pts:
        t.caption = "no points"
    else:
        rows: list[Point] = [pts[-1]]
        for _ in range(2):
            nxt = _nearest([p for p in pts if p.depth < rows[-1].depth], rows[-1].depth / 2)
            if nxt is None:
                break
            rows.append(nxt)
        for i, p in enumerate(rows):
            tv = time_value(p, phases)
            cv = counter_value(p, phases)
            ratio, reading = "-", ""
            if i + 1 < len(rows):
                tn = time_value(rows[i + 1], phases)
                cn = counter_value(rows[i + 1], phases)
                num, den = (cv, cn) if cv and cn else (tv, tn)
                if num and den:
                    r = num / den
                    ratio = f"x{r:.2f} vs depth {rows[i + 1].depth}"
                    reading = halving_reading(r)
            t.add_row(str(p.depth), fmt_seconds(tv), _count(cv), ratio, reading)
    if console is not None:
        console.print(t)
    return t


def render_to_text(report: Report, width: int = 120) -> str:
    """The console rendering as plain text (no color)."""
    import io

    buf = io.StringIO()
    render_report(report, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


__all__ = [
    "render_report",
    "render_ratio_table",
    "render_halving",
    "render_to_text",
    "summary_table",
]
