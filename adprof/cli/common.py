"""Pieces shared by the commands: option parsing, consoles, the measuring config, exit codes, output files."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from adprof import words
from adprof.analysis.classify import TRUST_CHOICES
from adprof.backends import KNOWN_BACKENDS
from adprof.guard import parse_bytes, pyproject_path
from adprof.measure import DEFAULT_BUDGET, DEFAULT_CALLS, DEFAULT_CAP, MeasureConfig
from adprof.measure.plan import UsageError, csv_list  # noqa: F401  (csv_list: the commands' lists)
from adprof.model import Report, Result
from adprof.options import RULES, depths_arg, parse_number  # noqa: F401  (depths_arg: the commands' --depths)
from adprof.options import arg as option_arg
from adprof.pipeline import check_names, default_jobs, environment, load_timeout, parse_backends  # noqa: F401  (re-exported: the commands' helpers)
from adprof.render.jsonout import json_safe  # noqa: F401  (re-exported: its home is the JSON renderer)
from adprof.report import fmt_growth
from adprof.util.files import (
    FINDING_FILE,
    OutputPathError,
    OwnedDir,
    check_output_path,
    named_paths,
    write_atomic,
    write_stream,
)

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
#: ``adprof guard``: no limit exceeded, but a time-decided reading too noisy to decide within the budget, after
#: the guard re-measured it (docs/guards.md); never a pathology's 1.
EXIT_UNDECIDED = 4


EXIT_SIGINT, EXIT_SIGTERM, EXIT_SIGHUP = 130, 143, 129
#: The signals that stop a run with a partial report (a hang-up is a stop, like SIGTERM).
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so that it stops a run exactly like Ctrl-C does."""

    def __init__(self, signal_name: str = "SIGTERM") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def exit_status_of(signal_name: str) -> int:
    """The shell's status for a run stopped by ``signal_name``: 128 + its number (130, 143, 129)."""
    return 128 + int(signal.Signals[signal_name]) if signal_name in signal.Signals.__members__ else EXIT_SIGINT


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP during a command (one instance, :data:`SIGNALS`).

    The first signal stops the measuring: it is raised in the main thread as a KeyboardInterrupt
    (:class:`Terminated` for SIGTERM/SIGHUP). Every later one is only remembered: a second Ctrl-C 50 ms
    after the first, or a SIGTERM while the partial report is written, must not cut the report short,
    nor land in the interpreter's teardown. Once the measuring is over (:meth:`defer`), signals are
    remembered and answered after the report: the command still exits 130/143/129."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.raising = True

    def reset(self) -> None:
        self.received, self.raising = None, True

    def defer(self) -> None:
        """The measuring is over: from now on a signal waits until the report is out."""
        self.raising = False

    def handler(self, signum: int, frame: Any) -> None:
        first = self.received is None
        if first:
            self.received = signal.Signals(signum).name
        if first and self.raising:
            self.raise_now()

    def raise_now(self) -> None:
        name = self.received or "SIGINT"
        raise KeyboardInterrupt() if name == "SIGINT" else Terminated(name)

    def poll(self) -> None:
        """Called while a pool of lanes collects results: a signal received but not acted upon (its
        KeyboardInterrupt swallowed where Python ignores exceptions, e.g. a weakref callback) is raised
        again, where the pool handles it."""
        if self.received is not None and self.raising:
            self.raise_now()


SIGNALS = StopSignals()


def positive_int_arg(value: str) -> int:
    """A positive int written in ASCII digits (no other bound: an option with a rule uses :func:`option_arg`)."""
    n = parse_number(value, int)
    if n is None or n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return n


#: Options whose values are never paths (names, choices, numbers): not read by :func:`run_inputs`.
NOT_PATHS = frozenset({"command", "backend", "profile", "mode", "metric", "trust", "name", "scheduler", "format"})


def output_dests(args: argparse.Namespace) -> set[str]:
    """The ``args`` attributes that are output paths (``json``, ``html``, ``plot``, ``markdown``, ``junit``,
    ``output``), and hunt's ``out``."""
    from adprof.render import FILE_RENDERERS

    options = [r.option for r in FILE_RENDERERS] + [option for option, _ in OTHER_OUTPUTS]
    return {o.lstrip("-").replace("-", "_") for o in options} | {"output", "out"}


def run_inputs(args: argparse.Namespace) -> list[str]:
    """Every existing file that any argument of the run names (:func:`adprof.util.files.named_paths`): the
    targets' chain files, ``--baseline``, the reports of ``report``/``compare``, a ``--cmd`` program and every
    path in its words (``--data=PATH``, ``sh -c '...'``), and the ``pyproject.toml`` a guard reads. No output
    may overwrite one."""
    skip = output_dests(args) | NOT_PATHS
    words: list[str] = []
    for dest, value in vars(args).items():
        if dest in skip or dest.startswith("_"):
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, str):
                words.append(v.split("::", 1)[0] if dest in ("targets", "target") else v)
    pyproject = pyproject_path() if getattr(args, "command", None) == "guard" else None
    if pyproject is not None:  # the limits of [tool.adprof.guard]
        words.append(str(pyproject))
    return named_paths(words)


