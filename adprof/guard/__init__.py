"""Scaling guards for CI: fail when a chain's cost grows faster than its limits.

A guard measures a chain at a fixed list of depths (its declared ones, else :data:`DEFAULT_DEPTHS`: no
time-dependent schedule), decides the growth and compares it with two limits: ``max_base`` (per-layer ratio,
for exponential growth) and ``max_exponent`` (power-law exponent). Where the backend has deterministic
counters (the engine), the verdict is decided on them, so a guard gives the same answer on a loaded CI
machine; a runaway point is stopped by the counter budget (also deterministic) and counts as a censored
lower bound. Peers decide on a deterministic work metric where the backend declares one (e.g. JAX traced:
Python call counts), exactly as the engine's counters; where time decides, the limits get a tolerance. A
point killed at its own timeout (a hang) fails the guard whatever the growth of the depths before it.

``adprof guard`` and the pytest fixture take one path: :func:`guard_specs` plans the series, the measuring
pool runs them in supervised workers (:func:`adprof.measure.measure_all`) with :func:`guard_config`, the
report decides them, and :func:`guard_checks` compares them with the limits.

The package's rooms: :mod:`~adprof.guard.limits` (the limits and ``[tool.adprof.guard]``),
:mod:`~adprof.guard.outcome` (the checks as data), :mod:`~adprof.guard.checks` (time and baseline),
:mod:`~adprof.guard.memory` (memory limits), :mod:`~adprof.guard.plan` (planning and running). The renderers are
in :mod:`adprof.render.guard`.

Limits come from, in order: explicit arguments, a ``@pytest.mark.adprof_guard(...)`` marker,
``[tool.adprof.guard]`` in ``pyproject.toml``, and the defaults below.
"""

from __future__ import annotations

from adprof.guard.checks import (
    check_against_baseline,
    check_result,
    guard_checks,
    missing_depths,
    missing_text,
    needed_seconds,
    series_key,
    tolerance_for,
)
from adprof.guard.limits import (
    BYTE_UNITS,
    DEFAULT_MAX_BASE,
    DEFAULT_MAX_EXPONENT,
    LIMIT_KEYS,
    TIME_TOLERANCE,
    GuardConfigError,
    GuardLimits,
    choose_limits,
    parse_bytes,
    pyproject_guard_table,
    pyproject_path,
)
from adprof.guard.memory import memory_check, with_baseline_memory, with_memory
from adprof.guard.outcome import (
    ADVICE_FACTOR,
    BaselineRef,
    BaselineRule,
    BaselineState,
    GuardCheck,
    GuardReport,
    MemoryBaseline,
    MemoryCheck,
    MemoryLimit,
    MemoryPart,
    MemoryState,
    MissingDepths,
    Noise,
    Outcome,
    Reading,
)
from adprof.guard.plan import (
    DEFAULT_DEPTHS,
    GUARD_BUDGET,
    GUARD_CAP,
    GUARD_COUNTER_BUDGET,
    guard_config,
    guard_depths,
    guard_specs,
    guard_targets,
    plan_guard,
    settle_noisy,
    target_of,
    unguarded_series,
)
from adprof.util.text import depth_ranges

__all__ = [
    "ADVICE_FACTOR",
    "BYTE_UNITS",
    "DEFAULT_DEPTHS",
    "DEFAULT_MAX_BASE",
    "DEFAULT_MAX_EXPONENT",
    "GUARD_BUDGET",
    "GUARD_CAP",
    "GUARD_COUNTER_BUDGET",
    "LIMIT_KEYS",
    "TIME_TOLERANCE",
    "BaselineRef",
    "BaselineRule",
    "BaselineState",
    "GuardCheck",
    "GuardConfigError",
    "GuardLimits",
    "GuardReport",
    "MemoryBaseline",
    "MemoryCheck",
    "MemoryLimit",
    "MemoryPart",
    "MemoryState",
    "MissingDepths",
    "Noise",
    "Outcome",
    "Reading",
    "check_against_baseline",
    "check_result",
    "choose_limits",
    "depth_ranges",
    "guard_checks",
    "guard_config",
    "guard_depths",
    "guard_specs",
    "guard_targets",
    "memory_check",
    "missing_depths",
    "missing_text",
    "needed_seconds",
    "parse_bytes",
    "plan_guard",
    "settle_noisy",
    "pyproject_guard_table",
    "pyproject_path",
    "series_key",
    "target_of",
    "tolerance_for",
    "unguarded_series",
    "with_baseline_memory",
    "with_memory",
]
