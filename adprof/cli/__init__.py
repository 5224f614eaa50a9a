"""The ``adprof`` command line: ``check``, ``ratio``, ``halve``, ``guard``, ``flame``, ``report``, ``compare``,
and ``hunt``
(one module each).

Exit status (all subcommands):

* 0: every measured series is linear (or inconclusive): no pathology found;
* 1: a finding: some series is exponential/superlinear, or some chain failed (raised, returned a
  non-scalar or non-finite value, hung and was killed, crashed its worker). The other chains are
  still measured and reported; a failing chain shows as an ``error`` row with its one-line reason;
* 2: bad input: the target itself is unusable (missing file, not a .py file, syntax error, import
  error, no chains, unknown chain) or a bad option (unknown backend, profile or mode);
* 3: an internal error of adprof (rerun with ``--verbose`` for the traceback);
* 130 / 143 / 129: interrupted by SIGINT (Ctrl-C) / SIGTERM / SIGHUP: the partial report (and ``--json``)
  of what was measured is still printed, and every worker is killed with what it started.

Everything that runs user code runs in worker subprocesses with hard timeouts (``adprof.measure``).
The top layer: it may import every other layer, nothing imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from adprof.backends import UnknownBackendError
from adprof.chain import ChainError
from adprof.cli import check, compare, flame, guard, halve, hunt, ratio, report
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    SIGNALS,
    STOP_SIGNALS,
    UsageError,
    check_options,
    exit_code,
    exit_status_of,
    write_outputs,
)
from adprof.constants import __version__
from adprof.guard import GuardConfigError
from adprof.measure import LoadError
from adprof.util import procs
from adprof.util.text import terminal_safe


class _RaisingParser(argparse.ArgumentParser):
    """A parser whose errors raise :class:`UsageError` (one line) instead of exiting: the library's commands."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _epilog() -> str:
    """The exit statuses of this module's docstring (none under ``python -OO``, which drops docstrings)."""
    if not __doc__ or "Exit status" not in __doc__:
        return ""
    return __doc__.split("Exit status", 1)[1].join(["Exit status", ""]).split("Everything")[0]


def build_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The argparse parser of ``adprof`` (``parser_class``: of it and its subcommands' parsers)."""
    parser = parser_class(
        prog="adprof",
        description="Find autodiff cost pathologies: exponential transform blowup, superlinear "
        "per-backward cost, or neither, and what to do about it.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"adprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (check, ratio, halve, guard, flame, report, compare, hunt):
        command.add_parser(sub)
    return parser


def parse_command(argv: Sequence[str]) -> argparse.Namespace:
    """``adprof ARGV`` parsed as the command line parses it, with its options checked (output paths, lists);
    a bad option raises :class:`UsageError` (one line) instead of exiting. What :mod:`adprof.api` runs."""
    args = build_parser(_RaisingParser).parse_args(list(argv))
    if args.command is None or args.command == "flame":
        raise UsageError(f"not a command the library runs: {' '.join(argv)!r}")
    args.started = time.monotonic()
    check_options(args)
    return args


def _safe_streams() -> None:
    """stdout/stderr that cannot raise UnicodeEncodeError: under ``LANG=C`` a chain named ``café`` is
    printed as ``caf\\xe9``, not an internal error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a detached or closed stream
                pass


def _unraisable(hook: Any) -> Any:
    """sys.unraisablehook for a run: a stop signal's KeyboardInterrupt raised where Python cannot propagate it
    (a weakref callback, a __del__) is not printed as "Exception ignored ..."; the signal is remembered and
    acted upon by the lanes' poll. Anything else goes to ``hook``."""

    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt):
            return
        hook(info)

    return unraisable


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns (and, via ``__main__``, exits with) the status.

    SIGTERM and SIGHUP stop a run like Ctrl-C (partial report, workers killed, exit 143/129); only the
    first signal stops it, later ones never cut the report short (:class:`~adprof.cli.common.StopSignals`).
    Called as the program (``argv`` None), the signals are ignored once the answer is out, so the
    interpreter's teardown cannot turn exit 0/1/2 into a death by signal; called in-process, the
    previous handlers are restored."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    sigs = [getattr(signal, name) for name in STOP_SIGNALS]
    previous = {s: signal.getsignal(s) for s in sigs} if in_main_thread else {}
    SIGNALS.reset()
    if in_main_thread:
        for s in sigs:
            signal.signal(s, SIGNALS.handler)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(previous_hook)
    _safe_streams()
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt as exc:  # before or after the command's own handling
        return _interrupted(exc, None, None)
    finally:
        SIGNALS.defer()
        procs.sweep()  # a backstop: every process of this run is gone before the answer
        if in_main_thread and argv is None:
            for s in sigs:
                signal.signal(s, signal.SIG_IGN)
        elif in_main_thread:
            for s, handler in previous.items():
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if argv is not None:
            sys.unraisablehook = previous_hook


def _interrupted(exc: BaseException, args: argparse.Namespace | None, start: float | None) -> int:
    """One line, the (empty) report files when the command had not written them yet, 130/143/129."""
    name = getattr(exc, "signal_name", "SIGINT")
    secs = time.monotonic() - start if start is not None else 0.0
    wanted = args is not None and any(getattr(args, o, None) for o in ("json", "html", "markdown"))
    if args is not None and not getattr(args, "outputs_written", False) and wanted:
        try:
            from adprof.render.console import SafeConsole
            from adprof.report import build_report

            report = build_report([], {}, notes=[f"interrupted by {name} after {secs:.1f} s, before measuring"])
            write_outputs(report, args, SafeConsole(stderr=True, no_color=True))
        except (Exception, KeyboardInterrupt):  # the one line below still says what happened
            pass
    print(f"adprof: interrupted by {name} after {secs:.1f} s", file=sys.stderr)
    return exit_status_of(name)


def _main(argv: list[str]) -> int:
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
        check_options(args)
        return cmd(args, argv)
    except (LoadError, ChainError, UsageError, UnknownBackendError, GuardConfigError) as exc:
        msg = getattr(exc, "message", None) or str(exc)
        print(f"adprof: error: {terminal_safe(msg)}", file=sys.stderr)
        if args.verbose:
            traceback.print_exc()
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        return _interrupted(exc, args, start)
    except OSError as exc:
        if exc.errno not in _STREAM_ERRNOS:
            return _internal(exc, args.verbose)
        _silence_stdout()
        with contextlib.suppress(OSError):
            print(f"adprof: error: cannot write the output: {os.strerror(exc.errno)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        return _internal(exc, args.verbose)


#: Errors of the environment, never of adprof: a full disk, a closed pipe, a gone terminal (writing the report to
#: stdout; the files adprof writes give their own one line).
_STREAM_ERRNOS = frozenset({errno.ENOSPC, errno.EPIPE, errno.EIO})


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit does not fail once more."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def _internal(exc: BaseException, verbose: bool) -> int:
    """An internal error: one line (and the traceback with ``--verbose``), exit 3."""
    msg = str(exc).splitlines()[0] if str(exc) else ""
    print(
        f"adprof: internal error: {type(exc).__name__}: {terminal_safe(msg)} (rerun with --verbose)",
        file=sys.stderr,
    )
    if verbose:
        traceback.print_exception(exc)
    return EXIT_INTERNAL


__all__ = ["build_parser", "exit_code", "main", "parse_command"]
