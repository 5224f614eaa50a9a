"""Planning and running a guard: the guarded series at fixed depths, the measuring config, the targets."""

from __future__ import annotations

import dataclasses
import inspect
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adprof import model, options
from adprof.backends import check_backend
from adprof.chain import as_chain
from adprof.guard import noise
from adprof.guard.checks import guard_checks, missing_depths, series_key
from adprof.guard.limits import GuardLimits
from adprof.guard.outcome import Reading
from adprof.measure import MeasureConfig, SeriesSpec
from adprof.measure.client import handing_over
from adprof.measure.config import LOAD_TIMEOUT
from adprof.measure.plan import UsageError, load_targets, nothing_planned, plan_series
from adprof.model import Report
from adprof.pipeline import load_timeout as pipeline_load_timeout
from adprof.pipeline import parse_backends, run

if TYPE_CHECKING:
    from adprof.render.guard import RenderedGuardReport

#: Key comparisons allowed per point: deterministic runaway stop (a censored point).
GUARD_COUNTER_BUDGET = 5_000_000
#: Seconds per phase and for the whole guard run. A phase may take 15 s (fixed depths: nothing stops them
#: sooner), so a hang is killed after 4 x 15 = 60 s, which a CI job can afford; the whole run gets 10 minutes.
GUARD_CAP = 15.0
GUARD_BUDGET = 600.0
#: Depths when the chain declares none: unit steps (per-layer ratios) then doublings.
DEFAULT_DEPTHS = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)


#: Re-measures a series list under a config (the caller's run path: the CLI's with its progress, the API's, the
#: fixture's :func:`adprof.pipeline.run`).
Runner = Callable[[list[SeriesSpec], MeasureConfig], Report]


def _remeasured_ok(result: model.Result) -> bool:
    """A re-measured series that may replace the first: every planned depth measured, no error, no hang."""
    v = result.verdict
    return not v.killed and v.kind != model.ERROR and not missing_depths(result)


def settle_noisy(
    report: Report,
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    limits: GuardLimits,
    runner: Runner | None = None,
    rounds: int = noise.REMEASURE_ROUNDS,
) -> dict[tuple[Any, ...], int]:
    """Re-measure, with more repeats of their depths and within what is left of the budget, the series whose time
    reading is undecided against ``limits`` (:mod:`adprof.guard.noise`), up to ``rounds`` times; each re-measured
    series replaces its first reading in ``report`` (in place) when it measured every planned depth. Returns how
    many times each series was re-measured (by :func:`series_key`), for :func:`adprof.guard.guard_checks`."""
    runner = runner or (lambda todo, config: run(todo, config))
    spec_of = {series_key(sp): sp for sp in specs}
    counts: dict[tuple[Any, ...], int] = {}
    started = cfg.started if cfg.started is not None else time.monotonic()
    for _ in range(rounds):
        noisy = [c for c in guard_checks(report, limits).checks if c.reading is Reading.UNDECIDED]
        left = cfg.budget - (time.monotonic() - started) - cfg.reserve_for(len(report.results))
        todo: list[SeriesSpec] = []
        calls = cfg.calls
        for c in noisy:
            spec, n = spec_of.get(series_key(c.result.series)), c.noise
            if spec is None or n is None:
                continue
            need = noise.repeats_to_decide(n.rate, n.low, n.high, n.limit, n.repeats) or n.repeats * 16.0
            repeats = min(noise.MAX_REPEATS, max(n.repeats * noise.REMEASURE_FACTOR, math.ceil(need * 1.2)))
            per_repeat = n.seconds / n.repeats * noise.BUDGET_SAFETY
            # the repeats that would decide may cost more than is left: a re-measure at what the budget affords
            # is a fresh reading all the same (one slow depth in the first one is often all that kept it open)
            repeats = min(repeats, math.floor(left / per_repeat)) if per_repeat > 0 else repeats
            if repeats < max(n.repeats + 1, noise.MIN_REMEASURE_REPEATS):
                continue
            cost = per_repeat * repeats
            left -= cost
            todo.append(dataclasses.replace(spec, repeats=repeats))
            if spec.mode == "eager":  # eager samples are the warm calls
                calls = max(calls, repeats + 1)
        if not todo:
            break
        again = runner(todo, dataclasses.replace(cfg, calls=calls))
        fresh = {series_key(r.series): r for r in again.results}
        for i, r in enumerate(report.results):
            key = series_key(r.series)
            new = fresh.get(key)
            if new is None:
                continue
            counts[key] = counts.get(key, 0) + 1
            if _remeasured_ok(new):
                new.series.file = r.series.file
                report.results[i] = new
    return counts