def owned_dirs(args: argparse.Namespace) -> list[OwnedDir]:
    """Directories the run fills with files of its own: ``hunt --out`` (its findings, ``NNNN_*.py``)."""
    out = getattr(args, "out", None)
    if getattr(args, "command", None) == "hunt" and isinstance(out, str) and out:
        return [OwnedDir("--out", out, FINDING_FILE, "findings (NNNN_<engine>_<mode>.py)")]
    return []


#: Outputs that ``-`` may send to stdout (one of them at a time; the tables then go to stderr).
STDOUT_OUTPUTS = ("--json", "--markdown")
#: Output options of some commands beside the report's renderers: (option, suffixes).
OTHER_OUTPUTS: tuple[tuple[str, tuple[str, ...] | None], ...] = (("--junit", (".xml",)),)


def check_outputs(args: argparse.Namespace, outputs: Sequence[tuple[str, str | None, Sequence[str] | None]]) -> None:
    """Every output path of a command checked before measuring (:func:`adprof.util.files.check_output_path`):
    ``(option, path, suffixes)``; raises :class:`UsageError` (one line, exit 2)."""
    inputs = run_inputs(args)
    owned = owned_dirs(args)
    others = [(option, path) for option, path, _ in outputs]
    to_stdout = [option for option, path, _ in outputs if path == "-" and option in STDOUT_OUTPUTS]
    if len(to_stdout) > 1:
        raise UsageError(f"{' and '.join(to_stdout)} both ask for stdout ('-'): give one of them a file")
    for option, path, suffixes in outputs:
        try:
            check_output_path(
                option, path, suffixes, inputs=inputs, others=others, owned=owned, stdout_ok=option in STDOUT_OUTPUTS
            )
        except OutputPathError as exc:
            raise UsageError(exc.message) from None


def output_paths(args: argparse.Namespace) -> list[tuple[str, str | None, Sequence[str] | None]]:
    """``(option, path, suffixes)`` of every output option ``args`` has (the renderers' and :data:`OTHER_OUTPUTS`)."""
    from adprof.render import FILE_RENDERERS

    outputs = [(r.option, getattr(args, r.option.lstrip("-"), None), r.suffixes) for r in FILE_RENDERERS]
    return outputs + [(option, getattr(args, option.lstrip("-"), None), suffixes) for option, suffixes in OTHER_OUTPUTS]


def stdout_output(args: argparse.Namespace) -> bool:
    """An output goes to stdout (``--json -``, ``--markdown -``): the tables then go to stderr."""
    return any(getattr(args, option.lstrip("-"), None) == "-" for option in STDOUT_OUTPUTS)


def check_options(args: argparse.Namespace) -> None:
    """Every option that can be checked without loading anything (output paths, empty lists): bad input
    is one line and exit 2 before any measuring."""
    check_outputs(args, output_paths(args))
    check_names({option: getattr(args, option, None) for option in ("backend", "mode", "profile")})


def bytes_arg(text: str) -> float:
    """``--max-leak``: bytes as ``4096``, ``1 MB`` or ``512 KiB`` (argparse turns the ValueError into exit 2)."""
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_arg(value: str) -> float:
    """A positive finite number written in ASCII (no other bound: an option with a rule uses :func:`option_arg`)."""
    x = parse_number(value, float)
    if x is None or not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return x


#: ``--tolerance``: the rule of :data:`adprof.options.RULES`.
tolerance_arg = option_arg("tolerance")


