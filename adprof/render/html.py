"""A self-contained one-file HTML report: inline CSS, inline SVG plots, no network references.

Each verdict appears as plain text in an element with class ``verdict`` (plus ``verdict-<name>``).
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Mapping
from typing import Any

from adprof import words
from adprof.comparison import STATES, Comparison, Side, profile_text
from adprof.model import Report, Result
from adprof.render.plot import chain_key, chain_svg, group_by_chain, simple_svg  # the page embeds the plots
from adprof.report import (
    LOADED_MARK,
    LOADED_NOTE,
    SWEEP_COLUMNS,
    backend_label,
    chain_label,
    depth_reached,
    fmt_growth,
    machine_host,
    machine_text,
    memory_text,
    one_line_reason,
    program_cell,
    several_machines,
    shows_memory,
    shows_program,
    worst_time_text,
)
from adprof.util.text import terminal_safe


def escape(text: str) -> str:
    """``text`` as HTML text or attribute value: markup escaped, and control characters shown as ``\\xNN`` (as
    on the terminal: a raw ESC in a page is not valid HTML, and reaches a terminal that shows the file)."""
    return html.escape(terminal_safe(text))


CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
.verdict { font-weight: bold; white-space: nowrap; }
.verdict-exponential-transform, .verdict-exponential-backward { color: #b00020; }
.verdict-superlinear-transform, .verdict-superlinear-backward { color: #a66300; }
.verdict-linear { color: #1b7a2a; }
.verdict-inconclusive { color: #666; }
.verdict-error, .verdict-runaway { color: #7a1b7a; }
.verdict-mildly-superlinear-transform, .verdict-mildly-superlinear-backward { color: #8a7300; }
.verdict-exponential-memory, .verdict-leak-per-call { color: #b00020; }
.verdict-superlinear-memory { color: #a66300; }
.verdict-flat { color: #1b7a2a; }
.verdict-mildly-superlinear-memory { color: #8a7300; }
.memory-not-measured { color: #666; font-style: italic; }
.result { border-top: 2px solid #ddd; margin-top: 2em; padding-top: 1em; }
.plot svg { max-width: 100%; height: auto; }
.cause { font-style: italic; }
.loaded { color: #a66300; font-size: 0.85em; margin-left: 0.4em; }
.state { font-weight: bold; white-space: nowrap; }
.state-regressed { color: #b00020; }
.state-improved { color: #1b7a2a; }
.state-new { color: #1b4f7a; }
.state-gone { color: #666; }
.changed { font-weight: bold; }
"""


def _verdict(kind: str) -> str:
    return f'<span class="verdict verdict-{escape(kind)}">{escape(kind)}</span>'


def _loaded(r: Result) -> str:
    """The mark of a time-decided verdict measured on a loaded machine (its explanation as the tooltip)."""
    if not r.verdict.loaded_machine:
        return ""
    return f'<span class="loaded" title="{escape(LOADED_NOTE)}">{escape(LOADED_MARK)}</span>'


def _svg(title: str, results: list[Result]) -> str:
    try:
        return chain_svg(title, results)
    except RuntimeError:
        return simple_svg(title, results)


def _anchor(i: int) -> str:
    return f"result-{i}"


