"""``--cmd``: the commands (check, ratio, halve, guard, flame) on a program instead of a chain file.

The options are defined once (:func:`adprof.cli.common.add_cmd_options`); this module turns them
into one :class:`~adprof.measure.SeriesSpec` per mode (backend ``cmd``, profile None), measured by
the same series loop as a chain (:mod:`adprof.measure.cmd_points`), and runs ``adprof flame --cmd``
(callgrind's inclusive instructions per function, a table and a bar SVG).
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from adprof.backends.cmd import (
    METRICS,
    MODES,
    VALUE_KEY_EQ,
    CommandFailure,
    callgrind_profile,
    check_program,
    expand,
)
from adprof.backends.cmd.point import COUNT_TIMEOUT_FACTOR, check_counting
from adprof.cli.common import UsageError, check_outputs, csv_list
from adprof.measure import MeasureConfig, SeriesSpec
from adprof.measure.cmd_points import CommandSettings
from adprof.model import Report
from adprof.util.files import write_atomic
from adprof.util.text import terminal_safe

#: Deepest depth of a ``--cmd`` schedule unless ``--max-depth`` says otherwise (the cap stops sooner).
DEFAULT_CMD_MAX_DEPTH = 256
#: Phase names ``--phase`` accepts: the protocol's base names and adprof's.
PHASE_NAMES = ("transform", "drop", "compile", "lower", "forward", "backward", "record", "run")


def uses_cmd(args: argparse.Namespace, targets: Sequence[str] | None) -> bool:
    """True for a ``--cmd`` run; raises :class:`UsageError` when the target is missing or doubled."""
    if not getattr(args, "cmd", None):
        if getattr(args, "metric", "time") == "instructions" and getattr(args, "command", "check") != "check":
            raise UsageError(
                f"--metric instructions on a chain file: use adprof check ({args.command} counts --cmd programs only)"
            )
        if "cmd" in csv_list(getattr(args, "backend", "") or ""):
            raise UsageError("--backend cmd measures a program: give --cmd 'PROG ARGS {depth}'")
        if not targets:
            raise UsageError("give a chain file FILE[::CHAIN], or a program with --cmd 'PROG ARGS {depth}'")
        return False
    if targets:
        raise UsageError("--cmd replaces FILE[::CHAIN]: give one or the other")
    if set(csv_list(getattr(args, "backend", "") or "")) - {"engine", "cmd"}:  # engine: the option's default
        raise UsageError("--cmd runs on backend cmd only (drop --backend)")
    return True


def _phases(args: argparse.Namespace) -> dict[str, str]:
    phases: dict[str, str] = {}
    for item in args.phase or []:
        name, sep, pattern = item.partition("=")
        if not sep or not pattern or name not in PHASE_NAMES:
            raise UsageError(f"--phase takes PHASE=PATTERN with PHASE one of {', '.join(PHASE_NAMES)} (got {item!r})")
        phases[name] = pattern
    if phases and args.metric != "instructions":
        raise UsageError("--phase applies to --metric instructions only")
    return phases


def command_settings(args: argparse.Namespace) -> CommandSettings:
    """The checked ``--cmd`` options: the template runs, valgrind is there when needed."""
    if args.metric not in METRICS:
        raise UsageError(f"unknown metric {args.metric!r}; known: {', '.join(METRICS)}")
    try:
        argv = expand(args.cmd, 1)
        check_program(argv[0])
    except CommandFailure as exc:
        raise UsageError(exc.message) from None
    if args.metric == "instructions" and shutil.which("valgrind") is None:
        raise UsageError("--metric instructions needs valgrind (not found on PATH)")
    return CommandSettings(template=args.cmd, metric=args.metric, phases=_phases(args))


def cmd_name(args: argparse.Namespace) -> str:
    """``--name``, else the program's file name."""
    return args.name or Path(shlex.split(args.cmd)[0]).name


def cmd_modes(value: str | None, default: str = "traced") -> list[str]:
    modes = csv_list(value) if value else [default]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise UsageError(
            f"unknown mode {', '.join(map(repr, bad)) or repr(value)} for --cmd; known: {', '.join(MODES)}"
        )
    return modes


