"""A call that cannot be bounded from inside (a user's ``__reduce__``, a Dask client talking to a server that
never answers) bounded from outside: it runs in a daemon thread, and the caller waits for it until a deadline.

A signal in the main thread (Ctrl-C, SIGTERM turned into a KeyboardInterrupt) ends the wait at once, whatever
the call is doing. The thread of a call given up on is abandoned: it finishes (or not) on its own, and whatever
it returns or raises then is dropped (``on_late`` may close what it returns: a client connected too late).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class CallTimeout(TimeoutError):
    """The call did not finish within its time; ``seconds``: the time it was given."""

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"{what} did not finish within {seconds:.1f} s")
        self.what, self.seconds = what, seconds


@dataclass
class _Outcome(Generic[T]):
    done: threading.Event = field(default_factory=threading.Event)
    value: T | None = None
    error: BaseException | None = None
    abandoned: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def call_within(
    fn: Callable[[], T],
    seconds: float,
    what: str,
    on_late: Callable[[T], Any] | None = None,
) -> T:
    """``fn()``, or :class:`CallTimeout` once ``seconds`` have passed (the call is abandoned in its thread).

    What ``fn`` raises is raised here (any exception, ``MemoryError`` included); a KeyboardInterrupt in the
    waiting thread propagates at once. ``on_late(value)`` is called in the abandoned thread with a value that
    came after the caller gave up (its exceptions are dropped)."""
    seconds = max(0.0, seconds)
    out: _Outcome[T] = _Outcome()

    def run() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = fn()
        except BaseException as exc:  # handed to the caller, who re-raises it
            error = exc
        with out.lock:  # the caller reads ``done`` under the same lock: given up on, or not, never both
            late = out.abandoned
            if not late:
                out.value, out.error = value, error
            out.done.set()
        if late and error is None and on_late is not None:
            try:
                on_late(value)  # type: ignore[arg-type]
            except BaseException:  # nobody to tell
                pass

    thread = threading.Thread(target=run, name=f"adprof-bounded: {what}", daemon=True)
    end = time.monotonic() + seconds
    thread.start()
    try:
        while not out.done.wait(min(0.1, max(0.0, end - time.monotonic()))):
            if time.monotonic() >= end:
                break
    finally:
        with out.lock:
            finished = out.done.is_set()
            out.abandoned = not finished
    if not finished:
        raise CallTimeout(what, seconds)
    if out.error is not None:
        raise out.error
    return out.value  # type: ignore[return-value]


__all__ = ["CallTimeout", "call_within"]
