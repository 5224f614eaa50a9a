"""``adprof flame``: sample a looped probe with py-spy (the command itself is :mod:`adprof.flame.command`)."""

from __future__ import annotations

import argparse
import sys

from adprof.cli.cmd import cmd_flame
from adprof.cli.common import UsageError, add_cmd_options, check_outputs
from adprof.flame.command import add_arguments, check_flame_options, run_flame
from adprof.flame.sampling import FlameError
from adprof.util.text import terminal_safe


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "flame",
        help="sample a chain's measured phases with py-spy: flame graph + where the time went",
        description="Measure points of FILE::CHAIN on --backend (engine, jax, torch, autograd, tinygrad) under "
        "py-spy, keep the samples taken inside the measured phases (each with its phase), write an interactive "
        "flame graph (or speedscope, a Chrome trace, collapsed stacks) and print where the time went; --vs D2 "
        "compares two depths. With --cmd, callgrind's instructions per function instead.",
    )
    add_arguments(p)
    add_cmd_options(p)
    p.set_defaults(flame=_flame)


def _flame(args: argparse.Namespace) -> int:
    """``--cmd``: callgrind instructions per function (adprof/cli/cmd.py); else py-spy on a chain."""
    try:
        if args.output:  # what the path is (an input, a directory, ...) before what its suffix says
            check_outputs(args, [("-o", args.output, None)])
        check_flame_options(args)  # the same ranges and the same format rule for both
    except UsageError as exc:
        print(f"adprof flame: error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    except FlameError as exc:
        print(terminal_safe(str(exc)), file=sys.stderr)
        return exc.code
    if args.cmd:
        return cmd_flame(args) if args.target is None else _fail("--cmd replaces FILE::CHAIN: give one or the other")
    return run_flame(args) if args.target else _fail("give FILE::CHAIN, or a program with --cmd 'PROG ARGS {depth}'")


def _fail(message: str) -> int:
    print(f"adprof flame: {message}", file=sys.stderr)
    return 2
