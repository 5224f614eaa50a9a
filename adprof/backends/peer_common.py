"""Helpers shared by the backends: failures and their one-line descriptions (all backends), namespaces,
and what the peers (``jax``, ``torch``, ``autograd``, ``tinygrad``) share: the chain bound to an ``xp``,
the ``drop`` phase, the eager loop and the module-level ``measure_point``.

Timing, repeats and metrics are in :mod:`adprof.backends.base`: ``Point.times`` are wall seconds
(``time.perf_counter``), the lower quartile of ``Point.samples``. Every timed block starts on a fresh
scheduler slice, the garbage collector collected before and disabled inside; one-time costs (first
use of each op) are paid in an untimed warm-up.

This module imports no engine.
"""

from __future__ import annotations

import contextlib
import math
import traceback
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from adprof.backends.base import (
    CLOCK,
    DEFAULT_CALLS,
    INSTALL_HINT,
    REPEATS,
    PhaseCallback,
    PointFailure,
    RepeatPolicy,
    count_python_calls,
    extra_install_hint,
    measure_phase,
    no_phase,
    record_metric,
    timed_block,
)
from adprof.backends.instructions import CountingUnavailable, counted_phase, counter
from adprof.backends.memory import NO_MEMORY, SAVED, CallMemory, memory_calls
from adprof.chain import Chain
from adprof.model import WARMUP_PHASE, Point, lower_quartile_index, wait_key


def not_installed(backend: str, exc: ImportError, packages: str) -> ImportError:
    """The ImportError a peer backend raises when its packages are missing (one line, with the fix)."""
    missing = getattr(exc, "name", None) or str(exc)
    return ImportError(
        f"backend {backend!r} is not installed (needs {packages}; missing {missing}): {extra_install_hint(backend)}"
    )


_seen: set[tuple[Any, ...]] = set()


def first_time(chain: Chain, mode: str) -> bool:
    """True the first time this (chain, mode) is measured in the process (then warm it up)."""
    key = (chain.source, chain.name, tuple(sorted(chain.params.items())), mode)
    if key in _seen:
        return False
    _seen.add(key)
    return True


def _where(exc: BaseException, chain: Chain) -> str:
    code = getattr(getattr(chain.fn, "__wrapped__", chain.fn), "__code__", None)
    files = {f for f in (chain.source, code.co_filename if code else None) if f}
    resolved = {str(Path(f).resolve()) for f in files}
    line = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename in files or str(Path(fr.filename).resolve()) in resolved:
            line = (Path(fr.filename).name, fr.lineno)
    return f" ({line[0]} line {line[1]})" if line else ""


def describe_exception(exc: BaseException, chain: Chain) -> str:
    """``Type: first message line (file line N)``: one line."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    if len(head) > 200:
        head = head[:197] + "..."
    return head + _where(exc, chain)


#: Exception types a backend maps to a failure kind of its own (e.g. the engine's counter budget: ``budget``).
FAILURE_KINDS: dict[type[BaseException], str] = {}


def register_failure_kind(exc_type: type[BaseException], kind: str) -> None:
    """Make :func:`failure` report ``exc_type`` (and subclasses) as a PointFailure of ``kind``."""
    FAILURE_KINDS[exc_type] = kind


def failure_kind(exc: BaseException) -> str:
    """``resource`` (RecursionError, MemoryError), a registered kind, else ``chain``."""
    for exc_type, kind in FAILURE_KINDS.items():
        if isinstance(exc, exc_type):
            return kind
    return "resource" if isinstance(exc, RecursionError | MemoryError) else "chain"


def failure(exc: BaseException, chain: Chain, depth: int, phase: str, pt: Point) -> PointFailure:
    """A PointFailure for an exception raised while measuring ``phase``."""
    if isinstance(exc, PointFailure):
        exc.point = pt
        return exc
    kind = failure_kind(exc)
    msg = describe_exception(exc, chain)
    if kind == "chain":
        where = "recording the chain" if phase in ("record", "forward", "forward0") else phase
        msg = f"depth {depth} ({where}): {msg}"
    return PointFailure(kind, msg, phase, pt)


def check_output(shape: tuple[int, ...], is_float: bool, depth: int, type_name: str | None = None) -> None:
    """Raise an ``output`` PointFailure unless the chain returned a floating-point scalar tensor."""
    if type_name is not None:
        raise PointFailure(
            "output",
            f"depth {depth}: the chain returned {type_name}, not a tensor (build the result with xp operations on x)",
        )
    if tuple(shape) != ():
        raise PointFailure(
            "output",
            f"depth {depth}: the chain's output is not a scalar (shape {tuple(shape)}); reduce it, e.g. with xp.sum",
        )
    if not is_float:
        raise PointFailure("output", f"depth {depth}: the chain's output is not floating point")


def check_finite(value: float, depth: int) -> None:
    """Raise an ``output`` PointFailure when the chain's value is not finite."""
    if not math.isfinite(value):
        raise PointFailure("output", f"depth {depth}: the chain's output is {value} (not finite)")


