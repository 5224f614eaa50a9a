"""The guard's outcome as data: one :class:`GuardCheck` per series (with its :class:`MemoryCheck`), gathered in a
:class:`GuardReport`. They hold typed fields (what was measured, the numbers held against the limits, which rule
decided); the sentences (measured, limit, why) are renderings of them, in :mod:`adprof.render.guard`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from adprof import model
from adprof.comparison import Side
from adprof.guard.limits import GuardLimits
from adprof.model import LeakReading, Report, Result

#: The largest budget the guard advises, as a multiple of the run's (past it, the missing depths are too costly to
#: guard, whatever the advice).
ADVICE_FACTOR = 10.0


class Reading(StrEnum):
    """What a guard check measured against the time limits (the first word of its "measured")."""

    BASE = "base"  # a per-layer ratio (an exponential growth)
    EXPONENT = "exponent"  # a power-law exponent
    HANG = "hang"  # a point killed at its own timeout
    ERROR = "error"  # the chain failed
    MISSING = "missing depths"  # a planned depth not measured
    INCONCLUSIVE = "inconclusive"  # no growth to compare
    RUNAWAY = "runaway"  # a point ran past its cap
    #: A time-decided reading whose interval spans the limit on a noisy machine, still so after the guard
    #: re-measured it: neither held nor a pathology (its own exit status, :data:`adprof.cli.common.EXIT_UNDECIDED`).
    UNDECIDED = "undecided"


class Outcome(StrEnum):
    """A check's outcome: held, failed (a limit exceeded, or no growth to compare), or undecided (the machine too
    noisy to decide within the budget)."""

    HELD = "held"
    FAILED = "failed"
    UNDECIDED = "undecided"


class BaselineState(StrEnum):
    """How a series met the baseline (``--baseline``)."""

    ABSENT = "absent"  # not in the baseline: the normal limits
    NO_FIGURES = "no figures"  # the baseline's reading has no rate (inconclusive, an error, a runaway)
    COMPARED = "compared"  # held against the baseline's own figures


class BaselineRule(StrEnum):
    """Which part of the rule of ``adprof compare`` decided a check against the baseline."""

    CLASS = "class"  # the verdict's class differs from the baseline's (better or worse)
    SAME = "same"  # the same class, no rate to compare
    RATE = "rate"  # the rate against the baseline's interval top + tolerance


@dataclass
class BaselineRef:
    """A series' baseline (``--baseline``): where, how it was met, and the baseline's reading (:class:`Side`)."""

    where: str
    state: BaselineState
    before: Side | None = None
    tolerance: float = 0.0
    rule: BaselineRule | None = None
    #: The compared rate's ceiling: the baseline's interval top (``hi``) + ``tolerance``.
    hi: float | None = None

    @property
    def top(self) -> float | None:
        return None if self.hi is None else self.hi + self.tolerance


@dataclass
class MissingDepths:
    """The planned depths of a series that were not measured, the run's budget, and about how many seconds the
    deciding model predicts they would take (None: it cannot say, or a cap stopped them)."""

    depths: tuple[int, ...]
    budget: float | None = None
    needed_seconds: float | None = None


@dataclass
class Noise:
    """The measured noise of an undecided time reading: the rate's interval against its limit, the repeats that
    measured it (after the guard re-measured), their spread, and the budget that would decide (the interval's
    width shrinks like 1/sqrt(repeats))."""

    rate_kind: Reading  # BASE or EXPONENT
    rate: float
    low: float
    high: float
    limit: float  # the limit the interval spans (widened by the time tolerance)
    repeats: int  # repeats per deciding depth, after the re-measure
    spread: float  # the repeats' relative spread (median over the depths of (max - min) / median)
    remeasured: int  # how many times the guard re-measured the series
    seconds: float  # what the series' measuring took
    #: Seconds that would decide (None: no finite estimate, e.g. the rate sits on the limit).
    needed_seconds: float | None = None
    #: The run's budget (the advice adds the seconds that would decide to it).
    budget: float | None = None

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass
class GuardCheck:
    """One guarded (chain, backend, profile, mode): the verdict against the limits, as typed fields (renderings
    in :mod:`adprof.render.guard`)."""

    result: Result
    limits: GuardLimits
    ok: bool
    reading: Reading
    #: The verdict kind held (the excess's or the raw one, :func:`adprof.model.held_rate`).
    kind: str = ""
    #: The base or exponent held against the limits (BASE/EXPONENT readings).
    rate: float | None = None
    #: The depth of the knee past which the rate was read (None: over every depth).
    knee: int | None = None
    #: The rate is the excess over the program (:func:`adprof.model.held_rate`), not the raw growth.
    excess: bool = False
    #: The slack on the limits (time-decided series: :data:`adprof.guard.limits.TIME_TOLERANCE`).
    tolerance: float = 0.0
    #: The limit the rate was held against (widened by ``tolerance``).
    bound: float | None = None
    #: The rate held (the time limits' decision; :attr:`ok` also counts the memory limits).
    rate_held: bool = True
    #: MISSING: the planned depths not measured, and what would measure them.
    missing: MissingDepths | None = None
    metric: str = ""
    #: With ``--baseline``: the baseline's reading of this series, or why the normal limits apply (None without).
    baseline_ref: BaselineRef | None = None
    #: The memory limits' check (None: no memory limit set); :attr:`ok` already counts it.
    memory: MemoryCheck | None = None
    #: The time limits held (:attr:`ok` before the memory limits were applied).
    time_ok: bool = True
    #: UNDECIDED: the measured noise and the budget that would decide.
    noise: Noise | None = None
    #: An inconclusive time reading held by its interval (all of it at or under the limit): that interval.
    interval: tuple[float, float] | None = None
    #: A power law whose interval spans the limit, held by its deepest halving: the most that halving can grow
    #: (:func:`adprof.guard.noise.top_halving_bound`; None: not held so).
    top_bound: float | None = None

    @property
    def label(self) -> str:
        return self.result.series.label

    @property
    def undecided(self) -> bool:
        """The time reading is undecided (too noisy to decide within the budget), and nothing else failed."""
        return self.reading is Reading.UNDECIDED and (self.memory is None or self.memory.ok)

    @property
    def outcome(self) -> Outcome:
        """held, failed, or undecided (a noisy machine, not a pathology)."""
        if self.ok:
            return Outcome.HELD
        return Outcome.UNDECIDED if self.undecided else Outcome.FAILED


class MemoryLimit(StrEnum):
    """A memory limit's name, as ``[tool.adprof.guard]`` spells it."""

    MAX_MEMORY_EXPONENT = "max_memory_exponent"
    MAX_LEAK = "max_leak"