def cmd_specs(
    args: argparse.Namespace, depths: tuple[int, ...] | None = None, default_mode: str = "traced"
) -> list[SeriesSpec]:
    """One series per mode of the ``--cmd`` program (backend ``cmd``, profile None)."""
    settings = command_settings(args)
    given = getattr(args, "max_depth", None)
    max_depth = DEFAULT_CMD_MAX_DEPTH if given is None else given  # 0 is a bad value, not "the default"
    if max_depth < 1:
        raise UsageError(f"--max-depth must be at least 1 (got {max_depth})")
    modes = cmd_modes(args.mode, default_mode)
    if settings.metric == "instructions":
        check_instructions(args, settings, modes)
    return [
        SeriesSpec(
            file=args.cmd,
            chain=cmd_name(args),
            backend="cmd",
            profile=None,
            mode=mode,
            max_depth=max_depth,
            depths=depths,
            cmd=settings,
            deciding_metrics=("instructions",) if settings.metric == "instructions" else (),
            metric=settings.metric,
            deepen=given is None,  # the default deepest depth is a safety, not a stop (--max-depth is)
        )
        for mode in modes
    ]


def check_instructions(args: argparse.Namespace, settings: CommandSettings, modes: Sequence[str]) -> None:
    """``--metric instructions``: one callgrind run up front (the baseline at depth 0, or depth 1 with the
    ``--phase`` patterns), so that a program valgrind cannot run, or patterns that match nothing (a stripped
    binary), are one line and exit 2, never a series that falls back to time."""
    timeout = min(max(args.budget, 1.0), COUNT_TIMEOUT_FACTOR * 4 * args.cap)
    for mode in modes:
        try:
            check_counting(settings.template, mode, settings.phases or None, timeout=timeout, calls=args.calls)
        except CommandFailure as exc:
            raise UsageError(exc.message) from None


def measure_cmd(
    args: argparse.Namespace, argv: Sequence[str], cfg: MeasureConfig, err: Console, default_mode: str
) -> Report:
    """ratio/halve: the single ``--cmd`` series measured and reported."""
    from adprof.cli.run import run_specs

    specs = cmd_specs(args, default_mode=default_mode)[:1]
    report, _ = run_specs(specs, cfg, argv, args, err)
    return report


# --------------------------------------------------------------------------- adprof flame --cmd

#: CommandFailure kinds that are findings about the program (exit 1), not bad input.
PROGRAM_FAILURES = ("exit", "timeout", "flood")


def _flame_output(args: argparse.Namespace, name: str) -> Path:
    if args.format not in (None, "svg"):
        raise UsageError("adprof flame --cmd writes an SVG (--format svg)")
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
    out = args.output or f"flame-{safe}-{args.mode}-d{args.depth}.svg"
    check_outputs(args, [("-o", out, None)])
    return Path(out)


def cmd_flame(args: argparse.Namespace) -> int:
    """``adprof flame --cmd``: callgrind's inclusive instructions per function at ``--depth``."""
    from adprof.flame.instructions import highlight_share, render_bars_svg, render_table

    try:
        if args.depth < 1:
            raise UsageError(f"--depth must be >= 1, got {args.depth}")
        settings = command_settings(argparse.Namespace(**{**vars(args), "metric": "instructions"}))
        name = cmd_name(args)
        out = _flame_output(args, name)
        patterns = list(settings.phases.values())
        timeout = max(60.0, args.seconds * 20)  # --seconds checked by the flame command: finite, <= 1 h
        prof = callgrind_profile(settings.template, args.depth, patterns=patterns, timeout=timeout)
    except (UsageError, CommandFailure) as exc:
        print(f"adprof flame: {terminal_safe(getattr(exc, 'message', None) or str(exc))}", file=sys.stderr)
        # the program failing (a crash, a non-zero exit, a hang, a flood of output) is a finding about it; the rest
        # (the template, the options, a missing program) is bad input
        return 1 if getattr(exc, "kind", None) in PROGRAM_FAILURES else 2
    where = ", ".join(f"{k}={v!r}" for k, v in settings.phases.items()) or "the whole process"
    if patterns and not prof.total:
        print(f"adprof flame: no instructions inside functions matching {where}: check the pattern", file=sys.stderr)
        return 2
    title = f"adprof flame --cmd {name} depth {args.depth}: instructions inside {where}"
    rows = list(prof)
    # the share of one function: --focus's, else ValueKey::eq's where the program has it (no line where it has not)
    focus = getattr(args, "focus", None)
    label = focus or "ValueKey::eq"
    if focus is None and highlight_share(rows, prof.total, VALUE_KEY_EQ)[0] is not None:
        focus = VALUE_KEY_EQ
    kw = {"title": title, "highlight": focus, "top": args.top * 2}
    try:
        write_atomic(out, render_bars_svg(rows, prof.total, **kw))
    except OSError as exc:
        print(f"adprof flame: -o {out}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(terminal_safe(render_table(rows, prof.total, label=label, **kw)))
    print(f"\nwrote {out} (svg)")
    return 0


__all__ = ["cmd_flame", "cmd_specs", "command_settings", "measure_cmd", "uses_cmd"]
