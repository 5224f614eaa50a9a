"""Pieces shared by the commands: option parsing, consoles, the measuring config, exit codes, output files."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from adprof import model
from adprof.backends import KNOWN_BACKENDS, check_backend
from adprof.measure import DEFAULT_BUDGET, DEFAULT_CALLS, DEFAULT_CAP, MeasureConfig
from adprof.model import Report, Result
from adprof.report import fmt_growth

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def depths_arg(value: str) -> tuple[int, ...]:
    try:
        ds = tuple(sorted({int(v) for v in csv_list(value)}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"depths must be positive integers, e.g. 1,2,4,8 (got {value!r})") from None
    if not ds or ds[0] < 1:
        raise argparse.ArgumentTypeError(f"depths must be positive integers, e.g. 1,2,4,8 (got {value!r})")
    return ds


def positive_arg(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return x


def add_common_options(p: argparse.ArgumentParser, cap: float = DEFAULT_CAP) -> None:
    p.add_argument(
        "--backend",
        default="engine",
        help=f"comma-separated backends (known: {', '.join(KNOWN_BACKENDS)}; default engine)",
    )
    p.add_argument(
        "--cap",
        type=positive_arg,
        default=cap,
        help=f"seconds per phase; a series stops past it, or when the next point is predicted "
        f"to pass it; a phase running 4x longer is killed (default {cap:g})",
    )
    p.add_argument(
        "--budget",
        type=positive_arg,
        default=DEFAULT_BUDGET,
        help=f"seconds of wall time for the whole run, shared by all series (default {DEFAULT_BUDGET:g})",
    )
    p.add_argument(
        "--calls",
        type=int,
        default=DEFAULT_CALLS,
        help=f"eager mode: forward+backward calls per depth (default {DEFAULT_CALLS})",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="parallel worker processes (default: min(2, cores))",
    )
    p.add_argument(
        "--json", metavar="PATH|-", help="write the report as JSON (- for stdout; the tables then go to stderr)"
    )
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="all evidence of every series, tracebacks on errors, more detail on stderr",
    )
    p.add_argument("--no-color", action="store_true", help="no colors")


def add_cmd_options(p: argparse.ArgumentParser) -> None:
    """The ``--cmd`` options (probe any program; see adprof/cli/cmd.py): one place for every command."""
    g = p.add_argument_group("probing a program (--cmd)")
    g.add_argument(
        "--cmd",
        metavar="'PROG ARGS {depth}'",
        default=None,
        help="measure a program instead of a chain file: one process per point, {depth} replaced "
        "(and {calls}); it reports by printing JSON lines (README: Probing a native engine)",
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
        g.add_argument("--max-depth", type=int, default=None, help="--cmd: deepest depth of the schedule (256)")


def consoles(args: argparse.Namespace) -> tuple[Console, Console]:
    """(report console, stderr console). With ``--json -`` the report goes to stderr."""
    kw: dict[str, Any] = {"no_color": True} if args.no_color else {}
    err = Console(stderr=True, highlight=False, **kw)
    out = err if args.json == "-" else Console(highlight=False, **kw)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, 150)  # piped: wide enough for the summary table
    return out, err


def measure_config(args: argparse.Namespace, **kw: Any) -> MeasureConfig:
    if args.calls < 2:
        raise UsageError("--calls must be at least 2 (call 0 and one warm call)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    kw.setdefault("jobs", args.jobs)
    from adprof.analysis.classify import predicted_growth

    kw.setdefault("predictor", predicted_growth)
    return MeasureConfig(cap=args.cap, budget=args.budget, calls=args.calls, started=args.started, **kw)


def backends_arg(value: str) -> list[str]:
    names = csv_list(value) or ["engine"]
    for n in names:
        check_backend(n)
    return names


def environment(cfg: MeasureConfig, argv: Sequence[str]) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "argv": ["adprof", *argv],
        "cap_seconds": cfg.cap,
        "timeout_seconds": cfg.timeout,
        "budget_seconds": cfg.budget,
        "jobs": cfg.jobs,
        "eager_calls": cfg.calls,
        "counter_budget": cfg.counter_budget,
        "depths": list(cfg.depths) if cfg.depths else None,
    }


def json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    return x


def exit_code(report: Report) -> int:
    """0 if no pathology and no error, else 1."""
    bad = set(model.PATHOLOGIES) | {model.ERROR}
    return EXIT_FINDING if any(r.verdict.kind in bad for r in report.results) else EXIT_OK


def report_errors(report: Report, err: Console) -> None:
    """One line on stderr per failing chain (deduplicated over profiles and modes)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for r in report.results:
        s = r.series
        if s.error:
            seen.setdefault((s.chain, s.error), []).append(f"{s.backend}/{s.profile or '-'} {s.mode}")
    for (chain, msg), where in seen.items():
        err.print(f"adprof: chain {chain}: {msg} [{', '.join(where)}]", markup=False, highlight=False, soft_wrap=True)


def write_outputs(report: Report, args: argparse.Namespace, err: Console) -> None:
    from adprof.render import render_html, report_to_json  # rich/HTML only when writing

    if args.json:
        text = json.dumps(json_safe(report_to_json(report)), indent=2)
        if args.json == "-":
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if getattr(args, "html", None):
        Path(args.html).write_text(render_html(report), encoding="utf-8")
    if getattr(args, "plot", None):
        try:
            from adprof.render.plot import plot_report

            plot_report(report, args.plot)
        except Exception as exc:  # matplotlib missing or a bad extension: the report is still fine
            err.print(f"adprof: cannot write the plot {args.plot}: {exc}", markup=False)


def verdict_line(r: Result) -> str:
    v = r.verdict
    growth = fmt_growth(r)
    line = f"verdict: {v.kind}" + (f" ({growth})" if growth != "-" else "")
    if v.predicted_base is not None:
        line += f"; predicted base {v.predicted_base:.2f}"
    return line