class _CapGiven(argparse.Action):
    """``--cap``: the value, and that it was given (a chain's own ``cap=`` applies only without it)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.cap_given = True


#: The smallest ``--cap``: a phase is not timed finer than a millisecond (a smaller cap would stop every
#: series at its first depth and say nothing); the rule of every entry point.
MIN_CAP = RULES["cap"].low
cap_arg = option_arg("cap")


def add_common_options(p: argparse.ArgumentParser, cap: float = DEFAULT_CAP, budget: float = DEFAULT_BUDGET) -> None:
    """The options of every measuring command; ``cap`` and ``budget``: the command's defaults (its help says them)."""
    p.add_argument(
        "--backend",
        default="engine",
        help=f"comma-separated backends, or all: every installed one (known: {', '.join(KNOWN_BACKENDS)}; "
        "default engine)",
    )
    p.add_argument(
        "--cap",
        type=cap_arg,
        default=cap,
        action=_CapGiven,
        help=f"seconds per phase; a series stops past it, or when the next point is predicted "
        f"to pass it; a phase running 4x longer is killed (default {cap:g})",
    )
    add_budget_option(p, budget, "the whole run, shared by all series")
    p.add_argument(
        "--calls",
        type=option_arg("calls"),
        default=DEFAULT_CALLS,
        help=f"eager mode: forward+backward calls per depth (default {DEFAULT_CALLS})",
    )
    p.add_argument(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="measure memory too (saved-for-backward bytes, the peak, bytes retained per eager call), outside the "
        "timed regions; default: on for the backends where it is cheap (docs/memory.md)",
    )
    add_jobs_option(p, "parallel worker processes (default: min(2, cores))")
    p.add_argument(
        "--json", metavar="PATH|-", help="write the report as JSON (- for stdout; the tables then go to stderr)"
    )
    add_markdown_option(p)
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="all evidence of every series, tracebacks on errors, more detail on stderr",
    )
    p.add_argument("--no-color", action="store_true", help="no colors")
    p.add_argument(
        "--trust",
        choices=TRUST_CHOICES,
        default=None,
        help="when a deterministic metric reads healthy but wall time confidently grows (the metric may be "
        "blind to the work), decide on this one (default: neither; the verdict is inconclusive)",
    )


def add_budget_option(p: argparse.ArgumentParser, default: float, what: str) -> None:
    """``--budget SECONDS``: the wall time of ``what`` (the whole run, the whole hunt), ``default`` when not given."""
    p.add_argument(
        "--budget",
        type=option_arg("budget"),
        default=default,
        help=f"seconds of wall time for {what} (default {default:g})",
    )


def add_jobs_option(p: argparse.ArgumentParser, help: str) -> None:
    """``--jobs N``: worker processes at once (default: :func:`adprof.pipeline.default_jobs`, ``min(2, cores)``)."""
    p.add_argument("--jobs", type=option_arg("jobs"), default=default_jobs(), help=help)


def add_markdown_option(p: argparse.ArgumentParser, what: str = "the summary") -> None:
    """``--markdown PATH|-``: a compact GitHub-flavoured table for a CI step summary or a pull-request comment."""
    p.add_argument(
        "--markdown",
        metavar="PATH|-",
        help=f"write {what} as a GitHub Markdown table, for a CI step summary or a pull-request comment "
        '(- for stdout: append it with >> "$GITHUB_STEP_SUMMARY")',
    )


def add_cmd_options(p: argparse.ArgumentParser) -> None:
    """The ``--cmd`` options (probe any program; see adprof/cli/cmd.py): one place for every command."""
    g = p.add_argument_group("probing a program (--cmd)")
    g.add_argument(
        "--cmd",
        metavar="'PROG ARGS {depth}'",
        default=None,
        help="measure a program instead of a chain file: one process per point, {depth} replaced "
        "(and {calls}); it reports by printing JSON lines (docs/native.md)",
    )
    g.add_argument("--name", default=None, help="the chain name of a --cmd series (default: the program's file name)")
    g.add_argument(
        "--metric",
        choices=("time", "instructions"),
        default="time",
        help="--cmd: seconds as reported (default), or instruction counts under valgrind --tool=callgrind",
    )
    g.add_argument(
        "--phase",
        action="append",
        default=[],
        metavar="PHASE=PATTERN",
        help="--metric instructions: count only inside functions matching PATTERN as PHASE (callgrind "
        "--toggle-collect), e.g. transform='*phase_transform*'; repeatable (default: the whole process "
        "minus a run at depth 0)",
    )
    if not any(a.dest == "max_depth" for a in p._actions):
        g.add_argument(
            "--max-depth",
            type=option_arg("max_depth"),
            default=None,
            help="deepest depth of the schedule (a chain file: instead of its declared depths' deepest). Without "
            "it, a series that time decides goes from 256 as deep as the cap and the budget allow while its verdict "
            "is open",
        )


def consoles(args: argparse.Namespace) -> tuple[Console, Console]:
    """(report console, stderr console). With ``--json -`` (or ``--markdown -``) the report goes to stderr."""
    from adprof.render.console import SafeConsole  # escapes the control characters of users' strings

    # --no-color: plain text, no style either (FORCE_COLOR=1 would otherwise still print bold and italic codes)
    kw: dict[str, Any] = {"no_color": True, "color_system": None} if args.no_color else {}
    err = SafeConsole(stderr=True, highlight=False, **kw)
    out = err if stdout_output(args) else SafeConsole(highlight=False, **kw)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, 150)  # piped: wide enough for the summary table
    return out, err


def deadline_of(args: argparse.Namespace) -> float | None:
    """The run's absolute end (``time.monotonic()``): its start plus ``--budget``."""
    started = getattr(args, "started", None)
    return None if started is None else started + args.budget