def guard_config(**overrides: Any) -> MeasureConfig:
    """The measuring config of a guard (the CLI's defaults; ``overrides``: e.g. ``cap``, ``budget``, ``jobs``); the
    analysis hooks are plugged in by :func:`adprof.pipeline.run`."""
    kw: dict[str, Any] = {
        "cap": GUARD_CAP,
        "budget": GUARD_BUDGET,
        "counter_budget": GUARD_COUNTER_BUDGET,
        "structure": False,
    }
    kw.update(overrides)
    return MeasureConfig(**kw)


def guard_specs(
    metas: list[dict[str, Any]],
    backends: list[str],
    profiles: str | None,
    modes: str | None,
    depths: Sequence[int] | None,
    notes: list[str],
    skipped: dict[tuple[str, str], list[str]] | None = None,
) -> list[SeriesSpec]:
    """The guarded series: every chain x backend x profile x mode at fixed depths (``depths``, else the chain's
    declared ones, else :data:`DEFAULT_DEPTHS`, which reach past the schedule's unit steps: a chain that explodes
    past depth 8 fails). Profiles default to ``fixed`` on the engine. ``skipped``: why each chain was skipped on a
    backend (:func:`unguarded_series`)."""
    if profiles is None and "engine" in backends:
        profiles = "fixed"
    specs = plan_series(metas, backends, profiles, modes, notes, skipped)
    by_key = {(m["file"], m["name"]): m for m in metas}  # one name may be in two files
    for spec in specs:
        meta = by_key[spec.file, spec.chain]
        declared = tuple(meta.get("depths") or ()) if meta.get("declared_depths", True) else ()
        spec.depths = spec.required_depths = tuple(depths or declared or DEFAULT_DEPTHS)
    return specs


def unguarded_series(
    metas: list[dict[str, Any]], specs: Sequence[SeriesSpec], skipped: dict[tuple[str, str], list[str]]
) -> list[model.Series]:
    """A failed series for each chain of ``metas`` that no spec measures (restricted to another backend, or to
    modes not selected): a guard cannot pass a chain it does not measure, so each one fails it with one line."""
    seen = {(s.file, s.chain) for s in specs}  # measured, or already failed (a target given twice)
    out = []
    for m in metas:
        key = (m["file"], m["name"])
        if key in seen:
            continue
        seen.add(key)
        why = "; ".join(skipped.get(key) or ["no series to measure"])
        per_backend = m.get("backend_modes") or {}
        backend = next(iter(per_backend), "engine") if per_backend else "engine"
        modes = list(per_backend.get(backend) or m.get("modes") or ["traced"])
        error = (
            f"not guarded: {why}; a guard fails a chain it cannot measure (select the chains to guard with "
            "FILE::CHAIN, or guard it with its --backend/--mode)"
        )
        out.append(model.Series(m["name"], backend, None, modes[0], file=m["file"], error=error))
    return out


