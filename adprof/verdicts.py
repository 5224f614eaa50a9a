"""The one table of verdict kinds: each kind declared once, with everything the layers above read about it.

A verdict kind is a name (a public contract: JSON ``verdict`` and ``memory.kind``, exit codes, guards) and one
:class:`KindInfo` row in :data:`TABLE`: which decision it belongs to (time, memory or both), its family (the law it
reads: ``exponential``, ``superlinear``, ``mild``, ``linear``, ``flat``; or no law: ``inconclusive``, ``error``,
``runaway``, ``leak``), the phase it names, whether it is a finding, its rank for ``compare``, the memory verdict a
time reading names, its console style and its short name. Everything else is derived from the table: the decision's
``(fit family, backward) -> kind`` map, ``compare``'s ranks, the console's and hunt's styles, hunt's growing kinds,
the guard's exponential test. A new kind is one row here (layer 0: imports nothing of adprof).

:class:`Growth` is what a fit reads (``Fit.kind``), :class:`Source` what decided it (``Fit.source``): StrEnums, so
they compare and serialize as the strings they replace.
"""

# ruff: noqa: E501  (the table below is one line a kind, its columns aligned: wider than the code around it)

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Growth(StrEnum):
    """What a fit of cost against depth reads (``Fit.kind``)."""

    EXPONENTIAL = "exponential"
    SUPERLINEAR = "superlinear"
    MILD = "mild"  # a power law with 1.15 <= p < 1.3 (n log n-like)
    LINEAR = "linear"
    INCONCLUSIVE = "inconclusive"


class Source(StrEnum):
    """What a deciding fit was read from (``Fit.source``): the engine's counters, a work metric (its name in
    ``Fit.metric_name``), time, or memory figures against the calls; ``NONE``: not said."""

    COUNTERS = "counters"
    METRIC = "metric"
    TIME = "time"
    MEMORY = "memory"
    NONE = ""


class Family(StrEnum):
    """The law a verdict kind reads (the growth families), or why it reads none."""

    EXPONENTIAL = "exponential"
    SUPERLINEAR = "superlinear"
    MILD = "mild"
    LINEAR = "linear"
    FLAT = "flat"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    RUNAWAY = "runaway"
    LEAK = "leak"


class Phase(StrEnum):
    """What a growing kind names as growing: the grad transform, the backward pass, or the memory."""

    TRANSFORM = "transform"
    BACKWARD = "backward"
    MEMORY = "memory"
    NONE = ""


class Kind(StrEnum):
    """Every verdict name (time and memory)."""

    EXPONENTIAL_TRANSFORM = "exponential-transform"
    SUPERLINEAR_TRANSFORM = "superlinear-transform"
    EXPONENTIAL_BACKWARD = "exponential-backward"
    SUPERLINEAR_BACKWARD = "superlinear-backward"
    LINEAR = "linear"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    MILD_TRANSFORM = "mildly-superlinear-transform"
    MILD_BACKWARD = "mildly-superlinear-backward"
    RUNAWAY = "runaway"
    FLAT = "flat"
    MILD_MEMORY = "mildly-superlinear-memory"
    SUPERLINEAR_MEMORY = "superlinear-memory"
    EXPONENTIAL_MEMORY = "exponential-memory"
    LEAK_PER_CALL = "leak-per-call"
    PEAK_ONLY = "peak-only"  # only the noisy peak measured: its figure, never a finding


#: The families that are a growth law, in order of steepness (the peak's cross-check compares these classes; flat
#: and linear are one class: neither grows faster than the program).
GROWTH_CLASS: dict[Family, int] = {
    Family.FLAT: 0,
    Family.LINEAR: 0,
    Family.MILD: 1,
    Family.SUPERLINEAR: 2,
    Family.EXPONENTIAL: 3,
}


