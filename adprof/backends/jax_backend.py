"""The JAX peer backend: the same chain file on ``jax.numpy`` (float64: ``jax_enable_x64``).

Modes (no engine counters: points carry wall times, the lower quartile of repeats, and deterministic
work metrics, see :mod:`adprof.backends.base` and the declarations in :mod:`adprof.backends.builtin`):

* ``traced``: ``record`` = ``jax.make_jaxpr(f)(x)`` (the forward trace; ``value_ops``), ``transform``
  = ``jax.make_jaxpr(jax.grad(f))(x)`` (trace + grad transform; ``derivative_ops``), ``drop`` =
  freeing that jaxpr. Op counts are jaxpr equations counted *recursively* (equations inside
  sub-jaxprs, e.g. of the jitted ``jnp.linalg.svd``, count; the top-level counts are in ``extra``).
* ``compile``: ``jax.jit(jax.grad(f))`` of a fresh function per repeat, step by step: ``transform`` =
  ``.trace(x)``, ``lower`` = ``.lower()``, ``compile`` = ``.compile()`` (XLA), ``run`` = the compiled call.
  This is jit's first-call cost, paid once per shape, reported as its own result. Each phase's seconds are
  JAX's own attribution, its ``jax.monitoring`` duration events (:data:`COMPILE_EVENTS`: jaxpr trace, jaxpr to
  MLIR, backend compile), and the step's wall time where an event did not fire.
* ``eager``: ``jax.grad(f)`` without jit, per call, split in its two halves: ``forward`` =
  ``jax.vjp(f, x)`` (primal ops dispatched one by one, plus linearization), ``backward`` = the VJP
  function applied to 1.0. ``calls`` calls on fresh arrays: call 0 and the lower quartile of the warm calls.
  One untimed call at each depth comes first (``Point.warmup``: its seconds and the XLA compiles it
  triggered): the first call at a new shape compiles every primitive, and call 0 must not be that compile.

On import: ``JAX_PLATFORMS=cpu`` and single-threaded XLA
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``) unless already set,
and x64 enabled. ``xp`` is :data:`xp`: ``jax.numpy`` whose ``linalg.svd`` defaults to the reduced SVD
(``full_matrices=False``), as the engine's does, and ``xp.grad`` is ``jax.grad`` (derivative-order chains
nest it); nothing else is changed.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Any

from adprof.backends import program
from adprof.backends.base import (
    DEFAULT_CALLS,
    PhaseCallback,
    PointFailure,
    count_python_calls,
    measure_phase,
    more_repeats,
    no_phase,
    record_metric,
    record_samples,
    timed_block,
)
from adprof.backends.instructions import counted_phase
from adprof.backends.memory import SAVED, CallMemory, Retained, memory_time
from adprof.backends.peer_common import (
    COUNTED_NOTE,
    chain_binder,
    check_finite,
    check_output,
    describe_exception,
    failure,
    first_time,
    measure_drop,
    namespace,
    not_installed,
    peer_measure_point,
)
from adprof.backends.peer_common import measure_eager as _eager_loop
from adprof.chain import Chain
from adprof.model import WARMUP_PHASE, Point
from adprof.util.cpu import process_cpu, record_process_cpu

XLA_SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
if "jax" not in sys.modules:
    os.environ.setdefault("XLA_FLAGS", XLA_SINGLE_THREAD)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax
    import jax.numpy as jnp
except ImportError as _exc:
    raise not_installed("jax", _exc, "jax, jaxlib") from None

jax.config.update("jax_enable_x64", True)

PROFILES: tuple[None, ...] = (None,)
MODES: tuple[str, ...] = ("traced", "compile", "eager")
#: compile mode: the forward's own ``jit(f).trace(x).lower().compile()``, once per point (what its gradient's compile
#: is read against: ``gradient 2.1x its forward``); not a cost phase.
FORWARD_COMPILE = "forward_compile"
#: Repeats of the forward's compile at a depth (its fastest decides the gradient/forward ratio): one compile is
#: one sample, and XLA's compile of a small forward (30-180 ms) moves by half under load (pairs at 8 particles:
#: 126 ms once, 67-70 ms in three quiet repeats), where the gradient's compile is the fastest of several.
FORWARD_COMPILE_REPEATS = 3
#: Depths suggested for this backend's time-only fits (>= 8x span, doublings).
DEPTHS: tuple[int, ...] = (8, 16, 32, 64, 128)


@functools.wraps(jnp.linalg.svd)
def _svd(a: Any, full_matrices: bool = False, compute_uv: bool = True, **kwargs: Any) -> Any:
    """``jnp.linalg.svd`` defaulting to the reduced SVD (the engine's and the chains' convention)."""
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, **kwargs)


_linalg = namespace("adprof_jax_linalg", jnp.linalg, {"svd": _svd})
#: The ``xp`` chains get: jax.numpy with a reduced-SVD default, and ``xp.grad`` = ``jax.grad`` (derivative-order
#: chains nest it).
xp = namespace("adprof_jax_numpy", jnp, {"linalg": _linalg, "grad": jax.grad})


def count_eqns(jaxpr: Any, recursive: bool = True) -> int:
    """Equations of a (closed) jaxpr; with ``recursive``, equations of sub-jaxprs in params too."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    n = len(jaxpr.eqns)
    if recursive:
        for eqn in jaxpr.eqns:
            for p in eqn.params.values():
                for q in p if isinstance(p, list | tuple) else (p,):
                    if hasattr(q, "eqns") or hasattr(getattr(q, "jaxpr", None), "eqns"):
                        n += count_eqns(q)
    return n


