"""``adprof ratio``: the per-layer ratio table of one chain (unit steps until the cap, seed 001's table)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.cmd import measure_cmd, uses_cmd
from adprof.cli.common import consoles, depths_arg, load_timeout, measure_config, option_arg
from adprof.cli.run import add_one_chain_parser, measure_single, one_chain, show_one_result


def _own(p: argparse.ArgumentParser) -> None:
    p.add_argument("--depths", type=depths_arg, default=None, help="explicit depths instead of 1, 2, 3, ...")
    p.add_argument("--max-depth", type=option_arg("rate_depth"), default=40, help="deepest unit step (default 40)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_one_chain_parser(
        sub,
        "ratio",
        cmd_ratio,
        mode="traced",
        own=_own,
        help="the per-layer ratio table of one chain (unit steps until the cap)",
        description="Unit depth steps 1, 2, 3, ... until a phase passes the cap: value ops, transform "
        "time, per-layer ratio, derivative ops, drop time and counters (seed 001's table).",
    )


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

    return show_one_result(report, args, out, err, lambda r: render_ratio_table(r.series, out), cause=True)