@dataclass(frozen=True)
class KindInfo:
    """One verdict kind, declared once."""

    kind: str
    family: Family
    phase: Phase = Phase.NONE
    time: bool = False  # a verdict of the time decision (JSON ``verdict``)
    memory: bool = False  # a verdict of the memory decision (JSON ``memory.kind``)
    #: Rank among time verdicts, best to worst (``compare``: a move up is a regression); None: not ranked.
    severity: int | None = None
    #: Rank among memory verdicts, best to worst; None: not ranked.
    memory_severity: int | None = None
    finding: bool = False  # a time finding: ``check`` exits 1, a guard fails
    memory_finding: bool = False  # a memory finding
    #: The memory verdict a time reading of this kind names (the saved bytes are decided as a time series is).
    memory_kind: str | None = None
    style: str = ""  # the console's rich style
    short: str = ""  # the name in narrow tables ("" : the kind itself)

    @property
    def grows(self) -> bool:
        """A growth law steeper than linear (the pathologies and the mild kinds, of time and of memory)."""
        return self.family in (Family.EXPONENTIAL, Family.SUPERLINEAR, Family.MILD)

    @property
    def pathology(self) -> bool:
        """A time kind that reads an exponential or superlinear law."""
        return self.time and self.family in (Family.EXPONENTIAL, Family.SUPERLINEAR)

    @property
    def memory_growth(self) -> bool:
        """A memory kind that grows in depth faster than the program (a memory finding but a leak per call)."""
        return self.memory and self.memory_finding and self.family in (Family.EXPONENTIAL, Family.SUPERLINEAR)


_T, _B, _M, _ = Phase.TRANSFORM, Phase.BACKWARD, Phase.MEMORY, Phase.NONE
_K, _F = Kind, Family

#: The table's columns, in the order each row below gives them.
_COLUMNS = ("kind", "family", "phase", "time", "memory", "severity", "memory_severity", "finding", "memory_finding",
            "memory_kind", "style", "short")  # fmt: skip
# fmt: off
_ROWS = (
    # kind                     family          phase time   memory  sev   m-sev finding m-find  memory counterpart       style           short
    (_K.EXPONENTIAL_TRANSFORM, _F.EXPONENTIAL, _T, True,  False, 3,    None, True,  False, _K.EXPONENTIAL_MEMORY, "bold red",     "exp-transform"),
    (_K.SUPERLINEAR_TRANSFORM, _F.SUPERLINEAR, _T, True,  False, 2,    None, True,  False, _K.SUPERLINEAR_MEMORY, "bold yellow",  "superlin-transform"),
    (_K.EXPONENTIAL_BACKWARD,  _F.EXPONENTIAL, _B, True,  False, 3,    None, True,  False, _K.EXPONENTIAL_MEMORY, "bold red",     "exp-backward"),
    (_K.SUPERLINEAR_BACKWARD,  _F.SUPERLINEAR, _B, True,  False, 2,    None, True,  False, _K.SUPERLINEAR_MEMORY, "bold yellow",  "superlin-backward"),
    (_K.LINEAR,                _F.LINEAR,      _,  True,  True,  0,    1,    False, False, _K.LINEAR,             "green",        ""),
    (_K.INCONCLUSIVE,          _F.INCONCLUSIVE, _, True,  True,  None, None, False, False, _K.INCONCLUSIVE,       "dim",          ""),
    (_K.ERROR,                 _F.ERROR,       _,  True,  False, 5,    None, True,  False, None,                  "magenta",      ""),
    (_K.MILD_TRANSFORM,        _F.MILD,        _T, True,  False, 1,    None, False, False, _K.MILD_MEMORY,        "yellow",       "mild-transform"),
    (_K.MILD_BACKWARD,         _F.MILD,        _B, True,  False, 1,    None, False, False, _K.MILD_MEMORY,        "yellow",       "mild-backward"),
    (_K.RUNAWAY,               _F.RUNAWAY,     _,  True,  False, 4,    None, True,  False, None,                  "bold magenta", ""),
    (_K.FLAT,                  _F.FLAT,        _,  False, True,  None, 0,    False, False, None,                  "green",        ""),
    (_K.MILD_MEMORY,           _F.MILD,        _M, False, True,  None, 2,    False, False, None,                  "yellow",       ""),
    (_K.SUPERLINEAR_MEMORY,    _F.SUPERLINEAR, _M, False, True,  None, 3,    False, True,  None,                  "bold yellow",  ""),
    (_K.EXPONENTIAL_MEMORY,    _F.EXPONENTIAL, _M, False, True,  None, 4,    False, True,  None,                  "bold red",     ""),
    (_K.LEAK_PER_CALL,         _F.LEAK,        _M, False, True,  None, 5,    False, True,  None,                  "bold red",     ""),
    (_K.PEAK_ONLY,             _F.INCONCLUSIVE, _M, False, True, None, None, False, False, None,                  "dim",          ""),
)
# fmt: on