def namespace(name: str, base: types.ModuleType, overrides: Mapping[str, Any]) -> types.ModuleType:
    """A module copying ``base``'s attributes with ``overrides`` applied (lookups stay plain dict hits).

    Names the copy lacks (lazy module attributes) fall back to ``base``.
    """
    ns = types.ModuleType(name, getattr(base, "__doc__", None))
    ns.__dict__.update({k: v for k, v in vars(base).items() if not k.startswith("__")})
    ns.__dict__.update(overrides)

    def __getattr__(attr: str) -> Any:
        return getattr(base, attr)

    ns.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return ns


def chain_binder(xp: Any) -> Callable[[Chain, int], Callable[[Any], Any]]:
    """``bind(chain, depth)`` -> ``f(x) = chain(xp, x, depth)``, a fresh function on every call (jax and torch
    cache traces by identity). No wrapper around ``bind``: where a count includes the binding, it stays one call."""

    def bind(chain: Chain, depth: int) -> Callable[[Any], Any]:
        def f(x: Any) -> Any:
            return chain(xp, x, depth)

        return f

    return bind


def measure_drop(pt: Point, holder: list[Any], on_phase: PhaseCallback) -> None:
    """Phase ``drop`` of ``pt``: freeing the one object in ``holder`` (the caller keeps no other reference)."""
    measure_phase(pt, "drop", holder.clear, on_phase, repeats=1)


# --------------------------------------------------------------------------- eager loop

#: A per-call meter: ``meter(phase, call)`` is a context manager around one timed call that yields a dict and
#: fills it with ``seconds`` (and anything else, e.g. the engine's ``counters``) when the call ends.
CallMeter = Callable[[str, int], contextlib.AbstractContextManager[dict[str, Any]]]


def wall_meter(phase: str, call: int) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """The default :data:`CallMeter`: wall seconds, taken as :func:`~adprof.backends.base.timed` takes them."""
    return timed_block()


def loss_calls(
    f: Callable[[Any], Any], gradient: Callable[[Any], Any]
) -> tuple[Callable[[Any], tuple[Any, Any]], Callable[[Any, Any], Any]]:
    """:func:`measure_eager`'s ``forward`` and ``backward`` for an engine whose loss carries its own backward
    (torch, tinygrad): ``forward(x)`` is ``f(x)``, kept as the state; ``backward(x, loss)`` calls ``loss.backward()``
    and returns ``gradient(x)``."""

    def forward(x: Any) -> tuple[Any, Any]:
        loss = f(x)
        return loss, loss

    def backward(x: Any, loss: Any) -> Any:
        loss.backward()
        return gradient(x)

    return forward, backward


