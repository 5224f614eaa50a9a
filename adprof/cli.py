"""The ``adprof`` command line: ``check``, ``ratio`` and ``halve``.

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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from adprof import __version__, model
from adprof import backends as backends_pkg
from adprof.backends import BACKEND_PROFILES, KNOWN_BACKENDS, UnknownBackendError, check_backend
from adprof.chain import KNOWN_MODES, ChainError, parse_target
from adprof.classify import classify
from adprof.measure import (
    DEFAULT_BUDGET,
    DEFAULT_CALLS,
    DEFAULT_CAP,
    LoadError,
    MeasureConfig,
    Measured,
    SeriesSpec,
    Worker,
    list_chains,
    measure_all,
)
from adprof.model import Report, Result, Series, Verdict
from adprof.structure import RISK_BASE, Structure

EXIT_OK, EXIT_FINDING, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
#: Fallback when ``adprof.backends`` has no ``BACKEND_MODES`` table.
_BACKEND_MODES: dict[str, tuple[str, ...]] = {
    "engine": ("traced", "eager"),
    "jax": ("traced", "compile", "eager"),
    "torch": ("traced", "eager"),
}


class UsageError(Exception):
    """Bad input: printed as one line, exit 2."""


# --------------------------------------------------------------------------- argument parsing


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _depths(value: str) -> tuple[int, ...]:
    try:
        ds = tuple(sorted({int(v) for v in _csv(value)}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"depths must be positive integers, e.g. 1,2,4,8 (got {value!r})") from None
    if not ds or ds[0] < 1:
        raise argparse.ArgumentTypeError(f"depths must be positive integers, e.g. 1,2,4,8 (got {value!r})")
    return ds


def _positive(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return x


def _common(p: argparse.ArgumentParser, cap: float = DEFAULT_CAP) -> None:
    p.add_argument(
        "--backend",
        default="engine",
        help=f"comma-separated backends (known: {', '.join(KNOWN_BACKENDS)}; default engine)",
    )
    p.add_argument(
        "--cap",
        type=_positive,
        default=cap,
        help=f"seconds per phase; a series stops past it, or when the next point is predicted "
        f"to pass it; a phase running 4x longer is killed (default {cap:g})",
    )
    p.add_argument(
        "--budget",
        type=_positive,
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
    p.add_argument("--verbose", "-v", action="store_true", help="tracebacks on errors, more detail on stderr")
    p.add_argument("--no-color", action="store_true", help="no colors")


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

    check = sub.add_parser(
        "check",
        help="classify every chain of a file (both profiles, both modes by default)",
        description="Probe each chain (each sweep variant) on each backend, profile and mode at growing "
        "depth, classify the growth and print a summary with evidence and remedies. "
        "Exit 0: all linear; 1: a pathology or a failing chain (the others are still "
        "reported); 2: bad target or option.",
    )
    check.add_argument("targets", nargs="+", metavar="FILE[::CHAIN]", help="chain file, optionally ::CHAIN")
    check.add_argument("--profile", default=None, help="comma-separated engine profiles (default: all, v08,fixed)")
    check.add_argument("--mode", default=None, help="comma-separated modes (default: the chain's, traced,eager)")
    check.add_argument(
        "--depths", type=_depths, default=None, help="explicit depths, e.g. 1,2,4,8 (default: adaptive schedule)"
    )
    check.add_argument("--plot", metavar="PATH", help="save cost-vs-depth plots (png/svg/pdf; needs matplotlib)")
    check.add_argument("--html", metavar="PATH", help="write a self-contained HTML report")
    check.add_argument("--no-structure", action="store_true", help="skip the structure (predicted base) probe")
    _common(check)

    ratio = sub.add_parser(
        "ratio",
        help="the per-layer ratio table of one chain (unit steps until the cap)",
        description="Unit depth steps 1, 2, 3, ... until a phase passes the cap: value ops, transform "
        "time, per-layer ratio, derivative ops, drop time and counters (seed 001's table).",
    )
    ratio.add_argument("target", metavar="FILE::CHAIN")
    ratio.add_argument("--mode", default="traced", help="traced (default), eager, or compile where the backend has it")
    ratio.add_argument("--profile", default="v08")
    ratio.add_argument("--depths", type=_depths, default=None, help="explicit depths instead of 1, 2, 3, ...")
    ratio.add_argument("--max-depth", type=int, default=40, help="deepest unit step (default 40)")
    _common(ratio)

    halve = sub.add_parser(
        "halve",
        help="cost at depth d, d/2, d/4 and the halving ratios (seed 000's check)",
        description="Time one chain at depth d, d/2 and d/4. A halving ratio above 3 (time cut below 1/3 "
        "by halving the depth) means a superlinear cost of graph size, not arithmetic.",
    )
    halve.add_argument("target", metavar="FILE::CHAIN")
    halve.add_argument("--mode", default="eager", help="eager (default), traced, or compile where the backend has it")
    halve.add_argument("--profile", default="v08")
    halve.add_argument("--depth", type=int, default=None, help="deepest depth d (default: the chain's largest)")
    _common(halve, cap=10.0)

    guard = sub.add_parser(
        "guard",
        help="CI guard: exit 1 when a chain's scaling exceeds its limits",
        description="Measure each chain at fixed depths (its declared ones, or --depths), classify on the "
        "engine's deterministic counters (wall time with a tolerance for jax/torch) and "
        "compare with the limits. Exit 0: every chain holds; 1: a limit is exceeded (a "
        "diff of limit vs measured is printed); 2: bad target or option. Limits default to "
        "[tool.adprof.guard] in pyproject.toml, else max base 1.1, max exponent 1.3.",
    )
    guard.add_argument("targets", nargs="+", metavar="FILE[::CHAIN]")
    guard.add_argument("--max-base", type=_positive, default=None, help="largest per-layer growth ratio")
    guard.add_argument("--max-exponent", type=_positive, default=None, help="largest power-law exponent")
    guard.add_argument("--profile", default=None, help="engine profiles (default: fixed)")
    guard.add_argument("--mode", default=None, help="modes (default: the chain's)")
    guard.add_argument("--depths", type=_depths, default=None, help="depths for every chain")
    _common(guard, cap=60.0)
    guard.set_defaults(budget=600.0)

    from adprof.flame import add_flame_parser

    add_flame_parser(sub)
    return parser


# --------------------------------------------------------------------------- helpers


def _consoles(args: argparse.Namespace) -> tuple[Console, Console]:
    """(report console, stderr console). With ``--json -`` the report goes to stderr."""
    kw: dict[str, Any] = {"no_color": True} if args.no_color else {}
    err = Console(stderr=True, highlight=False, **kw)
    out = err if args.json == "-" else Console(highlight=False, **kw)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = max(out.width, 150)  # piped: wide enough for the summary table
    return out, err


def _environment(cfg: MeasureConfig, argv: Sequence[str]) -> dict[str, Any]:
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


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    return x


def _load_targets(targets: Sequence[str], timeout: float) -> list[dict[str, Any]]:
    """Chain metadata for every target (loaded in a worker); raises LoadError/ChainError."""
    metas: list[dict[str, Any]] = []
    worker = Worker()
    try:
        for target in targets:
            path, name = parse_target(target)
            file = str(path)
            for m in list_chains(file, [name] if name else None, worker, timeout):
                m["file"] = file
                metas.append(m)
    finally:
        worker.close()
    return metas


def _select(value: str | None, known: Sequence[str], what: str, backend: str = "") -> list[str] | None:
    if value is None:
        return None
    chosen = _csv(value)
    bad = [v for v in chosen if v not in known]
    if bad or not chosen:
        where = f" for backend {backend}" if backend else ""
        raise UsageError(
            f"unknown {what} {', '.join(map(repr, bad)) or repr(value)}; known {what}s{where}: {', '.join(known)}"
        )
    return chosen


def backend_modes(backend: str) -> tuple[str, ...]:
    """Modes a backend can measure (``compile`` only where the backend has it)."""
    table = getattr(backends_pkg, "BACKEND_MODES", None) or _BACKEND_MODES
    return tuple(table.get(backend, KNOWN_MODES))


def _plan(
    metas: list[dict[str, Any]], backends: list[str], profiles: str | None, modes: str | None, notes: list[str]
) -> list[SeriesSpec]:
    every = tuple(dict.fromkeys(KNOWN_MODES + tuple(md for b in backends for md in backend_modes(b))))
    want_modes = _select(modes, every, "mode")
    with_profiles = [b for b in backends if any(p for p in BACKEND_PROFILES.get(b, (None,)))]
    if profiles is not None and not with_profiles:
        raise UsageError(f"--profile: backend {', '.join(backends)} has no profiles")
    specs: list[SeriesSpec] = []
    for backend in backends:
        known_profiles = [p for p in BACKEND_PROFILES.get(backend, (None,)) if p is not None]
        chosen_profiles: list[str | None] = list(known_profiles) or [None]
        if profiles is not None and known_profiles:
            chosen_profiles = list(_select(profiles, known_profiles, "profile", backend) or [])
        for m in metas:
            chain_modes = list(m.get("modes") or KNOWN_MODES)
            # the chain's modes; "compile" (not a chain mode) only when asked for explicitly
            wanted = want_modes if want_modes is not None else chain_modes
            use = [md for md in wanted if md in backend_modes(backend) and (md in chain_modes or md == "compile")]
            if not use:
                notes.append(f"{m['name']}: skipped on {backend} (declares modes {', '.join(chain_modes)})")
            depths = None if known_profiles else _time_only_depths(m.get("depths"))
            for prof in chosen_profiles:
                for md in use:
                    specs.append(
                        SeriesSpec(
                            file=m["file"],
                            chain=m["name"],
                            backend=backend,
                            profile=prof,
                            mode=md,
                            max_depth=max(m.get("depths") or [8]),
                            declared_reuse=m.get("reuse"),
                            params=dict(m.get("params") or {}),
                            depths=depths,
                        )
                    )
    return specs


#: Depths for backends measured on time only (no counters): doublings spanning 16x, since unit steps at
#: small depths are mostly noise there.
TIME_ONLY_DEPTHS = (8, 16, 32, 64, 128)


def _time_only_depths(declared: Sequence[int] | None) -> tuple[int, ...]:
    """The chain's own depths when they span >= 8x (deep chains), else :data:`TIME_ONLY_DEPTHS`."""
    if declared and min(declared) > 0 and max(declared) / min(declared) >= 8:
        return tuple(sorted(set(declared)))
    return TIME_ONLY_DEPTHS