def measure_config(args: argparse.Namespace, **kw: Any) -> MeasureConfig:
    if args.calls < 2:
        raise UsageError("--calls must be at least 2 (call 0 and one warm call)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    kw.setdefault("jobs", args.jobs)
    kw.setdefault("cap_given", bool(getattr(args, "cap_given", False)))
    kw.setdefault("memory", getattr(args, "memory", None))
    return MeasureConfig(cap=args.cap, budget=args.budget, calls=args.calls, started=args.started, **kw)


def backends_arg(value: str) -> list[str]:
    """``--backend``: a comma-separated list of backends, or ``all`` (every installed one but ``cmd``)."""
    return parse_backends(value)


def exit_code(report: Report) -> int:
    """1 if some series is a finding (a pathology, an error, a runaway, a point killed at its timeout), else 0."""
    return EXIT_FINDING if any(r.verdict.is_finding for r in report.results) else EXIT_OK


def report_errors(report: Report, err: Console) -> None:
    """One line on stderr per failing or killed chain (deduplicated over profiles and modes)."""
    seen: dict[tuple[str, str], list[str]] = {}
    names = [r.series.chain for r in report.results]
    for r in report.results:
        s = r.series
        msg = s.error or (words.killed_text(s.killed) if s.killed is not None else None)
        if msg:
            chain = s.chain
            if s.file and names.count(chain) > 1 and len({x.series.file for x in report.results}) > 1:
                chain = f"{Path(s.file).name}::{chain}"
            seen.setdefault((chain, msg), []).append(f"{s.backend}/{s.profile or '-'} {s.mode}")
    for (chain, msg), where in seen.items():
        err.print(f"adprof: chain {chain}: {msg} [{', '.join(where)}]", markup=False, highlight=False, soft_wrap=True)


def write_outputs(report: Report, args: argparse.Namespace, err: Console, skip: Sequence[str] = ()) -> bool:
    """Write the file outputs asked for (``--json``, ``--html``, ``--plot``, ``--markdown``: one renderer each,
    :data:`adprof.render.FILE_RENDERERS`; not those in ``skip``, which the command writes itself); False (after
    one line on stderr each) if one failed."""
    from adprof.render import FILE_RENDERERS  # rich/HTML only when writing

    ok = True
    args.outputs_written = True
    for renderer in FILE_RENDERERS:
        option = renderer.option
        path = getattr(args, option.lstrip("-"), None)
        if not path or option in skip:
            continue
        try:
            text = renderer.render(report, path)
            if text is not None and path == "-" and renderer.stdout_ok:
                write_stream(sys.stdout, text)
            elif text is not None:
                write_atomic(path, text)  # a reader (or a second run) never sees it half written
        except ImportError as exc:  # matplotlib missing: the report is still fine
            err.print(f"adprof: cannot write {option} {path}: {exc}", markup=False)
        except (OSError, ValueError) as exc:
            ok = False
            why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            err.print(f"adprof: error: {option} {path}: cannot write it ({why})", markup=False, highlight=False)
    return ok


def write_texts(outputs: Sequence[tuple[str, str | None, Callable[[], str]]], err: Console) -> bool:
    """Write ``(option, path, text)`` outputs a command renders itself (``-``: stdout); False (after one line
    on stderr each) when one could not be written."""
    ok = True
    for option, path, text in outputs:
        if not path:
            continue
        try:
            if path == "-":
                write_stream(sys.stdout, text())
            else:
                write_atomic(path, text())  # a reader (or a second run) never sees it half written
        except OSError as exc:
            ok = False
            err.print(f"adprof: error: {option} {path}: cannot write it ({exc.strerror or exc})", markup=False)
    return ok


def finish(report: Report, args: argparse.Namespace, err: Console, interrupted: str | None, code: int) -> int:
    """The exit status after the report is out: 130/143/129 when interrupted (one line says so; a signal
    that came while the report was written counts too), 2 when an output could not be written, else
    ``code``."""
    if interrupted is None and SIGNALS.received is not None:
        secs = report.elapsed_seconds or 0.0
        err.print(
            f"adprof: stopped by {SIGNALS.received} after the run ({secs:.1f} s): the report is whole", markup=False
        )
        return exit_status_of(SIGNALS.received)
    if interrupted is not None:
        secs = report.elapsed_seconds or 0.0
        err.print(f"adprof: interrupted by {interrupted} after {secs:.1f} s (partial report)", markup=False)
        return exit_status_of(interrupted)
    return code


def verdict_line(r: Result) -> str:
    v = r.verdict
    growth = fmt_growth(r)
    line = f"verdict: {v.kind}" + (f" ({growth})" if growth != "-" else "")
    if v.predicted_base is not None:
        line += f"; predicted base {v.predicted_base:.2f}"
    return line