class MemoryState(StrEnum):
    """What one memory limit read."""

    NOT_MEASURED = "not measured"  # its figure was not measured: a failure
    PEAK_ONLY = "peak only"  # the noisy peak alone: not checked, never a failure
    INCONCLUSIVE = "inconclusive"  # the bytes have no law
    EXPONENTIAL = "exponential"  # exponential in depth: over any exponent
    POWER = "power"  # a power law against the exponent limit
    NO_CALLS = "no calls"  # a traced or compiled series: no retained bytes per call to check
    UNDECIDED = "undecided"  # a leak reading undecided
    NO_LEAK = "no leak"  # retained bytes flat
    LEAK = "leak"  # bytes per call against the leak limit


@dataclass
class MemoryPart:
    """One memory limit against the memory verdict: its name and value, what it read, the numbers held, and
    whether it held and could be checked at all (a figure not measured fails, never passes silently)."""

    name: MemoryLimit
    limit: float
    state: MemoryState
    ok: bool
    checked: bool = True
    #: ``max_memory_exponent``: the exponent held (the excess, or the raw one), the base of an exponential, the
    #: exponent's ceiling (the limit widened by ``tolerance``: peak bytes are noisy), the excess flag.
    exponent: float | None = None
    base: float | None = None
    top: float | None = None
    tolerance: float = 0.0
    excess: bool = False
    #: ``max_leak``: the leak reading held (the worst, or the undecided one).
    leak: LeakReading | None = None


@dataclass
class MemoryBaseline:
    """The memory verdict against the baseline's (as ``adprof compare`` compares them)."""

    where: str
    before: Side
    after: Side
    ok: bool
    reason: str  # the comparison's own sentence (:func:`adprof.comparison.classify_memory`)


@dataclass
class MemoryCheck:
    """The memory limits (``max_memory_exponent``, ``max_leak``) against one series' memory verdict: one part per
    limit set, and the baseline's memory with ``--baseline``."""

    ok: bool
    parts: list[MemoryPart] = field(default_factory=list)
    baseline: MemoryBaseline | None = None

    @property
    def checked(self) -> bool:
        """Every limit could be checked (False: a figure not measured, a peak-only verdict, no calls)."""
        return all(p.checked for p in self.parts)


def memory_verdict_of(result: Result) -> model.MemoryVerdict:
    """The memory verdict a memory check reads (an empty one, not measured, for a report without memory)."""
    return result.verdict.memory or model.MemoryVerdict(reason="no memory verdict (a report without memory)")


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
        """The checks that did not hold (failed or undecided)."""
        return [c for c in self.checks if not c.ok]

    @property
    def undecided(self) -> list[GuardCheck]:
        """The checks too noisy to decide within the budget (and nothing else failed)."""
        return [c for c in self.checks if c.outcome is Outcome.UNDECIDED]

    @property
    def pathologies(self) -> list[GuardCheck]:
        """The checks that failed for a reason other than noise (a limit exceeded, a hang, an error, ...)."""
        return [c for c in self.checks if c.outcome is Outcome.FAILED]

    @property
    def outcome(self) -> Outcome:
        """failed when any check failed, else undecided when any is, else held."""
        if self.pathologies:
            return Outcome.FAILED
        return Outcome.UNDECIDED if self.undecided else Outcome.HELD
