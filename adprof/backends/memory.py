"""Memory of a point, outside its timed regions: saved-for-backward bytes, the worker's peak, bytes retained per call.

Three figures (:attr:`adprof.model.Point.memory` and :attr:`adprof.model.Point.retained`, docs/memory.md):

* ``saved_bytes``: what the gradient keeps alive between forward and backward, counted by the backend from its
  own tape or derivative program (exact: identical in two runs);
* ``peak_bytes``: the worker's resident high-water mark over the point above its resident size when the point
  started (``VmHWM`` of ``/proc/self/status`` after resetting it by writing ``5`` to ``/proc/self/clear_refs``;
  Linux >= 4.0): measured, noisy (page-granular, allocator caching), a cross-check only;
* ``retained``: eager modes, after each forward+backward call, its references dropped and ``gc.collect()`` run, the
  bytes still alive of the objects the calls made (weak references, summed by the backend's own sizes: exact),
  cumulative (entry *i*: calls 0..i). Read between the timed calls (:class:`CallMemory`) where what a call leaves
  shows it; torch, whose saved tensors only hooks around the forward see, runs :data:`MEMORY_CALLS` more calls
  after the timed ones instead (:func:`memory_calls`).

What it cost: ``Point.extra["memory_seconds"]``, the wall seconds of the point's memory measurement.

Nothing here runs inside a timed block: the time figures are those of a run without memory.

This module imports no engine.
"""

from __future__ import annotations

import contextlib
import gc
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from adprof.model import Point

#: The memory figures (keys of ``Point.memory``, plus ``retained``; names of ``Series.memory_notes``).
SAVED = "saved_bytes"
PEAK = "peak_bytes"
RETAINED = "retained"
FIGURES = (SAVED, PEAK, RETAINED)
#: Untimed eager calls that measure saved and retained bytes after the timed calls of a point.
MEMORY_CALLS = 3
#: ``Series.memory_notes`` sentences shared by the backends.
NOT_ASKED = "memory was not asked for (--memory)"
NO_PEAK = "no /proc/self/clear_refs here (Linux >= 4.0 resets VmHWM): the peak cannot be reset per point"
NOT_EAGER = "a traced or compiled mode has no calls that could leave memory behind (eager modes only)"

_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"


