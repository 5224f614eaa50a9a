"""A self-contained one-file HTML report: inline CSS, inline SVG plots, no network references.

Each verdict appears as plain text in an element with class ``verdict`` (plus ``verdict-<name>``).
"""

from __future__ import annotations

from html import escape

from adprof.analysis.classify import sweep_table
from adprof.model import Report, Result
from adprof.render.plot import result_svg, simple_svg  # the page embeds the plot's SVG figures
from adprof.report import SWEEP_COLUMNS, backend_label, depth_reached, fmt_growth, worst_time_text

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
.verdict-error { color: #7a1b7a; }
.result { border-top: 2px solid #ddd; margin-top: 2em; padding-top: 1em; }
.plot svg { max-width: 100%; height: auto; }
.cause { font-style: italic; }
"""


def _verdict(kind: str) -> str:
    return f'<span class="verdict verdict-{escape(kind)}">{escape(kind)}</span>'


def _svg(result: Result) -> str:
    try:
        return result_svg(result)
    except RuntimeError:
        return simple_svg(result)


def _anchor(i: int) -> str:
    return f"result-{i}"


def _summary(report: Report) -> str:
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "chain",
            "backend/profile",
            "mode",
            "verdict",
            "base / exponent",
            "depth",
            "worst time",
            "stopped",
        )
    )
    rows = []
    for i, r in enumerate(report.results):
        s = r.series
        params = "" if not s.params else " " + ",".join(f"{k}={x}" for k, x in s.params.items())
        rows.append(
            "<tr>"
            f'<td><a href="#{_anchor(i)}">{escape(s.chain + params)}</a></td>'
            f"<td>{escape(backend_label(s))}</td><td>{escape(s.mode)}</td>"
            f"<td>{_verdict(r.verdict.kind)}</td><td>{escape(fmt_growth(r))}</td>"
            f"<td>{escape(depth_reached(s))}</td><td>{escape(worst_time_text(s))}</td>"
            f"<td>{escape(s.error or s.stopped or '')}</td>"
            "</tr>"
        )
    return f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _sweeps(report: Report) -> str:
    rows = sweep_table(report.results)
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


def _result(i: int, r: Result) -> str:
    s, v = r.series, r.verdict
    params = "" if not s.params else " " + ",".join(f"{k}={x}" for k, x in s.params.items())
    parts = [
        f'<section class="result" id="{_anchor(i)}">',
        f"<h2>{escape(s.chain + params)} [{escape(backend_label(s))}, {escape(s.mode)}]: {_verdict(v.kind)}</h2>",
        f'<div class="plot">{_svg(r)}</div>',
    ]
    if s.error:
        parts.append(f'<p class="error">error: {escape(s.error)}</p>')
    if v.evidence:
        parts.append('<h3>Evidence</h3><ul class="evidence">')
        parts.extend(f"<li>{escape(e)}</li>" for e in v.evidence)
        parts.append("</ul>")
    if v.cause:
        parts.append(f'<p class="cause">Cause: {escape(v.cause)}</p>')
    if v.remedies:
        parts.append('<h3>Remedies</h3><ol class="remedies">')
        parts.extend(f"<li>{escape(x)}</li>" for x in v.remedies)
        parts.append("</ol>")
    parts.append("</section>")
    return "\n".join(parts)


def render_html(report: Report) -> str:
    """The whole report as one self-contained HTML page (no external CSS, JS, fonts or images)."""
    env = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(x))}</td></tr>" for k, x in report.environment.items())
    meta = []
    if report.elapsed_seconds is not None:
        meta.append(f"elapsed {report.elapsed_seconds:.1f} s")
    if report.budget_seconds is not None:
        meta.append(f"budget {report.budget_seconds:g} s")
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    body = [
        "<h1>adprof report</h1>",
        f"<p>{escape(', '.join(meta))}</p>" if meta else "",
        _summary(report) if report.results else "<p>No results.</p>",
        _sweeps(report),
        *(_result(i, r) for i, r in enumerate(report.results)),
        f'<h2>Environment</h2><table class="environment">{env}</table>' if env else "",
        f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>adprof report</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        + "\n".join(b for b in body if b)
        + "\n</body>\n</html>\n"
    )
