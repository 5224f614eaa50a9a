"""Renderers: read a Report, never measure.

* ``console.render_report(report, console)``: rich summary table, evidence, cause, remedies
  (``render_ratio_table``, ``render_halving`` for one series).
* ``jsonout.report_to_json`` / ``jsonout.load_report``: the JSON session format.
* ``plot.plot_report(report, path)`` / ``plot.result_svg(result)``: matplotlib (optional extra).
* ``html.render_html(report)``: one self-contained page.
"""

from adprof.render.console import render_halving, render_ratio_table, render_report
from adprof.render.html import render_html
from adprof.render.jsonout import load_report, report_to_json

__all__ = [
    "load_report",
    "render_halving",
    "render_html",
    "render_ratio_table",
    "render_report",
    "report_to_json",
]
