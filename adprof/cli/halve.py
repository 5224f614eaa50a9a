"""``adprof halve``: cost at depth d, d/2, d/4 and the halving ratios (seed 000's check)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from adprof.cli.cmd import measure_cmd, uses_cmd
from adprof.cli.common import UsageError, consoles, deadline_of, measure_config, option_arg
from adprof.cli.run import add_one_chain_parser, measure_single, one_chain, show_one_result
from adprof.measure.config import LOAD_TIMEOUT


def _own(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--depth", type=option_arg("depth"), default=None, help="deepest depth d (default: the chain's largest)"
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_one_chain_parser(
        sub,
        "halve",
        cmd_halve,
        mode="eager",
        own=_own,
        cap=10.0,
        help="cost at depth d, d/2, d/4 and the halving ratios (seed 000's check)",
        description="Time one chain at depth d, d/2 and d/4. A halving ratio above 3 (time cut below 1/3 "
        "by halving the depth) means a superlinear cost of graph size, not arithmetic.",
    )


def cmd_halve(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof halve``: depth d, d/2, d/4 and the halving reading (seed 000)."""
    out, err = consoles(args)
    on_cmd = uses_cmd(args, [args.target] if args.target else [])
    load_s = min(LOAD_TIMEOUT, max(10.0, args.cap * 8), args.budget)
    meta = {} if on_cmd else one_chain(args.target, load_s, deadline_of(args))
    d = args.depth if args.depth is not None else max(meta.get("depths") or [8])
    if d < 4:
        raise UsageError(f"--depth must be at least 4 (got {d})")
    # d/8 too: four depths give the growth fit its minimum; the table shows d, d/2, d/4
    depths = tuple(sorted({max(1, round(d / 8)), max(1, round(d / 4)), max(1, round(d / 2)), d}))
    cfg = measure_config(args, depths=depths, jobs=1, structure=False)
    report = measure_cmd(args, argv, cfg, err, "eager") if on_cmd else measure_single(args, argv, cfg, meta, err)
    from adprof.render.console import render_halving_result

    return show_one_result(report, args, out, err, lambda r: render_halving_result(r, out))
