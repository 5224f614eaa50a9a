"""The JAX peer backend: the same chain file on ``jax.numpy`` (float64: ``jax_enable_x64``).

Modes (no counters: points carry wall times, phases repeated and their median kept, see
:mod:`adprof.backends.peer_common`):

* ``traced``: ``record`` = ``jax.make_jaxpr(f)(x)`` (the forward trace; ``value_ops``), ``transform``
  = ``jax.make_jaxpr(jax.grad(f))(x)`` (trace + grad transform; ``derivative_ops``), ``drop`` =
  freeing that jaxpr. Op counts are jaxpr equations counted *recursively* (equations inside
  sub-jaxprs, e.g. of the jitted ``jnp.linalg.svd``, count; the top-level counts are in ``extra``).
* ``compile``: ``jax.jit(jax.grad(f))`` step by step: ``transform`` = ``.trace(x)``, ``lower`` =
  ``.lower()``, ``compile`` = ``.compile()`` (XLA), ``run`` = the compiled call (steady median).
  This is jit's first-call cost, paid once per shape, reported as its own result.
* ``eager``: ``jax.grad(f)`` without jit, per call, split in its two halves: ``forward`` =
  ``jax.vjp(f, x)`` (primal ops dispatched one by one, plus linearization), ``backward`` = the VJP
  function applied to 1.0. ``calls`` calls on fresh arrays: call 0 and the median of calls 1..K-1.

On import: ``JAX_PLATFORMS=cpu`` and single-threaded XLA
(``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``) unless already set,
and x64 enabled. ``xp`` is :data:`xp`: ``jax.numpy`` whose ``linalg.svd`` defaults to the reduced SVD
(``full_matrices=False``), as the engine's does; nothing else is changed.
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
from typing import Any

from adprof.backends.peer_common import (
    DEFAULT_CALLS,
    PhaseCallback,
    PointFailure,
    check_finite,
    check_output,
    failure,
    first_time,
    measure_phase,
    namespace,
    no_phase,
    not_installed,
    prepare_process,
    timed,
)
from adprof.backends.peer_common import measure_eager as _eager_loop
from adprof.chain import Chain
from adprof.model import Point

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
#: Depths suggested for this backend's time-only fits (>= 8x span, doublings).
DEPTHS: tuple[int, ...] = (8, 16, 32, 64, 128)


@functools.wraps(jnp.linalg.svd)
def _svd(a: Any, full_matrices: bool = False, compute_uv: bool = True, **kwargs: Any) -> Any:
    """``jnp.linalg.svd`` defaulting to the reduced SVD (the engine's and the chains' convention)."""
    return jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, **kwargs)


_linalg = namespace("adprof_jax_linalg", jnp.linalg, {"svd": _svd})
#: The ``xp`` chains get: jax.numpy with a reduced-SVD default.
xp = namespace("adprof_jax_numpy", jnp, {"linalg": _linalg})


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


def _fn(chain: Chain, depth: int) -> Any:
    def f(x: Any) -> Any:
        return chain(xp, x, depth)

    return f


def _check_avals(avals: list[Any], depth: int) -> None:
    if len(avals) != 1:
        check_output((), False, depth, f"{len(avals)} outputs")
    check_output(tuple(avals[0].shape), jnp.issubdtype(avals[0].dtype, jnp.floating), depth)


def _ready(y: Any) -> Any:
    return jax.block_until_ready(y)


def measure_traced(chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase) -> Point:
    """``make_jaxpr(f)`` (record) and ``make_jaxpr(grad(f))`` (transform), medians of repeats."""
    pt = Point(depth=depth)
    x = _input(chain)
    f = _fn(chain, depth)
    phase = "record"
    try:
        if first_time(chain, "traced"):  # first use of each primitive, untimed
            jax.make_jaxpr(jax.grad(_fn(chain, 1)))(x)
        # a fresh function per repeat: jax caches traces by function identity
        jaxpr = measure_phase(pt, "record", lambda: jax.make_jaxpr(_fn(chain, depth))(x), on_phase)
        _check_avals(list(jaxpr.out_avals), depth)
        pt.ops["value_ops"] = count_eqns(jaxpr)
        pt.extra["value_ops_top_level"] = count_eqns(jaxpr, recursive=False)
        del jaxpr
        phase = "check"
        value = float(f(x))
        check_finite(value, depth)
        pt.extra["value"] = value
        phase = "transform"
        gj = measure_phase(pt, "transform", lambda: jax.make_jaxpr(jax.grad(_fn(chain, depth)))(x), on_phase)
        pt.extra["transform_includes"] = "trace + grad (make_jaxpr(grad(f)))"
        pt.ops["derivative_ops"] = count_eqns(gj)
        pt.extra["derivative_ops_top_level"] = count_eqns(gj, recursive=False)
        phase = "drop"
        holder = [gj]
        del gj
        measure_phase(pt, "drop", holder.clear, on_phase, repeat=False)
    except (Exception, RecursionError, MemoryError) as exc:  # explicit on purpose
        raise failure(exc, chain, depth, phase, pt) from None
    return pt


def _compile_once(f: Any, x: Any, on_phase: PhaseCallback) -> tuple[dict[str, tuple[float, float]], Any, Any]:
    """One ``jit(grad(f))`` trace / lower / compile: ``({phase: (cpu s, wall s)}, traced, compiled)``."""
    g = jax.jit(jax.grad(f))
    times: dict[str, tuple[float, float]] = {}
    on_phase("transform", None)
    *times["transform"], traced = timed(lambda: g.trace(x))
    on_phase("lower", None)
    *times["lower"], lowered = timed(traced.lower)
    on_phase("compile", None)
    *times["compile"], compiled = timed(lowered.compile)
    return times, traced, compiled


def measure_compile(chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase) -> Point:
    """``jit(grad(f))``: trace, lower, XLA compile (repeated when fast) and the steady run."""
    pt = Point(depth=depth)
    x = _input(chain)
    phase = "transform"
    try:
        if first_time(chain, "compile"):  # first use of each primitive, untimed
            jax.jit(jax.grad(_fn(chain, 1))).lower(x).compile()
        runs: list[dict[str, tuple[float, float]]] = []
        while True:  # a fresh function per run: jit caches by function identity
            times, traced, compiled = _compile_once(_fn(chain, depth), x, on_phase)
            runs.append(times)
            total = sum(w for _, w in times.values())
            if len(runs) >= (5 if total < 0.1 else 3 if total < 0.5 else 1):
                break
            del traced, compiled
        wall = pt.extra.setdefault("wall", {})
        for name in ("transform", "lower", "compile"):
            pt.times[name] = statistics.median(r[name][0] for r in runs)
            wall[name] = statistics.median(r[name][1] for r in runs)
            pt.extra[f"{name}_samples"] = [r[name][0] for r in runs]
        pt.extra["transform_includes"] = "trace + grad (jit(grad(f)).trace(x))"
        pt.ops["derivative_ops"] = count_eqns(traced.jaxpr)
        pt.extra["derivative_ops_top_level"] = count_eqns(traced.jaxpr, recursive=False)
        phase = "run"
        first = _ready(compiled(x))  # warm-up
        pt.extra["finite_gradient"] = bool(jnp.all(jnp.isfinite(first)))
        measure_phase(pt, "run", lambda: _ready(compiled(x)), on_phase)
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    return pt


def measure_eager(chain: Chain, depth: int, *, calls: int = DEFAULT_CALLS, on_phase: PhaseCallback = no_phase) -> Point:
    """``calls`` calls of ``jax.vjp(f, x)`` (forward) and ``vjp_fn(1.0)`` (backward), no jit."""
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

    def warm_up() -> None:
        if first_time(chain, "eager"):
            _ready(jax.grad(_fn(chain, 1))(jnp.asarray(a)))

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
        warm_up=warm_up,
    )


def measure_point(
    chain: Chain,
    mode: str,
    depth: int,
    profile: str | None = None,
    *,
    calls: int = DEFAULT_CALLS,
    on_phase: PhaseCallback = no_phase,
    counter_budget: int | None = None,
) -> Point:
    """Measure one point; ``mode`` is ``traced``, ``compile`` or ``eager``; ``profile`` must be None.

    ``counter_budget`` is accepted for interface parity and ignored (JAX has no counters).
    """
    if profile is not None:
        raise ValueError(f"the jax backend has no cost profiles (got {profile!r})")
    prepare_process()
    if mode == "traced":
        return measure_traced(chain, depth, on_phase=on_phase)
    if mode == "compile":
        return measure_compile(chain, depth, on_phase=on_phase)
    if mode == "eager":
        return measure_eager(chain, depth, calls=calls, on_phase=on_phase)
    raise ValueError(f"unknown mode {mode!r} for the jax backend; known: {', '.join(MODES)}")


__all__ = [
    "DEPTHS",
    "MODES",
    "PROFILES",
    "PointFailure",
    "count_eqns",
    "measure_compile",
    "measure_eager",
    "measure_point",
    "measure_traced",
    "xp",
]
