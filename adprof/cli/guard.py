"""``adprof guard``: CI guard, exit 1 when a chain's scaling exceeds its limits."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from adprof.cli.cmd import cmd_specs, uses_cmd
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FINDING,
    EXIT_OK,
    EXIT_UNDECIDED,
    SIGNALS,
    UsageError,
    add_cmd_options,
    add_common_options,
    bytes_arg,
    consoles,
    depths_arg,
    finish,
    json_safe,
    measure_config,
    option_arg,
    report_errors,
    tolerance_arg,
    write_outputs,
    write_texts,
)
from adprof.cli.report import read_report
from adprof.cli.run import run_specs
from adprof.comparison import DEFAULT_TOLERANCE
from adprof.guard import (
    DEFAULT_DEPTHS,
    GUARD_BUDGET,
    GUARD_CAP,
    GUARD_COUNTER_BUDGET,
    LIMIT_KEYS,
    GuardLimits,
    GuardReport,
    Outcome,
    choose_limits,
    guard_checks,
    plan_guard,
    settle_noisy,
)
from adprof.measure import MeasureConfig, SeriesSpec
from adprof.measure.client import handing_over
from adprof.model import Report, Series
from adprof.render.guard import guard_text, limits_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    guard = sub.add_parser(
        "guard",
        help="CI guard: exit 1 when a chain's scaling exceeds its limits",
        description="Measure each chain at fixed depths (its declared ones, or --depths), classify on the "
        "engine's deterministic counters (wall time with a tolerance for jax/torch) and "
        "compare with the limits. Exit 0: every chain holds; 1: a limit is exceeded (a "
        "diff of limit vs measured is printed); 2: bad target or option; 3: internal error; 4: undecided, "
        "no limit exceeded but a time-decided reading too noisy to decide within the budget (its interval "
        "spans the limit after the guard re-measured it with more repeats): the line gives the noise and "
        "the budget that would decide. Limits default to "
        "[tool.adprof.guard] in pyproject.toml, else max base 1.1, max exponent 1.3.",
    )
    guard.add_argument("targets", nargs="*", metavar="FILE[::CHAIN]")
    guard.add_argument("--max-base", type=option_arg("max_base"), default=None, help="largest per-layer growth ratio")
    guard.add_argument(
        "--max-exponent", type=option_arg("max_exponent"), default=None, help="largest power-law exponent"
    )
    guard.add_argument(
        "--max-memory-exponent",
        type=option_arg("max_memory_exponent"),
        default=None,
        help="largest power-law exponent of the memory in depth (saved-for-backward bytes; an exponential fails it); "
        "measures memory (--memory); a series whose memory is not measured fails",
    )
    guard.add_argument(
        "--max-leak",
        type=bytes_arg,
        default=None,
        metavar="BYTES",
        help="most bytes an eager call may leave held after gc.collect() (4096, '1 MB', '512 KiB'); measures "
        "memory (--memory); an eager series without retained bytes fails, a traced one is not checked",
    )
    guard.add_argument(
        "--absolute",
        action="store_true",
        default=None,
        help="hold the raw growth against depth; by default the limits hold a cost's excess over its program where "
        "the program itself grows superlinearly (docs/classification.md); a linear program reads the same either way",
    )
    guard.add_argument("--profile", default=None, help="engine profiles (default: fixed)")
    guard.add_argument("--mode", default=None, help="modes (default: the chain's)")
    guard.add_argument("--depths", type=depths_arg, default=None, help="depths for every chain")
    guard.add_argument(
        "--baseline",
        metavar="BASE.json",
        default=None,
        help="limits from a saved report (check or guard --json): per series, no worse verdict than the "
        "baseline's, and no base or exponent above its interval's top + --tolerance; a series it does not "
        "have gets the normal limits",
    )
    guard.add_argument(
        "--tolerance",
        type=tolerance_arg,
        default=DEFAULT_TOLERANCE,
        help=f"--baseline: slack on a base or exponent above the baseline's interval (default {DEFAULT_TOLERANCE:g})",
    )
    guard.add_argument(
        "--junit",
        metavar="PATH",
        default=None,
        help="write JUnit XML: one test case per series, failures with evidence",
    )
    add_common_options(guard, cap=GUARD_CAP, budget=GUARD_BUDGET)
    add_cmd_options(guard)
    guard.set_defaults(run=cmd_guard)


def guard_outcome(args: argparse.Namespace, argv: Sequence[str], err: Console) -> tuple[GuardReport, str, str | None]:
    """Load, measure at fixed depths, decide and check what ``args`` asks for: the guard's outcome (its report
    attached), the sentence of its limits, and the signal that interrupted the measuring (None: it ran to the
    end). The command's options (``--cmd``, ``--baseline FILE``) around the library's run path
    (:func:`adprof.guard.plan_guard`, :func:`adprof.pipeline.run`, :func:`adprof.guard.guard_checks`), which
    :func:`adprof.guard` calls too."""
    limits = GuardLimits(**choose_limits({key: getattr(args, key) for key in LIMIT_KEYS}))
    if limits.checks_memory and args.memory is None:  # a memory limit measures memory (--no-memory: it fails)
        args.memory = True
    baseline = read_report(args.baseline) if args.baseline else None  # a bad file: one line, before measuring
    cfg = measure_config(args, structure=False, counter_budget=GUARD_COUNTER_BUDGET)
    notes: list[str] = []
    unguarded: list[Series] = []  # chains that no series measures: each fails the guard
    with handing_over():  # the worker that loads the targets measures the first lane (as adprof.guard does)
        if uses_cmd(args, args.targets):  # a program: --depths, else the guard's default depths
            specs = cmd_specs(args, depths=args.depths or DEFAULT_DEPTHS)
            for spec in specs:  # a guard measures every one of its depths
                spec.required_depths = tuple(spec.depths or ())
        else:
            specs, unguarded = plan_guard(args.targets, args.backend, args.profile, args.mode, args.depths, cfg, notes)
        if not specs:
            raise UsageError("nothing to guard: no series planned")
        report, interrupted = run_specs(specs, cfg, argv, args, err, unmeasured=unguarded, notes=notes)
    bad = next((r.series for r in report.results if r.series.bad_input), None)
    if bad is not None:  # a program the mode cannot measure: bad input (one line, exit 2), not a failed guard
        raise UsageError(f"--cmd: {bad.error}")
    remeasured: dict[tuple[Any, ...], int] = {}
    if interrupted is None and baseline is None:  # a noisy time reading: re-measured with more repeats first
        stopped: list[str] = []

        def again(todo: list[SeriesSpec], config: MeasureConfig) -> Report:
            if stopped or SIGNALS.received is not None:
                return Report()
            SIGNALS.reset()  # measuring again: a signal stops it (and the report is still written)
            more, signal_name = run_specs(todo, config, argv, args, err)
            if signal_name is not None:
                stopped.append(signal_name)
            return more

        remeasured = settle_noisy(report, specs, cfg, limits, again)
        interrupted = stopped[0] if stopped else None
    guard = guard_checks(report, limits, baseline, args.tolerance, f"the baseline {args.baseline}", remeasured)
    named = f"baseline {args.baseline}" if baseline is not None else None
    return guard, limits_text(limits, named, args.tolerance), interrupted


def cmd_guard(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof guard``: fixed depths, deterministic counters, limits; exit 1 when one is exceeded."""
    out, err = consoles(args)
    guard, limit_text, interrupted = guard_outcome(args, argv, err)
    report = guard.report
    assert report is not None
    code = guard_exit_status(guard)
    # --json: the report with the guard's outcome (field "guard"); --markdown is the guard's table
    written = write_outputs(report, args, err, skip=("--json", "--markdown"))
    written = _write_guard_outputs(guard, report, code, args, err) and written
    out.print(guard_text(guard), markup=False, highlight=False)
    held = sum(c.ok for c in guard.checks)
    undecided = f", {len(guard.undecided)} undecided" if guard.undecided else ""
    out.print(
        f"adprof guard: {held} of {len(guard.checks)} held{undecided} ({limit_text})", markup=False, highlight=False
    )
    report_errors(report, err)
    return finish(report, args, err, interrupted, code if written else EXIT_BAD_INPUT)