def _info(row: tuple[Any, ...]) -> KindInfo:
    cells = dict(zip(_COLUMNS, row, strict=True))
    cells["kind"] = str(cells["kind"].value)
    cells["memory_kind"] = cells["memory_kind"].value if cells["memory_kind"] is not None else None
    return KindInfo(**cells)


#: THE table: every verdict kind, in the order of the public tuples (time verdicts, then memory's own).
TABLE: dict[str, KindInfo] = {info.kind: info for info in map(_info, _ROWS)}
#: The order the memory verdicts are listed in (JSON validation, docs): inconclusive last, as before the table.
_MEMORY_ORDER: tuple[str, ...] = tuple(
    k.value for k in (Kind.LINEAR, Kind.FLAT, Kind.MILD_MEMORY, Kind.SUPERLINEAR_MEMORY, Kind.EXPONENTIAL_MEMORY)
)


def info(kind: str) -> KindInfo | None:
    """The table's row of ``kind`` (None: not a verdict kind, e.g. hunt's ``n/a``)."""
    return TABLE.get(str(kind))


def style(kind: str) -> str:
    """The console style of ``kind`` ("" for what the table does not know)."""
    row = info(kind)
    return row.style if row is not None else ""


def short(kind: str) -> str:
    """The short name of ``kind`` (the kind itself where it has none)."""
    row = info(kind)
    return row.short or str(kind) if row is not None else str(kind)


def severity(kind: str) -> int | None:
    """The time rank of ``kind`` (None: not ranked, e.g. inconclusive)."""
    row = info(kind)
    return row.severity if row is not None else None


def memory_severity(kind: str) -> int | None:
    """The memory rank of ``kind`` (None: not ranked)."""
    row = info(kind)
    return row.memory_severity if row is not None else None


def family(kind: str) -> Family | None:
    """The family of ``kind`` (None: not a verdict kind)."""
    row = info(kind)
    return row.family if row is not None else None


def is_exponential(kind: str) -> bool:
    """A time kind reading an exponential law."""
    row = info(kind)
    return row is not None and row.time and row.family == Family.EXPONENTIAL


def reading_kind(growth: str, backward: bool) -> str:
    """The time verdict of a growing fit (``growth``: exponential, superlinear or mild) on the backward pass or the
    transform; KeyError for a growth no kind reads."""
    phase = Phase.BACKWARD if backward else Phase.TRANSFORM
    for row in TABLE.values():
        if row.time and row.phase == phase and row.family == growth:
            return row.kind
    raise KeyError((growth, backward))


def memory_kind(kind: str) -> str:
    """The memory verdict a time verdict's reading names (inconclusive where it names none: a runaway bound, an
    error)."""
    row = info(kind)
    return row.memory_kind if row is not None and row.memory_kind is not None else Kind.INCONCLUSIVE.value


def memory_reading(growth: str) -> str:
    """The memory verdict of a fit's growth (``linear`` -> ``linear``, ``mild`` -> ``mildly-superlinear-memory``,
    ...; inconclusive for anything else)."""
    for row in TABLE.values():
        if row.memory and row.family == growth and row.family != Family.INCONCLUSIVE:
            return row.kind
    return Kind.INCONCLUSIVE.value


