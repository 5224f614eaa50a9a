"""``adprof flame``: sample a looped probe with py-spy (the command itself is :mod:`adprof.flame.command`)."""

from __future__ import annotations

import argparse

from adprof.flame.command import add_arguments, run_flame


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "flame",
        help="sample a looped probe with py-spy: flame graph + where the time went",
        description="Run the probe of FILE::CHAIN in a loop under py-spy, write a flame graph and "
        "print the share of samples in each engine phase (key equality, metadata "
        "registration/deregistration, derivative traces, trace rebuild, kernels).",
    )
    add_arguments(p)
    p.set_defaults(flame=run_flame)
