"""``adprof hunt``: search chain shapes on every installed engine for cost pathologies nobody wrote a chain for;
confirm, shrink, attribute and write each one out (docs/hunt.md)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from adprof.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FINDING,
    EXIT_OK,
    SIGNALS,
    UsageError,
    add_budget_option,
    add_jobs_option,
    check_outputs,
    consoles,
    exit_status_of,
    option_arg,
)
from adprof.cli.scale import check_scale_options, open_executor
from adprof.constants import __version__
from adprof.hunt.render import hunt_text, render_hunt, render_hunt_html, starved_reasons
from adprof.hunt.run import Hunt, HuntConfig
from adprof.hunt.targets import expand_backends, hunt_targets
from adprof.measure import MeasureConfig
from adprof.measure.pool import LanePool
from adprof.options import jobs_for_cores
from adprof.util import procs
from adprof.util.files import write_atomic, write_stream

DEFAULT_HUNT_BUDGET = 600.0
DEFAULT_OUT = "found"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hunt",
        help="search chain shapes on every installed engine for cost pathologies; confirm, shrink, attribute",
        description="Search generators of chain shapes (ops, reuse, skip connections, derivative order) at small "
        "depths on every selected engine and mode; confirm every candidate with the check path (fresh workers, the "
        "real schedule, more depths); shrink it; run it on every engine to say whose growth it is; write each "
        "finding as a chain file OUT/NNNN_<engine>_<mode>.py. Exit 0: nothing found; 1: findings; 2: bad option.",
    )
    p.add_argument("--backend", default="all", help="comma-separated backends, or all (default: every installed one)")
    p.add_argument("--profile", default=None, help="comma-separated engine profiles (default: v08,fixed)")
    p.add_argument("--mode", default=None, help="comma-separated modes (default: every mode of each backend)")
    add_budget_option(p, DEFAULT_HUNT_BUDGET, "the whole hunt")
    p.add_argument(
        "--seed", type=option_arg("seed"), default=0, help="the search's random seed (default 0): same seed, same path"
    )
    p.add_argument("--out", default=DEFAULT_OUT, help=f"directory of the found chain files (default {DEFAULT_OUT})")
    p.add_argument(
        "--tries",
        type=option_arg("tries"),
        default=None,
        help="stop the search after this many generators (default: its share of the budget)",
    )
    add_jobs_option(p, "parallel workers (default 2; at most the machine's cores)")
    p.add_argument("--json", metavar="PATH|-", help="write the hunt's report as JSON (- for stdout)")
    p.add_argument("--html", metavar="PATH", help="write the hunt's report as a self-contained HTML page")
    p.add_argument("--verbose", "-v", action="store_true", help="every event and rejected candidate on stderr")
    p.add_argument("--no-color", action="store_true", help="no colors")
    g = p.add_argument_group("scaling out (docs/scale-out.md)")
    g.add_argument(
        "--scheduler",
        metavar="ADDRESS|local[:N]",
        default=None,
        help="evaluate and check on a Dask cluster (tcp://host:8786, or local[:N]); needs pip install 'adprof[dask]'",
    )
    p.set_defaults(run=cmd_hunt)


class _Progress:
    """What the hunt is doing, on stderr: a transient status line on a terminal, plain lines otherwise (every
    search generation at most every few seconds, every candidate's outcome)."""

    def __init__(self, err: Console, started: float, budget: float, verbose: bool) -> None:
        self.err, self.started, self.budget, self.verbose = err, started, budget, verbose
        self.counts = {"tried": 0, "candidates": 0, "confirmed": 0, "shrunk": 0, "rejected": 0}
        self.last = 0.0
        self.status = err.status("hunt: starting") if err.is_terminal else None
        if self.status is not None:
            self.status.start()

    def line(self) -> str:
        c = self.counts
        secs = time.monotonic() - self.started
        return (
            f"hunt: {c['tried']} tried, {c['candidates']} candidates, {c['confirmed']} confirmed, "
            f"{c['shrunk']} shrunk, {c['rejected']} rejected ({secs:.0f} s of {self.budget:g} s)"
        )

    def say(self, text: str) -> None:
        if self.status is not None:
            self.status.console.print(text, markup=False, highlight=False, soft_wrap=True)
        else:
            self.err.print(text, markup=False, highlight=False, soft_wrap=True)

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        c = self.counts
        if event == "search":
            c["tried"], c["candidates"] = data["tried"], data["candidates"]
        elif event == "candidates" and c["tried"] > 0:
            c["candidates"] = data["count"]
            self.say(f"hunt: search done: {c['tried']} tried, {data['count']} candidates to confirm")
        elif event == "finding":
            c["confirmed"] += 1
            self.say(
                f"hunt: confirmed {data['id']:04d} {data['target']}: {data['verdict']} {data['figure']}"
                f" -> {data['file']}"
            )
        elif event == "unwritten":
            self.say(
                f"hunt: cannot write finding {data['id']:04d} to {data['file']} ({data['error']}); kept in the report"
            )
        elif event == "shrunk":
            c["shrunk"] += 1
            if self.verbose:
                self.say(f"hunt: shrunk {data['target']} from size {data['from']} to {data['to']}")
        elif event == "rejected":
            c["rejected"] += 1
            self.say(f"hunt: rejected a candidate on {data['target']}: the check path says {data['verdict']}")
        elif event == "merged" and self.verbose:
            self.say(f"hunt: {data['target']}: the program of finding {data['finding']:04d}")
        elif self.verbose and event in ("shrink", "check", "refined"):
            self.say(f"hunt: {event} {data}")
        now = time.monotonic()
        if self.status is not None:
            self.status.update(self.line())
        elif event == "search" and (now - self.last >= 10.0 or self.verbose):
            self.last = now
            self.say(self.line())

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def _check_out(out: str) -> Path:
    """``--out``, proved writable before anything is measured (a file made there and removed; not there yet: its
    parent writable, where the first finding makes it): a file, a dangling link, a missing parent or a read-only
    folder is one line and exit 2, not a lost hunt."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    if path.is_symlink() and not path.exists():
        raise UsageError(f"--out {out}: a symbolic link to nothing ({os.readlink(path)})")
    parent = path.resolve().parent
    if not path.exists() and not parent.is_dir():
        raise UsageError(f"--out {out}: its parent directory {parent} does not exist")
    if not path.exists():
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"--out {out}: cannot make it in {parent} (permission denied)")
        return path
    try:
        fd, probe = tempfile.mkstemp(prefix=".adprof-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    return path


def _check_files(args: argparse.Namespace) -> None:
    """``--json`` and ``--html``: the output check of every command (no input, no other output, no finding file
    of ``--out``)."""
    check_outputs(args, [("--json", args.json, None), ("--html", args.html, (".html", ".htm"))])


def environment(argv: Sequence[str]) -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (None, None, None)
    return {
        "adprof": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "argv": ["adprof", *argv],
        "load_average_start": load[0],
    }


def cmd_hunt(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof hunt``: search, confirm, shrink, attribute, write; returns the exit status."""
    out_console, err = consoles(args)
    check_scale_options(args)
    args.jobs, jobs_note = jobs_for_cores(args.jobs)  # workers beyond the cores only slow each other down
    if jobs_note is not None:
        err.print(f"adprof: {jobs_note}", markup=False, highlight=False)
    _check_files(args)
    out = _check_out(args.out)
    targets = hunt_targets(expand_backends(args.backend), args.profile, args.mode)
    started = args.started
    workdir = Path(procs.temp_dir("adprof-hunt-"))  # the guardian removes it if adprof is killed
    cfg = HuntConfig(
        targets=targets,
        seed=args.seed,
        budget=args.budget,
        out=out,
        workdir=workdir,
        jobs=args.jobs,
        started=started,
        max_tries=args.tries,
    )
    progress = _Progress(err, started, args.budget, args.verbose)
    mcfg = MeasureConfig(budget=args.budget, jobs=args.jobs, started=started)
    try:
        with open_executor(args, mcfg) as dask:
            executor = dask if dask is not None else LanePool(args.jobs)
            try:
                hunt = Hunt(cfg, executor, check_executor=dask, progress=progress, poll=SIGNALS.poll)
                report = hunt.run()
            finally:
                if dask is None:
                    executor.close()
    finally:
        SIGNALS.defer()
        progress.stop()
        procs.remove_dir(str(workdir))
    report.environment = environment(argv)
    if getattr(report, "interrupted", None) is None and SIGNALS.received is not None:
        report.interrupted = SIGNALS.received
    starved = starved_reasons(report) if report.interrupted is None else []
    if report.interrupted is None and report.stats.evaluations == 0 and not report.findings:
        _write(report, args, err)  # what the hunt saw (its notes say why an evaluation was lost) is kept
        if report.stats.drawn == 0:
            raise UsageError(
                f"--budget {args.budget:g} s is too small: the hunt evaluated no chain shape in it "
                "(give it a minute or more)"
            )
        if starved:
            raise UsageError(f"the hunt measured nothing: {'; '.join(starved)}")
        lost = f": {report.notes[-1]}" if report.notes else ""
        raise UsageError(f"the hunt drew {report.stats.drawn} chain shape(s) and none was measured{lost}")
    written = _write(report, args, err)
    render_hunt(report, out_console, verbose=args.verbose)
    if report.interrupted is not None:
        err.print(
            f"adprof: interrupted by {report.interrupted} after {report.elapsed_seconds:.1f} s (partial report)",
            markup=False,
        )
        return exit_status_of(report.interrupted)
    if starved:  # far fewer evaluations than the budget allowed: the hunt did not look where it was asked to
        err.print(f"adprof: error: the hunt measured too little: {'; '.join(starved)}", markup=False)
        return EXIT_BAD_INPUT
    unwritten = [f for f in report.findings if f.write_error]
    for f in unwritten:
        err.print(f"adprof: error: finding {f.id:04d}: cannot write {f.file} ({f.write_error})", markup=False)
    if not written or unwritten:
        return EXIT_BAD_INPUT
    return EXIT_FINDING if report.findings else EXIT_OK


def _write(report: Any, args: argparse.Namespace, err: Console) -> bool:
    ok = True
    args.outputs_written = True
    for option, path, render in (("--json", args.json, hunt_text), ("--html", args.html, render_hunt_html)):
        if not path:
            continue
        try:
            text = render(report)
            if path == "-":
                write_stream(sys.stdout, text)
            else:
                write_atomic(path, text)
        except (OSError, ValueError) as exc:
            ok = False
            why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            err.print(f"adprof: error: {option} {path}: cannot write it ({why})", markup=False)
    return ok


__all__ = ["add_parser", "cmd_hunt"]
