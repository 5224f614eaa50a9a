"""Renderers: read a Report, never measure.

* ``console.render_report(report, console)``: rich summary table, evidence, cause, remedies
  (``render_ratio_table``, ``render_halving`` for one series).
* ``jsonout.report_to_json`` / ``jsonout.load_report``: the JSON session format.
* ``plot.plot_report(report, path)`` / ``plot.result_svg(result)``: matplotlib (optional extra).
* ``html.render_html(report)``: one self-contained page.
* ``markdown.report_markdown(report)``: a compact GitHub table for a CI summary or a pull-request comment.

A comparison of two reports (:mod:`adprof.comparison`) has a renderer in each format: ``console.render_comparison``,
``html.comparison_html``, ``jsonout.comparison_text``, ``markdown.comparison_markdown``.

The file outputs share one interface, :class:`Renderer` (:data:`FILE_RENDERERS`): ``adprof check`` and
``adprof report`` (a saved run, rendered again) write them the same way.
"""

from __future__ import annotations

from typing import Protocol

from adprof.model import Report
from adprof.render.console import render_halving, render_ratio_table, render_report
from adprof.render.html import render_html
from adprof.render.jsonout import load_report, report_text, report_to_json
from adprof.render.markdown import report_markdown


class Renderer(Protocol):
    """A file output of a report: it reads the report, and never measures nor analyses."""

    option: str  # the command-line option that asks for it ("--html")
    suffixes: tuple[str, ...] | None  # the file types it writes (None: any)
    stdout_ok: bool  # ``-`` writes it to stdout (the tables then go to stderr)

    def render(self, report: Report, path: str) -> str | None:
        """The file's text (the caller writes it), or None when the renderer wrote ``path`` itself."""
        ...


class JsonRenderer:
    option, suffixes, stdout_ok = "--json", None, True

    def render(self, report: Report, path: str) -> str:
        return report_text(report)


class HtmlRenderer:
    option, suffixes, stdout_ok = "--html", (".html", ".htm"), False

    def render(self, report: Report, path: str) -> str:
        return render_html(report)


class PlotRenderer:
    option, suffixes, stdout_ok = "--plot", (".png", ".svg", ".pdf"), False

    def render(self, report: Report, path: str) -> None:
        from adprof.render.plot import plot_report  # matplotlib only when plotting

        plot_report(report, path)


class MarkdownRenderer:
    # any file name: GitHub's step summary file ($GITHUB_STEP_SUMMARY) has no suffix
    option, suffixes, stdout_ok = "--markdown", None, True

    def render(self, report: Report, path: str) -> str:
        return report_markdown(report)


#: Every file output, in the order they are written.
FILE_RENDERERS: tuple[Renderer, ...] = (JsonRenderer(), HtmlRenderer(), PlotRenderer(), MarkdownRenderer())

__all__ = [
    "FILE_RENDERERS",
    "Renderer",
    "load_report",
    "render_halving",
    "render_html",
    "render_ratio_table",
    "render_report",
    "report_markdown",
    "report_to_json",
]
