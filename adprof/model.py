"""Plain data passed between adprof's layers: measurement -> fitting/classification -> rendering.

Everything here is a dataclass of plain values (numbers, strings, lists, dicts) so that a whole
report serializes to JSON and loads back without loss; below them, the helpers on points that several
layers share (cost phases, counter sums, seconds). Layer 0: imports only :mod:`adprof.verdicts` (the table of
verdict kinds, whose views the verdict names here are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from adprof import verdicts
from adprof.backend_info import WHOLE_COMPILE as WHOLE_COMPILE  # where torch puts its whole compile
from adprof.backend_info import BackendInfo, declared_info, generic_cost_phases
from adprof.verdicts import Growth, Kind, Source

#: Verdict names (a public contract: JSON `verdict` field, exit codes, guards), declared once in
#: :data:`adprof.verdicts.TABLE` with everything read about them; these names are its views.
EXPONENTIAL_TRANSFORM = Kind.EXPONENTIAL_TRANSFORM.value
SUPERLINEAR_TRANSFORM = Kind.SUPERLINEAR_TRANSFORM.value
EXPONENTIAL_BACKWARD = Kind.EXPONENTIAL_BACKWARD.value
SUPERLINEAR_BACKWARD = Kind.SUPERLINEAR_BACKWARD.value
LINEAR = Kind.LINEAR.value
INCONCLUSIVE = Kind.INCONCLUSIVE.value
ERROR = Kind.ERROR.value

#: Mildly superlinear (exponent between 1.15 and 1.3, n log n-like): an honest reading, not a pathology.
MILD_TRANSFORM = Kind.MILD_TRANSFORM.value
MILD_BACKWARD = Kind.MILD_BACKWARD.value
#: A point ran past its hard timeout and was killed while the measured points looked healthy.
RUNAWAY = Kind.RUNAWAY.value

#: The time verdicts, in the table's order (a live view of :data:`adprof.verdicts.TABLE`).
VERDICTS = verdicts.TIME_KINDS
#: The time pathologies: exponential or superlinear, of the transform or the backward pass.
PATHOLOGIES = verdicts.PATHOLOGIES


class PointStatus(StrEnum):
    """What a point's values are: measured (``exact``), a lower bound (``censored``: stopped by the cap's
    timeout, the budget or the counter budget), or a lower bound of a point killed at its *own* timeout
    after healthy depths (``killed``: a hang or a sudden blowup, a finding in itself)."""

    EXACT = "exact"
    CENSORED = "censored"
    KILLED = "killed"


class CensorReason(StrEnum):
    """Why a censored point stopped: its hard timeout, the run's budget, or the key-comparison budget."""

    TIMEOUT = "timeout"
    BUDGET = "budget"
    COUNTER_BUDGET = "counter budget"


#: The phase event of a point's warm-ups (:attr:`Point.warmup`): it has a timeout of its own, never a point's.
WARMUP_PHASE = "warm-up"


def wait_key(phase: str) -> str:
    """The :attr:`Point.extra` key of a phase's run-queue waits, one per repeat in the order of ``samples``: the
    seconds the measuring thread was runnable but waiting for a core (``/proc/thread-self/schedstat``)."""
    return f"{phase}_wait"


@dataclass
class Point:
    """One measured depth of one (chain, backend, profile, mode).

    times: seconds per phase. Traced: ``record``, ``transform``, ``compile`` (compile+prepare),
      ``run`` (steady), ``drop``. Eager: ``forward0``, ``backward0`` (call 0), ``forward``,
      ``backward`` (steady median of calls 1..K-1), and ``backward_calls`` is in ``extra``.
    counters: phase name -> engine counter dict (``key_comparisons``, ``metadata_lookups``, ...).
      Traced phases: ``record``, ``transform``, ``drop``, ``compile``, ``run``.
      Eager phases: ``forward0``, ``backward0``, ``forward``, ``backward`` and ``backward_calls``
      (a list, one dict per call) in ``extra``.
    ops: ``value_ops``, ``derivative_ops``, ``program_ops`` where known.
    extra: what a backend adds about the point (per-call lists, cache statistics, the chain's value); the
      measuring state (status, calls, wall time) is in typed fields, never here.
    """

    depth: int
    times: dict[str, float] = field(default_factory=dict)
    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    ops: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    #: Deterministic work metrics per phase, for backends without engine counters: phase -> metric name ->
    #: value (``python_calls``, ``jaxpr_eqns``, ``hlo_instructions``, ``autograd_nodes``, ``instructions``).
    #: Which of them may decide a verdict is declared per series (:attr:`Series.deciding_metrics`).
    metrics: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Time repeats per phase (seconds); ``times[phase]`` is the series' statistic of them.
    samples: dict[str, list[float]] = field(default_factory=dict)
    #: The measuring thread's CPU seconds per phase, where the backend reads them (the run ``times`` keeps): a
    #: call preempted on a loaded machine takes longer on the wall clock only.
    cpu_times: dict[str, float] = field(default_factory=dict)
    #: The measuring thread's CPU seconds of each repeat per phase, beside ``samples`` (same order, same length: the
    #: CPU time of the run whose wall time is ``samples[phase][i]``), where the backend reads them (issue #35).
    cpu_samples: dict[str, list[float]] = field(default_factory=dict)
    status: PointStatus = PointStatus.EXACT
    censor_reason: CensorReason | None = None  # censored/killed: why it stopped
    censored_phase: str | None = None  # censored/killed: the phase that was running
    calls: int | None = None  # eager: forward+backward calls measured at this depth (censored: asked for)
    #: Wall time of the whole point request, seen by the parent, without its warm-ups (:attr:`warmup`; censored: until
    #: it was stopped, a lower bound).
    wall_seconds: float | None = None
    #: Wall seconds of the runs of a point that jumped far over its prediction, re-measured to confirm it (a
    #: one-off slow run is not a jump): the point kept is the fastest of them.
    confirm_walls: list[float] = field(default_factory=list)
    #: Why a time schedule measured this point (``explore``, ``fill``, ``sweep``, ``repeat``, ...; "" for the other
    #: schedules): a ``repeat`` run firms up a depth's minimum and is not one of the sweeps' passes.
    scheduled: str = ""
    #: Memory of the point in bytes, where the backend measures it: ``saved_bytes`` (what the gradient keeps alive
    #: between forward and backward: deterministic, identical in two runs) and ``peak_bytes`` (the worker's
    #: high-water mark over the point: measured, noisy, a cross-check of the deterministic figure).
    memory: dict[str, float] = field(default_factory=dict)
    #: Eager: bytes still held after each forward+backward call and ``gc.collect()``, one per call (call 0 first):
    #: bytes that grow with the number of calls at a fixed depth are a leak.
    retained: list[float] = field(default_factory=list)
    #: The forward's program at this depth, read deterministically from the forward alone (issue #34; the reader of
    #: each backend is in :mod:`adprof.backends.program`): ``ops`` (its size), ``flops`` and ``bytes`` (its
    #: arithmetic), ``intermediate_bytes`` (every value it computes, each once); None when unknown.
    program: dict[str, float] | None = None
    #: The warm-ups of the point, outside its timed phases and its timeout (phase :data:`WARMUP_PHASE`): ``once``
    #: (seconds of the one-time warm-up of the process: the first use of each primitive), ``seconds`` (the
    #: untimed call at this depth's shapes before call 0, where a backend compiles per shape: JAX eager),
    #: ``compiles`` and ``compile_seconds`` (the compiles it triggered); ``wall_seconds`` excludes them.
    warmup: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:  # from JSON: plain strings
        self.status = PointStatus(self.status)
        if self.censor_reason is not None:
            self.censor_reason = CensorReason(self.censor_reason)

    @property
    def censored(self) -> bool:
        """A lower bound (censored or killed), never fitted as a value."""
        return self.status is not PointStatus.EXACT