def _input(chain: Chain) -> Any:
    return jnp.asarray(chain.make_input())


#: ``_fn(chain, depth)``: the chain as a function of ``x`` on :data:`xp`.
_fn = chain_binder(xp)


def _check_avals(avals: list[Any], depth: int) -> None:
    if len(avals) != 1:
        check_output((), False, depth, f"{len(avals)} outputs")
    check_output(tuple(avals[0].shape), jnp.issubdtype(avals[0].dtype, jnp.floating), depth)


def _ready(y: Any) -> Any:
    return jax.block_until_ready(y)


def residual_bytes(f: Any, x: Any) -> int:
    """Bytes of the residuals ``jax.vjp(f, x)`` saves for the backward, from the same abstract trace
    ``jax.ad_checkpoint.print_saved_residuals`` prints (each residual's shape and dtype; nothing is computed)."""
    from jax._src.ad_checkpoint import saved_residuals

    return sum(_aval_bytes(aval) for aval, _source in saved_residuals(f, x))


def _aval_bytes(aval: Any) -> int:
    n = jnp.dtype(aval.dtype).itemsize
    for d in aval.shape:
        n *= int(d)
    return n


def vjp_residual_arrays(vjp_fn: Any) -> list[Any]:
    """The arrays a ``jax.vjp`` function holds (the leaves of its pytree: the residuals), each once."""
    seen: set[int] = set()
    out = []
    for leaf in jax.tree_util.tree_leaves(vjp_fn):
        if hasattr(leaf, "nbytes") and id(leaf) not in seen:
            seen.add(id(leaf))
            out.append(leaf)
    return out


