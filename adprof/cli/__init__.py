"""The ``adprof`` command line: ``check``, ``ratio``, ``halve``, ``guard`` and ``flame`` (one module each).

Exit status (all subcommands):

* 0: every measured series is linear (or inconclusive): no pathology found;
* 1: a finding: some series is exponential/superlinear, or some chain failed (raised, returned a
  non-scalar or non-finite value, hung and was killed, crashed its worker). The other chains are
  still measured and reported; a failing chain shows as an ``error`` row with its one-line reason;
* 2: bad input: the target itself is unusable (missing file, not a .py file, syntax error, import
  error, no chains, unknown chain) or a bad option (unknown backend, profile or mode);
* 3: an internal error of adprof (rerun with ``--verbose`` for the traceback);
* 130: interrupted.

Everything that runs user code runs in worker subprocesses with hard timeouts (``adprof.measure``).
The top layer: it may import every other layer, nothing imports it.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Sequence

from adprof.backends import UnknownBackendError
from adprof.chain import ChainError
from adprof.cli import check, flame, guard, halve, ratio
from adprof.cli.common import EXIT_BAD_INPUT, EXIT_INTERNAL, UsageError, exit_code
from adprof.constants import __version__
from adprof.measure import LoadError


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``adprof``."""
    parser = argparse.ArgumentParser(
        prog="adprof",
        description="Find autodiff cost pathologies: exponential transform blowup, superlinear "
        "per-backward cost, or neither, and what to do about it.",
        epilog=__doc__.split("Exit status", 1)[1].join(["Exit status", ""]).split("Everything")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"adprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (check, ratio, halve, guard, flame):
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns (and, via ``__main__``, exits with) the status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "flame":
        return args.flame(args)
    cmd = args.run
    start = args.started = time.monotonic()
    try:
        return cmd(args, argv)
    except (LoadError, ChainError, UsageError, UnknownBackendError) as exc:
        msg = getattr(exc, "message", None) or str(exc)
        print(f"adprof: error: {msg}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"adprof: interrupted after {time.monotonic() - start:.1f} s", file=sys.stderr)
        return 130
    except Exception as exc:
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"adprof: internal error: {type(exc).__name__}: {msg} (rerun with --verbose)", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_INTERNAL


__all__ = ["build_parser", "exit_code", "main"]
