"""``adprof report``: render saved JSON reports again without measuring; several are merged into one
(the shards of a ``--shard K/N`` run back in the plan's order)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from adprof.cli.common import (
    EXIT_BAD_INPUT,
    UsageError,
    add_markdown_option,
    consoles,
    exit_code,
    report_errors,
    write_outputs,
)
from adprof.model import Report


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="render saved --json reports again (merged when several), without measuring",
        description="Load one or more reports written by --json and render them as check does: the summary "
        "on the console, and --html/--plot/--json files. Several reports are merged into one: the "
        "shards of one run (check --shard K/N) back in the order of the whole run, other reports one after "
        "another. Exit 0: all linear; 1: a pathology or a failing chain in the report; 2: a file that "
        "cannot be read, or of another JSON schema version.",
    )
    p.add_argument("files", nargs="+", metavar="REPORT.json", help="reports written by adprof check --json")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--plot", metavar="PATH", help="save cost-vs-depth plots (png/svg/pdf; needs matplotlib)")
    p.add_argument("--json", metavar="PATH|-", help="write the (merged) report as JSON (- for stdout)")
    add_markdown_option(p)
    p.add_argument("--verbose", "-v", action="store_true", help="all evidence of every series")
    p.add_argument("--no-color", action="store_true", help="no colors")
    p.set_defaults(run=cmd_report)


def read_report(path: str) -> Report:
    """One saved report; :class:`UsageError` (one line) when it cannot be read or is not one this adprof reads."""
    from adprof.render.jsonout import SchemaError, load_report

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path}: not a JSON report ({exc})") from None
    except RecursionError:  # nested deeper than Python's parser goes: no report is
        raise UsageError(f"{path}: not a JSON report (nested too deeply)") from None
    try:
        return load_report(data)
    except SchemaError as exc:
        raise UsageError(f"{path}: {exc}") from None


def load_reports(paths: Sequence[str]) -> Report:
    """The reports at ``paths``, merged into one."""
    from adprof.report import MergeError, merge_reports

    reports = [read_report(p) for p in paths]
    try:
        report = merge_reports(reports)
    except MergeError as exc:
        raise UsageError(f"cannot merge {', '.join(paths)}: {exc}") from None
    if len(paths) > 1:
        report.notes.append(f"merged from {len(paths)} reports: {', '.join(paths)}")
    return report


def cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof report``: load, merge, render; returns the exit status."""
    out, err = consoles(args)
    report = load_reports(args.files)
    from adprof.render import render_report

    written = write_outputs(report, args, err)
    render_report(report, out, verbose=args.verbose)
    report_errors(report, err)
    return exit_code(report) if written else EXIT_BAD_INPUT


__all__ = ["add_parser", "cmd_report", "load_reports", "read_report"]