def measure_traced(
    chain: Chain,
    depth: int,
    *,
    on_phase: PhaseCallback = no_phase,
    repeats: int | None = None,
    memory: bool = False,
) -> Point:
    """``make_jaxpr(f)`` (record) and ``make_jaxpr(grad(f))`` (transform): repeats, python_calls, jaxpr_eqns.
    With ``memory``, after the drop: ``saved_bytes``, the residuals of ``jax.vjp(f)`` (:func:`residual_bytes`)."""
    pt = Point(depth=depth)
    x = _input(chain)
    f = _fn(chain, depth)
    phase = "record"
    try:
        if first_time(chain, "traced"):  # first use of each primitive, untimed
            on_phase(WARMUP_PHASE, None)  # its own timeout: no point's cost
            jax.make_jaxpr(jax.grad(_fn(chain, 1)))(x)
        # a fresh function per repeat: jax caches traces by function identity; python_calls are counted
        # after the timed repeats (the first call at a new depth differs)
        jaxpr = measure_phase(
            pt, "record", lambda: jax.make_jaxpr(_fn(chain, depth))(x), on_phase, repeats=repeats, python_calls=True
        )
        _check_avals(list(jaxpr.out_avals), depth)
        pt.ops["value_ops"] = count_eqns(jaxpr)
        pt.extra["value_ops_top_level"] = count_eqns(jaxpr, recursive=False)
        record_metric(pt, "record", "jaxpr_eqns", count_eqns(jaxpr))
        del jaxpr
        phase = "check"
        value = float(f(x))
        check_finite(value, depth)
        pt.extra["value"] = value
        phase = "transform"
        gj = measure_phase(
            pt,
            "transform",
            lambda: jax.make_jaxpr(jax.grad(_fn(chain, depth)))(x),
            on_phase,
            repeats=repeats,
            python_calls=True,
        )
        pt.extra["transform_includes"] = "trace + grad (make_jaxpr(grad(f)))"
        pt.ops["derivative_ops"] = count_eqns(gj)
        pt.extra["derivative_ops_top_level"] = count_eqns(gj, recursive=False)
        record_metric(pt, "transform", "jaxpr_eqns", count_eqns(gj))
        phase = "drop"
        holder = [gj]
        del gj
        measure_drop(pt, holder, on_phase)
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    if memory:
        on_phase("memory", None)
        try:
            with memory_time(pt):
                pt.memory[SAVED] = float(residual_bytes(_fn(chain, depth), x))
        except (Exception, RecursionError, MemoryError) as exc:
            pt.extra["memory_error"] = describe_exception(exc, chain)
    return pt


#: An HLO instruction line of ``Compiled.as_text()``: ``%name = type op(...)`` (``ROOT`` optional).
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = ")


def hlo_instructions(compiled: Any) -> int:
    """Instructions of the optimized HLO module (all computations, fusions included) of a compiled executable."""
    return sum(1 for line in compiled.as_text().splitlines() if _HLO_INSTRUCTION.match(line))


_cache_events: list[str] = []

#: The ``jax.monitoring`` duration event that attributes each compile-mode phase.
COMPILE_EVENTS = {
    "transform": "/jax/core/compile/jaxpr_trace_duration",
    "lower": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "compile": "/jax/core/compile/backend_compile_duration",
}
_EVENT_NAMES = frozenset(COMPILE_EVENTS.values())
#: Duration events seen while :func:`attributed` runs a step (recording only then).
_durations: list[tuple[str, float]] = []
_listening: dict[str, bool] = {}


def _on_duration(event: str, secs: float, **kwargs: Any) -> None:
    if _listening.get("recording") and event in _EVENT_NAMES:
        _durations.append((event, float(secs)))


def _listen_for_durations() -> None:
    if "registered" not in _listening:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _listening["registered"] = True


def attributed(phase: str, step: Any, used: dict[str, list[float | None]] | None = None) -> tuple[float, Any, bool]:
    """``(seconds, step(), from_event)``: the step timed, its seconds taken from JAX's duration event for the
    phase when it fired during the step (summed), else the wall time. ``used``: the step's process CPU seconds and
    run-queue wait are appended to its ``cpu`` and ``wait`` lists (XLA compiles on its own threads, which the
    calling thread's CPU clock does not see: :mod:`adprof.util.cpu`)."""
    _durations.clear()
    _listening["recording"] = True
    try:
        with timed_block() as t, process_cpu() as clock:
            out = step()
    finally:
        _listening["recording"] = False
    wall = t["seconds"]
    if used is not None:
        used.setdefault("cpu", []).append(clock["cpu_seconds"])
        used.setdefault("wait", []).append(clock["wait_seconds"])
    secs = [s for name, s in _durations if name == COMPILE_EVENTS[phase]]
    _durations.clear()
    return (sum(secs), out, True) if secs else (wall, out, False)


