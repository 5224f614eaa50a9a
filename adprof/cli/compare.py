"""``adprof compare BASE.json NEW.json``: two saved reports, series by series (docs/compare.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FINDING,
    EXIT_OK,
    add_markdown_option,
    consoles,
    tolerance_arg,
    write_texts,
)
from adprof.cli.report import read_report
from adprof.comparison import DEFAULT_TOLERANCE, compare_reports


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two saved --json reports series by series: regressed, improved, unchanged, new, gone",
        description="Pair the series of two reports written by --json (by file, chain, backend, profile and "
        "mode; what is left by fewer of them, where that is unambiguous) and classify each: regressed (a worse "
        "verdict, or a base or exponent above the old interval's top by more than --tolerance), improved, "
        "unchanged, new or gone; show the versions each was measured with. Exit 0: nothing regressed; 1: a "
        "series regressed; 2: a file that is not a report this adprof reads.",
    )
    p.add_argument("files", nargs=2, metavar="REPORT.json", help="the base report, then the new one")
    p.add_argument(
        "--tolerance",
        type=tolerance_arg,
        default=DEFAULT_TOLERANCE,
        help=f"slack on a base or exponent beyond the old interval before it counts (default {DEFAULT_TOLERANCE:g})",
    )
    p.add_argument(
        "--exact", action="store_true", help="pair series on the whole key only (no pairing across files or profiles)"
    )
    p.add_argument("--html", metavar="PATH", help="write the comparison as a self-contained HTML page")
    p.add_argument("--json", metavar="PATH|-", help="write the comparison as JSON (- for stdout)")
    add_markdown_option(p, "the comparison")
    p.add_argument("--verbose", "-v", action="store_true", help="tracebacks on errors")
    p.add_argument("--no-color", action="store_true", help="no colors")
    p.set_defaults(run=cmd_compare)


def cmd_compare(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof compare``: read both reports, compare, render; exit 1 when a series regressed."""
    args.outputs_written = True  # an interrupt writes no empty report in the comparison's place
    out, err = consoles(args)
    base_path, new_path = args.files
    base, new = read_report(base_path), read_report(new_path)
    comparison = compare_reports(base, new, args.tolerance, exact=args.exact, names=(base_path, new_path))
    from adprof.render.console import render_comparison
    from adprof.render.html import comparison_html
    from adprof.render.jsonout import comparison_text
    from adprof.render.markdown import comparison_markdown

    written = write_texts(
        [
            ("--json", args.json, lambda: comparison_text(comparison)),
            ("--html", args.html, lambda: comparison_html(comparison)),
            ("--markdown", args.markdown, lambda: comparison_markdown(comparison)),
        ],
        err,
    )
    render_comparison(comparison, out)
    if not written:
        return EXIT_BAD_INPUT
    return EXIT_FINDING if comparison.regressed else EXIT_OK


__all__ = ["add_parser", "cmd_compare"]