class StopReason(StrEnum):
    """Why a series' depth schedule stopped before it was exhausted (a public contract: JSON ``stop.reason``)."""

    CAP = "cap"  # a phase of the last point took longer than the cap
    PREDICTED_CAP = "predicted cap"  # the next point was predicted over the cap
    BUDGET_SHARE = "budget share"  # this series' share of the budget is used (it may continue in a second pass)
    BUDGET = "budget"  # the run's budget ran out
    COUNTER_BUDGET = "counter budget"  # a point exceeded the key-comparison budget (censored)
    CENSORED = "censored"  # a point ran past the cap when the budget ran out (a censored lower bound)
    RUNAWAY = "runaway"  # a point killed by the budget far past its prediction (killed)
    TIMEOUT = "timeout"  # a point killed at its own hard timeout after healthy depths (killed: a hang)
    NOT_MEASURED = "not measured"  # no point was run (the budget, or an interrupt, came first)
    #: --metric instructions: a callgrind run past its own (100x) limit; valgrind's wall time is not the chain's
    COUNT_TIMEOUT = "count timeout"


class ScheduleEnd(StrEnum):
    """Why a time-decided series' schedule ended (what more budget could or could not have done): a public
    contract (JSON ``schedule_end``)."""

    SETTLED = "settled"  # the decision held over the last two passes
    PASSES = "passes"  # the most passes over the informative depths were measured (more repeats: the same noise)
    POINTS = "points"  # the most points per series were measured
    DEEPEST = "deepest"  # the deepest depth allowed is measured (the chain's, --max-depth, or adprof's limit)
    CAP = "cap"  # a deeper depth is over the cap (measured, killed, or predicted by a model that fits)
    BUDGET = "budget"  # the budget (the series' share or the run's) ran out
    KILLS = "kills"  # points were killed at their timeout


@dataclass
class Stop:
    """Why and where a series stopped (its sentence: :func:`adprof.words.stop_text`; no code reads it)."""

    reason: StopReason
    after: int | None = None  # the deepest depth measured before the stop
    depth: int | None = None  # the depth that was not run, or was cut off
    phase: str | None = None  # the phase concerned (over the cap, predicted, killed in)
    seconds: float | None = None  # the measured or predicted seconds of that phase / point
    limit: float | None = None  # what it was compared with (the cap, the share, the timeout, the counter budget)
    call: int | None = None  # eager: the call that was running when the point was killed
    by_model: str = ""  # PREDICTED_CAP: the deciding model's figure when it predicted
    interrupt: str = ""  # NOT_MEASURED by an interrupt: its signal name

    def __post_init__(self) -> None:
        self.reason = StopReason(self.reason)


#: A point killed by the budget after this many times its predicted time is a runaway.
RUNAWAY_FACTOR = 20.0


@dataclass
class Machine:
    """Where a series was measured: the host, its CPU, and its load while the series ran."""

    host: str = ""
    cpu_model: str = ""
    cpus: int | None = None  # logical CPUs of the host (what the load average is shared by)
    #: The 1-minute load average sampled about once a second while the series ran: mean and peak.
    load_average: float | None = None
    load_peak: float | None = None
    worker: str = ""  # which worker of the executor ran it ("lane 0", a Dask worker's address)

    @property
    def load_per_core(self) -> float | None:
        """Mean load average per logical CPU (None when unknown)."""
        if self.load_average is None or not self.cpus:
            return None
        return self.load_average / self.cpus