def _summary(report: Report) -> str:
    machines = several_machines(report.results)  # which host measured it, when there are several
    memory = shows_memory(report.results)
    program = shows_program(report.results)
    cols = ["chain", "backend/profile", "mode", "verdict", "base / exponent", *(["program"] if program else [])]
    cols += ["memory"] if memory else []
    cols += ["depth", "worst time"]
    head = "".join(f"<th>{h}</th>" for h in (*cols, *(["machine"] if machines else []), "stopped"))
    rows = []
    for i, r in enumerate(report.results):
        s = r.series
        rows.append(
            "<tr>"
            f'<td><a href="#{_anchor(i)}">{escape(chain_label(s))}</a></td>'
            f"<td>{escape(backend_label(s))}</td><td>{escape(s.mode)}</td>"
            f"<td>{_verdict(r.verdict.kind)}{_loaded(r)}</td><td>{escape(fmt_growth(r))}</td>"
            + (f'<td class="program">{escape(program_cell(r))}</td>' if program else "")
            + (f"<td>{_memory_cell(r)}</td>" if memory else "")
            + f"<td>{escape(depth_reached(s))}</td><td>{escape(worst_time_text(s))}</td>"
            + (f'<td class="machine">{escape(machine_host(s))}</td>' if machines else "")
            + f"<td>{escape(s.error or words.stopped_text(s) or '')}</td>"
            "</tr>"
        )
    loaded = any(r.verdict.loaded_machine for r in report.results)
    note = f'<p class="loaded-note">{escape(LOADED_NOTE)}</p>' if loaded else ""
    return f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>{note}'