def _verdict(series: Series, structure: dict[str, Any] | None) -> Verdict:
    pb = structure.get("predicted_base") if structure else None
    if not series.points and not series.error:
        v = Verdict(
            kind=model.INCONCLUSIVE,
            predicted_base=pb,
            evidence=[series.stopped or "no points measured"],
            cause="not measured",
            remedies=["rerun with a larger --budget or fewer chains"],
        )
    else:
        v = classify(series, predicted_base=pb)
    if structure and "chain" in structure:
        v.evidence.insert(0, Structure.from_dict(structure).summary())
    return v


def build_report(measured: Measured, cfg: MeasureConfig, argv: Sequence[str]) -> Report:
    """Classify every measured series into a Report."""
    results = [Result(series=s, verdict=_verdict(s, measured.structures.get(s.chain))) for s in measured.series]
    notes = list(measured.notes)
    risky = [
        (n, st["predicted_base"])
        for n, st in measured.structures.items()
        if st.get("at_risk") and st.get("predicted_base") is not None
    ]
    if risky:
        notes.insert(
            0,
            f"structure (before timing): at risk, predicted base > {RISK_BASE}: "
            + ", ".join(f"{n} ({b:.2f})" for n, b in risky),
        )
    stopped = [r.series for r in results if r.series.stopped and "budget" in r.series.stopped]
    if stopped:
        notes.append(
            f"{len(stopped)} series stopped by the budget: "
            + ", ".join(f"{s.chain} [{s.profile}, {s.mode}]" for s in stopped[:8])
            + (" ..." if len(stopped) > 8 else "")
        )
    return Report(
        results=results,
        environment=_environment(cfg, argv),
        budget_seconds=cfg.budget,
        elapsed_seconds=measured.elapsed,
        notes=notes,
    )


