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
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

import engine
from adprof.backends import program
from adprof.backends.base import PhaseCallback, PointFailure, RepeatPolicy, describe_type, no_phase
from adprof.backends.memory import SAVED, CallMemory, Retained, memory_time, numpy_buffer, numpy_bytes
from adprof.backends.peer_common import (
    check_finite,
    check_output,
    describe_exception,
    failure,
    register_failure_kind,
)
from adprof.backends.peer_common import measure_eager as measure_eager_loop
from adprof.chain import Chain
from adprof.constants import DEFAULT_CALLS, DEFAULT_COUNTER_BUDGET, RUN_REPEATS
from adprof.model import Point, lower_quartile_index
from engine import counters

PROFILES: tuple[str, ...] = ("v08", "fixed")
MODES: tuple[str, ...] = ("traced", "eager")

register_failure_kind(counters.CounterBudgetExceeded, "budget")  # a censored point, not a failing chain
#: Exactly ``calls`` eager calls (the counters decide; no extra repeats for the clock).
EXACT_CALLS = RepeatPolicy(budget=0.0, least=0)


@contextlib.contextmanager
def _metered() -> Iterator[dict[str, Any]]:
    """Time one block with its counter deltas: gc.collect() first, gc disabled inside. Yields a dict that
    receives ``seconds``, ``cpu_seconds`` (the thread's) and ``counters`` when the block ends (also on error: a
    failing phase still leaves its partial cost)."""
    gc.collect()
    out: dict[str, Any] = {}
    gc.disable()
    c0, t0 = time.thread_time(), time.perf_counter()
    try:
        with counters.measure() as m:
            yield out
    finally:
        t1, c1 = time.perf_counter(), time.thread_time()
        gc.enable()
        out["seconds"] = t1 - t0
        out["cpu_seconds"] = c1 - c0
        out["counters"] = m.as_dict()


@contextlib.contextmanager
def _phase(pt: Point, name: str, on_phase: PhaseCallback) -> Iterator[dict[str, Any]]:
    """One traced phase, metered (:func:`_metered`) and stored in ``pt``."""
    on_phase(name, None)
    try:
        with _metered() as out:
            yield out
    finally:  # also on error: a failing phase leaves its partial cost
        pt.times[name] = out["seconds"]
        pt.cpu_times[name] = out["cpu_seconds"]
        pt.samples[name] = [out["seconds"]]
        pt.counters[name] = out["counters"]


def _call_meter(phase: str, call: int) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """The eager loop's per-call meter: seconds and the engine's counter deltas of each call."""
    return _metered()


def _call_memory() -> CallMemory:
    """The engine's memory between eager calls: the tape's bytes after each forward (:func:`engine.tape_bytes`),
    the bytes still alive of each call's tape, leaf value and gradient after it (numpy buffers, each once)."""
    return CallMemory(
        saved=lambda loss, state: engine.tape_bytes(loss) if isinstance(loss, engine.EagerTensor) else None,
        made=lambda x, loss, state, g: [x.value, g, *engine.tape_arrays(loss)],
        retained=Retained(size=numpy_bytes, key=numpy_buffer),
    )


def _check_traced_output(y: Any, depth: int) -> None:
    if not isinstance(y, engine.TracedTensor):
        check_output((), True, depth, describe_type(y) + " (not one of the engine's tensors)")
    check_output(tuple(y.shape), y.dtype.kind == "f", depth)


def measure_traced(
    chain: Chain,
    depth: int,
    profile: str,
    *,
    on_phase: PhaseCallback = no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
    memory: bool = False,
) -> Point:
    """Record, transform, compile+prepare, run and drop at one depth (see the module docstring); with ``memory``,
    after the drop, ``memory["saved_bytes"]``: the residuals of the gradient (:func:`engine.residual_bytes`)."""
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
            check_finite(float(value), depth)
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
                on_phase("run", None)
                with _metered() as r:
                    run(a)
                samples.append(r)
            best = sorted(samples, key=lambda s: s["seconds"])[lower_quartile_index(len(samples))]
            pt.times["run"], pt.counters["run"] = best["seconds"], best["counters"]
            pt.cpu_times["run"] = best["cpu_seconds"]
            pt.samples["run"] = [s["seconds"] for s in samples]
            phase = "drop"
            with _phase(pt, "drop", on_phase):
                before = counters.COUNTERS.derivative_traces_dropped
                del g  # deregistration happens on drop
                if counters.COUNTERS.derivative_traces_dropped == before:
                    gc.collect()  # a reference cycle held it: collect (still inside the drop phase)
        except (Exception, RecursionError, MemoryError) as exc:  # explicit on purpose
            raise failure(exc, chain, depth, phase, pt) from None
        if memory:  # after the timed phases, with a counter budget of its own; a failure leaves the point as it is
            on_phase("memory", None)
            try:
                with memory_time(pt), counters.budget(counter_budget):
                    pt.memory[SAVED] = float(engine.residual_bytes(y, x))
            except (Exception, RecursionError, MemoryError) as exc:
                pt.extra["memory_error"] = describe_exception(exc, chain)
        del y, x, prog, run
    return pt