def measure_eager(
    chain: Chain,
    depth: int,
    *,
    calls: int,
    on_phase: PhaseCallback,
    leaf: Callable[[], Any],
    forward: Callable[[Any], tuple[Any, Any]],
    backward: Callable[[Any, Any], Any],
    scalar: Callable[[Any], float],
    check: Callable[[Any, int], None],
    warm_up: Callable[[], None] | None = None,
    graph_metrics: Callable[[Any, Any], Mapping[str, float]] | None = None,
    python_calls: bool = True,
    policy: RepeatPolicy = REPEATS,
    meter: CallMeter = wall_meter,
    memory: CallMemory | None = None,
    per_shape: Callable[[], tuple[int, float]] | None = None,
) -> Point:
    """Forward+backward calls on fresh leaves from ``leaf()``: call 0, then warm calls until ``calls`` calls
    are made and the warm calls satisfy ``policy`` (as many as 7 while they stay cheap; no more than
    ``calls`` once a call takes over ``policy.single_over`` s).

    ``forward(x) -> (loss, state)`` runs the chain (and whatever a backward needs), ``backward(x,
    state) -> gradient`` runs the backward pass, both synchronous (results ready when they return).
    ``check(loss, depth)`` validates the output of call 0, ``scalar(loss)`` reads its value.
    ``warm_up()`` (untimed, e.g. one call at depth 1 the first time a chain is seen in the process)
    keeps one-time costs of the process (first use of each op) out of call 0. ``meter(phase, call)`` times
    each call (and may measure more: the engine's counters, kept per call in the summary).

    Warm-ups, each announced as phase :data:`~adprof.model.WARMUP_PHASE` (its own timeout: never the point's) and
    read into :attr:`Point.warmup`: ``warm_up()`` (``once``: its seconds), and with ``per_shape`` (a backend that
    compiles at each new shape: ``per_shape()`` reads its cumulative ``(compiles, compile seconds)``) one untimed
    forward+backward call at this depth before call 0 (``seconds``, ``compiles``, ``compile_seconds``): call 0 is
    then no compile, and a schedule never extrapolates from one.

    Times: ``forward0``, ``backward0`` (call 0, one sample each), ``forward``, ``backward`` (lower
    quartile of the warm calls, all in ``samples``). Metrics of one more, untimed, warm call:
    ``python_calls`` of ``forward`` and ``backward`` (with ``python_calls``) and
    ``graph_metrics(loss, state)`` (e.g. ``autograd_nodes``, read between forward and backward) for
    ``backward``. ``Point.calls``, and ``extra``: ``value``, ``finite_gradient``.
    """
    calls = max(2, int(calls))
    pt = Point(depth=depth)
    fwd: list[dict[str, Any]] = []
    bwd: list[dict[str, Any]] = []
    phase = "forward0"

    def more() -> bool:
        if len(bwd) < 2:
            return True
        warm = [f["seconds"] + b["seconds"] for f, b in zip(fwd[1:], bwd[1:], strict=True)]
        if max(fwd[0]["seconds"] + bwd[0]["seconds"], warm[0]) > policy.single_over:
            return len(bwd) < calls
        return len(bwd) < calls or policy.more(warm)

    try:
        if warm_up is not None:
            on_phase(WARMUP_PHASE, None)
            with timed_block() as once:
                warm_up()
            pt.warmup["once"] = once["seconds"]
        if per_shape is not None:
            phase = WARMUP_PHASE
            on_phase(WARMUP_PHASE, None)
            before = per_shape()
            x = leaf()
            with meter(WARMUP_PHASE, -1) as w:
                phase = "forward0"
                loss, state = forward(x)
                phase = "check"
                check(loss, depth)
                phase = "backward0"
                backward(x, state)
            after = per_shape()
            pt.warmup.update(seconds=w["seconds"], compiles=after[0] - before[0], compile_seconds=after[1] - before[1])
            del x, loss, state
            phase = "forward0"
        memory = memory or NO_MEMORY
        memory.start(pt)
        i = 0
        while more():
            x = leaf()
            phase = "forward0" if i == 0 else "forward"
            on_phase(phase, i)
            with meter(phase, i) as f:
                loss, state = forward(x)
            fwd.append(f)
            memory.after_forward(pt, loss, state)
            if i == 0:
                phase = "check"
                on_phase(phase, i)  # reading the value may be slow (tinygrad realizes a forward graph)
                check(loss, depth)
                value = scalar(loss)
                check_finite(value, depth)
                pt.extra["value"] = value
            phase = "backward0" if i == 0 else "backward"
            on_phase(phase, i)
            with meter(phase, i) as b:
                g = backward(x, state)
            bwd.append(b)
            if i == 0:
                pt.extra["finite_gradient"] = _all_finite(g)
            memory.after_backward(pt, x, loss, state, g)
            del loss, state, g, x
            memory.after_drop(pt)
            i += 1
        memory.finish(pt)
        if python_calls or graph_metrics is not None:
            x = leaf()
            phase = "forward"
            on_phase(phase, i)
            n_fwd, (loss, state) = count_python_calls(lambda: forward(x))
            if graph_metrics is not None:
                for metric, value in graph_metrics(loss, state).items():
                    record_metric(pt, "backward", metric, value)
            phase = "backward"
            on_phase(phase, i)
            n_bwd, _ = count_python_calls(lambda: backward(x, state))
            if python_calls:
                record_metric(pt, "forward", "python_calls", n_fwd)
                record_metric(pt, "backward", "python_calls", n_bwd)
            del loss, state, x
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, eager_summary(pt, fwd, bwd)) from None
    return eager_summary(pt, fwd, bwd)