def exit_code(report: Report) -> int:
    """0 if no pathology and no error, else 1."""
    bad = set(model.PATHOLOGIES) | {model.ERROR}
    return EXIT_FINDING if any(r.verdict.kind in bad for r in report.results) else EXIT_OK


def _report_errors(report: Report, err: Console) -> None:
    """One line on stderr per failing chain (deduplicated over profiles and modes)."""
    seen: dict[tuple[str, str], list[str]] = {}
    for r in report.results:
        s = r.series
        if s.error:
            seen.setdefault((s.chain, s.error), []).append(f"{s.backend}/{s.profile or '-'} {s.mode}")
    for (chain, msg), where in seen.items():
        err.print(f"adprof: chain {chain}: {msg} [{', '.join(where)}]", markup=False, highlight=False, soft_wrap=True)


class _Progress:
    """Transient rich progress on stderr (TTY only): one bar over the series, with what each worker
    lane is measuring right now in its description."""

    def __init__(self, console: Console, total: int, lanes: int, enabled: bool) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=console,
            transient=True,
            disable=not enabled,
        )
        self.task = self.progress.add_task("starting", total=total)
        self.lanes = [""] * lanes

    def __enter__(self) -> _Progress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def status(self, lane: int, text: str) -> None:
        if lane < len(self.lanes):
            self.lanes[lane] = text
            self.progress.update(self.task, description=" | ".join(t for t in self.lanes if t))

    def done(self, series: Series) -> None:
        self.progress.advance(self.task)