def _listen_for_cache_hits() -> None:
    if not _cache_events:
        _cache_events.append("listening")
        jax.monitoring.register_event_listener(
            lambda event, **kw: _cache_events.append(event) if "cache_hits" in event else None
        )


def xla_memory(compiled: Any) -> dict[str, int] | None:
    """XLA's buffer assignment of a compiled executable (``Compiled.memory_analysis()``): ``temp``, ``argument``,
    ``output``, ``alias`` bytes; None where the backend does not give it."""
    try:
        m = compiled.memory_analysis()
    except Exception:
        return None
    if m is None:
        return None
    names = ("temp", "argument", "output", "alias")
    return {n: int(getattr(m, f"{n}_size_in_bytes", 0) or 0) for n in names}


def measure_compile(
    chain: Chain,
    depth: int,
    *,
    on_phase: PhaseCallback = no_phase,
    repeats: int | None = None,
    memory: bool = False,
) -> Point:
    """``jit(grad(f))``: trace, lower and XLA compile of a fresh function per repeat (no cache can hit:
    jit caches by function identity, the persistent compilation cache is off unless configured, and
    ``extra["compile_cache_hits"]`` counts jax's cache-hit events to prove it), then the steady run.

    A repeat is the whole ``jit(grad(f)).trace(x).lower().compile()``; the repeat policy sees the sum
    of the three phases. Metrics: ``python_calls`` of ``transform`` and ``lower`` (one more untimed
    run), ``jaxpr_eqns`` of the traced grad jaxpr, ``hlo_instructions`` of the optimized program. With ``memory``:
    ``saved_bytes`` = temp + argument + output bytes of XLA's buffer assignment of the compiled gradient
    (:func:`xla_memory`, read from the executable already compiled; the parts in ``extra["xla_memory"]``).
    """
    pt = Point(depth=depth)
    x = _input(chain)
    phase = "transform"
    try:
        _listen_for_cache_hits()
        _listen_for_durations()
        if first_time(chain, "compile"):  # first use of each primitive, untimed
            on_phase(WARMUP_PHASE, None)  # its own timeout: no point's cost
            jax.jit(jax.grad(_fn(chain, 1))).lower(x).compile()
        hits_before = len(_cache_events)
        samples: dict[str, list[float]] = {"transform": [], "lower": [], "compile": []}
        used: dict[str, dict[str, list[float | None]]] = {ph: {} for ph in samples}
        totals: list[float] = []
        by_event: set[str] = set()
        traced = compiled = None
        while more_repeats(totals, repeats):
            traced = compiled = None
            g = jax.jit(jax.grad(_fn(chain, depth)))  # a fresh function per repeat
            phase = "transform"
            on_phase(phase, None)
            t_trace, traced, ev_trace = attributed(phase, lambda g=g: g.trace(x), used[phase])
            phase = "lower"
            on_phase(phase, None)
            t_lower, lowered, ev_lower = attributed(phase, traced.lower, used[phase])
            phase = "compile"
            on_phase(phase, None)
            t_compile, compiled, ev_compile = attributed(phase, lowered.compile, used[phase])
            del lowered
            by_event.update(
                n for n, ev in (("transform", ev_trace), ("lower", ev_lower), ("compile", ev_compile)) if ev
            )
            for name, t in (("transform", t_trace), ("lower", t_lower), ("compile", t_compile)):
                samples[name].append(t)
            totals.append(t_trace + t_lower + t_compile)
        # the forward's own compile, once per depth in this worker (issue #34: the gradient read against its
        # forward; not a cost phase; the time schedule's later passes over a depth do not pay it again)
        if first_time(chain, f"{FORWARD_COMPILE} {depth}"):
            phase = FORWARD_COMPILE
            on_phase(phase, None)
            samples[phase], used[phase] = [], {"cpu": [], "wait": []}
            for _ in range(FORWARD_COMPILE_REPEATS):  # a fresh function each: jit caches by identity
                forward = jax.jit(_fn(chain, depth))
                with timed_block() as t, process_cpu() as clock:  # trace, lower and compile, as the gradient's
                    forward.trace(x).lower().compile()
                samples[phase].append(t["seconds"])
                used[phase]["cpu"].append(clock["cpu_seconds"])
                used[phase]["wait"].append(clock["wait_seconds"])
                del forward
        for name, values in samples.items():
            record_samples(pt, name, values)
        record_process_cpu(pt, used)
        pt.extra["compile_cache_hits"] = len(_cache_events) - hits_before
        pt.extra["phase_seconds_from"] = {
            ph: ("jax.monitoring " + COMPILE_EVENTS[ph]) if ph in by_event else "wall (perf_counter)"
            for ph in COMPILE_EVENTS
        }
        if FORWARD_COMPILE in samples:
            pt.extra["phase_seconds_from"][FORWARD_COMPILE] = "wall (perf_counter)"  # trace, lower, compile in one
        pt.extra["transform_includes"] = "trace + grad (jit(grad(f)).trace(x))"
        pt.ops["derivative_ops"] = count_eqns(traced.jaxpr)
        pt.extra["derivative_ops_top_level"] = count_eqns(traced.jaxpr, recursive=False)
        record_metric(pt, "transform", "jaxpr_eqns", count_eqns(traced.jaxpr))
        record_metric(pt, "compile", "hlo_instructions", hlo_instructions(compiled))
        phase = "transform"
        on_phase(phase, None)
        fresh = jax.jit(jax.grad(_fn(chain, depth)))
        n, traced2 = count_python_calls(functools.partial(fresh.trace, x))
        record_metric(pt, "transform", "python_calls", n)
        phase = "lower"
        on_phase(phase, None)
        n, _ = count_python_calls(traced2.lower)
        record_metric(pt, "lower", "python_calls", n)
        del traced2, fresh
        phase = "run"
        first = _ready(compiled(x))  # warm-up
        pt.extra["finite_gradient"] = bool(jnp.all(jnp.isfinite(first)))
        measure_phase(pt, "run", lambda: _ready(compiled(x)), on_phase, repeats=repeats)
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    if memory:
        with memory_time(pt):
            parts = xla_memory(compiled)
        if parts is not None:
            pt.memory[SAVED] = float(parts["temp"] + parts["argument"] + parts["output"])
            pt.extra["xla_memory"] = parts
    return pt


