"""The check path, outside the search loop: a written chain file measured exactly as ``adprof check`` measures it.

:func:`check_targets` loads the file in a worker, plans one series per target with
:func:`~adprof.measure.plan.plan_series` (the chain's own options: its depths, schedule and cap), then measures
and decides them on the one run path, :func:`adprof.pipeline.run` (supervised workers, the real schedule, the
budget, the analysis hooks of ``adprof check``, the re-measurement of suspicious jumps included): what
``adprof check FILE --backend B --mode M`` prints. An
attribution run passes explicit depths per target (``adprof check --depths``), bounded for the budget.

:func:`confirms` is the hunt's test of a candidate: the check's verdict on its target is the pathology the
search saw (an exponential for an exponential, a superlinear power law for a power law). A timing blip or a
one-off slow point in the search does not survive it: the check measures again, in other workers, at more
depths, and decides on deterministic metrics wherever the backend has them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from adprof import verdicts
from adprof.constants import DEFAULT_CALLS, DEFAULT_CAP
from adprof.hunt.targets import Target
from adprof.measure import MeasureConfig
from adprof.measure.client import LoadError
from adprof.measure.config import LOAD_TIMEOUT
from adprof.measure.executor import Executor
from adprof.measure.plan import UsageError, load_targets, plan_series
from adprof.measure.series import SeriesSpec
from adprof.model import INCONCLUSIVE, PATHOLOGIES, Report, Result
from adprof.pipeline import Interrupted, Watch, run


@dataclass
class CheckRun:
    """A chain file checked on some targets: the report, each target's result (None: the chain is not for it, or
    it could not be planned), and why a target has none."""

    report: Report
    results: dict[Target, Result] = field(default_factory=dict)
    skipped: dict[Target, str] = field(default_factory=dict)
    seconds: float = 0.0
    interrupted: str | None = None


def check_targets(
    file: str,
    chain: str,
    targets: Sequence[Target],
    *,
    budget: float,
    jobs: int,
    executor: Executor | None = None,
    depths: Mapping[Target, tuple[int, ...] | None] | None = None,
    poll: Callable[[], None] | None = None,
    structure: bool = True,
) -> CheckRun:
    """``adprof check FILE::CHAIN`` on each target within ``budget`` seconds (on ``executor``, else fresh local
    lanes); ``depths``: explicit depths per target (``--depths``), None keeps the chain's own."""
    start = time.monotonic()
    cfg = MeasureConfig(
        cap=DEFAULT_CAP,
        budget=budget,
        calls=DEFAULT_CALLS,
        jobs=jobs,
        started=start,
        structure=structure,
    )
    try:
        metas = load_targets([f"{file}::{chain}"], min(LOAD_TIMEOUT, budget), cfg.deadline)
    except LoadError as exc:
        return CheckRun(Report(notes=[exc.message]), skipped={t: exc.message for t in targets})
    specs: list[SeriesSpec] = []
    order: list[Target] = []
    skipped: dict[Target, str] = {}
    for t in targets:
        notes: list[str] = []
        try:
            planned = plan_series(metas, [t.backend], t.profile, t.mode, notes)
        except UsageError as exc:
            skipped[t] = str(exc)
            continue
        if not planned:
            skipped[t] = notes[0] if notes else "not planned"
            continue
        spec = planned[0]
        explicit = (depths or {}).get(t)
        if explicit:
            spec = dataclasses.replace(spec, depths=tuple(explicit), time_range=None)
        specs.append(spec)
        order.append(t)
    if not specs:
        return CheckRun(Report(), skipped=skipped, seconds=time.monotonic() - start)
    interrupted = None
    try:
        report = run(specs, cfg, executor=executor, watch=Watch(poll=poll))  # the analysis hooks: the check's own
    except Interrupted as stop:
        assert stop.report is not None
        report, interrupted = stop.report, stop.signal_name
    results = dict(zip(order, report.results, strict=True))
    return CheckRun(report, results, skipped, time.monotonic() - start, interrupted)


def verdict_family(kind: str) -> str:
    """``exponential``, ``superlinear`` (pathologies, memory's too: the table's family), else the kind itself."""
    row = verdicts.info(kind)
    return str(row.family) if row is not None and (row.pathology or row.memory_growth) else kind


def confirms(result: Result | None, expect: str, memory: bool = False) -> bool:
    """The check's result is the pathology the search saw (``expect``: ``exponential``, ``superlinear`` or
    ``any``), decided on a measured series (no error, no hang); ``memory``: its memory verdict is (superlinear or
    exponential memory in depth; a leak per call is not a growth in depth)."""
    if result is None or result.series.error:
        return False
    kind = verdict_kind(result, memory)
    if kind not in (MEMORY_GROWTH if memory else PATHOLOGIES):
        return False
    return expect == "any" or verdict_family(kind) == expect


#: The memory verdicts that are a growth in depth faster than the program (the memory findings but a leak): a live
#: view of the table.
MEMORY_GROWTH = verdicts.MEMORY_GROWTH


def verdict_kind(result: Result, memory: bool = False) -> str:
    """The verdict a finding reads: the time verdict, or (``memory``) the memory verdict's reading in depth
    (``growth``: a leak per call decides the memory verdict's kind, not how the saved bytes grow); inconclusive
    where memory was not read against depth."""
    if not memory:
        return result.verdict.kind
    mv = result.verdict.memory
    return mv.growth if mv is not None and mv.measured and mv.growth else INCONCLUSIVE


__all__ = ["MEMORY_GROWTH", "CheckRun", "check_targets", "confirms", "verdict_family", "verdict_kind"]
