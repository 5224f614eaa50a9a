"""Console rendering with rich: the summary table, per-result evidence, the seed-001 ratio table and
the depth-halving table. Renderers only read results; they never measure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from adprof import model, verdicts, words
from adprof.comparison import STATES, Comparison, State, describe_side, memory_changed, profile_text
from adprof.model import HalvingRow, Point, Report, Result, Series, counter_totals
from adprof.report import (
    LOADED_MARK,
    LOADED_NOTE,
    SWEEP_COLUMNS,
    backend_label,
    chain_label,
    decided_by,
    depth_reached,
    fmt_growth,
    machine_host,
    machine_text,
    memory_reason,
    memory_text,
    one_line_reason,
    program_cell,
    several_machines,
    shows_memory,
    shows_program,
    worst_time_text,
)
from adprof.util.text import range_text, terminal_safe
from adprof.words import fmt_seconds, phase_text

#: Narrowest console the report is laid out for: ``COLUMNS=1`` must not hide the verdict.
MIN_WIDTH = 80

#: A table laid out without a terminal (a pipe, a file, a CI log) may be at most this wide: its natural width.
UNBOUNDED = 10_000


class SafeConsole(Console):
    """A rich Console through which no control character of a user's string reaches the terminal (a
    chain's ``ValueError("\\x1b]0;PWNED\\x07")``, a program's stderr): strings are escaped before
    the layout (``\\x1b``), and every rendered segment once more before it is written. rich's own
    styles and cursor movements are control segments of their own, kept as they are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.width < MIN_WIDTH:
            self.width = MIN_WIDTH

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(text), **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """As :meth:`Console.print`; without a terminal a table is laid out at its natural width when that is
        wider than the console: a pipe has no width to fit, and a cell cut or a word broken there (``stoppe``,
        ``superlinear-transfor``/``m``) cannot be read back or copied."""
        wide = 0 if self.is_terminal else natural_width(self, objects)
        if wide <= self.width:
            super().print(*objects, **kwargs)
            return
        width = self.width
        self.width = wide
        try:
            super().print(*objects, **kwargs)
        finally:
            self.width = width

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for seg in super().render(renderable, options):
            if seg.control or not seg.text:
                yield seg
            else:
                safe = terminal_safe(seg.text)
                yield seg if safe is seg.text else Segment(safe, seg.style, seg.control)


def natural_width(console: Console, objects: Sequence[Any]) -> int:
    """The widest natural width of the tables among ``objects`` (every cell on one line), 0 without a table."""
    options = console.options.update_width(UNBOUNDED)
    return max((Measurement.get(console, options, o).maximum for o in objects if isinstance(o, Table)), default=0)


def footnoted(texts: Sequence[str], limit: int, marks: list[str]) -> list[str]:
    """Cells of a column whose long texts go under the table: a text over ``limit`` characters becomes its mark
    (``[2]``) and is appended to ``marks`` as ``[2] text``; the others are kept."""
    cells = []
    for text in texts:
        if len(text) > limit:
            marks.append(f"[{len(marks) + 1}] {text}")
            text = f"[{len(marks)}]"
        cells.append(text)
    return cells


#: Each verdict kind's style: the table's column (:data:`adprof.verdicts.TABLE`), time and memory kinds alike.
VERDICT_STYLE = verdicts.STYLE


def _t(text: str, style: str = "") -> Text:
    """User-supplied text as a rich Text: never parsed as markup (a ``[x]`` in a message stays as written),
    control characters escaped."""
    return Text(terminal_safe(text), style=style)


def _decided(result: Result) -> str:
    by = decided_by(result)
    return f"{by} ({LOADED_MARK})" if result.verdict.loaded_machine and by != "-" else by


def _time_caption(report: Report) -> str:
    timed = [r.series for r in report.results if r.verdict.fit is not None and r.verdict.fit.source == "time"]
    stats = sorted({f"{s.statistic or 'lower quartile of repeats'}, {s.clock or 'wall (perf_counter)'}" for s in timed})
    base = (
        "growth: the deciding model's base per depth step (x2.00/layer, x2.15/order) or exponent "
        "(time: with its 95% interval)"
    )
    if any(words.proxy_text(r.verdict) for r in report.results):
        base += "; where a proxy (a work metric, not the cost) decided the class: the time's rate, the proxy's beside"
    if any(r.verdict.knee is not None and r.verdict.kind != "inconclusive" for r in report.results):
        base += "; past N: the law of the cost over the line it followed up to depth N (a change of regime)"
    loaded = f"\n{LOADED_NOTE}" if any(r.verdict.loaded_machine for r in report.results) else ""
    return base + (f"; time: {'; '.join(stats)}" if stats else "") + loaded