@dataclass
class Series:
    """All points of one (chain, backend, profile, mode), in measured order."""

    chain: str
    backend: str
    profile: str | None
    mode: str
    points: list[Point] = field(default_factory=list)
    stop: Stop | None = None  # why the depth schedule stopped before it was exhausted (None: it was not)
    error: str | None = None  # one-line error if the chain failed
    #: The error is bad input, not a finding: a ``--cmd`` program whose output the mode cannot measure (it reports
    #: none of the mode's classified phases); the command ends with that one line, exit 2.
    bad_input: bool = False
    declared_reuse: float | None = None
    params: dict[str, Any] = field(default_factory=dict)  # sweep values, e.g. {"k": 2}
    #: Names of the deterministic metrics in ``Point.metrics`` that see the measured phase's work and may
    #: decide, in order of preference (declared by the backend for this mode). Empty: time decides.
    deciding_metrics: list[str] = field(default_factory=list)
    #: Metric name -> why it may not decide here (e.g. "blind to XLA's C++ compile").
    metric_notes: dict[str, str] = field(default_factory=dict)
    #: The metric asked for (``--metric instructions``): it alone decides, the verdict is inconclusive without it
    #: (never a silent fall-back to time). Empty: the backend's declarations (``deciding_metrics``) apply.
    required_metric: str = ""
    #: Metrics that count work the phase must do (graph nodes walked, ops traced): they decide when they grow
    #: superlinearly or exponentially (the work grows at least as fast), never to call a cost linear.
    lower_bound_metrics: list[str] = field(default_factory=list)
    #: How ``Point.times`` was taken from the repeats: statistic ("lower quartile", "min", "median") and clock.
    statistic: str = ""
    clock: str = ""
    file: str | None = None  # the chain's source file (chains of the same name in two files differ)
    #: What a depth counts (the chain's ``axis``: ``layer``, ``order``, ``unroll``, ``seq_len``, ...).
    axis: str = "layer"
    #: The phases whose cost is classified when the chain names them (empty: :func:`cost_phases` of the mode).
    classified_phases: list[str] = field(default_factory=list)
    machine: Machine | None = None  # where its points were measured (all on one machine)
    #: The fixed depths this series had to measure (a guard's): each one missing fails the guard. Empty: the
    #: depths were the schedule's to choose.
    planned_depths: list[int] = field(default_factory=list)
    #: Depths where a phase jumped far over the depths below and that could not be re-measured to confirm it (the
    #: budget, or a failing re-run): evidence of a jump the verdict cannot rule out.
    unconfirmed_depths: list[int] = field(default_factory=list)
    #: Time-decided series: why the time schedule ended (None: another schedule measured it).
    schedule_end: ScheduleEnd | None = None
    #: Time-decided series: the deepest depth the schedule was allowed (after extending it while it was open).
    deepest_allowed: int | None = None
    #: Versions of the packages the backend measured with, read where the series ran (``{"adprof": "0.1.0",
    #: "numpy": "2.4.6", "torch": "2.13.0+cpu"}``); empty when not measured.
    versions: dict[str, str] = field(default_factory=dict)
    #: Memory figures (``saved_bytes``, ``peak_bytes``, ``retained``) this series does not measure, and why (the
    #: backend cannot count them, memory was not asked for): figure -> sentence.
    memory_notes: dict[str, str] = field(default_factory=dict)
    #: The backend's declarations for this mode (phases, phase names, remedies, deciding counters, ...), set where
    #: the series is measured; None (a report read from JSON, a test's series): its backend's as registered
    #: (:func:`backend_info_of`). Not written to JSON: it is the backend's, not the measurement's.
    backend_info: BackendInfo | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:  # from JSON: a plain dict
        if isinstance(self.stop, dict):
            self.stop = Stop(**self.stop)
        if self.schedule_end is not None:
            self.schedule_end = ScheduleEnd(self.schedule_end)

    @property
    def killed(self) -> Stop | None:
        """The stop of a point killed at its own timeout or far past its prediction (a hang), else None."""
        if self.stop is not None and self.stop.reason in (StopReason.TIMEOUT, StopReason.RUNAWAY):
            return self.stop
        return None

    @property
    def label(self) -> str:
        """``powers[k=2] [engine/v08, traced]``: how every message and renderer names a series."""
        return series_label(self.chain, self.backend, self.profile, self.mode, self.params)


def chain_name(chain: str, params: Mapping[str, Any] | None = None) -> str:
    """The chain's name with its sweep values (``powers[k=2]``: a variant's name already carries them)."""
    if not params or chain.endswith("]"):
        return chain
    return chain + "[" + ",".join(f"{k}={x}" for k, x in params.items()) + "]"


def series_label(
    chain: str, backend: str, profile: str | None, mode: str, params: Mapping[str, Any] | None = None
) -> str:
    """``chain [backend/profile, mode]`` (no ``/profile`` without one): the one spelling of a series."""
    prof = f"/{profile}" if profile else ""
    return f"{chain_name(chain, params)} [{backend}{prof}, {mode}]"


@dataclass
class Settled:
    """Depths an exact reading left out because the compiler specialized their small shapes
    (:mod:`adprof.analysis.settle`): the program is the same at every depth, and the count is constant from
    :attr:`depth` on, within the exact reading's jitter; below it, each compile was a different program's."""

    dropped: list[int] = field(default_factory=list)  # the depths left out, ascending
    depth: int = 0  # the first depth of the settled count
    ops: float = 0.0  # the program's size (``Point.program["ops"]``), the same at every depth
    level: float = 0.0  # the settled count's lowest value
    spread: float = 0.0  # the settled values' spread over their level (at most the jitter allowed)
    dropped_values: list[float] = field(default_factory=list)  # the count at each dropped depth


