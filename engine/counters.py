"""Cheap global counters of the engine's bookkeeping work.

The engine bumps plain attributes of one module-level object (an attribute increment costs a few
nanoseconds); :func:`measure` snapshots them around a block and yields the deltas::

    with engine.counters.measure() as m:
        g = engine.grad(y, x)
    m.key_comparisons, m.as_dict()
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

#: Counter names, in report order. Integers except the ``*_seconds`` ones.
FIELDS = (
    "key_comparisons",  # node visits inside structural key equality
    "metadata_lookups",  # probes of the global metadata table (register + deregister)
    "metadata_registrations",
    "metadata_deregistrations",
    "trace_rebuilds",  # recorded trace re-derived into a source program
    "derivative_traces_built",
    "derivative_traces_dropped",
    "derivative_ops_rebuilt",  # equations rebuilt into derivative traces and registered (all of them)
    "derivative_ops_live",  # of those, the ones the derivative outputs need (what DCE keeps)
    "nodes_visited",  # graph-walk visits (freeze, rebuild, toposort)
    "ops_executed",  # kernel calls by prepared programs and eager ops
    "transform_seconds",
    "drop_seconds",
)


#: Fields kept as plain attributes; ``metadata_lookups`` is derived from them (see :class:`Counters`).
STORED = tuple(name for name in FIELDS if name != "metadata_lookups") + ("metadata_removals",)


class Counters:
    """The live global counters (one instance: :data:`COUNTERS`).

    Every probe of the metadata table is a registration, a deregistration, or the removal of an
    entry whose last holder went (``metadata_removals``), so ``metadata_lookups`` is their sum, not a
    second attribute bumped next to each of them.
    """

    __slots__ = STORED + ("budget",)

    def __init__(self) -> None:
        for name in STORED:
            setattr(self, name, 0)
        self.budget = None

    @property
    def metadata_lookups(self) -> int:
        return self.metadata_registrations + self.metadata_deregistrations + self.metadata_removals

    def values(self) -> tuple:
        return tuple(getattr(self, name) for name in FIELDS)


COUNTERS = Counters()


class CounterBudgetExceeded(RuntimeError):
    """Raised by key equality once ``key_comparisons`` passes the budget set with :func:`budget`."""


class Snapshot:
    """Counter deltas over a ``measure()`` block (filled in when the block exits)."""

    __slots__ = FIELDS + ("_start",)

    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, 0)
        self._start = COUNTERS.values()

    def _finish(self) -> None:
        for name, start, now in zip(FIELDS, self._start, COUNTERS.values(), strict=True):
            setattr(self, name, now - start)

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in FIELDS}

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.as_dict().items() if v)
        return f"Snapshot({inner})"


@contextlib.contextmanager
def measure() -> Iterator[Snapshot]:
    """Yield a :class:`Snapshot` holding the counter deltas of the block once it exits."""
    snap = Snapshot()
    try:
        yield snap
    finally:
        snap._finish()


def totals() -> dict[str, float]:
    """The live totals since start-up (or the last :func:`reset`)."""
    return dict(zip(FIELDS, COUNTERS.values(), strict=True))


def reset() -> None:
    for name in STORED:
        setattr(COUNTERS, name, 0)


@contextlib.contextmanager
def budget(max_key_comparisons: int | None) -> Iterator[None]:
    """Abort runaway key equality: raise :class:`CounterBudgetExceeded` past this many visits."""
    old = COUNTERS.budget
    COUNTERS.budget = None if max_key_comparisons is None else COUNTERS.key_comparisons + max_key_comparisons
    try:
        yield
    finally:
        COUNTERS.budget = old
