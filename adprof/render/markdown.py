"""Compact GitHub-flavoured Markdown for a CI step summary or a pull-request comment (``--markdown PATH``): a
check's report, a comparison of two reports; :func:`table` is the one table writer (the guard's table uses it).

Every cell is plain text escaped (:func:`cell`): a chain named ``a|b``, ``*x*``, ``<script>`` or with a newline
stays one cell that reads exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from adprof import words
from adprof.comparison import STATES, Comparison, State, describe_side, profile_text
from adprof.model import FINDINGS, Report
from adprof.report import (
    backend_label,
    chain_label,
    decided_by,
    depth_reached,
    fmt_growth,
    memory_reason,
    memory_text,
    one_line_reason,
    program_cell,
    shows_memory,
    shows_program,
)

#: ASCII punctuation that Markdown (CommonMark, GitHub) may read as markup inside a table cell; each is written
#: with a backslash, which CommonMark turns back into the character.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!#])")
_SPACES = re.compile(r"[\s\x00-\x1f\x7f]+")


def cell(text: object) -> str:
    """``text`` as the content of one table cell: whitespace runs (newlines too) and control characters become
    one space, Markdown's markup characters and the pipe are backslash-escaped; empty text is ``-``."""
    flat = _SPACES.sub(" ", str(text)).strip()
    return _SPECIAL.sub(r"\\\1", flat) if flat else "-"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub table, every cell escaped (:func:`cell`); a :class:`Strong` cell is shown in bold."""
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(c.markdown if isinstance(c, Strong) else cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


class Strong:
    """A cell shown in bold (a finding's verdict, a regression): its text is escaped like any other."""

    def __init__(self, text: object) -> None:
        self.text = str(text)

    @property
    def markdown(self) -> str:
        inner = cell(self.text)
        return f"**{inner}**" if inner != "-" else inner

    def __str__(self) -> str:
        return self.text


def strong(text: object, when: bool = True) -> object:
    """``text`` in bold when ``when`` (a cell for :func:`table`)."""
    return Strong(text) if when else text


def report_markdown(report: Report, title: str = "adprof check") -> str:
    """One row per series (verdict, growth, decided by, depth, why it stopped or the one-line reason), a line
    of counts, and the versions measured."""
    results = report.results
    findings = sum(r.verdict.is_finding for r in results)
    head = f"### {cell(title)}\n\n"
    counts = f"{len(results)} series, {findings} finding{'s' if findings != 1 else ''}"
    if report.elapsed_seconds is not None:
        counts += f", {report.elapsed_seconds:.1f} s"
    rows = []
    memory = shows_memory(results)
    program = shows_program(results)
    for r in results:
        s, v = r.series, r.verdict
        note = s.error or words.stopped_text(s) or (one_line_reason(r) if v.presentation == "line" else "")
        if v.memory_finding or (v.memory is not None and v.memory.measured and v.memory.kind == "inconclusive"):
            note = "; ".join(x for x in (note, f"memory: {memory_reason(r)}") if x)
        rows.append(
            [
                chain_label(s),
                backend_label(s),
                s.mode,
                strong(v.kind, v.kind in FINDINGS or v.killed),
                fmt_growth(r),
                *([program_cell(r)] if program else []),
                *([strong(memory_text(r), v.memory_finding)] if memory else []),
                decided_by(r),
                depth_reached(s),
                note,
            ]
        )
    headers = ["chain", "backend/profile", "mode", "verdict", "growth", *(["program"] if program else [])]
    headers += ["memory"] if memory else []
    body = table([*headers, "decided by", "depth", "note"], rows)
    versions = report.environment.get("versions") or {}
    tail = ""
    if isinstance(versions, dict) and versions:
        tail = "\n" + cell("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items())) + "\n"
    return head + cell(counts) + "\n\n" + (body if results else "No results.\n") + tail


def comparison_markdown(comparison: Comparison, title: str = "adprof compare") -> str:
    """One row per series (state, before, after, why), the counts, and the versions before and after."""
    rows = []
    order = {s: i for i, s in enumerate(STATES)}
    for c in sorted(comparison.changes, key=lambda c: order[c.state]):
        side = c.after or c.before
        rows.append(
            [
                strong(c.state.value, c.state is State.REGRESSED),
                side.chain if side is not None else c.key.chain,
                profile_text(c),
                c.key.mode,
                describe_side(c.before),
                describe_side(c.after),
                c.reason,
            ]
        )
    names = f"{comparison.base or 'base'} -> {comparison.new or 'new'}"
    out = [f"### {cell(title)}: {cell(names)}\n", cell(comparison.summary()) + "\n"]
    out.append(table(["state", "chain", "backend/profile", "mode", "before", "after", "why"], rows))
    versions = comparison.version_rows()
    if versions:
        out.append(
            table(
                ["package", "before", "after"],
                [(n, b, strong(a, a != b)) for n, b, a in versions],
            )
        )
    out.extend(cell(f"note: {n}") + "\n" for n in comparison.notes)
    return "\n".join(out)


__all__ = ["Strong", "cell", "comparison_markdown", "report_markdown", "strong", "table"]
