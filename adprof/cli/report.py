"""``adprof report``: render saved JSON reports again without measuring; several are merged into one
(the shards of a ``--shard K/N`` run back in the plan's order)."""

from __future__ import annotations

import argparse
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
from adprof.util.files import InputFileError, read_json, same_file


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="render saved --json reports again (merged when several), without measuring",
        description="Load one or more reports written by --json and render them as check does: the summary "
        "on the console, and --html/--plot/--json files. Several reports are merged into one: the "
        "shards of one run (check --shard K/N) back in the order of the whole run, other reports one after "
        "another. Exit 0: all linear; 1: a pathology or a failing chain in the report; 2: a file that "
        "cannot be read, or of another JSON schema version, a report given twice, or a shard of the run missing "
        "(unless --allow-missing).",
    )
    p.add_argument("files", nargs="+", metavar="REPORT.json", help="reports written by adprof check --json")
    p.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    p.add_argument("--plot", metavar="PATH", help="save cost-vs-depth plots (png/svg/pdf; needs matplotlib)")
    p.add_argument("--json", metavar="PATH|-", help="write the (merged) report as JSON (- for stdout)")
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="merge the shards given even when some of the run's shards are missing (a note names them); without "
        "it a missing shard is an error (exit 2): a merged report covers the whole run",
    )
    add_markdown_option(p)
    p.add_argument("--verbose", "-v", action="store_true", help="all evidence of every series")
    p.add_argument("--no-color", action="store_true", help="no colors")
    p.set_defaults(run=cmd_report)


def read_report(path: str) -> Report:
    """One saved report, read by the one reader of user files (:func:`adprof.util.files.read_json`: a regular
    file, at most :data:`~adprof.util.files.MAX_INPUT_BYTES`, the report's schema); :class:`UsageError` (one
    line) when it cannot be read or is not one this adprof reads."""
    from adprof.render.jsonout import load_report

    try:
        return read_json(path, load_report)
    except InputFileError as exc:
        raise UsageError(exc.message) from None


def _given_twice(paths: Sequence[str]) -> None:
    """One line (UsageError) when two of ``paths`` are one file (the same path twice, a link to it): its
    results would be counted twice."""
    seen: list[tuple[str, Path]] = []
    for p in paths:
        here = Path(p)
        for q, there in seen:
            if same_file(here, there):
                same = "twice" if p == q else f"twice ({q} and {p} are one file)"
                raise UsageError(f"{p}: the same report is given {same}: give each report once")
        seen.append((p, here))


def load_reports(paths: Sequence[str], allow_missing: bool = False) -> Report:
    """The reports at ``paths``, merged into one (``allow_missing``: shards may be missing, a note says which;
    otherwise a missing shard is one line, exit 2)."""
    from adprof.report import MergeError, merge_reports

    _given_twice(paths)
    reports = [read_report(p) for p in paths]
    try:
        report = merge_reports(reports, allow_missing=allow_missing)
    except MergeError as exc:
        raise UsageError(f"cannot merge {', '.join(paths)}: {exc}") from None
    if len(paths) > 1:
        report.notes.append(f"merged from {len(paths)} reports: {', '.join(paths)}")
    return report


def cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof report``: load, merge, render; returns the exit status."""
    out, err = consoles(args)
    report = load_reports(args.files, allow_missing=args.allow_missing)
    from adprof.render import render_report

    written = write_outputs(report, args, err)
    render_report(report, out, verbose=args.verbose)
    report_errors(report, err)
    return exit_code(report) if written else EXIT_BAD_INPUT


__all__ = ["add_parser", "cmd_report", "load_reports", "read_report"]
