"""``adprof ratio``: the per-layer ratio table of one chain (unit steps until the cap, seed 001's table)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.cmd import measure_cmd, uses_cmd
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    add_cmd_options,
    add_common_options,
    consoles,
    depths_arg,
    exit_code,
    finish,
    load_timeout,
    measure_config,
    option_arg,
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
    ratio.add_argument("target", nargs="?", metavar="FILE::CHAIN")
    ratio.add_argument("--mode", default="traced", help="traced (default), eager, or compile where the backend has it")
    ratio.add_argument("--profile", default="v08")
    ratio.add_argument("--depths", type=depths_arg, default=None, help="explicit depths instead of 1, 2, 3, ...")
    ratio.add_argument("--max-depth", type=option_arg("rate_depth"), default=40, help="deepest unit step (default 40)")
    add_common_options(ratio)
    add_cmd_options(ratio)
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
    if uses_cmd(args, [args.target] if args.target else []):
        report = measure_cmd(args, argv, cfg, err, default_mode="traced")
    else:
        report = measure_single(args, argv, cfg, one_chain(args.target, load_timeout(cfg), cfg.deadline), err)
    from adprof.render import render_ratio_table

    written = write_outputs(report, args, err)  # first: a renderer failure cannot lose the files
    r = report.results[0]
    render_ratio_table(r.series, out)
    out.print(verdict_line(r), markup=False, highlight=False)
    if r.verdict.cause:
        out.print(f"cause: {r.verdict.cause}", markup=False, highlight=False)
    report_errors(report, err)
    code = exit_code(report) if written else EXIT_BAD_INPUT
    return finish(report, args, err, getattr(args, "interrupted", None), code)