@dataclass
class Fit:
    """Growth fit of one cost series against depth."""

    metric: str  # what was fitted, e.g. "counters: key_comparisons+metadata_lookups" or "time: transform"
    kind: Growth  # exponential | superlinear | mild | linear | inconclusive (a str given is made a Growth)
    base: float | None = None  # per-layer ratio for exponential
    exponent: float | None = None  # power-law exponent
    halving_ratio: float | None = None  # t(d)/t(d/2) at the deepest pair
    tail_ratios: list[float] = field(default_factory=list)  # per-layer ratios of the tail
    depths: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    # Added by the fit layer (all optional):
    method: str = ""  # "marginal" (exact counters: per-layer differences) or "total" (noisy times)
    tail_depths: list[int] = field(default_factory=list)  # depth at which each tail ratio is measured
    local_powers: list[float] = field(default_factory=list)  # of the marginal cost (0 = linear total)
    halving_depth: int | None = None  # d of the halving pair
    halving_from: int | None = None  # the smaller depth of the pair (d/2 or the nearest measured)
    censored_depths: list[int] = field(default_factory=list)  # lower bounds, not fitted
    censored_values: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The deciding model (every renderer reads these; nothing downstream re-fits):
    source: Source = Source.NONE  # counters | metric | time | memory (a str given is made a Source)
    model: str = ""  # "a + c*b^d" | "a + c*d^p" | "constant"
    overhead: float | None = None  # a (fixed cost, same unit as values)
    scale: float | None = None  # c: the growing part's value at the deepest fitted depth
    interval: list[float] | None = None  # [lo, hi] of the base (exponential) or the exponent (otherwise)
    interval_method: str = ""  # how the interval was obtained ("bootstrap over repeats, 200 resamples", ...)
    statistic: str = ""  # how a depth's value was taken from its repeats (time) / "exact" (counters)
    clock: str = ""
    tail_exponent: float | None = None  # measured local log-log slope of the deepest pair
    model_halving_ratio: float | None = None  # the model's value of the halving ratio at the same pair
    model_tail_exponent: float | None = None
    halving_tolerance: float | None = None  # |ln(measured/model)| allowed by the noise before it contradicts
    curve_depths: list[float] = field(default_factory=list)  # the deciding model's curve, for plots
    curve_values: list[float] = field(default_factory=list)
    reason: str = ""  # inconclusive: why, and the remedy ("raise --cap", "add depths")
    axis: str = "layer"  # what a depth step counts: the base is "x2.15 per order"
    #: A lower bound (killed at the cap) past the last exact depth, far over what this model predicts there:
    #: its depth (the decision reads it as a runaway; the fit's own reading is left as it is).
    runaway_bound: int | None = None
    #: The most the deepest halving of a time reading can grow (a power law's upper bound there, 95% over the
    #: repeats' bootstrap): set where it settled a power law whose interval straddled the bands (None: it did not).
    halving_bound: float | None = None
    # How the noisy reading chose between the power law and the exponential (time fits; see MODEL_CHOICES):
    model_choice: str = ""  # the evidence that decided the family ("" for exact readings)
    ic_delta: float | None = None  # AICc(power) - AICc(exponential): > 0 favours the exponential
    holdout_depths: list[int] = field(default_factory=list)  # the deepest depths each family predicted unseen
    holdout_errors: dict[str, float] = field(default_factory=dict)  # family -> rms |ln(predicted/measured)| there
    grid_edge: list[str] = field(default_factory=list)  # families whose best parameter is pinned at a grid end
    depth_weights: list[float] = field(default_factory=list)  # per fitted depth (mean 1): noisy or off-model: less
    #: Eager backward: the reading of the calls' CPU time (the interference check); a wall-time pathology it
    #: does not show makes the fit inconclusive.
    cpu_kind: str = ""
    cpu_figure: str = ""
    #: The deciding model may predict deeper depths (the schedule's cap prediction): it fits, is not pinned at a
    #: grid edge, and its interval is closed at the top. False: it predicts nothing.
    predicts: bool = False
    #: The time schedule's view of a change of regime: the last depth of the line a growth sets in after, when
    #: too few depths past it read the law (the schedule measures there first). None: no such knee.
    knee: int | None = None
    #: The shallowest depth of the reading when it is of the deepest depths only (the model of all the depths
    #: misfit them: the local exponent changes with depth, as d log d's does). None: all the depths.
    tail_from: int | None = None
    #: The work metric's name where :attr:`source` is ``metric`` (``python_calls``, ``saved_bytes``), else "": what
    #: decisions read (never the :attr:`metric` sentence).
    metric_name: str = ""
    #: The depths left out of an exact reading below the depth its count settles on, where the backend's compile
    #: specializes small shapes and the program is the same at every depth (None: every depth was read).
    settled: Settled | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        # the enum fields stay enums whoever sets them (a fit's kind is reassigned as the reading goes)
        if name == "kind" and not isinstance(value, Growth):
            value = Growth(value)
        elif name == "source" and not isinstance(value, Source):
            value = Source(value)
        object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Noun:
    """How evidence names a figure (``saved-for-backward bytes``) and whether the verb agrees in the plural."""

    text: str
    plural: bool = False


@dataclass(frozen=True)
class Decider:
    """What decides a series: a source and, for a work metric, its name (never a ``"metric:NAME"`` string)."""

    source: Source
    metric_name: str = ""


#: Evidence that chose the family of a noisy reading (``Fit.model_choice``), as the evidence line names it.
CHOICE_AGREE = "information criterion and out-of-sample prediction"
CHOICE_IC = "information criterion"
CHOICE_HOLDOUT = "out-of-sample prediction of the deepest depths"
CHOICE_EDGE = "the other family pinned at its grid edge"
CHOICE_DEFAULT = "no evidence against a power law"
CHOICE_CONFLICT = "conflicting evidence"
CHOICE_FLAT = "no growth over a wide span of depths"  # neither family: the cost is flat (a constant)
CHOICE_CLASS = "the family of the class a work metric decided"  # the cost's rate, fitted in the class's family
MODEL_CHOICES = (
    CHOICE_AGREE,
    CHOICE_IC,
    CHOICE_HOLDOUT,
    CHOICE_EDGE,
    CHOICE_DEFAULT,
    CHOICE_CONFLICT,
    CHOICE_FLAT,
    CHOICE_CLASS,
)


def model_cost(fit: Fit, depth: float) -> float | None:
    """The deciding model's cost at ``depth`` (None without a fitted model; inf past float range)."""
    if not fit.depths or fit.overhead is None or fit.scale is None:
        return None
    a, c, d_max = fit.overhead, fit.scale, float(max(fit.depths))
    try:
        if fit.model == "a + c*b^d" and fit.base:
            return a + c * math.exp(math.log(fit.base) * (depth - d_max))
        if fit.model == "a + c*d^p" and fit.exponent is not None:
            return a + c * (max(depth, 0.0) / d_max) ** fit.exponent
    except OverflowError:
        return math.inf
    return a + c


@dataclass
class TimeJump:
    """A point whose wall time is far beyond what the deciding model predicts there from the depths below it:
    a lower bound of a point that was stopped (``bound``: by the budget or a timeout), or a measured point that
    jumped. Per call for eager points (their call counts may differ)."""

    depth: int
    seconds: float  # the point's wall time (a lower bound when ``bound``)
    predicted: float  # what the deciding model predicts for it, scaled from the depths below
    from_depths: list[int] = field(default_factory=list)  # the measured depths the prediction scales from
    bound: bool = False  # a lower bound: the point was stopped before it finished
    confirmed: bool = True  # measured: re-measured or shown by the deeper depths (else there was no room to)
    cpu: bool = False  # measured: in the measuring thread's CPU time (else in wall time)
    stopped_by: str = ""  # bound: the CensorReason that stopped it ("budget", "timeout", ...)
    phase: str | None = None  # bound: the phase that was running; measured: the phase that grew most

    @property
    def ratio(self) -> float:
        """How many times its prediction the point took (at least, for a bound)."""
        return self.seconds / self.predicted if self.predicted > 0 else math.inf