def guard_exit_status(guard: GuardReport) -> int:
    """0: every series held; 1 (:data:`EXIT_FINDING`): a limit exceeded (a pathology, a hang, an error, a depth
    not measured); 4 (:data:`EXIT_UNDECIDED`): none of those, but a time reading too noisy to decide in the
    budget."""
    outcome = guard.outcome
    return {Outcome.HELD: EXIT_OK, Outcome.UNDECIDED: EXIT_UNDECIDED}.get(outcome, EXIT_FINDING)


def guard_json_text(guard: GuardReport, report: Report, code: int) -> str:
    """``adprof guard --json``: the report (docs/json.md) with the field ``guard``: the guard's outcome per series
    and its exit status (docs/guards.md)."""
    from adprof.render.guard import guard_to_json
    from adprof.render.jsonout import report_to_json

    data = {**report_to_json(report), "guard": {**guard_to_json(guard), "exit_status": code}}
    return json.dumps(json_safe(data), indent=2) + "\n"


def _write_guard_outputs(guard: GuardReport, report: Report, code: int, args: argparse.Namespace, err: Console) -> bool:
    """``--json``, ``--junit`` and ``--markdown`` (``-``: stdout); False (after one line each) when one cannot be
    written."""
    from adprof.render.guard import guard_markdown, junit_xml

    return write_texts(
        [
            ("--json", getattr(args, "json", None), lambda: guard_json_text(guard, report, code)),
            ("--junit", args.junit, lambda: junit_xml(guard)),
            ("--markdown", args.markdown, lambda: guard_markdown(guard)),
        ],
        err,
    )
