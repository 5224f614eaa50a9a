"""``adprof ratio``: the per-layer ratio table of one chain (unit steps until the cap, seed 001's table)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.common import (
    add_common_options,
    consoles,
    depths_arg,
    exit_code,
    measure_config,
    report_errors,
    verdict_line,
    write_outputs,
)
from adprof.cli.run import measure_single, one_chain


def add_parser(sub: argparse._SubParsersAction) -> None:
    ratio = sub.add_parser(
        "ratio",
        help="the per-layer ratio table of one chain (unit steps until the cap)",
        description="Unit depth steps 1, 2, 3, ... until a phase passes the cap: value ops, transform "
        "time, per-layer ratio, derivative ops, drop time and counters (seed 001's table).",
    )
    ratio.add_argument("target", metavar="FILE::CHAIN")
    ratio.add_argument("--mode", default="traced", help="traced (default), eager, or compile where the backend has it")
    ratio.add_argument("--profile", default="v08")
    ratio.add_argument("--depths", type=depths_arg, default=None, help="explicit depths instead of 1, 2, 3, ...")
    ratio.add_argument("--max-depth", type=int, default=40, help="deepest unit step (default 40)")
    add_common_options(ratio)
    ratio.set_defaults(run=cmd_ratio)


def cmd_ratio(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof ratio``: unit steps until the cap, seed 001's table."""
    out, err = consoles(args)
    cfg = measure_config(
        args,
        depths=args.depths,
        unit_steps=args.depths is None,
        max_depth=None if args.depths else args.max_depth,
        jobs=1,
    )
    meta = one_chain(args.target, max(10.0, cfg.timeout * 2))
    report = measure_single(args, argv, cfg, meta, err)
    from adprof.render import render_ratio_table

    r = report.results[0]
    render_ratio_table(r.series, out)
    out.print(verdict_line(r), markup=False, highlight=False)
    if r.verdict.cause:
        out.print(f"cause: {r.verdict.cause}", markup=False, highlight=False)
    report_errors(report, err)
    write_outputs(report, args, err)
    return exit_code(report)