def stopped_cells(report: Report) -> tuple[list[str], list[str]]:
    """The ``stopped`` column of the summary (why a row's schedule stopped, short: ``budget share [1]``; an error:
    ``error``, its line follows the table) and the sentences printed under the table, one per mark
    (``[1] mul [engine/v08, eager]: stopped after depth 12: next point ...``): a sentence never sits in a cell."""
    cells: list[str] = []
    notes: list[str] = []
    for r in report.results:
        s = r.series
        if s.error:
            cells.append("error")
        elif s.stop is not None:
            notes.append(f"[{len(notes) + 1}] {s.label}: {words.stop_text(s.stop)}")
            cells.append(f"{s.stop.reason.value} [{len(notes)}]")
        else:
            cells.append("")
    return cells, notes


def summary_table(report: Report) -> Table:
    """One row per result; why a row stopped is a mark whose sentence :func:`stopped_cells` gives."""
    t = Table(title="adprof summary", show_lines=False, caption=_time_caption(report))
    files = _file_column(report)
    if files:
        t.add_column("file")
    machines = several_machines(report.results)  # which host measured it, when there are several
    memory = shows_memory(report.results)
    program = shows_program(report.results)
    cols = (
        *("chain", "backend/profile", "mode", "verdict", "growth"),
        *(("program",) if program else ()),
        *(("memory",) if memory else ()),
        "decided by",
    )
    for col in (*cols, "depth", "worst time"):
        wide = len(model.SUPERLINEAR_MEMORY) if col == "memory" else None  # a memory verdict's name is never cut
        t.add_column(col, no_wrap=col in ("verdict", "growth", "depth", "worst time"), min_width=wide)
    if machines:
        t.add_column("machine")
    t.add_column("stopped")
    stopped, _ = stopped_cells(report)
    for r, file, why in zip(report.results, files or [None] * len(report.results), stopped, strict=True):
        s, v = r.series, r.verdict
        chain = chain_label(s)
        cells = [
            *([_t(file or "-")] if files else []),
            _t(chain),
            _t(backend_label(s)),
            _t(s.mode),
            _t(v.kind, VERDICT_STYLE.get(v.kind, "")),
            _t(fmt_growth(r)),
            *([_t(program_cell(r))] if program else []),
            *([_t(memory_text(r), _memory_style(r))] if memory else []),
            _t(_decided(r)),
            _t(depth_reached(s)),
            _t(worst_time_text(s)),
        ]
        t.add_row(*cells, *([_t(machine_host(s))] if machines else []), _t(why))
    return t


MEMORY_STYLE = verdicts.STYLE


def _memory_style(result: Result) -> str:
    mv = result.verdict.memory
    return MEMORY_STYLE.get(mv.kind, "") if mv is not None and mv.measured else "dim"


def _memory_lines(result: Result, console: Console, full: bool, head: bool = True) -> None:
    """The memory verdict under a result: its cell, cause, evidence (the decisive lines, or all with ``full``) and
    remedies; a healthy memory gets its cell only."""
    mv = result.verdict.memory
    if mv is None or not (mv.measured or mv.not_measured):
        return
    if head:  # (a paragraph's head names a memory finding already)
        line = Text("  memory: ")
        line.append(_t(memory_text(result), _memory_style(result)))
        console.print(line)
    if not (full or mv.is_finding):
        return
    if mv.cause:
        console.print(_t(f"    cause: {mv.cause}"))
    for e in mv.evidence if full else mv.evidence[:3]:
        console.print(_t(f"    - {e}"))
    for i, rem in enumerate(mv.remedies, 1):
        console.print(_t(f"    remedy {i}: {rem}"))


def _file_column(report: Report) -> list[str] | None:
    """The chains' files, when one chain name comes from two files (the rows would look alike), else None.
    Each file as its shortest distinct tail (``a/x.py``, ``b/x.py``)."""
    by_name: dict[str, set[str]] = {}
    for r in report.results:
        by_name.setdefault(chain_label(r.series), set()).add(r.series.file or "")
    if all(len(fs) < 2 for fs in by_name.values()):
        return None
    paths = {f: Path(f).parts for f in {r.series.file or "" for r in report.results}}
    short: dict[str, str] = {}
    for f, parts in paths.items():
        n = 1
        while n < len(parts) and sum(p[-n:] == parts[-n:] for p in paths.values()) > 1:
            n += 1
        short[f] = str(Path(*parts[-n:])) if parts else ""
    return [short[r.series.file or ""] for r in report.results]