@dataclass
class Knee:
    """A change of regime: the cost reads linear up to :attr:`depth`, then grows over that line; the law of the
    excess against the steps past the knee (``d - depth``) is :attr:`after` (None: too few depths, or undecided)."""

    depth: int  # the deepest depth of the linear regime
    next_depth: int  # the first depth past it (the knee is between the two)
    before: Fit  # the reading up to the knee
    depths: list[int] = field(default_factory=list)  # the depths past the knee
    excess: list[float] = field(default_factory=list)  # what they cost over the linear model's extrapolation
    slope_ratio: float | None = None  # the cost's slope past the knee (deepest depth) over the line's slope
    after: Fit | None = None
    after_reason: str = ""  # why the law after the knee is undecided
    #: The evidence line the decision wrote for this knee (first in the verdict's evidence): whoever overrides the
    #: knee removes that line, not a line its wording matches.
    evidence: str = ""


#: The program's figures a point may carry (``Point.program``): its size (ops in the forward's program), its
#: arithmetic (FLOPs, bytes) and its intermediates (bytes of every value the forward computes).
PROGRAM_FIGURES = ("ops", "flops", "bytes", "intermediate_bytes")


@dataclass
class Explained:
    """A series' costs read against what should explain them (:mod:`adprof.analysis.explained`): the program's
    own growth (deterministic, from the forward alone), the excess of the deciding cost over it, the
    gradient/forward ratio per depth, and whose cost a growth the forward shares is. Renderers read it."""

    #: The program figure the deciding cost is read against (``ops`` for a transform or compile, ``flops`` for a
    #: run, falling back to ``bytes`` then ``ops``); "" when the points carry none at three depths.
    basis: str = ""
    #: Every program figure measured at three depths or more, against depth (exact readings).
    program_fits: dict[str, Fit] = field(default_factory=dict)
    #: The basis grows faster than linear (mild, superlinear or exponential): the excess decides the verdict.
    #: False: nothing changes (the verdict reads the raw growth, as it always did).
    superlinear: bool = False
    raw_kind: str = ""  # the verdict read on the raw growth against depth
    excess_kind: str = ""  # the verdict read on the excess over the basis ("" when the basis is linear)
    #: The excess as a power law: p' = p - q + 1 (a linear program keeps p); its interval shifted alike.
    excess_exponent: float | None = None
    excess_interval: list[float] | None = None
    excess_base: float | None = None  # an exponential cost's excess: b / b_e (b over a power-law basis)
    #: The gradient's cost over its forward's, per depth (:attr:`ratio_of` says which phases).
    ratio_depths: list[int] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    ratio_of: str = ""
    ratio_slope: float | None = None  # log-log slope of the ratio against depth (Theil-Sen)
    #: Not confidently growing: the slope's 95% interval (Sen's) reaches under RATIO_FLAT; flat or falling, bounded
    #: (None: fewer than three ratios)
    ratio_flat: bool | None = None
    #: The gradient's own cost grows with depth (Sen's 95% lower bound of its log-log slope at least RATIO_FLAT).
    #: A ratio that rises while it does not is its forward falling (XLA compiles the forward of an all-pairs
    #: program in 70 ms at 8 particles and 28 ms at 88, the gradient in ~85 ms at both): read flat, bounded.
    gradient_grows: bool | None = None
    #: Whose cost: the forward's own phase that outgrows the program the same way ("" when none does).
    forward_phase: str = ""
    forward_fit: Fit | None = None
    #: Memory: saved-for-backward bytes read against the forward's intermediates.
    memory_basis: str = ""
    memory_superlinear: bool = False
    memory_raw_kind: str = ""
    memory_excess_kind: str = ""
    memory_excess_exponent: float | None = None
    #: The largest ratio of saved bytes to the basis (the intermediates) over the depths that carry both (None: not
    #: read). At most 1 at every depth: the gradient saves no more than a tape that keeps each intermediate once.
    memory_bound: float | None = None

    @property
    def program_fit(self) -> Fit | None:
        """The basis' fit against depth."""
        return self.program_fits.get(self.basis)

    @property
    def ratio(self) -> float | None:
        """The gradient/forward ratio at the deepest depth that has one."""
        return self.ratios[-1] if self.ratios else None


def held_rate(verdict: Verdict, absolute: bool = False) -> tuple[str, float | None, float | None, str]:
    """What a guard's limits hold of a verdict: (kind, exponent, base, against). By default the excess over the
    program where it grows superlinearly (``against``: " against its program"), else (and with ``absolute``) the
    raw growth against depth, as the verdict's rate gives it."""
    ex = verdict.explained
    if ex is None or not ex.superlinear or not ex.excess_kind:
        return verdict.kind, verdict.exponent, verdict.base, ""
    if absolute:
        return ex.raw_kind or verdict.kind, verdict.exponent, verdict.base, ""
    return verdict.kind, ex.excess_exponent, ex.excess_base, " against its program"


def held_memory_exponent(verdict: Verdict, absolute: bool = False) -> tuple[float | None, str]:
    """The memory exponent a guard's memory limit holds: the saved bytes' excess over the program's intermediates
    where they grow superlinearly (unless ``absolute``), else the raw exponent in depth; and the words for it."""
    mv, ex = verdict.memory, verdict.explained
    raw = mv.exponent if mv is not None else None
    if absolute or ex is None or not ex.memory_superlinear or ex.memory_excess_exponent is None:
        return raw, ""
    return ex.memory_excess_exponent, " against its program's intermediates"


