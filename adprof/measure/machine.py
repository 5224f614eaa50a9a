"""Which machine measures a series: host, CPU model, and its load average sampled while the series runs."""

from __future__ import annotations

import functools
import os
import platform
import socket
import threading
from typing import Any

from adprof.model import Machine

SAMPLE_SECONDS = 1.0


@functools.cache
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):  # not on this platform
        return None


class LoadSampler:
    """Context manager: the 1-minute load average at the start, about once a second, and at the end."""

    def __init__(self, interval: float = SAMPLE_SECONDS) -> None:
        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        x = _load()
        if x is not None:
            self.samples.append(x)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> LoadSampler:
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="adprof-load", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval)
        self._sample()

    def machine(self, worker: str = "") -> Machine:
        """This host, with the load seen so far."""
        samples = list(self.samples)
        return Machine(
            host=socket.gethostname(),
            cpu_model=_cpu_model(),
            cpus=os.cpu_count(),
            load_average=round(sum(samples) / len(samples), 3) if samples else None,
            load_peak=round(max(samples), 3) if samples else None,
            worker=worker,
        )


def merged(first: Machine | None, second: Machine) -> Machine:
    """The machine of a series measured in two passes (the second pass continues the first)."""
    if first is None or first.host != second.host or first.load_average is None:
        return second
    avg = second.load_average
    if avg is not None:
        avg = round((first.load_average + avg) / 2, 3)
    peaks = [x for x in (first.load_peak, second.load_peak) if x is not None]
    peak = max(peaks) if peaks else None
    return Machine(second.host, second.cpu_model, second.cpus, avg, peak, second.worker)


__all__ = ["LoadSampler", "merged"]