def sweep_rich_table(results: list[dict]) -> Table | None:
    rows = results
    if not rows:
        return None
    t = Table(title="sweeps: measured vs predicted base")
    for col in SWEEP_COLUMNS:
        t.add_column(col)
    for row in rows:
        bp = f"{row['backend']}/{row['profile']}" if row["profile"] else row["backend"]
        cells = (
            row["chain"],
            bp,
            row["mode"],
            str(row["k"]),
            "-" if row["base"] is None else f"{row['base']:.2f}",
            "-" if row["predicted_base"] is None else f"{row['predicted_base']:.2f}",
            row["verdict"],
            {True: "yes", False: "NO", None: "-"}[row["agrees"]],
        )
        t.add_row(*(_t(c) for c in cells))
    return t


def _head(result: Result) -> Text:
    s, v = result.series, result.verdict
    head = _t(s.label, "bold")
    head.append(": ", style="bold")
    head.append(v.kind, style=VERDICT_STYLE.get(v.kind, ""))
    growth = fmt_growth(result)
    if growth != "-":
        head.append(f" {growth}")
    if v.memory_finding:
        head.append("; memory ", style="bold")
        head.append(_t(memory_text(result), _memory_style(result)))
    return head


def render_result_details(result: Result, console: Console) -> None:
    """All evidence, cause and remedies of one result (``--verbose``)."""
    s, v = result.series, result.verdict
    console.print(_head(result))
    if s.error:
        console.print(_t(f"  error: {s.error}"))
    if s.machine is not None:
        console.print(_t(f"  {machine_text(s)}"))
    for e in v.evidence:
        console.print(_t(f"  - {e}"))
    if v.cause:
        console.print(_t(f"  cause: {v.cause}"))
    if v.explained is not None:
        console.print(_t(f"  program: {program_cell(result)}"))
    for i, rem in enumerate(v.remedies, 1):
        console.print(_t(f"  remedy {i}: {rem}"))
    _memory_lines(result, console, full=True)


def render_paragraph(result: Result, console: Console) -> None:
    """A pathology (of time, or of memory): the cause, the decisive evidence and the remedies; the memory verdict
    under it."""
    v = result.verdict
    console.print(_head(result))
    if v.kind in model.PATHOLOGIES:
        if v.cause:
            console.print(_t(f"  cause: {v.cause}"))
        if v.explained is not None and program_cell(result) != "-":
            console.print(_t(f"  program: {program_cell(result)}"))
        for e in v.key_evidence or v.evidence[:3]:
            console.print(_t(f"  - {e}"))
        for i, rem in enumerate(v.remedies, 1):
            console.print(_t(f"  remedy {i}: {rem}"))
    _memory_lines(result, console, full=False, head=not v.memory_finding)


def one_line(result: Result) -> Text:
    """Inconclusive, runaway, error and mildly superlinear series: what and why, in one line (and the memory
    verdict's reason, where memory is undecided)."""
    line = _head(result)
    line.append(f": {one_line_reason(result)}")
    mv = result.verdict.memory
    if mv is not None and mv.measured and mv.kind == model.INCONCLUSIVE:
        line.append(_t(f"; memory inconclusive: {memory_reason(result)}"))
    return line


def render_report(report: Report, console: Console, verbose: bool = False) -> None:
    """The summary table and sweeps, then one paragraph per pathology and one line per inconclusive,
    runaway, error or mildly superlinear series (linear series appear in the table only). ``verbose``:
    every result's full evidence instead."""
    console.print(summary_table(report))
    for note in stopped_cells(report)[1]:  # whole lines without a terminal: a CI log keeps each one searchable
        console.print(_t(note), soft_wrap=not console.is_terminal)
    sw = sweep_rich_table(report.sweeps)
    if sw is not None:
        console.print(sw)
    if verbose:
        for r in report.results:
            console.print()
            render_result_details(r, console)
    else:
        for r in report.results:
            if r.verdict.presentation == "paragraph":
                console.print()
                render_paragraph(r, console)
        lines = [r for r in report.results if r.verdict.presentation == "line"]
        if lines:
            console.print()
        for r in lines:
            console.print(one_line(r))
    if report.elapsed_seconds is not None:
        budget = f" of {report.budget_seconds:g} s budget" if report.budget_seconds else ""
        console.print(f"\nelapsed {report.elapsed_seconds:.1f} s{budget}")
    for n in report.notes:
        console.print(_t(f"note: {n}"))


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
    t = Table(title=escape(f"{series.label}: per-layer ratios"))
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
        depth = f"{p.depth}" + (" (censored)" if p.censored else "")
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
    if series.stop is not None:
        t.caption = words.stop_text(series.stop)
    if console is not None:
        console.print(t)
    return t