@dataclass
class Verdict:
    """The decision on one series: its kind, THE deciding model (:attr:`fit`, held once), the evidence read
    from it, the cause and the remedies. Every renderer, guard, exit code and the JSON read these fields."""

    kind: str  # one of VERDICTS
    #: THE deciding model (one of counter_fit, time_fit, call0_fit or a work-metric fit, the same object): the
    #: verdict's numbers (:attr:`base`, :attr:`exponent`, ...), every evidence line, the summary, the plot's
    #: curve, the guard and the JSON read it.
    fit: Fit | None = None
    predicted_base: float | None = None
    counter_fit: Fit | None = None
    time_fit: Fit | None = None
    call0_fit: Fit | None = None  # eager: growth of call 0 (cache miss: transform + first backward)
    metric_fits: dict[str, Fit] = field(default_factory=dict)  # deterministic work metrics, as evidence
    evidence: list[str] = field(default_factory=list)
    key_evidence: list[str] = field(default_factory=list)  # the decisive lines (the concise report prints these)
    cause: str = ""
    remedies: list[str] = field(default_factory=list)
    #: Why the verdict is inconclusive, runaway or an error (a sentence; empty for a reading of the fit).
    reason: str = ""
    #: The series had a point killed at its own timeout (a hang): a finding whatever the growth reads.
    killed: bool = False
    amortized: bool | None = None  # eager: do warm calls get cheaper than call 1?
    reuse_agrees: bool | None = None  # when the chain declares `reuse`
    warm_to_call1: float | None = None  # eager: median cost of calls 2..5 / cost of call 1 (deepest point)
    prediction: dict[str, float] | None = None  # the deciding model at the next depth: {"depth", "value"}
    #: Multi-phase modes (compile): the phase whose cost grows most between the first and last depth
    #: ("" when one phase or none grows), each phase's share of that growth, and each phase's own time fit.
    growing_phase: str = ""
    phase_shares: dict[str, float] = field(default_factory=dict)
    phase_fits: dict[str, Fit] = field(default_factory=dict)
    #: Time decided the verdict and the machine was loaded while the series ran (load per core above
    #: :data:`adprof.constants.LOADED_PER_CORE`): other work may have inflated the times.
    loaded_machine: bool = False
    #: Points far over what the deciding model predicts from the depths below them (stopped points' lower
    #: bounds, measured jumps): evidence the decision reads (a runaway, or inconclusive), never fitted.
    jumps: list[TimeJump] = field(default_factory=list)
    #: Where a work metric that is not the cost (a peer's program size or call count: a proxy) decided a growing
    #: class: the cost's own fit (the growing phase's time, in the class's family), whose rate the report gives,
    #: whose model predicts the next depth, and which the schedule reads. None: the deciding fit is the cost (the
    #: engine's counters, which are its work; instructions; time).
    rate_fit: Fit | None = None
    #: A change of regime the decision found (a linear cost, then a growth that sets in): the verdict reads the
    #: law after it (the deepest well-measured segment) when the whole series reads no one law.
    knee: Knee | None = None
    #: The memory decision beside this (time) one: what the gradient holds against depth, and what each call
    #: leaves behind (None: a report without memory, schema 2).
    memory: MemoryVerdict | None = None
    #: Each cost read against what should explain it (the program's size, arithmetic, intermediates; the
    #: forward): None in a report without it (schema 2-3) or where the analysis did not run.
    explained: Explained | None = None

    @property
    def reading(self) -> Fit | None:
        """The fit the verdict's rate is read from: the law past a knee where the verdict reads it (the deepest
        well-measured segment), else the deciding model."""
        if self.knee is not None and self.knee.after is not None and self.kind not in (LINEAR, INCONCLUSIVE):
            return self.knee.after
        return self.rate_fit or self.fit  # flip35: where a proxy decided the class, the rate is the cost's

    @property
    def base(self) -> float | None:
        """The per-layer base of an exponential reading (:attr:`reading`), else None."""
        fit = self.reading
        return fit.base if fit is not None and fit.kind == "exponential" else None

    @property
    def exponent(self) -> float | None:
        """The power-law exponent of the reading (:attr:`reading`; 0 for flat), else None."""
        fit = self.reading
        return fit.exponent if fit is not None else None

    @property
    def halving_ratio(self) -> float | None:
        return self.fit.halving_ratio if self.fit is not None else None

    @property
    def metric(self) -> str:
        """What the deciding model fitted (``counters[transform+drop]: ...``, ``time: backward``)."""
        return self.fit.metric if self.fit is not None else ""

    @property
    def interval_text(self) -> str:
        """The cost's rate: ``x2.00/layer``, ``d^1.72 [1.55, 1.90]``, ``flat`` or ``""`` (the deciding model's figure,
        or, where a proxy decided the class, the cost's own: :attr:`rate_fit`)."""
        if self.knee is not None and self.knee.after is not None and self.reading is self.knee.after:
            return f"{fit_figure(self.reading)} past {self.knee.depth}"
        fit = self.rate_fit or self.fit
        return fit_figure(fit) if fit is not None else ""

    @property
    def is_finding(self) -> bool:
        """A pathology, a failing chain, a hang or a memory finding: what makes ``check`` exit 1."""
        return self.kind in FINDINGS or self.killed or self.memory_finding

    @property
    def memory_finding(self) -> bool:
        """The memory verdict is a finding (superlinear or exponential memory, a leak per call)."""
        return self.memory is not None and self.memory.is_finding

    @property
    def presentation(self) -> str:
        """How the concise report shows it: ``paragraph`` (pathologies), ``line`` (inconclusive, runaway,
        error, mild) or ``row`` (linear: the summary table only)."""
        if self.kind in PATHOLOGIES or self.memory_finding:
            return "paragraph"
        return "row" if self.kind == LINEAR else "line"


#: Verdicts that are findings (exit 1, a guard fails): the pathologies, a failing chain, a runaway.
FINDINGS = verdicts.FINDINGS