def measure_eager(
    chain: Chain,
    depth: int,
    profile: str,
    *,
    calls: int = DEFAULT_CALLS,
    on_phase: PhaseCallback = no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
    memory: bool = False,
) -> Point:
    """``calls`` forward+backward calls on fresh variables of one EagerRuntime at one depth (the shared eager
    loop, each call metered with its counters; exactly ``calls`` calls: the counters decide, not the times).

    With ``memory``, read between the calls, outside their meters (:func:`_call_memory`): ``saved_bytes`` is the
    tape's bytes between forward and backward (:func:`engine.tape_bytes`: every value the session recorded),
    ``retained`` the bytes of the calls' arrays (tape, leaf, gradient) still alive after each call."""
    a = chain.make_input()
    xp = engine.numpy
    with engine.profile(profile), counters.budget(counter_budget):
        rt = engine.EagerRuntime()

        def forward(x: Any) -> tuple[Any, Any]:
            with rt.session():
                loss = chain(xp, x, depth)
            return loss, loss

        def backward(x: Any, loss: Any) -> Any:
            loss.backward()
            return x.grad

        def check(loss: Any, d: int) -> None:
            if not isinstance(loss, engine.EagerTensor):
                check_output((), True, d, describe_type(loss) + " (not one of the engine's tensors)")
            check_output(tuple(loss.shape), loss.dtype.kind == "f", d)

        try:
            pt = measure_eager_loop(
                chain,
                depth,
                calls=calls,
                on_phase=on_phase,
                leaf=lambda: rt.variable(a),
                forward=forward,
                backward=backward,
                scalar=lambda loss: float(loss.item()),
                check=check,
                python_calls=False,
                policy=EXACT_CALLS,
                meter=_call_meter,
                memory=_call_memory() if memory else None,
            )
        except PointFailure as f:
            if f.point is not None:
                f.point.extra["cache"] = dataclasses.asdict(rt.cache_stats())
            raise
        pt.extra["cache"] = dataclasses.asdict(rt.cache_stats())
    return pt


#: The engine's primitives of zero FLOPs (data movement and constants).
_MOVEMENT = frozenset({"reshape", "transpose", "broadcast_in_dim", "diag", "diag_embed", "tril", "triu", "full", "eye"})


def _op_flops(name: str, params: dict[str, Any], ins: list[Any], outs: list[Any]) -> int:
    """FLOPs of one engine primitive (conventions of :mod:`adprof.backends.program`)."""
    if name in _MOVEMENT:
        return 0
    if name == "matmul":
        return program.matmul_flops(ins[0].shape, ins[1].shape)
    if name == "einsum":
        spec = str(params.get("spec", ""))
        return program.einsum_flops(spec.split("->")[0].split(","), [a.shape for a in ins])
    if name in ("reduce_sum", "reduce_max"):
        return program.numel(ins[0].shape)
    if name in ("svd", "qr"):  # O(m n min(m, n)), the usual leading terms (4 for an SVD, 2 for QR)
        m, n = (ins[0].shape[-2], ins[0].shape[-1]) if len(ins[0].shape) >= 2 else (1, 1)
        batch = program.numel(ins[0].shape[:-2])
        return (4 if name == "svd" else 2) * batch * m * n * min(m, n)
    if name == "solve_triangular":
        a, b = ins[0].shape, ins[1].shape
        return program.numel(b) * (int(a[-1]) if a else 1)
    return sum(program.numel(o.shape) for o in outs)  # elementwise: one per output element


def read_program(chain: Chain, depth: int, profile: str | None = None) -> dict[str, int]:
    """The forward's program (:mod:`adprof.backends.program`): the chain recorded on a placeholder (or, for a
    chain that reads values, one eager forward and its trace), every recorded operation once with its FLOPs,
    the bytes it reads and writes, and the bytes of its outputs. Nothing is compiled nor differentiated."""
    from engine.graph import toposort
    from engine.ops import SHAPE_RULES

    a = chain.make_input()
    xp = engine.numpy
    with engine.profile(profile or "fixed"), counters.budget(None):
        try:
            x = engine.input(a.shape, a.dtype)
            y = chain(xp, x, depth)
        except (Exception, RecursionError):  # a chain that branches on values: its eager forward's trace
            rt = engine.EagerRuntime()
            with rt.session():
                y = chain(xp, rt.variable(a), depth).trace
        nodes = toposort([y])
    count = program.ProgramCount()
    for node in nodes:
        ins = [p.aval for p in node.inputs]
        outs = list(SHAPE_RULES[node.prim](*ins, **node.params))
        count.add(
            _op_flops(node.prim.name, node.params, ins, outs),
            sum(program.nbytes(v.shape, v.dtype.itemsize) for v in ins),
            sum(program.nbytes(v.shape, v.dtype.itemsize) for v in outs),
        )
    return count.as_dict()


def measure_point(
    chain: Chain,
    mode: str,
    depth: int,
    profile: str | None,
    *,
    calls: int = DEFAULT_CALLS,
    on_phase: PhaseCallback = no_phase,
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET,
    repeats: int | None = None,
    memory: bool = False,
) -> Point:
    """Measure one point; ``mode`` is ``traced`` or ``eager``, ``profile`` ``v08`` or ``fixed``.

    ``repeats`` is accepted for interface parity: the engine's counters decide, phases run once
    (``run`` three times, eager ``calls`` times)."""
    profile = profile or "fixed"
    if profile not in PROFILES:
        raise ValueError(f"unknown engine profile {profile!r}; known: {', '.join(PROFILES)}")
    if mode == "traced":
        return measure_traced(chain, depth, profile, on_phase=on_phase, counter_budget=counter_budget, memory=memory)
    if mode == "eager":
        return measure_eager(
            chain, depth, profile, calls=calls, on_phase=on_phase, counter_budget=counter_budget, memory=memory
        )
    raise ValueError(f"unknown mode {mode!r} for the engine backend; known: {', '.join(MODES)}")


__all__ = [
    "MODES",
    "PROFILES",
    "PointFailure",
    "describe_exception",
    "measure_eager",
    "measure_point",
    "measure_traced",
    "read_program",
]