def render_halving(rows: Sequence[HalvingRow], console: Console | None = None, phases: Sequence[str] = ()) -> Table:
    """The depth-halving table (rows from :func:`adprof.analysis.halving.halving_rows`): cost at the deepest
    depth d, at d/2 and d/4, the ratios and their reading. Printed on ``console`` when given."""
    t = Table(title=f"depth halving ({phase_text('+'.join(phases))})" if phases else "depth halving")
    for col in ("depth", "time", "counters", "halving ratio", "reading"):
        t.add_column(col, justify="right" if col != "reading" else "left")
    if not rows:
        t.caption = "no points"
    for row in rows:
        ratio = f"x{row.ratio:.2f} vs depth {row.vs_depth}" if row.ratio is not None else "-"
        t.add_row(str(row.depth), fmt_seconds(row.seconds), _count(row.counters), ratio, row.reading)
    if console is not None:
        console.print(t)
    return t


def render_halving_result(result: Result, console: Console) -> None:
    """``adprof halve``'s output: the halving tables of the result, the eager call-0/warm line, why it stopped."""
    s = result.series
    for phases, rows in result.halving.items():
        render_halving(rows, console, tuple(phases.split("+")))
    deep = max((p for p in s.points if not p.censored), key=lambda p: p.depth, default=None)
    if s.mode == "eager" and deep is not None and "backward0" in deep.times and "backward" in deep.times:
        cache = deep.extra.get("cache", {})
        console.print(
            f"depth {deep.depth}: call 1 backward {deep.times['backward0'] * 1e3:.2f} ms, "
            f"{range_text('call', 'calls', 2, max(deep.calls or 2, 2))} median {deep.times['backward'] * 1e3:.2f} ms "
            f"(cache hits {cache.get('hits', '-')}, misses {cache.get('misses', '-')}); forward "
            f"{deep.times.get('forward', 0) * 1e3:.2f} ms",
            markup=False,
            highlight=False,
        )
    if s.stop is not None:
        console.print(words.stop_text(s.stop), markup=False, highlight=False)


STATE_STYLE = {
    State.REGRESSED: "bold red",
    State.IMPROVED: "green",
    State.UNCHANGED: "",
    State.NEW: "cyan",
    State.GONE: "dim",
}


def comparison_table(comparison: Comparison) -> Table:
    """One row per series of a comparison, the regressions first: state, chain, backend/profile (both when they
    differ), mode, verdict and growth before and after (the memory where it changed), and why: one line each."""
    t = Table(title=f"adprof compare: {comparison.base or 'base'} -> {comparison.new or 'new'}")
    for col in ("state", "chain", "backend/profile", "mode", "before", "after", "why"):
        t.add_column(col, no_wrap=col == "state", overflow="fold")
    order = {st: i for i, st in enumerate(STATES)}
    for c in sorted(comparison.changes, key=lambda c: order[c.state]):
        side = c.after or c.before
        t.add_row(
            _t(c.state.value, STATE_STYLE.get(c.state, "")),
            _t(side.chain if side is not None else c.key.chain),
            _t(profile_text(c)),
            _t(c.key.mode),
            _t(describe_side(c.before, memory_changed(c))),
            _t(describe_side(c.after, memory_changed(c))),
            _t(c.reason),
        )
    return t


def versions_table(comparison: Comparison) -> Table | None:
    """The packages each report was measured with, before and after (a changed version in bold)."""
    rows = comparison.version_rows()
    if not rows:
        return None
    t = Table(title="versions measured")
    for col in ("package", "before", "after"):
        t.add_column(col)
    for name, before, after in rows:
        t.add_row(_t(name), _t(before), _t(after, "bold" if after != before else ""))
    return t


def render_comparison(comparison: Comparison, console: Console) -> None:
    """The comparison table, the versions, the notes and the counts."""
    console.print(comparison_table(comparison))
    versions = versions_table(comparison)
    if versions is not None:
        console.print(versions)
    for n in comparison.notes:
        console.print(_t(f"note: {n}"))
    console.print(_t(f"adprof compare: {comparison.summary()}"))


__all__ = [
    "MIN_WIDTH",
    "comparison_table",
    "render_comparison",
    "SafeConsole",
    "render_halving_result",
    "render_report",
    "render_ratio_table",
    "render_halving",
    "summary_table",
]
