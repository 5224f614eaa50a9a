"""The wall-clock budget shared by all series of a run."""

from __future__ import annotations

import threading
import time


class Budget:
    """Wall-clock budget shared by all series (thread-safe)."""

    def __init__(self, seconds: float, lanes: int, start: float | None = None, reserve: float = 0.0) -> None:
        self.seconds = max(seconds - reserve, 0.0)  # the config caps the reserve (RESERVE_MAX_SHARE)
        self.start = time.monotonic() if start is None else start
        self.lanes = max(1, lanes)
        self._lock = threading.Lock()
        self.pending = 0  # series not yet started
        self.running = 0

    @property
    def deadline(self) -> float:
        return self.start + self.seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def add(self, n: int) -> None:
        with self._lock:
            self.pending += n

    def claim(self) -> float:
        """A starting series' share of the remaining budget (seconds)."""
        with self._lock:
            n = self.pending + self.running
            self.pending = max(0, self.pending - 1)
            self.running += 1
        rem = self.remaining()
        if rem <= 0:
            return 0.0
        return min(rem, rem * self.lanes / max(n, 1))

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