def _all_finite(g: Any) -> bool:
    import numpy as np

    try:
        return bool(np.all(np.isfinite(np.asarray(g))))
    except Exception:
        return False


def eager_summary(pt: Point, fwd: list[dict[str, Any]], bwd: list[dict[str, Any]]) -> Point:
    """Fill ``times``/``samples`` of an eager point from its calls (call 0 first; each a :data:`CallMeter`
    dict): the steady phase is the lower-quartile warm call, with its counters when the meter took some;
    ``extra`` gets the per-call seconds (and counters)."""
    for name, metered in (("forward", fwd), ("backward", bwd)):
        if metered:
            pt.samples[f"{name}0"] = [metered[0]["seconds"]]
            pt.times[f"{name}0"] = metered[0]["seconds"]
            if "cpu_seconds" in metered[0]:
                pt.cpu_times[f"{name}0"] = metered[0]["cpu_seconds"]
                pt.cpu_samples[f"{name}0"] = [metered[0]["cpu_seconds"]]
            if "wait_seconds" in metered[0]:
                pt.extra[wait_key(f"{name}0")] = [metered[0]["wait_seconds"]]
            if "counters" in metered[0]:
                pt.counters[f"{name}0"] = metered[0]["counters"]
        warm = metered[1:]
        if warm:
            chosen = sorted(warm, key=lambda c: c["seconds"])[lower_quartile_index(len(warm))]
            pt.samples[name] = [c["seconds"] for c in warm]
            pt.times[name] = chosen["seconds"]
            if "cpu_seconds" in chosen:
                pt.cpu_times[name] = chosen["cpu_seconds"]
            if all("cpu_seconds" in c for c in warm):
                pt.cpu_samples[name] = [c["cpu_seconds"] for c in warm]
            if all("wait_seconds" in c for c in warm):  # what the load added (analysis.costs.cpu_clock)
                pt.extra[wait_key(name)] = [c["wait_seconds"] for c in warm]
            if "counters" in chosen:
                pt.counters[name] = chosen["counters"]
        pt.extra[f"{name}_calls"] = [c["seconds"] for c in metered]
        if metered and all("cpu_seconds" in c for c in metered):  # the interference check (analysis.costs)
            pt.extra[f"{name}_cpu_calls"] = [c["cpu_seconds"] for c in metered]
        if metered and all("counters" in c for c in metered):
            pt.extra[f"{name}_call_counters"] = [c["counters"] for c in metered]
    pt.calls = len(bwd)
    pt.extra["clock"] = CLOCK
    return pt


def measure_memory(pt: Point, chain: Chain, **calls: Any) -> Point:
    """:func:`adprof.backends.memory.memory_calls` on ``pt`` (``calls``: its keywords), after the timed calls: a
    failure there leaves the timed point as it is, without memory figures, and its one line in
    ``extra["memory_error"]``."""
    try:
        memory_calls(pt, **calls)
    except (Exception, RecursionError, MemoryError) as exc:
        pt.memory.pop(SAVED, None)
        pt.retained.clear()
        pt.extra["memory_error"] = describe_exception(exc, chain)
    return pt


# --------------------------------------------------------------------------- measure_point


PointMeasurer = Callable[..., Point]


