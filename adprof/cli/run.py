"""Loading the targets, planning the series (chain x backend x profile x mode), measuring them with
a progress display, and the report of the run."""

from __future__ import annotations

import argparse
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console

from adprof.backends import BACKEND_PROFILES
from adprof.cli.common import (
    EXIT_BAD_INPUT,
    SIGNALS,
    UsageError,
    add_cmd_options,
    add_common_options,
    backends_arg,
    exit_code,
    finish,
    report_errors,
    verdict_line,
    write_outputs,
)
from adprof.measure import MeasureConfig, Measured, SeriesSpec
from adprof.measure.executor import Executor
from adprof.measure.plan import backend_modes, load_targets, select
from adprof.model import Report, Result, Series, Shard
from adprof.pipeline import (
    decide,
    environment,
    protocol_notes,  # noqa: F401  (re-exported: the --cmd notes of a report)
    run_shown,
)
from adprof.render.progress import SeriesProgress
from adprof.util.files import InputFileError, named_paths, read_input


def run_specs(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    argv: Sequence[str],
    args: argparse.Namespace,
    err: Console,
    *,
    executor: Executor | None = None,
    unmeasured: Sequence[Series] = (),
    notes: Sequence[str] = (),
) -> tuple[Report, str | None]:
    """:func:`adprof.pipeline.run` with a progress display on ``err`` (on local lanes, or on ``executor``, e.g. a
    Dask cluster): the report and the signal that interrupted the measuring (None: it ran to the end)."""
    lanes = max(1, min(cfg.jobs if executor is None else executor.lanes, len(specs)))
    progress = SeriesProgress(err, len(specs), lanes, err.is_terminal, bool(getattr(args, "verbose", False)))
    return run_shown(
        specs,
        cfg,
        progress,
        argv,
        poll=SIGNALS.poll,
        measured=SIGNALS.defer,  # measured: a signal from now on waits until the report is written
        unmeasured=unmeasured,
        notes=notes,
        trust=getattr(args, "trust", None),
        executor=executor,
    )


def _shard_key(spec: SeriesSpec) -> str:
    """What names a series across machines: its file (relative to here when inside), chain, backend,
    profile and mode."""
    file = spec.file
    if file and os.path.isabs(file) and os.path.abspath(file).startswith(os.getcwd() + os.sep):
        file = os.path.relpath(file)
    parts = (os.path.normpath(file) if file else "", spec.chain, spec.backend, spec.profile or "", spec.mode)
    return "\x1f".join(parts)


def file_digest(path: str, digests: dict[str, str]) -> str:
    """The sha256 of the file at ``path`` (read by the one reader of user files; ``""`` when it cannot be read),
    remembered in ``digests``: shards of one run measured files of the same contents."""
    if path not in digests:
        try:
            digests[path] = hashlib.sha256(read_input(path)).hexdigest()
        except InputFileError:
            digests[path] = ""
    return digests[path]


def _spec_settings(spec: SeriesSpec, digests: dict[str, str]) -> str:
    """How a series is measured, beside its name: shards measured otherwise are of another run. It holds the
    contents of the files measured (the chain file; the files a ``--cmd`` program's words name), as the Dask path
    sends them: shards of other file contents are of another run. A program's files count inside the working
    directory only (the project's, not the interpreter nor a system tool, which may differ between CI machines)."""
    cmd = spec.cmd
    how = (cmd.template, cmd.metric, sorted(cmd.phases.items())) if cmd is not None else None
    here = os.getcwd() + os.sep
    named = named_paths([cmd.template]) if cmd is not None else []
    files = ([spec.file] if spec.file else []) + [f for f in named if os.path.abspath(f).startswith(here)]
    contents = [file_digest(f, digests) for f in files if os.path.isfile(f)]
    return repr((spec.depths, spec.max_depth, spec.metric, spec.cap, how, contents))


def measuring_settings(cfg: MeasureConfig, trust: str | None) -> str:
    """The run's options that change what is measured or decided (not where, nor how many lanes): shards of one
    run share them, and ``adprof report`` refuses to merge shards that differ in them."""
    return repr((cfg.cap, cfg.budget, cfg.calls, cfg.counter_budget, tuple(cfg.depths or ()), trust, cfg.memory))


