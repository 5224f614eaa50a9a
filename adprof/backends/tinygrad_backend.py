"""The tinygrad peer backend: the same chain file on a small numpy-like namespace over ``tinygrad.Tensor``.

Device: ``DEV=PYTHON`` (set on import unless ``DEV`` is already set). tinygrad's CPU device compiles
kernels with clang, which these machines do not have (gcc only); the PYTHON device runs the same
frontend, scheduler and codegen (lowering, linearizer) and then interprets the kernel in Python, so it
works everywhere, with no C compiler, and everything tinygrad does is Python. ``CACHELEVEL=0``: no
on-disk kernel cache shared between processes. A gradient that does not depend on the input (a constant,
e.g. of ``y = 0.7*y + 0.3*y``) has no device, and tinygrad would realize it on ``CPU`` (clang): every
tensor the backend realizes is placed on the input's device first (:func:`on_device`).

tinygrad is lazy: building the chain records a graph, ``backward()`` adds the gradient graph, and
realizing a tensor schedules the graph into kernels, generates their code (cached by kernel) and runs
them. Modes:

* ``compile``: tinygrad's first-realize pipeline of the gradient, split in phases (named as jax's compile
  mode), every repeat on a fresh graph with tinygrad's schedule and program caches cleared (so each
  repeat really schedules and generates code): ``transform`` (the chain's lazy graph and
  ``loss.gradient(x)``), ``lower`` (tinygrad's scheduler, ``linear_with_vars``: the graph cut into
  kernels), ``compile`` (codegen, ``compile_linear``: lowering, linearizer, rendering), ``run``
  (executing the kernels, reading the gradient).
* ``eager``: what a user writes, per call on a fresh tensor: ``forward`` = the chain (lazy graph),
  ``backward`` = ``loss.backward()`` and realizing ``x.grad``. Caches are cleared at the start of a point,
  so call 0 pays scheduling and codegen; warm calls hit tinygrad's caches.

Ops a chain may use: ``asarray``, ``sin``, ``cos``, ``tanh``, ``exp``, ``log``, ``sqrt``, ``sum``,
``reshape``, ``transpose``, ``matmul``, ``einsum``; any other ``xp.name`` raises
:class:`UnsupportedOpError` (one line naming it; ``linalg.svd``/``qr`` say why they are not offered).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from typing import Any

from adprof.backends import program
from adprof.backends.base import (
    DEFAULT_CALLS,
    PhaseCallback,
    PointFailure,
    UnsupportedOpError,
    count_python_calls,
    more_repeats,
    no_phase,
    record_metric,
    record_samples,
    timed,
)
from adprof.backends.peer_common import (
    chain_binder,
    check_output,
    failure,
    first_time,
    loss_calls,
    not_installed,
    peer_measure_point,
)
from adprof.backends.peer_common import measure_eager as _eager_loop
from adprof.chain import Chain
from adprof.model import Point

if "tinygrad" not in sys.modules:
    os.environ.setdefault("DEV", "PYTHON")
    os.environ.setdefault("CACHELEVEL", "0")

try:
    import numpy as np
    import tinygrad.codegen as _codegen
    import tinygrad.engine.realize as _realize
    import tinygrad.schedule as _schedule
    from tinygrad import Tensor, dtypes
except ImportError as _exc:
    raise not_installed("tinygrad", _exc, "tinygrad") from None

PROFILES: tuple[None, ...] = (None,)
MODES: tuple[str, ...] = ("compile", "eager")
#: tinygrad's in-process caches of scheduling and codegen (cleared so that a point pays them).
_CACHES = ("schedule_cache", "to_program_cache", "runtime_cache", "local_size_cache")


def clear_caches() -> None:
    """Empty tinygrad's schedule, program and runtime caches."""
    for mod in (_schedule, _codegen, _realize):
        for name in _CACHES:
            cache = getattr(mod, name, None)
            if isinstance(cache, dict):
                cache.clear()


# --------------------------------------------------------------------------- xp


def _asarray(obj: Any, /, *, dtype: Any = None, **kwargs: Any) -> Any:
    if isinstance(obj, Tensor):
        return obj
    return Tensor(np.asarray(obj, dtype=dtype or np.float64))


