"""The public backend interface: what an autodiff engine implements to be measured by adprof.

A backend is a subclass of :class:`Backend` with class-level *declarations* (its name, cost profiles,
modes, the phases of each mode, the deterministic work metrics it reports per mode, which of those may
decide a verdict and why the others may not, the packages it needs) and one hook that measures a point,
:meth:`Backend.measure_point`. Built-in backends live in :mod:`adprof.backends.builtin`; a third party
registers its own under the entry-point group ``adprof.backends``::

    # pyproject.toml of the plugin
    [project.entry-points."adprof.backends"]
    myengine = "myengine_adprof:MyEngineBackend"

Keep the module that defines the class light (declarations only): adprof loads it in the parent to
check names, modes and packages, and imports the engine itself only in the worker, from
:meth:`Backend.prepare_process` or :meth:`Backend.measure_point`.

What a point carries (:class:`adprof.model.Point`):

* ``times[phase]``: the :data:`STATISTIC` (lower quartile) of ``samples[phase]``, the wall-clock
  (:data:`CLOCK`) repeats of that phase, taken by :func:`measure_phase` / :func:`repeat_timed`
  under :data:`REPEATS`; load only ever slows a run, and a quartile is less fragile than the minimum;
* ``metrics[phase][metric]``: deterministic work metrics (``python_calls`` from
  :func:`count_python_calls`, program sizes such as ``jaxpr_eqns``);
* ``counters``, ``ops``, ``extra`` as before (engine counters, op counts, anything else).

A point that cannot be measured raises :class:`PointFailure` with a ``kind``: ``chain`` (the chain or
the engine raised), ``output`` (not a finite floating-point scalar), ``budget`` (a counter budget ran
out), ``resource`` (RecursionError, MemoryError).
"""

from __future__ import annotations

import contextlib
import cProfile
import functools
import gc
import importlib.metadata
import importlib.util
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from adprof.backend_info import BackendInfo, HuntPlan, generic_cost_phases
from adprof.backends.memory import FIGURES, NOT_ASKED, PEAK
from adprof.chain import Chain
from adprof.constants import DEFAULT_CALLS
from adprof.model import Point, lower_quartile

PhaseCallback = Callable[[str, int | None], None]
#: What to run when a peer backend's packages are missing (one home: every message says it this way).
INSTALL_HINT = "pip install 'adprof[peers]'"


def extra_install_hint(extra: str) -> str:
    """How to install one peer backend's packages: its own extra (``pip install 'adprof[torch]'``)."""
    return f"pip install 'adprof[{extra}]'"


def describe_type(value: Any) -> str:
    """What a chain returned, with its library: ``a torch.Tensor`` rather than ``Tensor``."""
    cls = type(value)
    module = (cls.__module__ or "").split(".")[0]
    return f"a {module}.{cls.__name__}" if module and module != "builtins" else f"a {cls.__name__}"


#: How ``Point.times`` is taken from ``Point.samples`` (the team's statistic) and with which clock.
STATISTIC = "lower quartile"
CLOCK = "wall (perf_counter)"
#: A timed block starts with this sleep, on a fresh scheduler slice (cuts preemptions ~5x on a loaded machine).
YIELD_BEFORE = 0.001


@dataclass(frozen=True)
class RepeatPolicy:
    """How often a phase is repeated at one depth: until ``budget`` seconds are spent or ``most`` runs,
    at least ``least`` runs when the point is cheap, a single run when one run exceeds ``single_over``
    seconds (so that caps on a point's cost still hold)."""

    budget: float = 0.25
    most: int = 7
    least: int = 3
    single_over: float = 0.5

    def more(self, samples: list[float]) -> bool:
        """Whether to run once more after ``samples``."""
        n, spent = len(samples), sum(samples)
        if n == 0:
            return True
        if n >= self.most or samples[0] > self.single_over:
            return False
        return n < self.least or spent < self.budget

    def describe(self) -> str:
        until = f"until {self.budget:g} s; 1 when a run exceeds {self.single_over:g} s"
        return f"{STATISTIC} of 1-{self.most} repeats ({until})"


