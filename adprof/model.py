"""Plain data passed between adprof's layers: measurement -> fitting/classification -> rendering.

Everything here is a dataclass of plain values (numbers, strings, lists, dicts) so that a whole
report serializes to JSON and loads back without loss; below them, the helpers on points that several
layers share (cost phases, counter sums, seconds). Layer 0: imports nothing of adprof.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: Verdict names (a public contract: JSON `verdict` field, exit codes, guards).
EXPONENTIAL_TRANSFORM = "exponential-transform"
SUPERLINEAR_TRANSFORM = "superlinear-transform"
EXPONENTIAL_BACKWARD = "exponential-backward"
SUPERLINEAR_BACKWARD = "superlinear-backward"
LINEAR = "linear"
INCONCLUSIVE = "inconclusive"
ERROR = "error"

#: Mildly superlinear (exponent between 1.15 and 1.3, n log n-like): an honest reading, not a pathology.
MILD_TRANSFORM = "mildly-superlinear-transform"
MILD_BACKWARD = "mildly-superlinear-backward"
#: A point ran past its hard timeout and was killed while the measured points looked healthy.
RUNAWAY = "runaway"

VERDICTS = (
    EXPONENTIAL_TRANSFORM,
    SUPERLINEAR_TRANSFORM,
    EXPONENTIAL_BACKWARD,
    SUPERLINEAR_BACKWARD,
    LINEAR,
    INCONCLUSIVE,
    ERROR,
    MILD_TRANSFORM,
    MILD_BACKWARD,
    RUNAWAY,
)
PATHOLOGIES = VERDICTS[:4]


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


@dataclass
class Series:
    """All points of one (chain, backend, profile, mode), in measured order."""

    chain: str
    backend: str
    profile: str | None
    mode: str
    points: list[Point] = field(default_factory=list)
    stopped: str | None = None  # why the depth schedule stopped ("stopped after depth 25: ...")
    error: str | None = None  # one-line error if the chain failed
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
    #: How ``Point.times`` was taken from the repeats: statistic ("lower quartile", "min", "median") and clock.
    statistic: str = ""
    clock: str = ""
    file: str | None = None  # the chain's source file (chains of the same name in two files differ)


@dataclass
class Fit:
    """Growth fit of one cost series against depth."""

    metric: str  # what was fitted, e.g. "counters: key_comparisons+metadata_lookups" or "time: transform"
    kind: str  # "exponential" | "superlinear" | "linear" | "inconclusive"
    base: float | None = None  # per-layer ratio for exponential
    exponent: float | None = None  # power-law exponent
    halving_ratio: float | None = None  # t(d)/t(d/2) at the deepest pair
    tail_ratios: list[float] = field(default_factory=list)  # per-layer ratios of the tail
    r2_exponential: float | None = None
    r2_power: float | None = None
    depths: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    # Added by the fit layer (all optional):
    method: str = ""  # "marginal" (exact counters: per-layer differences) or "total" (noisy times)
    tail_depths: list[int] = field(default_factory=list)  # depth at which each tail ratio is measured
    local_powers: list[float] = field(default_factory=list)  # of the marginal cost (0 = linear total)
    halving_depth: int | None = None  # d of the halving pair
    halving_from: int | None = None  # the smaller depth of the pair (d/2 or the nearest measured)
    log_intercept_exponential: float | None = None  # ln C = a + b*d (Theil-Sen on the totals)
    log_slope_exponential: float | None = None
    log_intercept_power: float | None = None  # ln C = a + p*ln d
    log_slope_power: float | None = None
    censored_depths: list[int] = field(default_factory=list)  # lower bounds, not fitted
    censored_values: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The deciding model (every renderer reads these; nothing downstream re-fits):
    source: str = ""  # "counters" | "metric" | "time"
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


@dataclass
class Verdict:
    kind: str  # one of VERDICTS
    base: float | None = None
    exponent: float | None = None
    halving_ratio: float | None = None
    predicted_base: float | None = None
    counter_fit: Fit | None = None
    time_fit: Fit | None = None
    evidence: list[str] = field(default_factory=list)
    cause: str = ""
    remedies: list[str] = field(default_factory=list)
    amortized: bool | None = None  # eager: do warm calls get cheaper than call 1?
    reuse_agrees: bool | None = None  # when the chain declares `reuse`
    # Added by the classify layer (all optional):
    metric: str = ""  # the primary metric that decided the verdict
    call0_fit: Fit | None = None  # eager: growth of call 0 (cache miss: transform + first backward)
    warm_to_call1: float | None = None  # eager: median cost of calls 2..5 / cost of call 1 (deepest point)
    #: THE deciding model (one of counter_fit, time_fit, call0_fit or a work-metric fit): the verdict, every
    #: evidence line, the summary, the plot's curve, the guard and the JSON read it.
    fit: Fit | None = None
    metric_fits: dict[str, Fit] = field(default_factory=dict)  # deterministic work metrics, as evidence
    interval_text: str = ""  # e.g. "d^1.72 [1.55, 1.90]" or "x2.00/layer [1.99, 2.00]"
    prediction: dict[str, float] | None = None  # the deciding model at the next depth: {"depth", "value"}
    key_evidence: list[str] = field(default_factory=list)  # the decisive lines (the concise report prints these)


@dataclass
class Result:
    series: Series
    verdict: Verdict


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
class Report:
    results: list[Result] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    budget_seconds: float | None = None
    elapsed_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    #: Rows of the sweep table (measured vs predicted base per reuse count), built with the report.
    sweeps: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- helpers on points

#: The engine counters that make up the deterministic cost of a phase.
COUNTER_KEYS = ("key_comparisons", "metadata_lookups", "nodes_visited")


def cost_phases(mode: str) -> tuple[str, ...]:
    """The phases whose cost is classified (and watched by the depth schedule) for a mode."""
    if mode == "eager":
        return ("backward",)
    if mode == "compile":
        return ("transform", "lower", "compile", "drop")
    return ("transform", "drop")


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


def counter_value(point: Point, phases: Sequence[str]) -> float | None:
    """Counter cost of a point over phases (sum of :data:`COUNTER_KEYS`; a command that reports none of
    those keys: the sum of its own counters), or None without counters there."""
    totals = counter_totals(point.counters, phases)
    if totals is None:
        return None
    dicts = [c for p in phases if isinstance(c := point.counters.get(p), dict)]
    if not any(k in c for c in dicts for k in COUNTER_KEYS):
        own = sorted({k for c in dicts for k in c})
        totals = counter_totals(point.counters, phases, keys=own) or {}
    return sum(totals.values())


def time_value(point: Point, phases: Sequence[str]) -> float | None:
    """Seconds of a point over phases, or None when none of the phases was timed."""
    present = [point.times[p] for p in phases if p in point.times and point.times[p] is not None]
    return float(sum(present)) if present else None


def fmt_seconds(s: float | None, ms_digits: int = 2) -> str:
    """Seconds as ``12.30 ms`` / ``4.56 s`` / ``-`` (``ms_digits`` decimals below one second)."""
    if s is None:
        return "-"
    if s < 1e-3 and ms_digits > 0:
        return f"{s * 1e6:.0f} us"
    if s < 1:
        return f"{s * 1e3:.{ms_digits}f} ms"
    return f"{s:.2f} s"
