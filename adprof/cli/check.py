"""``adprof check``: classify every chain of a file (both profiles, both modes by default)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from adprof.cli.cmd import cmd_specs, uses_cmd
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    UsageError,
    add_cmd_options,
    add_common_options,
    backends_arg,
    consoles,
    depths_arg,
    exit_code,
    finish,
    measure_config,
    report_errors,
    write_outputs,
)
from adprof.cli.instructions import apply_default_budget, budget_given, counted_specs
from adprof.cli.run import measuring_settings, run_specs, shard_specs
from adprof.cli.scale import add_scale_options, check_scale_options, open_executor
from adprof.measure import MeasureConfig, SeriesSpec
from adprof.measure.client import handing_over
from adprof.measure.plan import declared_budget
from adprof.model import Report
from adprof.pipeline import plan_check


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        "check",
        help="classify every chain of a file (both profiles, both modes by default)",
        description="Probe each chain (each sweep variant) on each backend, profile and mode at growing "
        "depth, classify the growth and print a summary with evidence and remedies. "
        "Exit 0: all linear; 1: a pathology or a failing chain (the others are still "
        "reported); 2: bad target or option.",
    )
    check.add_argument("targets", nargs="*", metavar="FILE[::CHAIN]", help="chain file, optionally ::CHAIN")
    check.add_argument("--profile", default=None, help="comma-separated engine profiles (default: all, v08,fixed)")
    check.add_argument("--mode", default=None, help="comma-separated modes (default: the chain's, traced,eager)")
    check.add_argument(
        "--depths", type=depths_arg, default=None, help="explicit depths, e.g. 1,2,4,8 (default: adaptive schedule)"
    )
    check.add_argument("--plot", metavar="PATH", help="save cost-vs-depth plots (png/svg/pdf; needs matplotlib)")
    check.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    check.add_argument("--no-structure", action="store_true", help="skip the structure (predicted base) probe")
    check.add_argument(
        "--compare",
        action="store_true",
        help="after the report, a table per chain of its class on every engine and mode measured, and whose growth "
        "it is: engine-specific (another engine stays linear) or in the program (every engine grows); with "
        "--backend all",
    )
    add_common_options(check)
    add_scale_options(check)
    add_cmd_options(check)
    check.set_defaults(run=cmd_check)


#: The most budget the modes' declarations give a run by themselves (an explicit --budget may give more).
MAX_DECLARED_BUDGET = 1800.0


def _declared_budget(args: argparse.Namespace, cfg: MeasureConfig, specs: list[SeriesSpec]) -> str | None:
    """Without ``--budget``: at least the budget the planned series' modes declare (torch compile: 100 s per
    series); the note that says so, or None when the default suffices."""
    declared = declared_budget(specs)
    if declared is None or declared[0] <= cfg.budget:
        return None
    seconds, which = declared
    cfg.budget = args.budget = min(seconds, MAX_DECLARED_BUDGET)
    return f"budget {cfg.budget:g} s ({which}: each point compiles for seconds; set --budget)"


def check_report(args: argparse.Namespace, argv: Sequence[str], err: Console) -> tuple[Report, str | None]:
    """Load, plan, measure (in supervised workers) and decide what ``args`` asks for: the report of ``adprof
    check`` before any rendering, and the signal that interrupted the measuring (None: it ran to the end).
    The command's options (``--cmd``, ``--metric instructions``, ``--shard``, ``--scheduler``) around the library's
    run path (:func:`adprof.pipeline.plan_check`, :func:`adprof.pipeline.run`), which :func:`adprof.check` calls
    too."""
    with handing_over():  # the worker that loads the targets measures the first lane
        return _check_report(args, argv, err)


def _check_report(args: argparse.Namespace, argv: Sequence[str], err: Console) -> tuple[Report, str | None]:
    check_scale_options(args)
    on_cmd = uses_cmd(args, args.targets)
    budget_note = apply_default_budget(args, argv)
    max_depth = None if on_cmd else getattr(args, "max_depth", None)  # --cmd: the series' own (cli.cmd)
    if max_depth is not None and max_depth < 1:
        raise UsageError(f"--max-depth must be at least 1 (got {max_depth})")
    cfg = measure_config(args, depths=args.depths, structure=not (args.no_structure or on_cmd), max_depth=max_depth)
    notes: list[str] = [budget_note] if budget_note else []
    if on_cmd:  # a program instead of a chain file
        specs = cmd_specs(args)
    else:
        counted = None
        if args.metric == "instructions":  # the peers' C++ phases, counted under callgrind

            def counted(specs: list[SeriesSpec], metas: list[dict[str, Any]]) -> list[SeriesSpec]:
                declared = {(m["file"], m["name"]): m.get("depths") for m in metas}
                deepest = {key: _deepest(m, max_depth) for m in metas for key in [(m["file"], m["name"])]}
                return counted_specs(specs, declared, explicit=bool(args.depths), deepest=deepest)

        specs = plan_check(args.targets, backends_arg(args.backend), args.profile, args.mode, cfg, notes, counted)
    if not specs:
        raise UsageError("nothing to measure: no series planned")
    if not on_cmd and not budget_given(argv):
        note = _declared_budget(args, cfg, specs)
        if note:
            notes.append(note)
    shard = None
    if args.shard is not None:
        specs, shard = shard_specs(specs, *args.shard, settings=measuring_settings(cfg, args.trust))
    with open_executor(args, cfg, tasks=len(specs)) as executor:
        report, interrupted = run_specs(
            specs, cfg, argv, args, err, executor=executor, notes=notes + list(getattr(executor, "notes", []))
        )
        if executor is not None:
            report.environment["executor"] = executor.describe()
    report.shard = shard
    bad = next((r.series for r in report.results if r.series.bad_input), None)
    if bad is not None:  # a program the mode cannot measure: bad input (one line, exit 2), not a finding
        raise UsageError(f"--cmd: {bad.error}")
    return report, interrupted


def _deepest(meta: dict[str, Any], max_depth: int | None) -> int | None:
    """The deepest depth a series of ``meta`` may measure: ``--max-depth``, else the chain's own when it
    declares depths (``max_depth=``/``depths=``), else None."""
    if max_depth is not None:
        return max_depth
    depths = meta.get("depths") or ()
    return max(depths) if meta.get("declared_depths") and depths else None


def cmd_check(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof check``: measure, classify, render; returns the exit status."""
    out, err = consoles(args)
    report, interrupted = check_report(args, argv, err)
    from adprof.render import render_report  # rich tables only when printing

    written = write_outputs(report, args, err)  # first: a renderer failure cannot lose the files
    if report.analysis_errors:  # the measurements are written; the analysis of some series failed
        err.print(
            f"adprof: internal error: the analysis failed on {len(report.analysis_errors)} series "
            f"({report.analysis_errors[0]}); their points are kept in the report",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return finish(report, args, err, interrupted, EXIT_INTERNAL)
    render_report(report, out, verbose=args.verbose)
    if args.compare:
        from adprof.hunt.attribute import compare
        from adprof.hunt.render import render_compare

        render_compare(compare(report), out)
    report_errors(report, err)
    return finish(report, args, err, interrupted, exit_code(report) if written else EXIT_BAD_INPUT)