REPEATS = RepeatPolicy()


class PointFailure(Exception):
    """A point could not be measured; ``kind`` says why, ``point`` holds what was measured.

    Kinds: ``chain``, ``output``, ``budget``, ``resource`` (see the module docstring).
    """

    def __init__(self, kind: str, message: str, phase: str | None = None, point: Point | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.phase = phase
        self.point = point


class UnsupportedOpError(Exception):
    """The chain uses an operation this backend lacks (the message is one line, naming it)."""


def no_phase(name: str, call: int | None) -> None:
    """The default phase callback (does nothing)."""
    return None


# --------------------------------------------------------------------------- statistics and timing


#: The calling thread's scheduler statistics (Linux: on-CPU ns, ns waiting on a run queue, slices).
SCHEDSTAT = "/proc/thread-self/schedstat"


def run_queue_wait() -> float | None:
    """Seconds the calling thread has waited on a run queue (runnable, preempted: the machine's load) since it
    started, from :data:`SCHEDSTAT`; None where the kernel does not say (not Linux, no sched_info)."""
    try:
        with open(SCHEDSTAT, "rb") as f:
            return int(f.read().split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def timed_block() -> Iterator[dict[str, Any]]:
    """Time the ``with`` body: yields a dict that gets ``seconds`` (:func:`time.perf_counter`),
    ``cpu_seconds`` (the calling thread's CPU time, ``time.thread_time``: a call preempted on a loaded machine
    takes longer on the wall clock, not on its CPU clock) and, where the kernel says, ``wait_seconds`` (the
    thread's time runnable but waiting for a core, :func:`run_queue_wait`: what the load added to the wall) when
    it ends; young gc generations collected before, gc disabled during, started on a fresh scheduler slice
    (:data:`YIELD_BEFORE`)."""
    out: dict[str, Any] = {}
    gc.collect(1)
    time.sleep(YIELD_BEFORE)
    gc.disable()
    w0 = run_queue_wait()
    c0, t0 = time.thread_time(), time.perf_counter()
    try:
        yield out
    finally:
        out["seconds"] = time.perf_counter() - t0
        out["cpu_seconds"] = time.thread_time() - c0
        w1 = run_queue_wait()
        if w0 is not None and w1 is not None:
            out["wait_seconds"] = max(w1 - w0, 0.0)
        gc.enable()


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``(wall seconds, fn())``, timed as :func:`timed_block` times."""
    with timed_block() as t:
        out = fn()
    return t["seconds"], out


def timed_cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(wall seconds, CPU seconds of the calling thread, fn())``, timed as :func:`timed_block` times."""
    with timed_block() as t:
        out = fn()
    return t["seconds"], t["cpu_seconds"], out


def more_repeats(samples: list[float], repeats: int | None = None, policy: RepeatPolicy = REPEATS) -> bool:
    """Whether to run once more after ``samples``: exactly ``repeats`` runs when given, else as ``policy`` says."""
    return len(samples) < repeats if repeats else policy.more(samples)


def repeat_timed(
    fn: Callable[[], Any],
    name: str,
    on_phase: PhaseCallback = no_phase,
    policy: RepeatPolicy = REPEATS,
    repeats: int | None = None,
) -> tuple[list[float], Any]:
    """Run ``fn`` under ``policy`` (or exactly ``repeats`` times): ``(wall seconds of each run, last result)``.

    ``on_phase(name, None)`` is called before every run (it resets the parent's phase timeout). Each run
    must do the whole work again: ``fn`` builds fresh objects where the engine caches by identity.
    """
    samples, _, out = repeat_timed_cpu(fn, name, on_phase, policy, repeats)
    return samples, out


def repeat_timed_cpu(
    fn: Callable[[], Any],
    name: str,
    on_phase: PhaseCallback = no_phase,
    policy: RepeatPolicy = REPEATS,
    repeats: int | None = None,
) -> tuple[list[float], list[float], Any]:
    """:func:`repeat_timed` with the calling thread's CPU seconds of each run: ``(walls, cpus, last result)``."""
    samples: list[float] = []
    cpus: list[float] = []
    out: Any = None
    while more_repeats(samples, repeats, policy):
        on_phase(name, None)
        out = None  # the previous result is freed outside the timed block
        t, c, out = timed_cpu(fn)
        samples.append(t)
        cpus.append(c)
    return samples, cpus, out


def count_python_calls(fn: Callable[[], Any]) -> tuple[int, Any]:
    """``(calls, fn())``: Python and C function calls made by ``fn``, from cProfile's C profiler
    (``sum(callcount)``), the garbage collector disabled. Deterministic for deterministic code, but blind
    to work done inside a call (C++ compilers, a ``sorted`` whose comparisons get dearer): declare where it
    may decide."""
    gc.collect()  # with gc disabled inside: finalizers run by a collection would add calls at random
    gc.disable()
    prof = cProfile.Profile()
    prof.enable()
    try:
        out = fn()
    finally:
        prof.disable()
        gc.enable()
    return sum(s.callcount for s in prof.getstats()), out


def record_samples(pt: Point, name: str, samples: list[float]) -> None:
    """Store ``samples`` as phase ``name`` of ``pt``: ``samples[name]`` and ``times[name]`` (lower quartile)."""
    pt.samples[name] = list(samples)
    pt.times[name] = lower_quartile(samples)


def record_metric(pt: Point, phase: str, metric: str, value: float) -> None:
    """Store a deterministic work metric of ``phase``."""
    pt.metrics.setdefault(phase, {})[metric] = value


def measure_phase(
    pt: Point,
    name: str,
    fn: Callable[[], Any],
    on_phase: PhaseCallback = no_phase,
    *,
    repeats: int | None = None,
    python_calls: bool = False,
    policy: RepeatPolicy = REPEATS,
) -> Any:
    """Time ``fn`` as phase ``name`` of ``pt`` (repeats, lower quartile) and return its last result.

    With ``python_calls``, one more untimed run under cProfile records ``metrics[name]["python_calls"]``
    (after the timed runs, so the count is of a warm run: the first call at a new depth differs).
    """
    samples, cpus, out = repeat_timed_cpu(fn, name, on_phase, policy, repeats)
    record_samples(pt, name, samples)
    pt.cpu_samples[name] = cpus  # beside the walls (cpu_times stays the eager calls' own: analysis.jumps reads it)
    if python_calls:
        on_phase(name, None)
        out = None
        calls, out = count_python_calls(fn)
        record_metric(pt, name, "python_calls", calls)
    return out


def installed(module: str) -> bool:
    """Whether top-level ``module`` can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):  # e.g. sys.modules[module] is None
        return False


# --------------------------------------------------------------------------- the interface


@functools.cache
def distribution_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (``jax``, ``array_api_compat``), or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class Backend:
    """An autodiff engine adprof can measure. Subclass it, fill the declarations, implement
    :meth:`measure_point`; register it under the entry-point group ``adprof.backends``.

    Declarations (class attributes, plain data):

    * ``name``: the ``--backend`` name; ``profiles``: cost profiles (``(None,)``: one behaviour);
    * ``modes``: measurable modes (``traced``, ``compile``, ``eager``, ...); ``phases[mode]``: the
      phase names its points carry in ``times``/``samples``;
    * ``metrics[mode]``: deterministic work metrics the points carry in ``metrics[phase]``;
      ``deciding_metrics[mode]``: those that see the mode's work and may decide, in order of preference
      (empty: time decides); ``metric_notes[mode][metric]``: why a reported metric may not decide;
      ``lower_bound_metrics[mode]``: metrics that count work the phase must do (each node of a graph walked,
      each op traced): blind to other work, so they decide only when they themselves grow superlinearly or
      exponentially (the work grows at least as fast), never to call a cost linear;
    * ``requires``: importable top-level packages; ``install_hint``: how to install them;
    * ``statistic``/``clock``: how ``times`` are taken (copied into every Series);
    * ``depths``: suggested depths for time-only series (or None); ``mode_depths[mode]``: the depths of a
      mode's series unless the chain declares its own exactly (``adaptive=False``); ``caps[mode]``: seconds per
      phase for a mode's series unless ``--cap`` or the chain says otherwise (compiles of seconds per point).
    * ``instruction_modes``: modes whose cost phases ``--metric instructions`` counts: ``measure_point``
      then gets ``metric="instructions"``, runs in a worker started under callgrind, measures each phase
      once and stores ``metrics[phase]["instructions"]`` (:mod:`adprof.backends.instructions`).

    What analysis and hunt read (each has a default that is right for a backend that knows nothing of it; they
    reach the analysis as :class:`adprof.backend_info.BackendInfo`, carried on every series, via :meth:`info`):

    * ``cost_phases[mode]``: the phases whose cost is classified and watched by the schedule (absent: eager
      ``backward``, compile ``transform lower compile drop``, else ``transform drop``);
      ``phase_names[mode][phase]``: what a phase does, in words (the cause names the growing phase so);
    * ``remedies[mode]``: the remedies of a time pathology in that mode (absent: the generic ones);
      ``cause_tails[mode]``: a clause the cause of a time pathology ends with; ``bound_tails[mode][metric]``: the
      clause when that lower-bound metric decided; ``checkpoint_remedy``, ``leak_holder``, ``leak_remedies``: the
      memory findings' remedies and the words for what holds a per-call leak;
    * ``deciding_counters``: the ``Point.counters`` keys whose sum decides, before any metric or time (None: what
      the points report; ``()``: counters never decide), read by ``check`` and by hunt's fitness alike;
      ``structural_keys``: the engine compares structural keys (a recording's predicted base applies);
    * ``unsupported_ops``: ops of hunt's generator language the backend lacks; ``no_nested_grad``: modes that
      cannot nest the chain's own gradient (``xp.grad``); ``named_by_profile``: tables name the engine by its
      profile (``v08``), not the backend; ``hunt_plans[mode]``: how hunt searches, checks and attributes a
      generator in that mode (:class:`~adprof.backend_info.HuntPlan`; absent: a peer's whose points are cheap);
      ``specializes_shapes[mode]``: how the mode's compile specializes small shapes, in words (its exact counts are
      then read from the depth they settle on where the program is the same at every depth).
    """

    name: ClassVar[str] = ""
    profiles: ClassVar[tuple[str | None, ...]] = (None,)
    modes: ClassVar[tuple[str, ...]] = ()
    phases: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    deciding_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    lower_bound_metrics: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    metric_notes: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    requires: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = ""
    #: The distributions whose versions name the engine measured (recorded in every series; None: ``requires``).
    distributions: ClassVar[tuple[str, ...] | None] = None
    statistic: ClassVar[str] = REPEATS.describe()
    clock: ClassVar[str] = CLOCK
    depths: ClassVar[tuple[int, ...] | None] = (8, 16, 32, 64, 128)
    instruction_modes: ClassVar[tuple[str, ...]] = ()
    mode_depths: ClassVar[Mapping[str, tuple[int, ...]]] = {}
    caps: ClassVar[Mapping[str, float]] = {}
    #: Seconds of budget one series of a mode needs (``check`` without ``--budget`` then gets at least that per
    #: series: every point of a torch.compile series compiles for seconds, and 60 s for three series measures
    #: one or two depths of each).
    series_budgets: ClassVar[Mapping[str, float]] = {}
    #: Memory figures ``measure_point`` stores when given ``memory=True``, per mode (``saved_bytes`` in
    #: ``Point.memory``, ``retained`` in ``Point.retained``; the worker adds ``peak_bytes`` for every backend):
    #: a mode absent here is never passed ``memory``, so a backend without memory needs no such parameter.
    memory_figures: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    #: Why a memory figure is not measured in a mode (mode -> figure -> sentence: the backend cannot count it).
    memory_notes: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    #: Whether memory is measured without ``--memory`` (where it costs at most 1.2x a time-only check:
    #: ``benchmarks/memory_overhead.py``, docs/memory.md).
    memory_by_default: ClassVar[bool] = False
    #: The failure class the worker catches (the shared one; a plugin may raise a subclass).
    PointFailure: ClassVar[type[PointFailure]] = PointFailure
    # What analysis and hunt read (see the class docstring; :class:`adprof.backend_info.BackendInfo` documents each).
    cost_phases: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    phase_names: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    remedies: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    cause_tails: ClassVar[Mapping[str, str]] = {}
    bound_tails: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    checkpoint_remedy: ClassVar[str] = ""
    leak_holder: ClassVar[str] = ""
    leak_remedies: ClassVar[tuple[str, ...]] = ()
    deciding_counters: ClassVar[tuple[str, ...] | None] = None
    structural_keys: ClassVar[bool] = False
    unsupported_ops: ClassVar[frozenset[str]] = frozenset()
    no_nested_grad: ClassVar[tuple[str, ...]] = ()
    named_by_profile: ClassVar[bool] = False
    hunt_plans: ClassVar[Mapping[str, HuntPlan]] = {}
    specializes_shapes: ClassVar[Mapping[str, str]] = {}

    _prepared: bool = False

    # -- declarations ----------------------------------------------------------------------------
    def missing_packages(self) -> list[str]:
        """Packages of :attr:`requires` that cannot be imported here."""
        return [m for m in self.requires if not installed(m)]

    def versions(self) -> dict[str, str]:
        """Installed versions of :attr:`distributions` (else :attr:`requires`), from their metadata (nothing is
        imported); a distribution that is not installed is left out."""
        names = self.requires if self.distributions is None else self.distributions
        return {n: v for n in names if (v := distribution_version(n)) is not None}

    def check_arguments(self, mode: str, profile: str | None) -> None:
        """Raise ``ValueError`` (one line) for a mode or profile this backend does not have."""
        if mode not in self.modes:
            raise ValueError(f"unknown mode {mode!r} for the {self.name} backend; known: {', '.join(self.modes)}")
        if profile not in self.profiles:
            if self.profiles == (None,):
                raise ValueError(f"the {self.name} backend has no cost profiles (got {profile!r})")
            known = ", ".join(p for p in self.profiles if p)
            raise ValueError(f"unknown {self.name} profile {profile!r}; known: {known}")

    def info(self, mode: str) -> BackendInfo:
        """This backend's declarations for ``mode``, as the plain data a series carries (``Series.backend_info``)."""
        return BackendInfo(
            cost_phases=tuple(self.cost_phases.get(mode, ())) or generic_cost_phases(mode),
            phase_names=dict(self.phase_names.get(mode, {})),
            remedies=tuple(self.remedies.get(mode, ())),
            cause_tail=self.cause_tails.get(mode, ""),
            bound_tails=dict(self.bound_tails.get(mode, {})),
            checkpoint_remedy=self.checkpoint_remedy,
            leak_holder=self.leak_holder,
            leak_remedies=tuple(self.leak_remedies),
            deciding_counters=None if self.deciding_counters is None else tuple(self.deciding_counters),
            structural_keys=self.structural_keys,
            unsupported_ops=tuple(sorted(self.unsupported_ops)),
            nests_grad=mode not in self.no_nested_grad,
            named_by_profile=self.named_by_profile,
            hunt=self.hunt_plans.get(mode, HuntPlan()),
            specializes_shapes=self.specializes_shapes.get(mode, ""),
        )

    def series_fields(self, mode: str) -> dict[str, Any]:
        """The series-level fields of a series measured in ``mode`` (see :class:`adprof.model.Series`)."""
        return {
            "deciding_metrics": list(self.deciding_metrics.get(mode, ())),
            "lower_bound_metrics": list(self.lower_bound_metrics.get(mode, ())),
            "metric_notes": dict(self.metric_notes.get(mode, {})),
            "statistic": self.statistic,
            "clock": self.clock,
        }

    def memory_series_notes(self, mode: str, asked: bool) -> dict[str, str]:
        """``Series.memory_notes`` of a series in ``mode``: every figure when memory is not ``asked`` for, else the
        figures the backend declares it cannot count (a figure it neither measures nor explains gets a note)."""
        if not asked:
            return dict.fromkeys(FIGURES, NOT_ASKED)
        measured = set(self.memory_figures.get(mode, ())) | {PEAK}
        notes = dict(self.memory_notes.get(mode, {}))
        for figure in FIGURES:
            if figure not in measured and figure not in notes:
                notes[figure] = f"the {self.name} backend does not measure it in {mode} mode"
        return {f: notes[f] for f in FIGURES if f in notes}

    def describe(self) -> dict[str, Any]:
        """All declarations as plain data."""
        return {
            "name": self.name,
            "profiles": list(self.profiles),
            "modes": list(self.modes),
            "phases": {m: list(self.phases.get(m, ())) for m in self.modes},
            "metrics": {m: list(self.metrics.get(m, ())) for m in self.modes},
            "deciding_metrics": {m: list(self.deciding_metrics.get(m, ())) for m in self.modes},
            "lower_bound_metrics": {m: list(self.lower_bound_metrics.get(m, ())) for m in self.modes},
            "metric_notes": {m: dict(self.metric_notes.get(m, {})) for m in self.modes},
            "requires": list(self.requires),
            "install_hint": self.install_hint,
            "statistic": self.statistic,
            "clock": self.clock,
            "instruction_modes": list(self.instruction_modes),
            "memory_figures": {m: list(self.memory_figures.get(m, ())) for m in self.modes},
            "memory_notes": {m: dict(self.memory_notes.get(m, {})) for m in self.modes},
            "memory_by_default": self.memory_by_default,
            "cost_phases": {m: list(self.info(m).cost_phases) for m in self.modes},
            "phase_names": {m: dict(self.phase_names.get(m, {})) for m in self.modes},
            "remedies": {m: list(self.remedies.get(m, ())) for m in self.modes},
            "deciding_counters": None if self.deciding_counters is None else list(self.deciding_counters),
            "unsupported_ops": sorted(self.unsupported_ops),
            "no_nested_grad": list(self.no_nested_grad),
        }

    # -- hooks -----------------------------------------------------------------------------------
    def prepare_process(self) -> None:
        """Called before every point in the worker. The default, once per process: ``gc.collect();
        gc.freeze()`` (with a big engine imported a full collection costs ~0.15 s; frozen objects are
        skipped later), then a collection of what the previous point left."""
        if not Backend._prepared:
            gc.collect()
            gc.freeze()
            Backend._prepared = True
        gc.collect()

    def measure_point(
        self,
        chain: Chain,
        mode: str,
        depth: int,
        profile: str | None = None,
        *,
        calls: int = DEFAULT_CALLS,
        on_phase: PhaseCallback = no_phase,
        counter_budget: int | None = None,
        repeats: int | None = None,
        metric: str = "time",
        memory: bool = False,
    ) -> Point:
        """Measure ``chain`` at ``depth`` in ``mode`` (and ``profile``); raise :class:`PointFailure`.

        ``calls``: eager calls per point (call 0 and warm calls); ``on_phase(phase, call)`` must be
        called when each phase (each repeat) starts; ``counter_budget``: for engines with counters;
        ``repeats``: an exact repeat count instead of :data:`REPEATS`; ``metric``: ``instructions`` in
        one of :attr:`instruction_modes` (passed only then, so a backend without counting needs no
        such parameter); ``memory``: measure the :attr:`memory_figures` of ``mode`` too, outside the timed regions
        (passed only for a mode declared there).
        """
        raise NotImplementedError(f"backend {self.name!r} does not implement measure_point")


__all__ = [
    "CLOCK",
    "DEFAULT_CALLS",
    "REPEATS",
    "STATISTIC",
    "Backend",
    "PhaseCallback",
    "PointFailure",
    "RepeatPolicy",
    "UnsupportedOpError",
    "count_python_calls",
    "distribution_version",
    "installed",
    "lower_quartile",
    "measure_phase",
    "more_repeats",
    "no_phase",
    "record_metric",
    "record_samples",
    "repeat_timed",
    "repeat_timed_cpu",
    "timed",
    "run_queue_wait",
    "timed_block",
    "timed_cpu",
]