def count_compile(chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase) -> Point:
    """``--metric instructions``: ``jit(grad(f))`` of a fresh function, its ``transform`` (trace), ``lower`` and
    ``compile`` (XLA, on a thread of its own) each counted once under callgrind, after the untimed warm-up
    compile at depth 1; then one uncounted run (finite gradient). No warm-up at the measured depth: a fresh
    function compiles from scratch anyway, and the warm-up would double the cost (a compile at depth 200
    is ~3.6e9 instructions, ~70 s under callgrind)."""
    pt = Point(depth=depth)
    x = _input(chain)
    phase = "transform"
    try:
        if first_time(chain, "compile"):
            on_phase(WARMUP_PHASE, None)  # its own timeout: no point's cost
            jax.jit(jax.grad(_fn(chain, 1))).lower(x).compile()
        g = jax.jit(jax.grad(_fn(chain, depth)))
        traced = counted_phase(pt, "transform", lambda: g.trace(x), on_phase)  # grad checks the output
        phase = "lower"
        lowered = counted_phase(pt, "lower", traced.lower, on_phase)
        phase = "compile"
        compiled = counted_phase(pt, "compile", lowered.compile, on_phase)
        pt.extra["transform_includes"] = "trace + grad (jit(grad(f)).trace(x))"
        pt.ops["derivative_ops"] = count_eqns(traced.jaxpr)
        record_metric(pt, "transform", "jaxpr_eqns", count_eqns(traced.jaxpr))
        record_metric(pt, "compile", "hlo_instructions", hlo_instructions(compiled))
        phase = "run"
        on_phase(phase, None)
        pt.extra["finite_gradient"] = bool(jnp.all(jnp.isfinite(_ready(compiled(x)))))
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    pt.extra["counted"] = COUNTED_NOTE
    return pt


