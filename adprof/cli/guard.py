"""``adprof guard``: CI guard, exit 1 when a chain's scaling exceeds its limits."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.cmd import cmd_specs, uses_cmd
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FINDING,
    UsageError,
    add_cmd_options,
    add_common_options,
    backends_arg,
    consoles,
    depths_arg,
    finish,
    load_timeout,
    measure_config,
    positive_arg,
    report_errors,
    write_outputs,
)
from adprof.cli.run import make_report, measure_specs
from adprof.guard import (
    DEFAULT_DEPTHS,
    GUARD_BUDGET,
    GUARD_CAP,
    GUARD_COUNTER_BUDGET,
    GuardLimits,
    guard_checks,
    guard_specs,
)
from adprof.measure.plan import load_targets


def add_parser(sub: argparse._SubParsersAction) -> None:
    guard = sub.add_parser(
        "guard",
        help="CI guard: exit 1 when a chain's scaling exceeds its limits",
        description="Measure each chain at fixed depths (its declared ones, or --depths), classify on the "
        "engine's deterministic counters (wall time with a tolerance for jax/torch) and "
        "compare with the limits. Exit 0: every chain holds; 1: a limit is exceeded (a "
        "diff of limit vs measured is printed); 2: bad target or option. Limits default to "
        "[tool.adprof.guard] in pyproject.toml, else max base 1.1, max exponent 1.3.",
    )
    guard.add_argument("targets", nargs="*", metavar="FILE[::CHAIN]")
    guard.add_argument("--max-base", type=positive_arg, default=None, help="largest per-layer growth ratio")
    guard.add_argument("--max-exponent", type=positive_arg, default=None, help="largest power-law exponent")
    guard.add_argument("--profile", default=None, help="engine profiles (default: fixed)")
    guard.add_argument("--mode", default=None, help="modes (default: the chain's)")
    guard.add_argument("--depths", type=depths_arg, default=None, help="depths for every chain")
    add_common_options(guard, cap=GUARD_CAP, budget=GUARD_BUDGET)
    add_cmd_options(guard)
    guard.set_defaults(run=cmd_guard)


def cmd_guard(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof guard``: fixed depths, deterministic counters, limits; exit 1 when one is exceeded."""
    out, err = consoles(args)
    limits = GuardLimits.from_pyproject()
    if args.max_base is not None:
        limits.max_base = args.max_base
    if args.max_exponent is not None:
        limits.max_exponent = args.max_exponent
    cfg = measure_config(args, structure=False, counter_budget=GUARD_COUNTER_BUDGET)
    notes: list[str] = []
    if uses_cmd(args, args.targets):  # a program: --depths, else the guard's default depths
        specs = cmd_specs(args, depths=args.depths or DEFAULT_DEPTHS)
        for spec in specs:  # a guard measures every one of its depths
            spec.required_depths = tuple(spec.depths or ())
    else:
        metas = load_targets(args.targets, load_timeout(cfg), cfg.deadline)
        specs = guard_specs(metas, backends_arg(args.backend), args.profile, args.mode, args.depths, notes)
    if not specs:
        raise UsageError("nothing to guard: no chain supports the selected modes")
    measured = measure_specs(specs, cfg, err, args.verbose)
    report = make_report(measured, cfg, argv, args.trust)
    written = write_outputs(report, args, err) if args.json else True
    guard = guard_checks(report, limits)
    out.print(guard.text(), markup=False, highlight=False)
    held = sum(c.ok for c in guard.checks)
    out.print(
        f"adprof guard: {held} of {len(guard.checks)} held "
        f"(max base {limits.max_base:g}, max exponent {limits.max_exponent:g})",
        markup=False,
    )
    report_errors(report, err)
    code = 0 if guard.ok else EXIT_FINDING
    return finish(report, args, err, measured.interrupted, code if written else EXIT_BAD_INPUT)