def shard_specs(
    specs: Sequence[SeriesSpec], index: int, count: int, settings: str = ""
) -> tuple[list[SeriesSpec], Shard]:
    """The series of shard ``index`` of ``count`` (a hash of each series' name, not its place in the list:
    every shard of one command picks the same split, whatever the order), and the :class:`Shard` record
    that lets ``adprof report`` put the shards back in the plan's order. Its ``plan`` fingerprints the series
    and how they are measured (``settings``: :func:`measuring_settings`, and each series' own settings)."""
    keys = [_shard_key(s) for s in specs]
    digests: dict[str, str] = {}
    measured = [settings, *(f"{k}\x1d{_spec_settings(s, digests)}" for k, s in zip(keys, specs, strict=True))]
    plan = hashlib.sha256("\x1e".join(measured).encode()).hexdigest()[:16]
    positions = [
        i for i, k in enumerate(keys) if int(hashlib.sha256(k.encode()).hexdigest()[:12], 16) % count == index - 1
    ]
    shard = Shard(index=index, count=count, planned=len(specs), positions=positions, plan=plan)
    return [specs[i] for i in positions], shard


def one_chain(target: str, timeout: float, hard_deadline: float | None = None) -> dict[str, Any]:
    metas = load_targets([target], timeout, hard_deadline)
    if len(metas) != 1:
        names = ", ".join(m["name"] for m in metas)
        raise UsageError(f"this command takes one chain: FILE::CHAIN (chains in the file: {names})")
    return metas[0]


def add_one_chain_parser(
    sub: argparse._SubParsersAction,
    name: str,
    run: Callable[[argparse.Namespace, Sequence[str]], int],
    *,
    mode: str,
    own: Callable[[argparse.ArgumentParser], None],
    cap: float | None = None,
    **texts: str,
) -> None:
    """The parser of a one-chain command (``halve``, ``ratio``): ``FILE::CHAIN``, ``--mode`` (default ``mode``),
    ``--profile``, the command's ``own`` arguments, then the common and ``--cmd`` options (``cap``: its default cap;
    ``texts``: ``help`` and ``description``)."""
    p = sub.add_parser(name, **texts)
    p.add_argument("target", nargs="?", metavar="FILE::CHAIN")
    others = ", ".join(m for m in ("traced", "eager") if m != mode)
    p.add_argument("--mode", default=mode, help=f"{mode} (default), {others}, or compile where the backend has it")
    p.add_argument("--profile", default="v08")
    own(p)
    add_common_options(p, **({} if cap is None else {"cap": cap}))
    add_cmd_options(p)
    p.set_defaults(run=run)


def show_one_result(
    report: Report,
    args: argparse.Namespace,
    out: Console,
    err: Console,
    render: Callable[[Result], None],
    cause: bool = False,
) -> int:
    """The end of a one-chain command: the files written first (a renderer failure cannot lose them), then
    ``render(result)`` and the verdict line on ``out`` (and its cause, with ``cause``), the errors on ``err``; the
    exit status."""
    written = write_outputs(report, args, err)
    r = report.results[0]
    render(r)
    out.print(verdict_line(r), markup=False, highlight=False)
    if cause and r.verdict.cause:
        out.print(f"cause: {r.verdict.cause}", markup=False, highlight=False)
    report_errors(report, err)
    code = exit_code(report) if written else EXIT_BAD_INPUT
    return finish(report, args, err, getattr(args, "interrupted", None), code)


def measure_single(
    args: argparse.Namespace, argv: Sequence[str], cfg: MeasureConfig, meta: dict[str, Any], err: Console
) -> Report:
    backends = backends_arg(args.backend)
    select(args.mode, backend_modes(backends[0]), "mode", backends[0])
    known = [p for p in BACKEND_PROFILES.get(backends[0], (None,)) if p]
    profile = select(args.profile, known, "profile", backends[0]) if known else None
    spec = SeriesSpec(
        file=meta["file"],
        chain=meta["name"],
        backend=backends[0],
        profile=(profile or [None])[0],
        mode=args.mode,
        max_depth=max(meta.get("depths") or [8]),
        declared_reuse=meta.get("reuse"),
        params=dict(meta.get("params") or {}),
        axis=meta.get("axis") or "layer",
        cap=meta.get("cap"),
        cost_phases=tuple(meta.get("cost_phases") or ()),
        repeats=meta.get("repeats"),
    )
    report, args.interrupted = run_specs([spec], cfg, argv, args, err)  # interrupted: the partial report, 130/143
    return report


def make_report(measured: Measured, cfg: MeasureConfig, argv: Sequence[str], trust: str | None = None) -> Report:
    """The report of a measured run with the command's record (:func:`adprof.pipeline.decide`)."""
    return decide(measured, cfg, environment=environment(cfg, argv), trust=trust)
