"""The reference engine backend: measure one point (one depth) of one chain in one mode.

Traced mode (``measure_traced``): record the chain on a placeholder, ``engine.grad``, compile and
prepare the derivative program, run it, then drop the derivative graph; each phase is timed with
the garbage collector collected before and disabled during it, and gets its own counter deltas.

Eager mode (``measure_eager``): ``calls`` forward+backward calls on fresh variables of one
``EagerRuntime`` (call 0 misses the prepared-derivative cache, the others hit it).

Times are wall seconds (``perf_counter``); ``Point.samples`` holds every timed run; steady phases
(``run``, warm eager calls) keep the lower quartile. The counters decide, not the times.

Failures raise :class:`PointFailure` with a ``kind``: ``"chain"`` (the chain or the engine raised
on it), ``"output"`` (not a scalar tensor, or not finite), ``"budget"`` (the key-comparison budget
ran out: a censored point) or ``"resource"`` (RecursionError, MemoryError). The partial point
(completed phases) travels with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import engine
from adprof.backends.base import PointFailure, describe_type
from adprof.backends.peer_common import describe_exception
from adprof.chain import Chain
from adprof.constants import DEFAULT_CALLS, DEFAULT_COUNTER_BUDGET, RUN_REPEATS
from adprof.model import Point
from engine import counters

PROFILES: tuple[str, ...] = ("v08", "fixed")
MODES: tuple[str, ...] = ("traced", "eager")

PhaseCallback = Callable[[str, int | None], None]


def _no_phase(name: str, call: int | None) -> None:  # default callback
    return None


def _classify_exception(exc: BaseException) -> str:
    if isinstance(exc, counters.CounterBudgetExceeded):
        return "budget"
    if isinstance(exc, RecursionError | MemoryError):
        return "resource"
    return "chain"


@contextlib.contextmanager
def _phase(
    pt: Point, name: str, on_phase: PhaseCallback, call: int | None = None, store: bool = True
) -> Iterator[dict[str, Any]]:
    """Time one phase: gc.collect() first, gc disabled inside; counters per phase.

    Yields a dict that receives ``seconds`` and ``counters`` when the block ends (also on error,
    so that a failing phase still leaves its partial cost); stored in ``pt`` when ``store``.
    """
    gc.collect()
    on_phase(name, call)
    out: dict[str, Any] = {}
    gc.disable()
    t0 = time.perf_counter()
    try:
        with counters.measure() as m:
            yield out
    finally:
        t1 = time.perf_counter()
        gc.enable()
        out["seconds"] = t1 - t0
        out["counters"] = m.as_dict()
        if store:
            pt.times[name] = out["seconds"]
            pt.samples[name] = [out["seconds"]]
            pt.counters[name] = out["counters"]


def _fail(exc: BaseException, chain: Chain, depth: int, phase: str, pt: Point) -> PointFailure:
    kind = _classify_exception(exc)
    msg = describe_exception(exc, chain)
    if kind == "chain":
        where = "recording the chain" if phase in ("record", "forward", "forward0") else phase
        msg = f"depth {depth} ({where}): {msg}"
    return PointFailure(kind, msg, phase, pt)


def _check_traced_output(y: Any, depth: int) -> None:
    if not isinstance(y, engine.TracedTensor):
        raise PointFailure(
            "output",
            f"depth {depth}: the chain returned {describe_type(y)}, not one of the engine's tensors (build the "
            "result with the xp operations on x, not with another library)",
        )
    if tuple(y.shape) != ():
        raise PointFailure(
            "output",
            f"depth {depth}: the chain's output is not a scalar (shape {tuple(y.shape)}); reduce it, e.g. with xp.sum",
        )
    if y.dtype.kind != "f":
        raise PointFailure(
            "output", f"depth {depth}: the chain's output has dtype {y.dtype.name}, expected floating point"
        )


def _check_finite(value: float, depth: int) -> None:
    if not math.isfinite(value):
        raise PointFailure("output", f"depth {depth}: the chain's output is {value} (not finite)")


def measure_traced(
    chain: Chain,
    depth: int,
    profile: str,
    *,
    on_phase: PhaseCallback = _no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
) -> Point:
    """Record, transform, compile+prepare, run and drop at one depth (see the module docstring)."""
    a = chain.make_input()
    xp = engine.numpy
    pt = Point(depth=depth)
    phase = "record"
    with engine.profile(profile), counters.budget(counter_budget):
        try:
            with _phase(pt, "record", on_phase):
                x = engine.input(a.shape, a.dtype)
                y = chain(xp, x, depth)
            _check_traced_output(y, depth)
            pt.ops["value_ops"] = engine.value_op_count([y])
            phase = "check"
            value = np.asarray(engine.compile(y, inputs=[x]).prepare()(a)[0])
            _check_finite(float(value), depth)
            pt.extra["value"] = float(value)
            phase = "transform"
            with _phase(pt, "transform", on_phase):
                g = engine.grad(y, x)
            pt.ops["derivative_ops"] = engine.value_op_count([g])
            phase = "compile"
            with _phase(pt, "compile", on_phase):
                prog = engine.compile(g, inputs=[x])
                run = prog.prepare()
            pt.ops["program_ops"] = prog.op_count
            phase = "run"
            grads = run(a)  # warm-up, untimed
            pt.extra["finite_gradient"] = bool(np.all(np.isfinite(np.asarray(grads[0]))))
            samples = []
            for _ in range(RUN_REPEATS):
                with _phase(pt, "run", on_phase, store=False) as r:
                    run(a)
                samples.append(r)
            best = sorted(samples, key=lambda s: s["seconds"])[(len(samples) - 1) // 4]  # lower quartile
            pt.times["run"], pt.counters["run"] = best["seconds"], best["counters"]
            pt.samples["run"] = [s["seconds"] for s in samples]
            phase = "drop"
            with _phase(pt, "drop", on_phase):
                before = counters.COUNTERS.derivative_traces_dropped
                del g  # deregistration happens on drop
                if counters.COUNTERS.derivative_traces_dropped == before:
                    gc.collect()  # a reference cycle held it: collect (still inside the drop phase)
            del y, x, prog, run
        except PointFailure as f:
            f.point = pt
            raise
        except (Exception, RecursionError, MemoryError) as exc:  # explicit on purpose
            raise _fail(exc, chain, depth, phase, pt) from None
    return pt


def measure_eager(
    chain: Chain,
    depth: int,
    profile: str,
    *,
    calls: int = DEFAULT_CALLS,
    on_phase: PhaseCallback = _no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
) -> Point:
    """``calls`` forward+backward calls on fresh variables of one EagerRuntime at one depth."""
    calls = max(2, int(calls))
    a = chain.make_input()
    xp = engine.numpy
    pt = Point(depth=depth)
    fwd: list[dict[str, Any]] = []
    bwd: list[dict[str, Any]] = []
    phase = "forward0"
    with engine.profile(profile), counters.budget(counter_budget):
        rt = engine.EagerRuntime()
        try:
            for i in range(calls):
                x = rt.variable(a)
                phase = "forward0" if i == 0 else "forward"
                with _phase(pt, phase, on_phase, i, store=False) as f:
                    with rt.session():
                        loss = chain(xp, x, depth)
                fwd.append(f)
                if i == 0:
                    pt.times["forward0"], pt.counters["forward0"] = f["seconds"], f["counters"]
                    pt.samples["forward0"] = [f["seconds"]]
                    if not isinstance(loss, engine.EagerTensor):
                        raise PointFailure(
                            "output",
                            f"depth {depth}: the chain returned {describe_type(loss)}, not one of the "
                            "engine's tensors (use the xp operations on x, not another library)",
                        )
                    if tuple(loss.shape) != ():
                        raise PointFailure(
                            "output",
                            f"depth {depth}: the chain's output is not a scalar "
                            f"(shape {tuple(loss.shape)}); reduce it, e.g. with xp.sum",
                        )
                    value = float(loss.item())
                    _check_finite(value, depth)
                    pt.extra["value"] = value
                phase = "backward0" if i == 0 else "backward"
                with _phase(pt, phase, on_phase, i, store=False) as b:
                    loss.backward()
                bwd.append(b)
                if i == 0:
                    pt.times["backward0"], pt.counters["backward0"] = b["seconds"], b["counters"]
                    pt.samples["backward0"] = [b["seconds"]]
                    gx = x.grad
                    pt.extra["finite_gradient"] = bool(gx is not None and np.all(np.isfinite(np.asarray(gx))))
                del loss, x
        except PointFailure as f:
            f.point = _eager_summary(pt, fwd, bwd, rt)
            raise
        except (Exception, RecursionError, MemoryError) as exc:
            raise _fail(exc, chain, depth, phase, _eager_summary(pt, fwd, bwd, rt)) from None
    return _eager_summary(pt, fwd, bwd, rt)


def _eager_summary(pt: Point, fwd: list[dict[str, Any]], bwd: list[dict[str, Any]], rt: engine.EagerRuntime) -> Point:
    """Fill steady times (lower quartile of calls 1..K-1, all in ``samples``) with the counters of that
    call, per-call lists and cache stats."""
    for name, warm in (("backward", bwd[1:]), ("forward", fwd[1:])):
        if warm:
            chosen = sorted(warm, key=lambda c: c["seconds"])[(len(warm) - 1) // 4]
            pt.times[name] = chosen["seconds"]
            pt.counters[name] = chosen["counters"]
            pt.samples[name] = [c["seconds"] for c in warm]
    pt.extra["calls"] = len(bwd)
    pt.extra["backward_calls"] = [b["seconds"] for b in bwd]
    pt.extra["backward_call_counters"] = [b["counters"] for b in bwd]
    pt.extra["forward_calls"] = [f["seconds"] for f in fwd]
    pt.extra["cache"] = dataclasses.asdict(rt.cache_stats())
    return pt


def measure_point(
    chain: Chain,
    mode: str,
    depth: int,
    profile: str | None,
    *,
    calls: int = DEFAULT_CALLS,
    on_phase: PhaseCallback = _no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
    repeats: int | None = None,
) -> Point:
    """Measure one point; ``mode`` is ``traced`` or ``eager``, ``profile`` ``v08`` or ``fixed``.

    ``repeats`` is accepted for interface parity: the engine's counters decide, phases run once
    (``run`` three times, eager ``calls`` times)."""
    profile = profile or "fixed"
    if profile not in PROFILES:
        raise ValueError(f"unknown engine profile {profile!r}; known: {', '.join(PROFILES)}")
    if mode == "traced":
        return measure_traced(chain, depth, profile, on_phase=on_phase, counter_budget=counter_budget)
    if mode == "eager":
        return measure_eager(chain, depth, profile, calls=calls, on_phase=on_phase, counter_budget=counter_budget)
    raise ValueError(f"unknown mode {mode!r} for the engine backend; known: {', '.join(MODES)}")


__all__ = [
    "MODES",
    "PROFILES",
    "PointFailure",
    "describe_exception",
    "measure_eager",
    "measure_point",
    "measure_traced",
]