def _status_bytes(field_name: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_supported() -> bool:
    """Whether this process can reset its resident high-water mark (``/proc/self/clear_refs``)."""
    try:
        with open(_CLEAR_REFS, "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return _status_bytes("VmHWM") is not None


@dataclass
class PeakWatch:
    """The worker's resident high-water mark over one point: :meth:`start` resets it, :meth:`bytes` reads it."""

    rss_at_start: int | None = None

    def start(self) -> None:
        """Reset VmHWM to the current resident size and remember that size."""
        try:
            with open(_CLEAR_REFS, "w", encoding="ascii") as f:
                f.write("5")
        except OSError:
            self.rss_at_start = None
            return
        self.rss_at_start = _status_bytes("VmRSS")

    def bytes(self) -> int | None:
        """VmHWM since :meth:`start` minus the resident size then (>= 0); None when it cannot be read."""
        if self.rss_at_start is None:
            return None
        hwm = _status_bytes("VmHWM")
        return None if hwm is None else max(0, hwm - self.rss_at_start)


@dataclass
class Retained:
    """Weak references to what eager calls made; :meth:`held` is the bytes of those still alive.

    ``size(obj)`` gives an object's bytes and ``key(obj)`` the buffer it holds (so that two views of one buffer
    count once); both are the backend's (numpy arrays, torch tensors, ...). Objects that cannot be weakly
    referenced are skipped (and said so in ``unreferenceable``)."""

    size: Callable[[Any], int]
    key: Callable[[Any], Any] = id
    refs: list[weakref.ref] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    unreferenceable: int = 0

    def track(self, objects: Iterable[Any]) -> None:
        """Watch ``objects`` (each once; None skipped)."""
        for obj in objects:
            if obj is None or id(obj) in self.seen:
                continue
            try:
                ref = weakref.ref(obj)
            except TypeError:
                self.unreferenceable += 1
                continue
            self.seen.add(id(obj))
            self.refs.append(ref)

    def held(self) -> int:
        """``gc.collect()``, then the bytes of the watched objects still alive (each buffer once)."""
        gc.collect()
        alive = [o for r in self.refs if (o := r()) is not None]
        self.seen = {id(o) for o in alive}  # ids of dead objects may be reused
        self.refs = [weakref.ref(o) for o in alive]
        buffers: dict[Any, int] = {}
        for o in alive:
            k = self.key(o)
            if k not in buffers:
                buffers[k] = int(self.size(o))
        del alive
        return sum(buffers.values())


#: ``Point.extra`` key: wall seconds the point spent measuring memory (what memory costs, per point).
MEMORY_SECONDS = "memory_seconds"


@contextlib.contextmanager
def memory_time(pt: Point) -> Any:
    """Add the ``with`` body's wall seconds to ``pt.extra["memory_seconds"]``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        pt.extra[MEMORY_SECONDS] = pt.extra.get(MEMORY_SECONDS, 0.0) + time.perf_counter() - t0


def numpy_root(a: Any) -> Any:
    """The array that owns ``a``'s buffer (``a`` itself, or the base of a view)."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def numpy_buffer(a: Any) -> int:
    """The identity of ``a``'s buffer (its owning array's): two views of one buffer count once."""
    return id(numpy_root(a))


def numpy_bytes(a: Any) -> int:
    """The bytes of ``a``'s buffer (its owning array's)."""
    return int(numpy_root(a).nbytes)


@dataclass
class CallMemory:
    """Memory read between the timed calls of an eager loop, outside every timed block (where the backend can read
    it from what a call leaves, without instrumenting the call): ``saved(loss, state)`` after each forward (None:
    not countable), ``made(x, loss, state, g)`` after each backward (the objects the call made, watched by
    ``retained``), then, the call's references dropped, ``retained.held()``: one ``Point.retained`` entry per
    timed call, call 0 first. The seconds it takes go to ``extra["memory_seconds"]``."""

    saved: Callable[[Any, Any], int | None]
    made: Callable[[Any, Any, Any, Any], Iterable[Any]]
    retained: Retained | None = None
    figures: list[int] = field(default_factory=list)

    def start(self, pt: Point) -> None:
        """Before the first call: collect, then freeze what exists (the collections after each call then scan
        only what the calls made)."""
        with memory_time(pt):
            gc.collect()
            gc.freeze()

    def after_forward(self, pt: Point, loss: Any, state: Any) -> None:
        with memory_time(pt):
            s = self.saved(loss, state)
            if s is not None:
                self.figures.append(int(s))

    def after_backward(self, pt: Point, x: Any, loss: Any, state: Any, g: Any) -> None:
        if self.retained is not None:
            with memory_time(pt):
                self.retained.track(self.made(x, loss, state, g))

    def after_drop(self, pt: Point) -> None:
        """After the call's references are dropped: its ``retained`` entry."""
        if self.retained is not None:
            with memory_time(pt):
                pt.retained.append(float(self.retained.held()))

    def finish(self, pt: Point) -> None:
        """``memory["saved_bytes"]``: the first call's (exact: the calls agree; a disagreement is kept in
        ``extra["saved_bytes_calls"]``)."""
        if self.figures:
            pt.memory[SAVED] = float(self.figures[0])
            if len(set(self.figures)) > 1:
                pt.extra["saved_bytes_calls"] = list(self.figures)


class _NoMemory(CallMemory):
    """An eager loop that measures no memory: every hook does nothing."""

    def __init__(self) -> None:
        super().__init__(saved=lambda loss, state: None, made=lambda x, loss, state, g: ())

    def start(self, pt: Point) -> None:
        return None

    def after_forward(self, pt: Point, loss: Any, state: Any) -> None:
        return None

    def after_backward(self, pt: Point, x: Any, loss: Any, state: Any, g: Any) -> None:
        return None

    def after_drop(self, pt: Point) -> None:
        return None

    def finish(self, pt: Point) -> None:
        return None


#: The :class:`CallMemory` of a loop without memory.
NO_MEMORY: CallMemory = _NoMemory()


def memory_calls(
    pt: Point,
    *,
    leaf: Callable[[], Any],
    forward: Callable[[Any], tuple[Any, Any]],
    backward: Callable[[Any, Any], Any],
    saved: Callable[[Any, Any], int | None],
    retained: Retained | None,
    made: Callable[[Any, Any, Any, Any], Iterable[Any]],
    forward_context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    calls: int = MEMORY_CALLS,
    on_phase: Callable[[str, int | None], None] | None = None,
) -> None:
    """``calls`` untimed eager calls that store ``pt.memory["saved_bytes"]`` and ``pt.retained``.

    Each call: ``x = leaf()``; ``loss, state = forward(x)`` inside ``forward_context()`` (e.g. torch's
    saved-tensor hooks); ``saved(loss, state)`` (between forward and backward; None: not countable);
    ``g = backward(x, state)``; ``made(x, loss, state, g)`` names the objects the call made, watched by
    ``retained``; the references are dropped and ``retained.held()`` is the call's entry. The saved bytes of
    the calls must agree (the figure is exact): the first call's are kept, and a disagreement is recorded in
    ``extra["saved_bytes_calls"]``."""
    with memory_time(pt):
        gc.collect()
        gc.freeze()  # what exists now is not the calls': the full collections after each call then scan theirs only
        figures: list[int] = []
        for i in range(calls):
            if on_phase is not None:
                on_phase("memory", i)
            x = leaf()
            with forward_context():
                loss, state = forward(x)
            s = saved(loss, state)
            if s is not None:
                figures.append(int(s))
            g = backward(x, state)
            if retained is not None:
                retained.track(made(x, loss, state, g))
            del x, loss, state, g
            if retained is not None:
                pt.retained.append(float(retained.held()))
        if figures:
            pt.memory[SAVED] = float(figures[0])
            if len(set(figures)) > 1:
                pt.extra["saved_bytes_calls"] = figures


__all__ = [
    "FIGURES",
    "CallMemory",
    "MEMORY_CALLS",
    "MEMORY_SECONDS",
    "NOT_ASKED",
    "NO_MEMORY",
    "NOT_EAGER",
    "NO_PEAK",
    "PEAK",
    "RETAINED",
    "SAVED",
    "PeakWatch",
    "Retained",
    "memory_calls",
    "memory_time",
    "numpy_buffer",
    "numpy_bytes",
    "numpy_root",
    "peak_supported",
]
