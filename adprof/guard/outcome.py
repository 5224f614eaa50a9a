"""The guard's outcome as data: one :class:`GuardCheck` per series (with its :class:`MemoryCheck`), gathered in a
:class:`GuardReport`. Renderers (:mod:`adprof.render.guard`) read them; they render nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from adprof.guard.limits import GuardLimits
from adprof.model import Report, Result


@dataclass
class GuardCheck:
    """One guarded (chain, backend, profile, mode): the verdict against the limits."""

    result: Result
    limits: GuardLimits
    ok: bool
    measured: str  # e.g. "base 2.00 per layer" or "exponent 1.02"
    limit: str  # e.g. "max base 1.10"
    reason: str  # one line
    metric: str = ""
    #: Where the limits came from with ``--baseline``: the baseline's reading of this series, or why the normal
    #: limits apply ("not in the baseline"); "" without a baseline.
    baseline: str = ""
    #: The memory limits' check (None: no memory limit set); :attr:`ok` already counts it.
    memory: MemoryCheck | None = None
    #: The time limits held (:attr:`ok` before the memory limits were applied).
    time_ok: bool = True

    @property
    def label(self) -> str:
        return self.result.series.label


@dataclass
class MemoryCheck:
    """The memory limits (``max_memory_exponent``, ``max_leak``) against one series' memory verdict: whether they
    hold, what was measured and the limit (for the diff), why (in pytest-memray's words: "limited to ... but ..."),
    and whether it could be checked at all (a figure not measured fails, never passes silently)."""

    ok: bool
    measured: str  # "saved bytes d^2.00 over depths 1-32 (1.1 KiB -> 81.0 KiB)", "+4.0 KiB per call at depth 8"
    limit: str  # "max memory exponent 1.2, max leak 1.0 KiB per call"
    reason: str
    checked: bool = True  # False: a limit could not be checked (its figure not measured: a failure)


@dataclass
class GuardReport:
    """The guard's outcome: one check per series (and the report that decided them, for the API)."""

    checks: list[GuardCheck] = field(default_factory=list)
    report: Report | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[GuardCheck]:
        return [c for c in self.checks if not c.ok]
