"""The process's CPU time and its threads' run-queue wait around a block of work (issue #35).

A compile whose work runs on the compiler's own threads of this process (XLA) is invisible to the calling thread's
CPU clock (``time.thread_time``: a few ms of a 1 s compile), while the process's CPU clock (``time.process_time``)
sees all of it. On a loaded machine the wall time of the same compile is its CPU time plus the time its threads
spent runnable but not running (preempted: the run-queue wait of ``/proc/self/task/*/schedstat``, Linux): at a load
of 15 on 2 cores, 0.13 s of CPU took 1.1 s of wall time. The wait tells the load apart from work that waits for
something else (a subprocess, I/O): the CPU time covers the work where CPU + run-queue wait make up the wall time
(:func:`adprof.analysis.costs.cpu_clock`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from adprof.model import wait_key

if TYPE_CHECKING:
    from adprof.model import Point

TASKS = "/proc/self/task"
#: ``Point.extra["cpu_clock"][phase]`` of a phase whose ``cpu_samples`` are the process's CPU time (every thread),
#: not the measuring thread's (the default, where a phase is not named there).
PROCESS = "process"


def process_run_queue_wait() -> float | None:
    """Seconds the threads of this process have spent runnable but not running so far (the second field of each
    thread's ``schedstat``, summed; threads that ended are not counted), or None where the kernel does not say."""
    try:
        tids = os.listdir(TASKS)
    except OSError:
        return None
    total, seen = 0, False
    for tid in tids:
        try:
            with open(f"{TASKS}/{tid}/schedstat") as f:
                fields = f.read().split()
            total += int(fields[1])
            seen = True
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9 if seen else None


@contextlib.contextmanager
def process_cpu() -> Iterator[dict[str, float | None]]:
    """Around the ``with`` body: yields a dict that gets ``cpu_seconds`` (the process's CPU time, every thread) and
    ``wait_seconds`` (the run-queue wait of its threads, None where unknown) when the body ends."""
    out: dict[str, float | None] = {}
    w0, c0 = process_run_queue_wait(), time.process_time()
    try:
        yield out
    finally:
        c1, w1 = time.process_time(), process_run_queue_wait()
        out["cpu_seconds"] = c1 - c0
        out["wait_seconds"] = max(0.0, w1 - w0) if w0 is not None and w1 is not None else None


def record_process_cpu(pt: Point, used: Mapping[str, Mapping[str, Sequence[float | None]]]) -> None:
    """Store each phase's process CPU seconds (``used[phase]["cpu"]``, one per timed run, as :func:`process_cpu`
    gave them) as ``pt.cpu_samples[phase]`` beside its walls, the phase marked ``extra["cpu_clock"][phase] =
    "process"``, and the runs' run-queue waits (``used[phase]["wait"]``) as ``extra[wait_key(phase)]`` where
    every run has one. A phase whose runs do not match its samples one to one is left out."""
    for ph, u in used.items():
        cpus, waits = list(u.get("cpu") or ()), list(u.get("wait") or ())
        if not cpus or len(cpus) != len(pt.samples.get(ph, ())) or any(c is None for c in cpus):
            continue
        pt.cpu_samples[ph] = [float(c) for c in cpus if c is not None]
        pt.extra.setdefault("cpu_clock", {})[ph] = PROCESS
        if len(waits) == len(cpus) and all(w is not None for w in waits):
            pt.extra[wait_key(ph)] = [float(w) for w in waits if w is not None]


__all__ = ["PROCESS", "process_cpu", "process_run_queue_wait", "record_process_cpu"]