#: Every backend compile of this process: ``[count, seconds]`` (eager dispatch compiles each primitive per shape).
_compiles = [0, 0.0]


def _on_compile(event: str, secs: float, **kwargs: Any) -> None:
    if event == COMPILE_EVENTS["compile"]:
        _compiles[0] += 1
        _compiles[1] += float(secs)


def compiles_so_far() -> tuple[int, float]:
    """``(compiles, seconds)`` of XLA backend compiles in this process since the first call (which starts
    listening to ``jax.monitoring``)."""
    if "compiles" not in _listening:
        jax.monitoring.register_event_duration_secs_listener(_on_compile)
        _listening["compiles"] = True
    return _compiles[0], _compiles[1]


def measure_eager(
    chain: Chain, depth: int, *, calls: int = DEFAULT_CALLS, on_phase: PhaseCallback = no_phase, memory: bool = False
) -> Point:
    """``calls`` calls of ``jax.vjp(f, x)`` (forward) and ``vjp_fn(1.0)`` (backward), no jit. With ``memory``, read
    between the calls, outside their timed blocks: ``saved_bytes`` the arrays the VJP function holds
    (:func:`vjp_residual_arrays`), ``retained`` the bytes still alive after each call of those, its input, output
    and gradient."""
    a = chain.make_input()
    f = _fn(chain, depth)

    def forward(x: Any) -> tuple[Any, Any]:
        y, vjp_fn = jax.vjp(f, x)
        return _ready(y), vjp_fn

    def backward(x: Any, vjp_fn: Any) -> Any:
        (gx,) = vjp_fn(jnp.ones((), dtype=jnp.result_type(float)))
        return _ready(gx)

    def check(y: Any, d: int) -> None:
        if not hasattr(y, "shape") or not hasattr(y, "dtype"):
            check_output((), False, d, type(y).__name__)
        check_output(tuple(y.shape), jnp.issubdtype(y.dtype, jnp.floating), d)

    calls_memory = CallMemory(
        saved=lambda y, vjp_fn: sum(int(r.nbytes) for r in vjp_residual_arrays(vjp_fn)),
        made=lambda x, y, vjp_fn, g: [x, y, g, *vjp_residual_arrays(vjp_fn)],
        retained=Retained(size=lambda r: int(r.nbytes)),
    )
    return _eager_loop(
        chain,
        depth,
        calls=calls,
        on_phase=on_phase,
        leaf=lambda: jnp.asarray(a),
        forward=forward,
        backward=backward,
        scalar=float,
        check=check,
        memory=calls_memory if memory else None,
        per_shape=compiles_so_far,  # eager dispatch compiles each primitive at each new shape: warmed up per depth
    )


def _sub_jaxprs(eqn: Any) -> list[Any]:
    """The jaxprs in an equation's params (a ``pjit``'s, a ``custom_jvp_call``'s, a loop's body)."""
    out = []
    for p in eqn.params.values():
        for q in p if isinstance(p, list | tuple) else (p,):
            if hasattr(q, "eqns") or hasattr(getattr(q, "jaxpr", None), "eqns"):
                out.append(getattr(q, "jaxpr", q))
    return out


