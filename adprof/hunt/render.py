"""Rendering a :class:`~adprof.hunt.model.HuntReport` (terminal, JSON, HTML) and the cross-engine table of
``adprof check --compare``. Renderers read the report; they never measure nor analyse."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from adprof import verdicts
from adprof.hunt.attribute import NOT_APPLICABLE, NOT_MEASURED, Comparison
from adprof.hunt.model import HUNT_SCHEMA, Finding, HuntReport, Row
from adprof.plain import PlainError, from_plain, to_plain
from adprof.render.console import footnoted
from adprof.render.html import CSS
from adprof.util.text import terminal_safe


def _style(kind: str) -> str:
    """A verdict's style: the one table's (:data:`adprof.verdicts.TABLE`), dim for hunt's own row states."""
    return verdicts.style(kind) or ("dim" if kind in (NOT_APPLICABLE, NOT_MEASURED) else "")


def _t(text: str, style: str = "") -> Text:
    return Text(terminal_safe(text), style=style)


# --------------------------------------------------------------------------- terminal


def findings_table(report: HuntReport) -> Table:
    t = Table(
        title=f"adprof hunt: {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}"
        f" (seed {report.seed})"
    )
    for col in ("#", "found on", "verdict", "growth", "decided by", "the layer", "across engines", "file"):
        t.add_column(col, overflow="fold")
    for f in report.findings:
        t.add_row(
            _t(f"{f.id:04d}"),
            _t(f.target),
            _t(f.verdict, _style(f.verdict)),
            _t(f.figure),
            _t(f.decided_by),
            _t(f.summary),
            _t(f.attribution),
            _t(f.file + (f" (not written: {f.write_error})" if f.write_error else "")),
        )
    return t


#: A note longer than this goes under its engines table, the cell naming it (``[1]``).
LONG_NOTE = 40


def engines_table(rows: Sequence[Row], title: str = "", marks: list[str] | None = None) -> Table:
    """The class per engine and mode of one program. A long note (an error, a stop's sentence) is a mark in its
    cell, its text appended to ``marks`` to print under the table (:func:`engines_block`); without ``marks``,
    the cell holds it whole."""
    t = Table(title=title or None, show_header=True, box=None, padding=(0, 1), pad_edge=False)
    for col in ("engine", "mode", "verdict", "growth", "decided by", "note"):
        t.add_column(col, overflow="fold")
    notes = [r.note for r in rows] if marks is None else footnoted([r.note for r in rows], LONG_NOTE, marks)
    for r, note in zip(rows, notes, strict=True):
        engine = f"{r.backend}/{r.profile}" if r.profile else r.backend
        t.add_row(
            _t(engine),
            _t(r.mode),
            _t(r.verdict, _style(r.verdict)),
            _t(r.figure),
            _t(r.decided_by),
            _t(note),
        )
    return t


def engines_block(rows: Sequence[Row], console: Console, title: str = "") -> None:
    """Print the engines table, then its long notes (whole lines without a terminal: nothing cut in a log)."""
    marks: list[str] = []
    console.print(engines_table(rows, title, marks))
    for mark in marks:
        console.print(_t(f"  {mark}"), soft_wrap=not console.is_terminal)


def _paragraph(f: Finding, console: Console) -> None:
    """A finding's paragraph: its head, the layer, how it shrank, the search, the engines table, how to
    reproduce it."""
    head = Text.assemble(
        _t(f"{f.id:04d} ", "bold"),
        _t(f"{f.target}: "),
        _t(f.verdict, _style(f.verdict)),
        _t(f" {f.figure}"),
    )
    lines: list[Text] = [head]
    if f.axis == "layer":
        uses = f" (uses the previous value {f.uses} times; predicted base {f.predicted_base:.2f})"
    else:
        uses = f" (predicted base {f.predicted_base:.2f}: the spectral radius of the step's path counts)"
    lines.append(_t(f"  the layer: {f.summary}" + (uses if f.axis != "order" and f.predicted_base > 1.15 else "")))
    if f.shrunk is not None and f.shrunk.steps:
        how = "1-minimal" if f.shrunk.minimal else "the budget stopped it"
        shape = f.shrunk.original_generator.get("shape")
        was = f" on a {tuple(shape)} input" if shape and shape != f.generator.get("shape") else ""
        size = (
            f"size {f.shrunk.to_size} kept, simplified"
            if f.shrunk.from_size == f.shrunk.to_size
            else f"from size {f.shrunk.from_size} to {f.shrunk.to_size}"
        )
        lines.append(_t(f"  shrunk {size} ({how}): {f.shrunk.original}{was}"))
    elif f.shrunk is not None:
        lines.append(_t(f"  already minimal (size {f.shrunk.to_size}; {f.shrunk.tried} reductions tried)"))
    lines.append(_t(f"  search: {f.component} {f.search_figure}; decided by {f.decided_by} on the check path"))
    lines.append(_t(f"  across engines: {f.attribution}: {f.attribution_text}"))
    by = {r.target: r for r in f.table}
    if f.also:
        also = [f"{t} ({by[t].verdict}{f' {by[t].figure}' if by[t].figure else ''})" if t in by else t for t in f.also]
        lines.append(_t(f"  also the finding of: {', '.join(also)}"))
    for line in lines:
        console.print(line)
    engines_block(f.table, console)
    console.print(_t(f"  reproduce: {f.reproduce}"), soft_wrap=not console.is_terminal)
    for t in f.also:
        if t in by and by[t].reproduce and t != f.target:
            console.print(_t(f"  reproduce on {t}: {by[t].reproduce}"), soft_wrap=not console.is_terminal)