def measure_counted_eager(
    chain: Chain,
    depth: int,
    *,
    on_phase: PhaseCallback,
    leaf: Callable[[], Any],
    forward: Callable[[Any], tuple[Any, Any]],
    backward: Callable[[Any, Any], Any],
    scalar: Callable[[Any], float],
    check: Callable[[Any, int], None],
    warm_up: Callable[[], None] | None = None,
) -> Point:
    """``--metric instructions`` in eager mode (the worker runs under callgrind): after ``warm_up()`` (once per
    process) and one uncounted call at ``depth``, one forward and one backward call, each counted
    (:func:`adprof.backends.instructions.counted_phase`): ``metrics`` and nominal ``times`` of ``forward``
    and ``backward``. The callables are those of :func:`measure_eager`."""
    pt = Point(depth=depth)
    phase = "forward"
    try:
        if warm_up is not None:
            warm_up()
        on_phase(WARMUP_PHASE, None)
        warm = leaf()
        loss, state = forward(warm)
        check(loss, depth)
        value = scalar(loss)
        check_finite(value, depth)
        pt.extra["value"] = value
        pt.extra["finite_gradient"] = _all_finite(backward(warm, state))
        del loss, state, warm
        x = leaf()
        counted_loss, counted_state = counted_phase(pt, "forward", lambda x=x: forward(x), on_phase)
        phase = "backward"
        counted_phase(pt, "backward", lambda x=x, st=counted_state: backward(x, st), on_phase)
        del counted_loss, counted_state, x
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    pt.calls = 2  # the warm-up call at this depth and the counted one
    pt.extra["counted"] = COUNTED_NOTE
    return pt


#: ``Point.extra["counted"]`` of a counted peer point.
COUNTED_NOTE = (
    "instructions (callgrind Ir) of every thread while each phase ran once, after a warm-up call; "
    "one valgrind'd worker for the series, PYTHONHASHSEED=0"
)


def peer_measure_point(
    backend: str, modes: Mapping[str, PointMeasurer], counted: Mapping[str, PointMeasurer] | None = None
) -> PointMeasurer:
    """The module-level ``measure_point`` of a peer backend: no cost profiles, ``modes[mode]`` measures.

    ``modes["eager"]`` takes ``calls``, every other mode ``repeats`` (both keywords, with ``on_phase``);
    ``counter_budget`` is accepted for interface parity and ignored (the peers have no counters).
    ``counted[mode]`` measures with ``metric="instructions"`` (``on_phase`` only): each phase once,
    counted under callgrind (see :mod:`adprof.backends.instructions`). ``memory=True`` is passed on to the mode's
    function (only when given: the builtin declaration passes it for the modes of its ``memory_figures``).
    """

    def measure_point(
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
        if profile is not None:
            raise ValueError(f"the {backend} backend has no cost profiles (got {profile!r})")
        if mode not in modes:
            raise ValueError(f"unknown mode {mode!r} for the {backend} backend; known: {', '.join(modes)}")
        if metric != "time":
            if metric != "instructions" or mode not in (counted or {}):
                raise PointFailure("metric", f"the {backend} backend cannot count {metric} in {mode} mode")
            try:
                counter()  # one line when this worker does not run under callgrind
            except CountingUnavailable as exc:
                raise PointFailure("metric", str(exc)) from None
            return counted[mode](chain, depth, on_phase=on_phase)  # type: ignore[index]
        extra: dict[str, Any] = {"memory": True} if memory else {}
        if mode == "eager":
            return modes[mode](chain, depth, calls=calls, on_phase=on_phase, **extra)
        return modes[mode](chain, depth, on_phase=on_phase, repeats=repeats, **extra)

    measure_point.__doc__ = (
        f"Measure one {backend} point; ``mode`` is one of {', '.join(modes)}; ``profile`` must be None "
        "(``counter_budget`` is ignored: no counters)."
    )
    return measure_point


__all__ = [
    "CLOCK",
    "DEFAULT_CALLS",
    "INSTALL_HINT",
    "PointFailure",
    "chain_binder",
    "check_finite",
    "check_output",
    "describe_exception",
    "eager_summary",
    "failure",
    "first_time",
    "loss_calls",
    "measure_counted_eager",
    "measure_drop",
    "measure_eager",
    "measure_memory",
    "namespace",
    "no_phase",
    "not_installed",
    "peer_measure_point",
]