def _sweeps(report: Report) -> str:
    rows = report.sweeps
    if not rows:
        return ""
    out = []
    for row in rows:
        base = "-" if row["base"] is None else f"{row['base']:.2f}"
        pred = "-" if row["predicted_base"] is None else f"{row['predicted_base']:.2f}"
        agrees = {True: "yes", False: "NO", None: "-"}[row["agrees"]]
        bp = f"{row['backend']}/{row['profile']}" if row["profile"] else row["backend"]
        out.append(
            f"<tr><td>{escape(row['chain'])}</td><td>{escape(bp)}</td><td>{escape(row['mode'])}</td>"
            f"<td>{escape(str(row['k']))}</td><td>{base}</td><td>{pred}</td>"
            f"<td>{_verdict(row['verdict'])}</td><td>{agrees}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in SWEEP_COLUMNS)
    return (
        "<h2>Sweeps: measured vs predicted base</h2>"
        f'<table class="sweeps"><thead><tr>{head}</tr></thead><tbody>{"".join(out)}</tbody></table>'
    )


def _memory_cell(r: Result) -> str:
    """The memory verdict of a row: its kind styled as a verdict, and its figure (or ``not measured``)."""
    mv = r.verdict.memory
    if mv is None:
        return "-"
    if not mv.measured:
        return f'<span class="memory-not-measured" title="{escape(mv.reason)}">not measured</span>'
    rest = memory_text(r).removeprefix(mv.kind).strip()
    return _verdict(mv.kind) + (f" {escape(rest)}" if rest else "")


def _memory_block(r: Result, full: bool) -> str:
    """The memory verdict under a result: cause, evidence (the first three, or all) and remedies."""
    mv = r.verdict.memory
    if mv is None or not (mv.measured or mv.not_measured):
        return ""
    evidence = mv.evidence if full else mv.evidence[:3]
    items = "".join(f"<li>{escape(e)}</li>" for e in evidence)
    rem = "".join(f"<li>{escape(x)}</li>" for x in mv.remedies)
    return (
        f'<div class="memory"><h4>Memory: {_memory_cell(r)}</h4>'
        + (f'<p class="cause">{escape(mv.cause)}</p>' if mv.cause else "")
        + (f'<ul class="evidence">{items}</ul>' if items else "")
        + (f'<ol class="remedies">{rem}</ol>' if rem else "")
        + "</div>"
    )


def _title(r: Result) -> str:
    s = r.series
    title = f"{escape(s.label)}: {_verdict(r.verdict.kind)}"
    return title + (f" memory {_memory_cell(r)}" if r.verdict.memory_finding else "")


def _paragraph(i: int, r: Result, plot: str) -> str:
    v = r.verdict
    parts = [f'<section class="result" id="{_anchor(i)}">', f"<h3>{_title(r)} {escape(fmt_growth(r))}</h3>"]
    if plot:
        parts.append(f'<div class="plot">{plot}</div>')
    if v.cause:
        parts.append(f'<p class="cause">{escape(v.cause)}</p>')
    if v.explained is not None and program_cell(r) != "-":
        parts.append(f'<p class="program">Program: {escape(program_cell(r))}</p>')
    parts.append(
        '<ul class="evidence">' + "".join(f"<li>{escape(e)}</li>" for e in v.key_evidence or v.evidence[:3]) + "</ul>"
    )
    if v.remedies:
        parts.append('<ol class="remedies">' + "".join(f"<li>{escape(x)}</li>" for x in v.remedies) + "</ol>")
    parts.append(_memory_block(r, full=False))
    parts.append("</section>")
    return "\n".join(parts)


def _one_line(i: int, r: Result) -> str:
    return f'<li id="{_anchor(i)}">{_title(r)}: {escape(one_line_reason(r))}</li>'


def _details(i: int, r: Result) -> str:
    v = r.verdict
    where = machine_text(r.series)
    items = "".join(f"<li>{escape(e)}</li>" for e in ([where] if where else []) + v.evidence)
    rem = "".join(f"<li>{escape(x)}</li>" for x in v.remedies)
    return (
        f'<details class="detail" id="detail-{i}"><summary>{_title(r)}</summary><ul class="evidence">{items}</ul>'
        + (f'<p class="cause">Cause: {escape(v.cause)}</p>' if v.cause else "")
        + (f'<p class="program">Program: {escape(program_cell(r))}</p>' if v.explained is not None else "")
        + (f'<ol class="remedies">{rem}</ol>' if rem else "")
        + _memory_block(r, full=True)
        + "</details>"
    )


def _body(report: Report) -> list[str]:
    """Summary, sweeps, one paragraph per pathology (its chain's plot inline), one line per inconclusive,
    runaway, error or mild series, the remaining chains' plots, then every series' full evidence."""
    panels = dict(group_by_chain(report.results))
    shown: set[str] = set()
    findings = []
    for i, r in enumerate(report.results):
        if r.verdict.presentation == "paragraph":
            key = chain_key(r)
            plot = "" if key in shown else _svg(key, panels[key])
            shown.add(key)
            findings.append(_paragraph(i, r, plot))
    lines = [_one_line(i, r) for i, r in enumerate(report.results) if r.verdict.presentation == "line"]
    rest = [f'<div class="plot"><h3>{escape(k)}</h3>{_svg(k, rs)}</div>' for k, rs in panels.items() if k not in shown]
    return [
        _summary(report) if report.results else "<p>No results.</p>",
        _sweeps(report),
        "<h2>Findings</h2>" + "".join(findings) if findings else "",
        f'<h2>Inconclusive, runaway, error and mild</h2><ul class="lines">{"".join(lines)}</ul>' if lines else "",
        "<h2>Plots</h2>" + "".join(rest) if rest else "",
        "<h2>All evidence</h2>" + "".join(_details(i, r) for i, r in enumerate(report.results))
        if report.results
        else "",
    ]


def _env_value(value: Any) -> str:
    """An environment field as a person reads it (HTML): a mapping as a table of its own (``versions``), a list
    as the words it holds (``argv``: the command), a number or a string as written."""
    if isinstance(value, Mapping):
        rows = "".join(f"<tr><th>{escape(str(k))}</th><td>{_env_value(v)}</td></tr>" for k, v in value.items())
        return f"<table>{rows}</table>"
    if isinstance(value, list | tuple):
        return escape(shlex.join(str(v) for v in value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return escape(str(value))


def _environment(env: Mapping[str, Any]) -> str:
    """The environment's rows; a field without a value (``None``: not recorded, or the default) is left out."""
    return "".join(
        f"<tr><th>{escape(str(k).replace('_', ' '))}</th><td>{_env_value(x)}</td></tr>"
        for k, x in env.items()
        if x is not None and x != {} and x != []
    )


def _page_parts(report: Report) -> list[str]:
    env = _environment(report.environment)
    meta = []
    if report.elapsed_seconds is not None:
        meta.append(f"elapsed {report.elapsed_seconds:.1f} s")
    if report.budget_seconds is not None:
        meta.append(f"budget {report.budget_seconds:g} s")
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return [
        f"<p>{escape(', '.join(meta))}</p>" if meta else "",
        *_body(report),
        f'<h2>Environment</h2><table class="environment">{env}</table>' if env else "",
        f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "",
    ]


def _page(title: str, body: list[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(b for b in body if b)
        + "\n</body>\n</html>\n"
    )


#: The class of the element that holds an inline report (a notebook's output): its CSS applies inside it only.
FRAGMENT_CLASS = "adprof-report"


def scoped_css(css: str = CSS, scope: str = f".{FRAGMENT_CLASS}") -> str:
    """``css`` with every selector inside ``scope`` (``body`` becomes the scope itself): the inline report's
    styles do not restyle the notebook around it."""
    out = []
    for rule in css.split("}"):
        if "{" not in rule:
            continue
        selectors, decls = rule.split("{", 1)
        scoped = []
        for sel in selectors.split(","):
            sel = sel.strip()
            scoped.append(scope if sel == "body" else f"{scope} {sel}")
        out.append(f"{', '.join(scoped)} {{{decls}}}")
    return "\n".join(out)


def render_html(report: Report) -> str:
    """The whole report as one self-contained HTML page (no external CSS, JS, fonts or images)."""
    return _page("adprof report", ["<h1>adprof report</h1>", *_page_parts(report)])


def render_html_fragment(report: Report) -> str:
    """The report as an HTML fragment for a notebook's output: the page's body in a ``div`` of class
    :data:`FRAGMENT_CLASS`, its styles scoped to it (no script, no external reference)."""
    body = "\n".join(b for b in _page_parts(report) if b)
    return f'<div class="{FRAGMENT_CLASS}">\n<style>{scoped_css()}</style>\n{body}\n</div>\n'


def comparison_html(comparison: Comparison) -> str:
    """A comparison of two reports as one self-contained page: one row per series (the regressions first, each
    state in an element of class ``state state-<name>``), the versions before and after, the notes."""
    order = {st: i for i, st in enumerate(STATES)}
    rows = []
    for c in sorted(comparison.changes, key=lambda c: order[c.state]):
        side = c.after or c.before
        chain = side.chain if side is not None else c.key.chain
        rows.append(
            f'<tr class="change"><td><span class="state state-{c.state.value}">{c.state.value}</span></td>'
            f"<td>{escape(chain)}</td><td>{escape(profile_text(c))}</td><td>{escape(c.key.mode)}</td>"
            f"<td>{_side(c.before)}</td><td>{_side(c.after)}</td><td>{escape(c.reason)}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("state", "chain", "backend/profile", "mode", "before", "after", "why"))
    changed = ' class="changed"'
    versions = "".join(
        f"<tr><td>{escape(n)}</td><td>{escape(b)}</td><td{changed if a != b else ''}>{escape(a)}</td></tr>"
        for n, b, a in comparison.version_rows()
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in comparison.notes)
    title = f"adprof compare: {comparison.base or 'base'} -> {comparison.new or 'new'}"
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="summary">{escape(comparison.summary())}</p>',
        f'<table class="comparison"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        if rows
        else "<p>No series.</p>",
        '<h2>Versions measured</h2><table class="versions"><thead><tr><th>package</th><th>before</th>'
        f"<th>after</th></tr></thead><tbody>{versions}</tbody></table>"
        if versions
        else "",
        f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "",
    ]
    return _page(title, body)


def _side(side: Side | None) -> str:
    """One side of a change: its verdict (class ``verdict``) and growth, or ``-``."""
    if side is None:
        return "-"
    growth = f" {escape(side.growth)}" if side.growth != "-" else ""
    return _verdict(side.verdict) + growth