#: Memory verdict names (a public contract: JSON ``memory.kind``, exit codes, guards). ``linear``: one residual per
#: layer, what reverse mode holds; ``flat``: no growth with depth (checkpointed, or scanned with remat); a power law
#: with p >= 1.3 or an exponential in depth; bytes that stay held after each call and grow with the calls (a leak).
MEMORY_LINEAR = LINEAR
MEMORY_FLAT = Kind.FLAT.value
MILD_MEMORY = Kind.MILD_MEMORY.value  # 1.15 <= p < 1.3 (n log n-like): an honest reading, not a finding
SUPERLINEAR_MEMORY = Kind.SUPERLINEAR_MEMORY.value
EXPONENTIAL_MEMORY = Kind.EXPONENTIAL_MEMORY.value
LEAK_PER_CALL = Kind.LEAK_PER_CALL.value
#: Only the peak (the worker's high-water mark: noisy) was measured: its figure, never a finding (flip35).
PEAK_ONLY = Kind.PEAK_ONLY.value
MEMORY_VERDICTS = verdicts.MEMORY_KINDS
#: Memory verdicts that are findings: ``check`` exits 1 on them as on a time finding.
MEMORY_FINDINGS = verdicts.MEMORY_FINDINGS
#: The memory figures of a point, as ``Series.memory_notes`` names them.
SAVED_BYTES = "saved_bytes"
PEAK_BYTES = "peak_bytes"
RETAINED = "retained"


@dataclass
class LeakReading:
    """The retained bytes of one depth against the call count (entry i: after calls 0..i): the exact reading of
    :mod:`adprof.analysis.growth` with calls as its axis (:attr:`fit`); a leak is a reading that grows,
    :attr:`bytes_per_call` the mean rise per call over those calls."""

    depth: int
    calls: list[int] = field(default_factory=list)  # the call indices read
    retained: list[float] = field(default_factory=list)  # bytes held after each of them
    leaking: bool | None = None  # None: the reading is undecided (its fit's reason says why)
    bytes_per_call: float = 0.0
    fit: Fit | None = None


@dataclass
class MemoryVerdict:
    """The memory decision on one series, beside its time verdict: one object every renderer, the guard, the
    exit code and the JSON read (sentences are renderings of these fields).

    kind: one of :data:`MEMORY_VERDICTS`. A leak (:attr:`leaking`) decides ``leak-per-call`` whatever the depth
    reading; else the depth reading of the deciding figure (:attr:`growth`): ``saved_bytes`` (deterministic, read
    as an exact metric by the same fits, intervals and decision as counters), or ``peak_bytes`` where only it is
    measured (noisy, read as time is). Not measured at all: ``inconclusive`` with :attr:`measured` False and the
    series' ``memory_notes`` as the reason.
    """

    kind: str = INCONCLUSIVE
    measured: bool = False  # some memory figure was measured (False: "not measured", :attr:`reason` says why)
    #: The depth reading of the deciding figure: linear, flat, mildly-superlinear-memory, superlinear-memory,
    #: exponential-memory or inconclusive ("" when no figure against depth was measured).
    growth: str = ""
    decided_by: str = ""  # SAVED_BYTES or PEAK_BYTES ("" when neither was measured at three depths)
    fit: Fit | None = None  # THE deciding model of bytes against depth (the figure ``decided_by`` names)
    knee: Knee | None = None  # a change of regime the decision found (the growth reads the law after it)
    #: The peak's own reading (noisy: a cross-check), and whether it agrees with the deciding figure's class
    #: (None: not measured, it decided, or it is undecided).
    peak_fit: Fit | None = None
    peak_agrees: bool | None = None
    #: One reading per depth whose points carry retained bytes for at least four calls; :attr:`leaking` is True when
    #: one of them grows, False when every one is flat, None when none grows and one is undecided (or none measured).
    leaks: list[LeakReading] = field(default_factory=list)
    leaking: bool | None = None
    reason: str = ""  # inconclusive or not measured: why (and what would decide)
    evidence: list[str] = field(default_factory=list)
    cause: str = ""
    remedies: list[str] = field(default_factory=list)
    #: Figure -> why the series does not measure it (the series' ``memory_notes``, as the decision read them).
    not_measured: dict[str, str] = field(default_factory=dict)

    @property
    def is_finding(self) -> bool:
        """Superlinear or exponential memory in depth, or a leak per call: ``check`` exits 1 on it."""
        return self.kind in MEMORY_FINDINGS

    @property
    def exponent(self) -> float | None:
        """The power-law exponent of the deciding model in depth (0 for flat), else None."""
        fit = self.knee.after if self.knee is not None and self.knee.after is not None else self.fit
        return fit.exponent if fit is not None and fit.kind != "exponential" else None

    @property
    def base(self) -> float | None:
        """The per-layer ratio of an exponential deciding model, else None."""
        fit = self.knee.after if self.knee is not None and self.knee.after is not None else self.fit
        return fit.base if fit is not None and fit.kind == "exponential" else None

    @property
    def leak(self) -> LeakReading | None:
        """The leaking reading at the deepest depth that leaks (None: no leak)."""
        leaking = [r for r in self.leaks if r.leaking]
        return max(leaking, key=lambda r: r.depth) if leaking else None

    @property
    def bytes_per_call(self) -> float | None:
        """Bytes held per call at the deepest leaking depth (None: no leak)."""
        leak = self.leak
        return leak.bytes_per_call if leak is not None else None


# The figures of a fit and of bytes stay here (their words are :mod:`adprof.words`', which callers import them from):
# :attr:`Verdict.interval_text` reads the figure (a derandomized property test reads that property: its examples are
# drawn from a hash of its source), and adprof/guard/limits.py reads ``model.fmt_bytes``.


def fmt_bytes(n: float | None) -> str:
    """Bytes as ``512 B``, ``4.0 KiB``, ``1.25 MiB``, ``2.00 GiB`` (``-`` for None)."""
    if n is None or not math.isfinite(n):
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(float(n))
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{sign}{n / size:.{1 if unit == 'KiB' else 2}f} {unit}"
    return f"{sign}{n:.0f} B"


def depth_symbol(axis: str) -> str:
    """The power law's variable: ``d`` for layers, else the axis (``seq_len^1.98``)."""
    return "d" if axis in ("", "layer") else axis


def fit_interval(fit: Fit) -> str:
    """The interval a figure shows (time readings: `` [1.55, 1.90]``), else ``""``."""
    iv = fit.interval
    return f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv and fit.source == Source.TIME else ""