def _run(specs: list[SeriesSpec], cfg: MeasureConfig, err: Console, verbose: bool) -> Measured:
    enabled = err.is_terminal
    lanes = max(1, min(cfg.jobs, len(specs)))
    with _Progress(err, len(specs), lanes, enabled) as prog:

        def on_series(s: Series) -> None:
            prog.done(s)
            if verbose and not enabled:
                tail = s.error or s.stopped or ""
                err.print(
                    f"measured {s.chain} [{s.backend}/{s.profile}, {s.mode}]: depths "
                    f"{[p.depth for p in s.points]} {tail}",
                    markup=False,
                    highlight=False,
                )

        def on_structures(structures: dict[str, dict[str, Any]]) -> None:
            if not (enabled or verbose):
                return
            for st in structures.values():
                if "chain" in st and (st.get("at_risk") or verbose):
                    prog.progress.console.print(
                        Structure.from_dict(st).summary(), markup=False, highlight=False, soft_wrap=True
                    )

        return measure_all(specs, cfg, status=prog.status, on_series=on_series, on_structures=on_structures)


def _write_outputs(report: Report, args: argparse.Namespace, err: Console) -> None:
    from adprof.render import render_html, report_to_json

    if args.json:
        text = json.dumps(_json_safe(report_to_json(report)), indent=2)
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


