"""Loading the targets, planning the series (chain x backend x profile x mode), measuring them with
a progress display, and the report of the run."""

from __future__ import annotations

import argparse
import hashlib
import os
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from adprof.backends import BACKEND_PROFILES
from adprof.cli.common import SIGNALS, UsageError, backends_arg
from adprof.measure import MeasureConfig, Measured, SeriesSpec
from adprof.measure.executor import Executor
from adprof.measure.plan import backend_modes, load_targets, select
from adprof.model import Report, Series, Shard
from adprof.pipeline import (
    Interrupted,
    Watch,
    decide,
    environment,
    protocol_notes,  # noqa: F401  (re-exported: the --cmd notes of a report)
    run,
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
    verbose = bool(getattr(args, "verbose", False))
    with SeriesProgress(err, len(specs), lanes, err.is_terminal, verbose) as prog:
        watch = Watch(
            status=prog.status,
            on_series=prog.done,
            on_structures=prog.structures,
            poll=SIGNALS.poll,
            measured=SIGNALS.defer,  # measured: a signal from now on waits until the report is written
        )
        try:
            report = run(
                specs,
                cfg,
                unmeasured=unmeasured,
                notes=notes,
                environment=environment(cfg, argv),
                trust=getattr(args, "trust", None),
                executor=executor,
                watch=watch,
            )
        except Interrupted as stop:
            assert stop.report is not None
            return stop.report, stop.signal_name
    return report, None


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
