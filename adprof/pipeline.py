"""One run path below the command line: series specs measured in supervised workers, then decided into a Report.

``adprof check``, ``adprof guard``, the pytest fixture (:func:`adprof.guard.guard_targets`), the API
(:mod:`adprof.api`) and hunt's confirmation (:func:`adprof.hunt.checks.check_targets`) all call :func:`run`. The
analysis hooks the measuring reads (:data:`HOOKS`: the schedule's predictor, the time fit of the time schedule,
the re-measurement of suspicious jumps, whether the exact reading is still open) are plugged in here, once.

An interruption (Ctrl-C, SIGTERM) ends the measuring: :func:`run` raises :class:`Interrupted`, which carries the
partial report (decided on what was measured) for the caller to render.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from adprof.analysis.classify import assess_series, predicted_growth
from adprof.analysis.costs import open_exact
from adprof.analysis.jumps import unconfirmed_jumps
from adprof.backends import KNOWN_BACKENDS, check_backend, installed_backends
from adprof.measure import MeasureConfig, Measured, SeriesSpec, measure_all
from adprof.measure.config import LOAD_TIMEOUT
from adprof.measure.executor import Executor
from adprof.measure.plan import UsageError, csv_list, load_targets, nothing_planned, plan_series
from adprof.model import Report, Series
from adprof.report import build_report, measured_versions


class Interrupted(KeyboardInterrupt):
    """The measuring was stopped (Ctrl-C, SIGTERM, a notebook's interrupt): the workers are gone; :attr:`report`
    holds what was measured, decided (None when nothing was measured yet)."""

    def __init__(self, signal_name: str, report: Report | None) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.report = report


#: The analysis hooks of the measuring (:class:`~adprof.measure.MeasureConfig`'s fields of the same names).
HOOKS: dict[str, Callable[..., Any]] = {
    "predictor": predicted_growth,  # the next point's cost: the schedule stops a series before its cap
    "assess": assess_series,  # the deciding time fit: the time schedule reads it
    "jumps": unconfirmed_jumps,  # a phase far over what the depths below predict: measured again
    "open_exact": open_exact,  # the exact (counted) reading is still open: the series goes on
}


def with_hooks(config: MeasureConfig) -> MeasureConfig:
    """``config`` with every analysis hook of :data:`HOOKS` it does not set plugged in (a hook it sets, a test's
    spy, is kept); the same object."""
    for name, hook in HOOKS.items():
        if getattr(config, name) is None:
            setattr(config, name, hook)
    return config


@dataclass
class Watch:
    """What a caller watches of the measuring: progress (``status(lane, text)``, ``on_series``, ``on_structures``),
    ``poll`` (called while the lanes collect results: a stop signal acted upon there) and ``measured`` (called
    once the measuring is over, before the report is built)."""

    status: Callable[[int, str], None] | None = None
    on_series: Callable[[Series], None] | None = None
    on_structures: Callable[[dict[str, dict[str, Any]]], None] | None = None
    poll: Callable[[], None] | None = None
    measured: Callable[[], None] | None = None


class Progress(Protocol):
    """A progress display the run feeds (:class:`adprof.render.progress.SeriesProgress`): entered around the
    measuring."""

    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: Any) -> Any: ...
    def status(self, lane: int, text: str) -> None: ...
    def done(self, series: Series) -> None: ...
    def structures(self, structures: dict[str, dict[str, Any]]) -> None: ...


def default_jobs() -> int:
    """Worker processes by default: ``min(2, cores)``."""
    return min(2, os.cpu_count() or 1)


def load_timeout(config: MeasureConfig) -> float:
    """Seconds allowed for importing a chain file: at most LOAD_TIMEOUT, never more than the budget."""
    return min(LOAD_TIMEOUT, max(10.0, config.timeout * 2), config.budget)


def parse_backends(value: str) -> list[str]:
    """A comma-separated list of backends, each checked (one line for an unknown one), or ``all``: every installed
    one but ``cmd``."""
    names = list(dict.fromkeys(csv_list(value)))
    if names == ["all"]:
        return installed_backends()
    if not names:
        raise UsageError(f"--backend: no backend given (got {value!r}); known: {', '.join(KNOWN_BACKENDS)}")
    for n in names:
        check_backend(n)
    return names


def check_names(values: dict[str, str | None]) -> None:
    """``backend``, ``mode``, ``profile`` given as an empty list (``--mode ,``): one line (:class:`UsageError`)."""
    for option, value in values.items():
        if isinstance(value, str) and not csv_list(value):
            known = f"; known: {', '.join(KNOWN_BACKENDS)}" if option == "backend" else ""
            raise UsageError(f"--{option}: no {option} given (got {value!r}){known}")


def environment(config: MeasureConfig, argv: Sequence[str]) -> dict[str, Any]:
    """The run's record in the report: the machine, the command (``argv``, without ``adprof``) and its settings."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "argv": ["adprof", *argv],
        "cap_seconds": config.cap,
        "timeout_seconds": config.timeout,
        "budget_seconds": config.budget,
        "jobs": config.jobs,
        "eager_calls": config.calls,
        "counter_budget": config.counter_budget,
        "depths": list(config.depths) if config.depths else None,
        "memory": config.memory,
    }