def _config(args: argparse.Namespace, **kw: Any) -> MeasureConfig:
    if args.calls < 2:
        raise UsageError("--calls must be at least 2 (call 0 and one warm call)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    kw.setdefault("jobs", args.jobs)
    return MeasureConfig(cap=args.cap, budget=args.budget, calls=args.calls, started=args.started, **kw)


def _backends(value: str) -> list[str]:
    names = _csv(value) or ["engine"]
    for n in names:
        check_backend(n)
    return names


# --------------------------------------------------------------------------- commands


def cmd_check(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof check``: measure, classify, render; returns the exit status."""
    out, err = _consoles(args)
    backends = _backends(args.backend)
    cfg = _config(args, depths=args.depths, structure=not args.no_structure)
    _plan([], backends, args.profile, args.mode, [])  # validate the options before loading anything
    metas = _load_targets(args.targets, max(10.0, cfg.timeout * 2))
    notes: list[str] = []
    specs = _plan(metas, backends, args.profile, args.mode, notes)
    if not specs:
        raise UsageError("nothing to measure: no chain supports the selected modes")
    measured = _run(specs, cfg, err, args.verbose)
    measured.notes[:0] = notes
    report = build_report(measured, cfg, argv)
    from adprof.render import render_report

    render_report(report, out)
    _report_errors(report, err)
    _write_outputs(report, args, err)
    return exit_code(report)


def _one_chain(target: str, timeout: float) -> dict[str, Any]:
    metas = _load_targets([target], timeout)
    if len(metas) != 1:
        names = ", ".join(m["name"] for m in metas)
        raise UsageError(f"this command takes one chain: FILE::CHAIN (chains in the file: {names})")
    return metas[0]


def _single(
    args: argparse.Namespace, argv: Sequence[str], cfg: MeasureConfig, meta: dict[str, Any], err: Console
) -> Report:
    backends = _backends(args.backend)
    _select(args.mode, backend_modes(backends[0]), "mode", backends[0])
    known = [p for p in BACKEND_PROFILES.get(backends[0], (None,)) if p]
    profile = _select(args.profile, known, "profile", backends[0]) if known else None
    spec = SeriesSpec(
        file=meta["file"],
        chain=meta["name"],
        backend=backends[0],
        profile=(profile or [None])[0],
        mode=args.mode,
        max_depth=max(meta.get("depths") or [8]),
        declared_reuse=meta.get("reuse"),
        params=dict(meta.get("params") or {}),
    )
    measured = _run([spec], cfg, err, args.verbose)
    return build_report(measured, cfg, argv)


def _verdict_line(r: Result) -> str:
    from adprof.render.console import fmt_growth

    v = r.verdict
    growth = fmt_growth(r)
    line = f"verdict: {v.kind}" + (f" ({growth})" if growth != "-" else "")
    if v.predicted_base is not None:
        line += f"; predicted base {v.predicted_base:.2f}"
    return line


def cmd_ratio(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof ratio``: unit steps until the cap, seed 001's table."""
    out, err = _consoles(args)
    cfg = _config(
        args,
        depths=args.depths,
        unit_steps=args.depths is None,
        max_depth=None if args.depths else args.max_depth,
        jobs=1,
    )
    meta = _one_chain(args.target, max(10.0, cfg.timeout * 2))
    report = _single(args, argv, cfg, meta, err)
    from adprof.render import render_ratio_table

    r = report.results[0]
    render_ratio_table(r.series, out)
    out.print(_verdict_line(r), markup=False, highlight=False)
    if r.verdict.cause:
        out.print(f"cause: {r.verdict.cause}", markup=False, highlight=False)
    _report_errors(report, err)
    _write_outputs(report, args, err)
    return exit_code(report)


def cmd_halve(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof halve``: depth d, d/2, d/4 and the halving reading (seed 000)."""
    out, err = _consoles(args)
    meta = _one_chain(args.target, max(10.0, args.cap * 8))
    d = args.depth or max(meta.get("depths") or [8])
    if d < 4:
        raise UsageError(f"--depth must be at least 4 (got {d})")
    # d/8 too: four depths give the growth fit its minimum; the table shows d, d/2, d/4
    depths = tuple(sorted({max(1, round(d / 8)), max(1, round(d / 4)), max(1, round(d / 2)), d}))
    cfg = _config(args, depths=depths, jobs=1, structure=False)
    report = _single(args, argv, cfg, meta, err)
    from adprof.render import render_halving

    r = report.results[0]
    s = r.series
    render_halving(s, out)
    if s.mode == "eager" and any("forward" in p.times for p in s.points):
        render_halving(s, out, phases=("forward",))
        deep = max((p for p in s.points if not p.extra.get("censored")), key=lambda p: p.depth, default=None)
        if deep is not None and "backward0" in deep.times and "backward" in deep.times:
            cache = deep.extra.get("cache", {})
            out.print(
                f"depth {deep.depth}: call 0 backward {deep.times['backward0'] * 1e3:.2f} ms, calls "
                f"1..{deep.extra.get('calls', 0) - 1} median {deep.times['backward'] * 1e3:.2f} ms "
                f"(cache hits {cache.get('hits', '-')}, misses {cache.get('misses', '-')}); forward "
                f"{deep.times.get('forward', 0) * 1e3:.2f} ms",
                markup=False,
                highlight=False,
            )
    if s.stopped:
        out.print(s.stopped, markup=False, highlight=False)
    out.print(_verdict_line(r), markup=False, highlight=False)
    _report_errors(report, err)
    _write_outputs(report, args, err)
    return exit_code(report)


def cmd_guard(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``adprof guard``: fixed depths, deterministic counters, limits; exit 1 when one is exceeded."""
    from adprof.guard import TIME_TOLERANCE, GuardLimits, GuardReport, check_result

    out, err = _consoles(args)
    limits = GuardLimits.from_pyproject()
    if args.max_base is not None:
        limits.max_base = args.max_base
    if args.max_exponent is not None:
        limits.max_exponent = args.max_exponent
    backends = _backends(args.backend)
    cfg = _config(args, structure=False)
    profiles = args.profile if args.profile is not None else ("fixed" if "engine" in backends else None)
    metas = _load_targets(args.targets, max(10.0, cfg.timeout * 2))
    notes: list[str] = []
    specs = _plan(metas, backends, profiles, args.mode, notes)
    by_name = {m["name"]: m for m in metas}
    for spec in specs:
        spec.depths = args.depths or tuple(by_name[spec.chain].get("depths") or ()) or None
    if not specs:
        raise UsageError("nothing to guard: no chain supports the selected modes")
    measured = _run(specs, cfg, err, args.verbose)
    report = build_report(measured, cfg, argv)
    guard = GuardReport(
        [check_result(r, limits, 0.0 if r.series.backend == "engine" else TIME_TOLERANCE) for r in report.results]
    )
    out.print(guard.text(), markup=False, highlight=False)
    held = sum(c.ok for c in guard.checks)
    out.print(
        f"adprof guard: {held} of {len(guard.checks)} held "
        f"(max base {limits.max_base:g}, max exponent {limits.max_exponent:g})",
        markup=False,
    )
    if args.json:
        _write_outputs(report, args, err)
    return 0 if guard.ok else 1


# --------------------------------------------------------------------------- entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns (and, via ``__main__``, exits with) the status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "flame":
        return args.func(args)
    cmd = {"check": cmd_check, "ratio": cmd_ratio, "halve": cmd_halve, "guard": cmd_guard}[args.command]
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


__all__ = ["build_parser", "build_report", "exit_code", "main"]
