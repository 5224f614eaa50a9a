"""Knobs of a measuring run and the measuring defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from adprof.constants import DEFAULT_CALLS, DEFAULT_CAP, DEFAULT_COUNTER_BUDGET
from adprof.model import Fit, Series

DEFAULT_BUDGET = 60.0
DEFAULT_TIMEOUT_FACTOR = 4.0
#: Seconds of the budget kept for classifying and rendering: a base plus a share per series (240 series: 5-6 s
#: classifying, 2-3 s rendering on a loaded 2-core machine, about 25 ms a series), at most a fraction of the
#: budget (so at least 40% of any budget measures).
RESERVE_BASE = 0.5
RESERVE_PER_SERIES = 0.025
RESERVE_MAX_SHARE = 0.6
LOAD_TIMEOUT = 30.0  # importing a chain file
#: Seconds a point's warm-up (``Point.warmup``: first use of each primitive, a compile per shape) may take, whatever
#: the point's timeout: a fresh JAX worker's first use of every primitive of a real objective took 8.3 s.
WARMUP_TIMEOUT = 30.0
#: The shortest hard timeout of a phase, whatever the cap: below it a loaded machine's scheduling delays,
#: not the chain, would decide that a point hangs.
MIN_TIMEOUT = 0.25
STARTUP_TIMEOUT = 60.0  # a worker importing numpy, scipy and the engine


@dataclass
class MeasureConfig:
    """Knobs of a measuring run (the CLI fills them)."""

    cap: float = DEFAULT_CAP  # seconds per phase; a series stops past it
    cap_given: bool = False  # --cap was given: it wins over a chain's own cap
    budget: float = DEFAULT_BUDGET  # seconds of wall time for the whole run
    timeout_factor: float = DEFAULT_TIMEOUT_FACTOR  # hard timeout per phase = factor x cap
    calls: int = DEFAULT_CALLS  # eager calls per point
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET  # key comparisons per point
    jobs: int = 2  # parallel workers
    depths: tuple[int, ...] | None = None  # explicit depths (else adaptive)
    unit_steps: bool = False  # unit steps only (the ratio table)
    max_depth: int | None = None  # overrides the chain's largest declared depth
    structure: bool = True
    #: Measure memory (``--memory`` / ``--no-memory``): None, each backend's default (``memory_by_default``).
    memory: bool | None = None
    started: float | None = None  # time.monotonic() when the run began (the budget counts from it)
    reserve: float | None = None  # seconds kept for classifying and rendering (None: :meth:`reserve_for`)
    #: The deciding model's growth to a depth (the caller injects the analysis; measure does not import it):
    #: ``predictor(series, depth) -> (cost ratio depth/deepest, model figure) | None``.
    predictor: Callable[[Series, int], tuple[float, str] | None] | None = field(default=None, repr=False, compare=False)
    #: The deciding time fit of a series, for the time schedule (``assess(series, full)``; ``full``: with the
    #: bootstrap, as the verdict will be; else the point estimate and profile interval): None when it has none.
    assess: Callable[[Series, bool], Fit | None] | None = field(default=None, repr=False, compare=False)
    #: The depths of ``series`` where a measured phase jumps far over what the depths below predict and that were
    #: not re-measured (``jumps(series)``; ``confirmed=True``: re-measured or not): the series re-measures them
    #: once it is measured (a burst of load is over by then).
    jumps: Callable[..., list[int]] | None = field(default=None, repr=False, compare=False)
    #: The exact (counted) reading of a series is still open (``open_exact(series)``: undecided, or a change of
    #: regime with too few depths past it): the adaptive schedule fills in the unmeasured depths below its deepest
    #: before it ends (a verdict never asks for a larger cap while the budget could measure those).
    open_exact: Callable[[Series], bool] | None = field(default=None, repr=False, compare=False)

    @property
    def deadline(self) -> float | None:
        """The run's absolute end (``time.monotonic()``), when ``started`` is known."""
        return None if self.started is None else self.started + self.budget

    def reserve_for(self, n_series: int) -> float:
        """Seconds of the budget kept for classifying and rendering ``n_series`` series."""
        if self.reserve is not None:
            return self.reserve
        return min(RESERVE_BASE + RESERVE_PER_SERIES * n_series, RESERVE_MAX_SHARE * self.budget)

    @property
    def timeout(self) -> float:
        """The hard timeout of a phase: ``timeout_factor`` x ``cap``, at least :data:`MIN_TIMEOUT`."""
        return max(self.timeout_factor * self.cap, MIN_TIMEOUT)