def growth_class(kind: str) -> int | None:
    """How steep a growth law ``kind`` reads (flat and linear 0, mild 1, superlinear 2, exponential 3); None: no law."""
    row = info(kind)
    return GROWTH_CLASS.get(row.family) if row is not None else None


class Kinds(Sequence[str]):
    """A live view of the table's kinds that satisfy a predicate, in table order: reads as the tuple (or frozenset)
    of names it replaces (``in``, iteration, ``len``, indexing and slicing, ``+`` with a tuple, ``|`` with a set),
    and follows the table when a row is added."""

    def __init__(self, keep: Callable[[KindInfo], bool], order: Callable[[], Sequence[str]] | None = None) -> None:
        self._keep = keep
        self._order = order

    def _names(self) -> tuple[str, ...]:
        names = self._order() if self._order is not None else tuple(TABLE)
        return tuple(k for k in names if k in TABLE and self._keep(TABLE[k]))

    def __getitem__(self, i: Any) -> Any:
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, kind: object) -> bool:
        row = TABLE.get(kind) if isinstance(kind, str) else None
        return row is not None and self._keep(row)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:
        return self._names() + tuple(other)

    def __radd__(self, other: Sequence[str]) -> tuple[str, ...]:
        return tuple(other) + self._names()

    def __or__(self, other: Any) -> frozenset[str]:
        return frozenset(self._names()) | frozenset(other)

    __ror__ = __or__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, frozenset | set):
            return frozenset(self._names()) == other
        if isinstance(other, Sequence):
            return self._names() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Kinds{self._names()!r}"


class Ranks(Mapping[str, Any]):
    """A live mapping kind -> a column of the table (rows where it is None are left out), in table order."""

    def __init__(self, column: Callable[[KindInfo], Any]) -> None:
        self._column = column

    def __getitem__(self, kind: str) -> Any:
        row = TABLE.get(kind) if isinstance(kind, str) else None
        value = self._column(row) if row is not None else None
        if value is None:
            raise KeyError(kind)
        return value

    def __iter__(self) -> Iterator[str]:
        return (k for k, row in TABLE.items() if self._column(row) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"Ranks({dict(self)!r})"


def _memory_order() -> tuple[str, ...]:
    own = [k for k, row in TABLE.items() if row.memory and k not in (*_MEMORY_ORDER, Kind.INCONCLUSIVE.value)]
    return (*_MEMORY_ORDER, *own, Kind.INCONCLUSIVE.value)


#: The derived views (the names model, comparison, hunt and the renderers export).
TIME_KINDS = Kinds(lambda r: r.time)
MEMORY_KINDS = Kinds(lambda r: r.memory, _memory_order)
PATHOLOGIES = Kinds(lambda r: r.pathology)
FINDINGS = Kinds(lambda r: r.time and r.finding)
MEMORY_FINDINGS = Kinds(lambda r: r.memory and r.memory_finding)
MEMORY_GROWTH = Kinds(lambda r: r.memory_growth)
GROWING = Kinds(lambda r: r.grows)
NOT_GROWING = Kinds(lambda r: r.family in (Family.LINEAR, Family.FLAT))
SEVERITY = Ranks(lambda r: r.severity)
MEMORY_SEVERITY = Ranks(lambda r: r.memory_severity)
STYLE = Ranks(lambda r: r.style or None)


__all__ = [
    "FINDINGS",
    "GROWING",
    "GROWTH_CLASS",
    "MEMORY_FINDINGS",
    "MEMORY_GROWTH",
    "MEMORY_KINDS",
    "MEMORY_SEVERITY",
    "NOT_GROWING",
    "PATHOLOGIES",
    "SEVERITY",
    "STYLE",
    "TABLE",
    "TIME_KINDS",
    "Family",
    "Growth",
    "Kind",
    "KindInfo",
    "Kinds",
    "Phase",
    "Ranks",
    "Source",
    "family",
    "growth_class",
    "info",
    "is_exponential",
    "memory_kind",
    "memory_reading",
    "memory_severity",
    "reading_kind",
    "severity",
    "short",
    "style",
]