def stats_line(report: HuntReport) -> str:
    s = report.stats
    return (
        f"search: {s.tried} generators tried of {s.drawn} drawn ({s.evaluations} evaluations, {s.generations} "
        "generations, "
        f"{s.search_seconds:.0f} s{', past its share: no candidate by then' if s.search_extended else ''}); "
        f"{s.candidates} candidates: {s.confirmed} confirmed ({s.shrunk} shrunk), "
        f"{s.rejected} rejected by the check path, {s.merged} merged into a finding, {s.unprocessed} not reached"
    )


def per_target_lines(report: HuntReport) -> list[str]:
    """One line per target: its evaluations (measured, failed, lost), seconds per evaluation, whether it screened
    new generators, the generators it could not run, and whether it was starved."""
    lines = []
    for label, st in report.stats.per_target.items():
        cost = f", {st.cost_per_evaluation:.2f} s each" if st.cost_per_evaluation is not None else ""
        bits = [f"{st.evaluations} evaluations ({st.measured} measured, {st.failures} failed"]
        bits[0] += f", {st.lost} lost)" if st.lost else ")"
        bits[0] += cost
        if st.screen:
            bits.append("screens new generators")
        skipped = sum(st.skipped.values())
        if skipped:
            bits.append(f"{skipped} generators it cannot run")
        if st.starved:
            bits.append(f"STARVED: {st.expected:g} allowed")
        lines.append(f"  {label}: {'; '.join(bits)}")
    return lines


def starved_reasons(report: HuntReport) -> list[str]:
    """Why each starved target measured too little, and what would make it run (one phrase each)."""
    out = []
    for label, st in report.stats.per_target.items():
        if not st.starved:
            continue
        head = f"{label} measured {st.measured} of the {st.expected:g} evaluations its share of the search allowed"
        skipped = sum(st.skipped.values())
        if st.failures and st.failures >= st.evaluations - st.measured:
            err = st.last_error.splitlines()[0] if st.last_error else "no message"
            why = f"{st.failures} of {st.evaluations} failed (last: {err}); `adprof check` of a chain on it shows why"
        elif skipped and not st.evaluations:
            top = sorted(st.skipped.items(), key=lambda kv: -kv[1])[:3]
            reasons = ", ".join(f"{r}: {n}" for r, n in top)
            why = (
                f"it can run none of the {skipped} generators drawn for it ({reasons}); a backend that offers "
                "the generator language's ops (or declares fewer unsupported) runs them"
            )
        elif st.lost:
            why = f"{st.lost} evaluations were lost with their worker (--verbose says why)"
        elif st.evaluations:
            why = "each evaluation ran out of the search's time before its first point; a larger --budget runs them"
        else:
            why = "the search gave its lane time to the other targets; hunt it alone (--backend) to give it all"
        out.append(f"{head}: {why}")
    return out


def render_hunt(report: HuntReport, console: Console, verbose: bool = False) -> None:
    """The hunt's report on the terminal: the findings table, a paragraph per finding, the run's counts."""
    if report.findings:
        console.print(findings_table(report))
        for f in report.findings:
            console.print()
            _paragraph(f, console)
    else:
        console.print(_t(f"adprof hunt: no confirmed finding (seed {report.seed})", "bold"))
    console.print()
    console.print(_t(stats_line(report)), soft_wrap=True)
    for line in per_target_lines(report):
        console.print(_t(line), soft_wrap=True)
    if verbose and report.rejected:
        for r in report.rejected:
            console.print(
                _t(
                    f"  rejected: {r.target}: {r.summary} (search {r.search_figure}; check: {r.verdict}"
                    f"{' ' + r.figure if r.figure else ''})"
                ),
                soft_wrap=True,
            )
    for note in report.notes:
        console.print(_t(f"note: {note}"), soft_wrap=True)
    tail = f" (interrupted by {report.interrupted}: partial report)" if report.interrupted else ""
    console.print(_t(f"elapsed {report.elapsed_seconds:.1f} s of {report.budget_seconds:g} s budget{tail}"))