def _sum(x: Any, axis: int | Sequence[int] | None = None, keepdims: bool = False) -> Any:
    return x.sum(axis=axis, keepdim=keepdims)


def _transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """numpy's ``transpose``: reverse the axes, or permute them by ``axes``."""
    return x.permute(tuple(axes) if axes is not None else tuple(range(x.ndim - 1, -1, -1)))


#: Why ``xp.linalg`` is not offered (tinygrad 0.14 has ``Tensor.svd``/``qr``, measured here: unusable for chains).
_NO_LINALG = (
    "is not offered on tinygrad: Tensor.svd/qr unroll an iterative solver into the graph (69 s per backward "
    "at depth 4) and differ from LAPACK's signs"
)


class _Namespace(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self.__name__ == "xp.linalg.":
            raise UnsupportedOpError(f"xp.linalg.{name} {_NO_LINALG}")
        raise UnsupportedOpError(f"the tinygrad backend has no {self.__name__}{name}")


linalg = _Namespace("xp.linalg.")
#: The ``xp`` chains get on tinygrad.
xp = _Namespace("xp.")
xp.__dict__.update(
    {
        "asarray": _asarray,
        "sin": Tensor.sin,
        "cos": Tensor.cos,
        "tanh": Tensor.tanh,
        "exp": Tensor.exp,
        "log": Tensor.log,
        "sqrt": Tensor.sqrt,
        "sum": _sum,
        "reshape": Tensor.reshape,
        "transpose": _transpose,
        "matmul": Tensor.matmul,
        "einsum": Tensor.einsum,
        "linalg": linalg,
        "float64": dtypes.float64,
    }
)


#: ``_fn(chain, depth)``: the chain as a function of ``x`` on :data:`xp`.
_fn = chain_binder(xp)


def _check(y: Any, depth: int) -> None:
    if not isinstance(y, Tensor):
        check_output((), False, depth, type(y).__name__)
    check_output(tuple(y.shape), dtypes.is_float(y.dtype), depth)


def on_device(t: Any, like: Any) -> Any:
    """``t`` on ``like``'s device. A gradient that does not depend on the input (``y = 0.7*y + 0.3*y``: a
    constant) has no device, and tinygrad realizes a device-less tensor on ``CPU``, which compiles its
    kernels with clang whatever ``DEV`` says; adding it to zeros on the input's device keeps it there."""
    if t.device is not None:
        return t
    return Tensor.zeros(t.shape, device=like.device, dtype=t.dtype) + t


def _gradient(loss: Any, x: Any) -> Any:
    """``d loss / d x`` on ``x``'s device."""
    (g,) = loss.gradient(x)
    return on_device(g, x)


def _warm_up(chain: Chain, mode: str) -> None:
    """One untimed call at depth 1 the first time a chain is seen (first use of each op)."""
    if first_time(chain, mode):
        x = Tensor(chain.make_input())
        loss = _fn(chain, 1)(x)
        _gradient(loss, x).numpy()


def read_program(chain: Chain, depth: int, profile: str | None = None) -> dict[str, int]:
    """The forward's program, best effort (:mod:`adprof.backends.program`): tinygrad's *lazy* graph of the chain
    (nothing is scheduled nor realized: realizing on the PYTHON device interprets every kernel), before fusion:
    its float compute UOps (ALU ops and reductions) each once: ``ops``; ``flops`` one per output element of an ALU
    op, one per input element of a reduction (a matrix product is a broadcast multiply and a sum: ``2*m*n*k``);
    ``bytes`` read and written; ``intermediate_bytes`` the outputs (fusion keeps fewer of them in memory)."""
    from tinygrad.uop.ops import GroupOp, Ops

    def size(u: Any) -> int:
        return program.numel(u.shape) * int(u.dtype.itemsize)

    x = Tensor(chain.make_input())
    y = _fn(chain, depth)(x)
    count = program.ProgramCount()
    for u in y.uop.toposort():
        alu = u.op in GroupOp.ALU
        if not (alu or u.op is Ops.REDUCE) or not dtypes.is_float(u.dtype):
            continue
        ins = [s for s in u.src if hasattr(s, "shape") and s.op not in (Ops.CONST,)]
        flops = program.numel(u.shape) if alu else sum(program.numel(s.shape) for s in ins[:1])
        count.add(flops, sum(size(s) for s in ins), size(u))
    return count.as_dict()


# --------------------------------------------------------------------------- compile


def _run(linear: Any, var_vals: dict[str, int]) -> None:
    ctx = _realize.ExecContext(var_vals or {}, (), True, False, False)
    for call in linear.src:
        _realize.track_stats(ctx, call, _realize.perf_counter_us(), _realize.pm_exec.rewrite(call, ctx))


def measure_compile(
    chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase, repeats: int | None = None
) -> Point:
    """The gradient's first realize, phase by phase, on a fresh graph with cleared caches per repeat.

    The repeat policy sees the sum of the phases; ``python_calls`` of every phase come from one more
    run under cProfile (cold too).
    """
    pt = Point(depth=depth)
    a = chain.make_input()
    names = ("transform", "lower", "compile", "run")
    phase = "transform"
    try:
        _warm_up(chain, "compile")

        def one(profile: bool) -> tuple[dict[str, float], Any]:
            nonlocal phase
            clear_caches()
            x = Tensor(a)
            state: dict[str, Any] = {}

            def transform() -> Any:
                loss = _fn(chain, depth)(x)
                _check(loss, depth)
                return _gradient(loss, x)

            steps = {
                "transform": transform,
                "lower": lambda: state["transform"].linear_with_vars(),
                "compile": lambda: _realize.link_linear(
                    _realize.compile_linear(state["lower"][0], validate=_realize.VALIDATE_WITH_CPU, input_uops=[])
                ),
                "run": lambda: (_run(state["compile"], state["lower"][1]), state["transform"].numpy())[1],
            }
            out: dict[str, float] = {}
            for name in names:
                phase = name
                on_phase(name, None)
                out[name], state[name] = count_python_calls(steps[name]) if profile else timed(steps[name])
            return out, state

        samples: dict[str, list[float]] = {n: [] for n in names}
        totals: list[float] = []
        state: dict[str, Any] = {}
        while more_repeats(totals, repeats):
            state = {}
            times, state = one(profile=False)
            for name in names:
                samples[name].append(times[name])
            totals.append(sum(times.values()))
        for name in names:
            record_samples(pt, name, samples[name])
        pt.extra["finite_gradient"] = bool(np.all(np.isfinite(state["run"])))
        pt.extra["kernels"] = len(state["compile"].src)
        state = {}
        calls, _ = one(profile=True)
        for name in names:
            record_metric(pt, name, "python_calls", calls[name])
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    return pt


# --------------------------------------------------------------------------- eager


def measure_eager(chain: Chain, depth: int, *, calls: int = DEFAULT_CALLS, on_phase: PhaseCallback = no_phase) -> Point:
    """Calls of the chain (lazy) and ``loss.backward()`` + realizing ``x.grad``, caches cleared first."""
    a = chain.make_input()
    f = _fn(chain, depth)

    forward, backward = loss_calls(f, lambda x: on_device(x.grad, x).realize().numpy())

    def warm_up() -> None:
        _warm_up(chain, "eager")
        clear_caches()

    def scalar(loss: Any) -> float:
        # the value from a separate forward graph: realizing ``loss`` itself would replace its graph by a
        # buffer, and its backward would no longer reach x (untimed: between the timed blocks)
        x = Tensor(a)
        return float(on_device(f(x), x).numpy())

    return _eager_loop(
        chain,
        depth,
        calls=calls,
        on_phase=on_phase,
        leaf=lambda: Tensor(a),
        forward=forward,
        backward=backward,
        scalar=scalar,
        check=_check,
        warm_up=warm_up,
    )


#: Measure one point; ``mode`` is ``compile`` or ``eager``, ``profile`` None.
measure_point = peer_measure_point("tinygrad", {"compile": measure_compile, "eager": measure_eager})


__all__ = [
    "MODES",
    "PROFILES",
    "PointFailure",
    "UnsupportedOpError",
    "clear_caches",
    "measure_compile",
    "on_device",
    "measure_eager",
    "measure_point",
    "read_program",
    "xp",
]