def plan_check(
    targets: Sequence[str],
    backends: Sequence[str],
    profile: str | None,
    mode: str | None,
    config: MeasureConfig,
    notes: list[str],
    refine: Callable[[list[SeriesSpec], list[dict[str, Any]]], list[SeriesSpec]] | None = None,
) -> list[SeriesSpec]:
    """The series of ``adprof check`` on chain files: the options checked before anything is loaded, the targets
    loaded in a worker, every chain x backend x profile x mode planned (``notes``: why a chain was skipped;
    ``refine(specs, metas)``: the series as a command option changes them). Raises :class:`UsageError` when
    nothing is planned."""
    plan_series([], list(backends), profile, mode, [])  # validate the options before loading anything
    metas = load_targets(targets, load_timeout(config), config.deadline)
    specs = plan_series(metas, list(backends), profile, mode, notes)
    if refine is not None:
        specs = refine(specs, metas)
    if not specs:
        raise UsageError(f"nothing to measure: {nothing_planned(metas, list(backends), mode)}")
    return specs


def protocol_notes(series: Sequence[Series]) -> list[str]:
    """One note per ``--cmd`` series whose JSON lines had keys the protocol does not read (ignored)."""
    from adprof.backends.cmd.protocol import KNOWN_KEYS, did_you_mean

    notes = []
    for s in series:
        keys = list(dict.fromkeys(k for p in s.points for k in p.extra.get("unknown_keys") or ()))
        if keys:
            named = ", ".join(f"{k!r}" + (f" (did you mean {m!r}?)" if (m := did_you_mean(k)) else "") for k in keys)
            notes.append(
                f"{s.chain} [{s.backend}, {s.mode}]: the program's JSON has keys adprof does not read, ignored: "
                f"{named}; known keys: {', '.join(KNOWN_KEYS)}"
            )
    return notes


def decide(
    measured: Measured,
    config: MeasureConfig,
    *,
    unmeasured: Sequence[Series] = (),
    notes: Sequence[str] = (),
    environment: dict[str, Any] | None = None,
    trust: str | None = None,
) -> Report:
    """The report of a measured run, decided once (the renderers read it); the arguments are :func:`run`'s."""
    series = [*measured.series, *unmeasured]
    record = {**environment, "versions": measured_versions(measured.series)} if environment is not None else None
    return build_report(
        series,
        measured.structures,
        notes=[*notes, *measured.notes, *protocol_notes(measured.series)],
        environment=record,
        budget_seconds=config.budget,
        elapsed_seconds=measured.elapsed,
        trust=trust,
    )


def run(
    specs: Sequence[SeriesSpec],
    config: MeasureConfig,
    *,
    unmeasured: Sequence[Series] = (),
    notes: Sequence[str] = (),
    environment: dict[str, Any] | None = None,
    trust: str | None = None,
    executor: Executor | None = None,
    watch: Watch | None = None,
) -> Report:
    """Measure ``specs`` (on ``executor``, else local lanes) under ``config`` with the analysis hooks, and decide
    them: the report. ``unmeasured``: failed series the plan could not measure (a guard's unguarded chains), after
    the measured ones; ``notes``: the plan's, before the measuring's; ``environment``: the run's record (with the
    versions measured; None: no record); ``trust``: ``--trust``. Raises :class:`Interrupted` (with the partial
    report) when a stop signal ended the measuring."""
    watch = watch or Watch()
    try:
        measured = measure_all(
            list(specs),
            with_hooks(config),
            status=watch.status,
            on_series=watch.on_series,
            poll=watch.poll,
            on_structures=watch.on_structures,
            executor=executor,
        )
    finally:
        if watch.measured is not None:
            watch.measured()
    report = decide(measured, config, unmeasured=unmeasured, notes=notes, environment=environment, trust=trust)
    if measured.interrupted is not None:
        raise Interrupted(measured.interrupted, report)
    return report


def run_shown(
    specs: Sequence[SeriesSpec],
    config: MeasureConfig,
    progress: Progress,
    argv: Sequence[str],
    *,
    poll: Callable[[], None] | None = None,
    measured: Callable[[], None] | None = None,
    **options: Any,
) -> tuple[Report, str | None]:
    """:func:`run` under ``progress``, with the run's record of the command ``argv``: the report and the signal that
    interrupted the measuring (None: it ran to the end; else the report is the partial one). ``poll`` and
    ``measured``: :class:`Watch`'s; ``options``: :func:`run`'s."""
    with progress:
        watch = Watch(progress.status, progress.done, progress.structures, poll, measured)
        try:
            return run(specs, config, environment=environment(config, argv), watch=watch, **options), None
        except Interrupted as stop:
            assert stop.report is not None
            return stop.report, stop.signal_name


__all__ = [
    "HOOKS",
    "check_names",
    "Interrupted",
    "Watch",
    "decide",
    "default_jobs",
    "environment",
    "load_timeout",
    "parse_backends",
    "plan_check",
    "protocol_notes",
    "run",
    "run_shown",
    "with_hooks",
]