def render_compare(comparisons: Sequence[Comparison], console: Console) -> None:
    """``adprof check --compare``: per chain, the class per engine and mode, and whose growth it is."""
    for c in comparisons:
        console.print()
        console.print(_t(f"{c.chain}: {c.attribution}", "bold"), soft_wrap=True)
        engines_block(c.rows, console)
        console.print(_t(f"  {c.text}"), soft_wrap=True)


# --------------------------------------------------------------------------- JSON


def hunt_to_json(report: HuntReport) -> dict[str, Any]:
    return to_plain(report)


def hunt_text(report: HuntReport) -> str:
    return json.dumps(hunt_to_json(report), indent=2, sort_keys=False) + "\n"


class HuntSchemaError(ValueError):
    """A hunt JSON file of another schema, or not one at all (one line)."""


def load_hunt(text: str) -> HuntReport:
    """The report of :func:`hunt_text` (``load_hunt(hunt_text(r)) == r``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HuntSchemaError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != HUNT_SCHEMA:
        raise HuntSchemaError(f"not an adprof hunt report of schema {HUNT_SCHEMA}")
    try:
        return from_plain(HuntReport, data)
    except PlainError as exc:
        raise HuntSchemaError(str(exc)) from None


# --------------------------------------------------------------------------- HTML


def _verdict_html(kind: str) -> str:
    return f'<span class="verdict verdict-{escape(kind.replace("/", ""))}">{escape(kind)}</span>'


def _rows_html(rows: Sequence[Row]) -> str:
    head = "<tr><th>engine</th><th>mode</th><th>verdict</th><th>growth</th><th>decided by</th><th>note</th></tr>"
    body = "".join(
        f"<tr><td>{escape(r.backend + ('/' + r.profile if r.profile else ''))}</td><td>{escape(r.mode)}</td>"
        f"<td>{_verdict_html(r.verdict)}</td><td>{escape(r.figure)}</td><td>{escape(r.decided_by)}</td>"
        f"<td>{escape(r.note)}</td></tr>"
        for r in rows
    )
    return f"<table>{head}{body}</table>"


def render_hunt_html(report: HuntReport) -> str:
    """One self-contained page: the findings, each with its table across engines and its chain file."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>adprof hunt</title>",
        f"<style>{CSS} pre {{ background: #f7f7f7; padding: 0.8em; overflow-x: auto; }}</style></head><body>",
        f"<h1>adprof hunt: {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''}</h1>",
        f"<p>seed {report.seed}; elapsed {report.elapsed_seconds:.1f} s of {report.budget_seconds:g} s; targets: "
        f"{escape(', '.join(report.targets))}</p>",
        f"<p>{escape(stats_line(report))}</p>",
        "<ul>" + "".join(f"<li>{escape(line.strip())}</li>" for line in per_target_lines(report)) + "</ul>",
    ]
    if report.interrupted:
        parts.append(f"<p><b>interrupted by {escape(report.interrupted)}: partial report</b></p>")
    if report.findings:
        parts.append(
            "<table><tr><th>#</th><th>found on</th><th>verdict</th><th>growth</th><th>decided by</th>"
            "<th>the layer</th><th>across engines</th><th>file</th></tr>"
        )
        for f in report.findings:
            parts.append(
                f"<tr><td><a href='#f{f.id}'>{f.id:04d}</a></td><td>{escape(f.target)}</td>"
                f"<td>{_verdict_html(f.verdict)}</td><td>{escape(f.figure)}</td><td>{escape(f.decided_by)}</td>"
                f"<td><code>{escape(f.summary)}</code></td><td>{escape(f.attribution)}</td>"
                f"<td>{escape(f.file + (f' (not written: {f.write_error})' if f.write_error else ''))}</td></tr>"
            )
        parts.append("</table>")
    for f in report.findings:
        parts.append(
            f"<div class='result' id='f{f.id}'><h2>{f.id:04d} {escape(f.target)}: "
            f"{_verdict_html(f.verdict)} {escape(f.figure)}</h2>"
        )
        parts.append(
            f"<p>the layer: <code>{escape(f.summary)}</code>; search: {escape(f.component)} "
            f"{escape(f.search_figure)}</p>"
        )
        parts.append(f"<p>across engines: <b>{escape(f.attribution)}</b>: {escape(f.attribution_text)}</p>")
        parts.append(_rows_html(f.table))
        parts.append(f"<p>reproduce: <code>{escape(f.reproduce)}</code></p>")
        parts.append(f"<pre>{escape(f.source)}</pre></div>")
    for note in report.notes:
        parts.append(f"<p class='cause'>note: {escape(note)}</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


__all__ = [
    "HuntSchemaError",
    "engines_block",
    "engines_table",
    "findings_table",
    "hunt_text",
    "hunt_to_json",
    "load_hunt",
    "per_target_lines",
    "starved_reasons",
    "render_compare",
    "render_hunt",
    "render_hunt_html",
    "stats_line",
]