def fit_figure(fit: Fit, unit: str | None = None, interval: bool = True) -> str:
    """``d^1.72 [1.55, 1.90]``, ``x2.00/layer [1.99, 2.00]`` (time: with its interval, unless ``interval`` is
    False), ``flat`` or ``""``; the unit is the fit's axis (``x2.15/order``, ``seq_len^1.98``) unless given."""
    unit = unit or fit.axis or "layer"
    shown = fit_interval(fit) if interval else ""
    if fit.kind == Growth.EXPONENTIAL and fit.base is not None:
        return f"x{fit.base:.2f}/{unit}{shown}"
    if fit.exponent is not None and fit.kind != Growth.EXPONENTIAL:
        # an exact count whose marginal cost shrinks (a constant with a few calls of jitter: 1,478,402 ..
        # 1,479,220 over widths 8..64) grows no more than a constant: not "width^-1.96"
        if fit.exponent == 0.0 or (fit.exponent < 0 and fit.source != "time" and fit.kind == Growth.LINEAR):
            return "flat"
        return f"{depth_symbol(unit)}^{fit.exponent:.2f}{shown}"
    return ""


@dataclass
class Result:
    series: Series
    verdict: Verdict
    #: The depth-halving table of the cost phases (and, in eager mode, of ``forward``): phases -> rows.
    halving: dict[str, list[HalvingRow]] = field(default_factory=dict)


@dataclass
class HalvingRow:
    """One depth of the halving table; ``ratio`` is this depth's cost over the next row's (None on the last)."""

    depth: int
    seconds: float | None
    counters: float | None
    ratio: float | None = None
    vs_depth: int | None = None
    reading: str = ""


@dataclass
class Shard:
    """A report of one shard of a run (``--shard K/N``): which part of the whole plan it holds."""

    index: int  # K, from 1
    count: int  # N
    planned: int  # series in the whole (unsharded) plan
    positions: list[int] = field(default_factory=list)  # plan positions of this report's results, in order
    plan: str = ""  # fingerprint of the whole plan: shards of one run share it


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    budget_seconds: float | None = None
    elapsed_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    #: Rows of the sweep table (measured vs predicted base per reuse count), built with the report.
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    shard: Shard | None = None  # set on the report of one shard (``--shard K/N``)
    #: Series whose analysis raised (an internal error): ``chain backend/profile mode: Error: message``, one each.
    #: Their points are kept, their verdicts inconclusive; ``adprof check`` exits 3 after writing the report.
    analysis_errors: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers on points

#: The engine counters that make up the deterministic cost of a phase.
COUNTER_KEYS = ("key_comparisons", "metadata_lookups", "nodes_visited")


def cost_phases(mode: str, backend: str = "") -> tuple[str, ...]:
    """The phases whose cost is classified (and watched by the depth schedule) in ``mode``, as ``backend`` declares
    them (:attr:`adprof.backends.base.Backend.cost_phases`; a backend that declares none: the generic rule,
    :func:`adprof.backend_info.generic_cost_phases`)."""
    return declared_info(backend, mode).cost_phases if backend else generic_cost_phases(mode)


def backend_info_of(series: Series) -> BackendInfo:
    """The backend's declarations for a series: the ones it carries, else its backend's as registered."""
    return series.backend_info or declared_info(series.backend, series.mode)


def classified_phases(series: Series) -> tuple[str, ...]:
    """The phases classified for a series: the chain's own (``cost_phases=``) or its backend's for the mode."""
    return tuple(series.classified_phases) or backend_info_of(series).cost_phases


def counter_totals(
    counters: Mapping[str, Any], phases: Sequence[str] | None = None, keys: Sequence[str] = COUNTER_KEYS
) -> dict[str, float] | None:
    """Per-key totals of ``keys`` summed over the per-phase counter dicts ``counters[phase]`` (every
    phase when ``phases`` is None); None when none of those phases has a counter dict."""
    names = list(counters) if phases is None else [p for p in phases if p in counters]
    dicts = [c for p in names if isinstance(c := counters[p], dict)]
    if not dicts:
        return None
    return {k: float(sum(float(c.get(k, 0) or 0) for c in dicts)) for k in keys}


def counter_value(point: Point, phases: Sequence[str], info: BackendInfo | None = None) -> float | None:
    """Counter cost of a point over phases, or None without counters there: the sum of the counters the backend
    declares deciding (``info.deciding_counters``; none declared: :data:`COUNTER_KEYS`, or for a backend or command
    that reports none of those keys the sum of its own counters; declared empty: None, counters never decide).
    The one place counter cost is summed."""
    if info is not None and info.deciding_counters is not None:
        if not info.deciding_counters:
            return None
        declared = counter_totals(point.counters, phases, keys=info.deciding_counters)
        return None if declared is None else sum(declared.values())
    totals = counter_totals(point.counters, phases)
    if totals is None:
        return None
    dicts = [c for p in phases if isinstance(c := point.counters.get(p), dict)]
    if not any(k in c for c in dicts for k in COUNTER_KEYS):
        own = sorted({k for c in dicts for k in c})
        totals = counter_totals(point.counters, phases, keys=own) or {}
    return sum(totals.values())


def lower_quartile_index(n: int) -> int:
    """Index of the lower quartile in ``n`` sorted repeats: an order statistic (a value that was measured,
    below the median: interference only ever slows a run), the same for the tables and the fit."""
    return (n - 1) // 4


def lower_quartile(xs: Sequence[float]) -> float:
    """The lower quartile of ``xs`` (the order statistic :func:`lower_quartile_index` of the sorted values)."""
    ordered = sorted(float(x) for x in xs)
    return ordered[lower_quartile_index(len(ordered))]


def time_value(point: Point, phases: Sequence[str]) -> float | None:
    """Seconds of a point over phases, or None when none of the phases was timed."""
    present = [point.times[p] for p in phases if p in point.times and point.times[p] is not None]
    return float(sum(present)) if present else None


def point_wall(point: Point) -> float | None:
    """A point's wall seconds per call (eager points' call counts may differ; a censored point's calls are the
    ones asked for, so its figure is a lower bound of that average); without a wall (a synthetic point, an older
    report), the sum of its phase times. None when neither is known."""
    wall = point.wall_seconds
    if wall is None:
        timed = [t for t in point.times.values() if t is not None and math.isfinite(t)]
        return float(sum(timed)) if timed else None
    return wall / point.calls if point.calls else wall