def plan_guard(
    targets: Sequence[str],
    backends: str | Sequence[str],
    profile: str | None,
    mode: str | None,
    depths: Sequence[int] | None,
    config: MeasureConfig,
    notes: list[str],
    load_timeout: float | None = None,
) -> tuple[list[SeriesSpec], list[model.Series]]:
    """The guarded series of ``targets`` (loaded in a worker within ``load_timeout``, default
    :func:`adprof.pipeline.load_timeout`) at fixed depths (:func:`guard_specs`), and a failed series for each chain
    none of them measures (:func:`unguarded_series`). ``backends``: names, or the ``--backend`` text (checked after
    loading, as the command checks it). Raises :class:`UsageError` when nothing is planned."""
    timeout = pipeline_load_timeout(config) if load_timeout is None else load_timeout
    metas = load_targets(list(targets), timeout, config.deadline)
    names = parse_backends(backends) if isinstance(backends, str) else list(backends)
    skipped: dict[tuple[str, str], list[str]] = {}
    specs = guard_specs(metas, names, profile, mode, depths, notes, skipped)
    if not specs:
        raise UsageError(f"nothing to guard: {nothing_planned(metas, names, mode)}")
    return specs, unguarded_series(metas, specs, skipped)


def target_of(chain: Any) -> str:
    """``FILE::CHAIN`` of a chain object or a plain function defined at module level (the guard measures
    it in a worker process, which loads it from its file); raises :class:`UsageError` otherwise."""
    if isinstance(chain, str | Path):
        return str(chain)
    ch = as_chain(chain)
    fn = inspect.unwrap(ch.fn if ch is not None else chain)
    name = ch.name if ch is not None else getattr(fn, "__name__", repr(fn))
    qual = getattr(fn, "__qualname__", "")
    try:
        source = (ch.source if ch is not None else None) or inspect.getsourcefile(fn)
    except TypeError:  # a builtin or a callable object
        source = None
    if source is None or "<" in qual or "." in qual:
        raise UsageError(
            f"the guard measures {name!r} in a worker process, which loads it from its file: define it at "
            "module level in a .py file (or pass 'FILE::CHAIN')"
        )
    return f"{source}::{name}"


def guard_depths(depths: Any) -> tuple[int, ...] | None:
    """The depths a guard is asked to measure (None: the chains' own), sorted, each once; :class:`UsageError` for
    anything but a non-empty sequence of depths under their rule (``"1,2,3"``, ``[0, 1]``, ``[1, 2.5]``,
    ``[True]``, ``[10**9]``)."""
    if depths is None:
        return None
    ok = isinstance(depths, Sequence) and not isinstance(depths, str | bytes) and len(depths) <= options.MAX_DEPTH_COUNT
    if ok and options.depths_problem(depths) is None:
        return tuple(options.check_depths(depths))
    raise UsageError(
        f"depths: expected positive integers, e.g. [1, 2, 4, 8], got {options.shown(depths)} "
        f"(each at most {options.MAX_DEPTH}, at most {options.MAX_DEPTH_COUNT} of them)"
    )


def guard_targets(
    targets: Sequence[Any],
    limits: GuardLimits,
    *,
    mode: str | None = None,
    profile: str | None = None,
    depths: Sequence[int] | None = None,
    backend: str = "engine",
    cfg: MeasureConfig | None = None,
) -> tuple[RenderedGuardReport, Report]:
    """Load, measure (in supervised workers), decide and check ``targets`` (``FILE[::CHAIN]`` strings, chain
    objects or module-level functions): the path of ``adprof guard``, without its console (the outcome with its
    renderings: ``.text()``)."""
    cfg = cfg or guard_config()
    if cfg.started is None:
        cfg.started = time.monotonic()
    if limits.checks_memory and cfg.memory is None:  # a memory limit measures memory
        cfg.memory = True
    depths = guard_depths(depths)
    names = [target_of(t) for t in targets]
    notes: list[str] = []
    backends = [check_backend(backend)]
    with handing_over():  # the worker that loads the targets measures the first lane
        specs, unguarded = plan_guard(
            names, backends, profile, mode, depths, cfg, notes, load_timeout=min(LOAD_TIMEOUT, cfg.budget)
        )
        report = run(specs, cfg, unmeasured=unguarded, notes=notes)  # interrupted: pipeline.Interrupted
    remeasured = settle_noisy(report, specs, cfg, limits)  # a noisy time reading: more repeats first
    from adprof.render.guard import RenderedGuardReport  # here: the renderer's module imports the guard's outcome

    return RenderedGuardReport.of(guard_checks(report, limits, remeasured=remeasured)), report
