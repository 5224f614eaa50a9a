"""Defaults and thresholds shared by several layers (layer 0: imports nothing of adprof).

Each number has one home here; modules import it under this name.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: Eager mode: forward+backward calls per depth (call 0, the cache miss, then warm calls).
DEFAULT_CALLS = 6
#: Seconds per phase; a series stops past it (``--cap``).
DEFAULT_CAP = 1.5
#: Per-layer cost ratio above which growth counts as exponential: the fit's tail-ratio threshold,
#: the depth schedule's "keep unit steps" test and the structure probe's at-risk flag.
EXPONENTIAL_RATIO = 1.15
#: Key comparisons allowed per point (a runaway point stops deterministically, as a censored one).
DEFAULT_COUNTER_BUDGET = 50_000_000
#: Steady runs per traced point (after one warm-up run).
RUN_REPEATS = 3
#: Load average per logical CPU above which a machine counts as loaded while a series ran: at least half a
#: core's worth of runnable work beyond one per core (adprof's own lanes fill one per core). A time-decided
#: verdict measured there is flagged (``Verdict.loaded_machine``).
LOADED_PER_CORE = 1.5
#: Nominal native speed (instructions per second) of a point whose time is taken from its instruction count
#: (``--metric instructions`` where the program does not time a phase, and the peers' counted points): the
#: cap and the schedule's predictions then apply to a deterministic native-time estimate, never to
#: valgrind's wall time. A fast core: torch's C++ backward runs ~9e9/s natively on this project's machines,
#: XLA's compile 2.3-4.6e9/s (so its estimate is 2-4x low). Too low a speed would stop a counted series
#: before it can be read (XLA's compile of the sin chain needs depth 200); the budget bounds the callgrind
#: runs anyway.
NOMINAL_INSTRUCTION_RATE = 1e10
#: ``Series.clock`` of a series whose times are its instruction counts at that nominal speed (the peers'
#: counted points): no clock was read.
NOMINAL_CLOCK = f"nominal (instructions / {NOMINAL_INSTRUCTION_RATE:.3g} per s)"
#: ``Fit.clock`` of a time fit read on the measuring thread's CPU time, or on the process's (every thread: a compiler's
#: own threads), where it covers the wall (:func:`adprof.analysis.costs.cpu_clock_name`).
CPU_CLOCK = "thread CPU (thread_time)"
PROCESS_CPU_CLOCK = "process CPU (process_time)"
CPU_CLOCKS = (CPU_CLOCK, PROCESS_CPU_CLOCK)
