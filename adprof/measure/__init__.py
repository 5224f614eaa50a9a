"""Measuring: worker subprocesses, the adaptive depth schedule, caps, timeouts and the shared budget.

Every piece of user code runs in a worker (``python -m adprof.measure.worker``): loading the chain
file, the structure recording and each point. The parent owns the schedule and a hard timeout per
phase (``timeout_factor`` x ``cap``, reset whenever the worker reports that a new phase starts); a
worker that overruns it is killed (by its pid) and replaced, and the point is recorded as censored.
A worker that dies (segfault) or raises RecursionError/MemoryError is a finding on that series,
never a crash of adprof.

Modules: :mod:`~adprof.measure.client` (the parent's worker handle), :mod:`~adprof.measure.worker`
(the child), :mod:`~adprof.measure.schedule` (depths and predictions), :mod:`~adprof.measure.budget`,
:mod:`~adprof.measure.series` (one series), :mod:`~adprof.measure.pool` (lanes and a whole run),
:mod:`~adprof.measure.structure_probe` (recording the forward graph). Layer 3: imports model,
constants, chain and backends, never analysis.
"""

from adprof.constants import DEFAULT_CALLS, DEFAULT_CAP
from adprof.measure.budget import Budget
from adprof.measure.client import LoadError, Worker, WorkerCrashed, WorkerTimeout, list_chains
from adprof.measure.config import DEFAULT_BUDGET, MeasureConfig
from adprof.measure.pool import LanePool, Measured, measure_all
from adprof.measure.schedule import Schedule, halving_depths, over_cap, predict_next
from adprof.measure.series import SeriesSpec, run_series

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CALLS",
    "DEFAULT_CAP",
    "Budget",
    "LanePool",
    "LoadError",
    "MeasureConfig",
    "Measured",
    "Schedule",
    "SeriesSpec",
    "Worker",
    "WorkerCrashed",
    "WorkerTimeout",
    "halving_depths",
    "list_chains",
    "measure_all",
    "over_cap",
    "predict_next",
    "run_series",
]