def _outvar_bytes(eqn: Any) -> int:
    return sum(_aval_bytes(v.aval) for v in eqn.outvars if hasattr(getattr(v, "aval", None), "shape"))


def _invar_bytes(eqn: Any) -> int:
    return sum(_aval_bytes(v.aval) for v in eqn.invars if hasattr(getattr(v, "aval", None), "shape"))


def _eqn_flops(eqn: Any) -> int:
    """FLOPs of one jaxpr equation (conventions of :mod:`adprof.backends.program`): where ``cost_analysis`` is not
    available."""
    name = eqn.primitive.name
    if name in program.MOVEMENT_OPS:
        return 0
    ins = [v.aval.shape for v in eqn.invars if hasattr(getattr(v, "aval", None), "shape")]
    if name == "dot_general":
        (contract, _), _ = eqn.params["dimension_numbers"]
        k = 1
        for d in contract:
            k *= int(ins[0][d])
        return 2 * k * sum(program.numel(v.aval.shape) for v in eqn.outvars)
    if name.startswith("reduce_") or name in ("argmax", "argmin", "cumsum"):
        return program.numel(ins[0]) if ins else 0
    return sum(program.numel(v.aval.shape) for v in eqn.outvars)


def _walk(jaxpr: Any, count: program.ProgramCount, trips: int = 1) -> None:
    """Every equation of ``jaxpr`` into ``count``, sub-jaxprs in place of the equation that calls them (a
    ``scan`` body once per trip; a ``while`` body once: its trip count is not known statically)."""
    for eqn in jaxpr.eqns:
        subs = _sub_jaxprs(eqn)
        if subs:
            inner = trips * int(eqn.params.get("length", 1)) if eqn.primitive.name == "scan" else trips
            for sub in subs:
                _walk(sub, count, inner)
            continue
        for _ in range(trips):
            count.add(_eqn_flops(eqn), _invar_bytes(eqn), _outvar_bytes(eqn))


def read_program(chain: Chain, depth: int, profile: str | None = None) -> dict[str, int]:
    """The forward's program (:mod:`adprof.backends.program`): ``ops`` = the jaxpr's equations, recursively (as
    ``value_ops``); ``flops`` = ``flops + transcendentals`` of the *lowered* forward's ``cost_analysis()`` (XLA
    counts sin apart; nothing is compiled), ``bytes`` its ``bytes accessed``, each counted from the equations
    where JAX gives none; ``intermediate_bytes`` = the bytes of every equation's outputs (sub-jaxprs' instead of
    the equation calling them)."""
    x = _input(chain)
    f = _fn(chain, depth)
    jaxpr = jax.make_jaxpr(f)(x)
    count = program.ProgramCount()
    _walk(jaxpr.jaxpr, count)
    out = count.as_dict()
    out["ops"] = count_eqns(jaxpr)
    try:
        cost = jax.jit(f).lower(x).cost_analysis()
    except Exception:
        cost = None
    if isinstance(cost, list | tuple):  # older JAX: one dict per computation
        cost = cost[0] if cost else None
    if isinstance(cost, dict) and "flops" in cost:
        out["flops"] = int(round(float(cost.get("flops", 0.0)) + float(cost.get("transcendentals", 0.0))))
        if "bytes accessed" in cost:
            out["bytes"] = int(round(float(cost["bytes accessed"])))
    return out


#: Measure one point; ``mode`` is ``traced``, ``compile`` or ``eager``; ``profile`` must be None.
measure_point = peer_measure_point(
    "jax",
    {"traced": measure_traced, "compile": measure_compile, "eager": measure_eager},
    counted={"compile": count_compile},
)


__all__ = [
    "DEPTHS",
    "MODES",
    "PROFILES",
    "PointFailure",
    "count_compile",
    "count_eqns",
    "measure_compile",
    "measure_eager",
    "measure_point",
    "measure_traced",
    "read_program",
    "residual_bytes",
    "vjp_residual_arrays",
    "xla_memory",
    "xp",
]
