"""The HIPS autograd peer backend: the same chain file on ``autograd.numpy`` (numpy, float64).

autograd has one transform, ``grad`` of a Python function, which traces the function on boxed values
(a tape) and walks the tape backwards (an iterative toposort): there is nothing to stage or compile,
so the only mode is ``eager``: per call on a fresh array, ``forward`` = ``make_vjp(f, x)`` (the chain
run on boxes, recording the tape), ``backward`` = the VJP applied to 1.0 (the backward pass); the
two halves of ``grad(f)(x)``. Call 0 and the lower quartile of the warm calls; ``python_calls`` of
a further warm call (numpy's C functions count as one call each).

``xp`` is :data:`xp`: ``autograd.numpy`` whose ``linalg.svd`` defaults to the reduced SVD
(``full_matrices=False``), as the engine's does, and ``xp.grad`` is ``autograd.grad`` (derivative-order
chains nest it). autograd has no gradient of ``linalg.qr``: a chain using it fails at its first layer with
autograd's own one-line message.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from adprof.backends import program
from adprof.backends.base import DEFAULT_CALLS, PhaseCallback, PointFailure, no_phase
from adprof.backends.memory import CallMemory, Retained, numpy_buffer, numpy_bytes, numpy_root
from adprof.backends.peer_common import (
    chain_binder,
    check_output,
    first_time,
    measure_counted_eager,
    namespace,
    not_installed,
    peer_measure_point,
)
from adprof.backends.peer_common import measure_eager as _eager_loop
from adprof.chain import Chain
from adprof.model import Point

try:
    import autograd.numpy as anp
    import numpy as np
    from autograd import grad as autograd_grad
    from autograd.core import VJPNode, make_vjp
except ImportError as _exc:
    raise not_installed("autograd", _exc, "autograd") from None

PROFILES: tuple[None, ...] = (None,)
MODES: tuple[str, ...] = ("eager",)


@functools.wraps(anp.linalg.svd)
def _svd(a: Any, full_matrices: bool = False, compute_uv: bool = True, **kwargs: Any) -> Any:
    """``autograd.numpy.linalg.svd`` defaulting to the reduced SVD (the engine's and the chains' convention)."""
    return anp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv, **kwargs)


_linalg = namespace("adprof_autograd_linalg", anp.linalg, {"svd": _svd})
#: The ``xp`` chains get: autograd.numpy with a reduced-SVD default, and ``xp.grad`` = ``autograd.grad``
#: (derivative-order chains nest it).
xp = namespace("adprof_autograd_numpy", anp, {"linalg": _linalg, "grad": autograd_grad})


#: ``_fn(chain, depth)``: the chain as a function of ``x`` on :data:`xp`.
_fn = chain_binder(xp)


def _check(y: Any, depth: int) -> None:
    value = getattr(y, "_value", y)  # make_vjp returns the plain value
    arr = np.asarray(value) if isinstance(value, np.ndarray | np.generic | float) else None
    if arr is None:
        check_output((), False, depth, type(value).__name__)
    check_output(tuple(arr.shape), np.issubdtype(arr.dtype, np.floating), depth)


def _arrays(values: Any) -> list[Any]:
    out = []
    for v in values:
        v = getattr(v, "_value", v)
        if isinstance(v, np.ndarray | np.generic | float):
            out.append(np.asarray(v))
    return out


#: Autograd primitives (by their function's name) of zero FLOPs, or one per input element (reductions).
_MOVEMENT = program.MOVEMENT_OPS | {"array_from_args", "concatenate_args", "reshape", "transpose", "swapaxes"}
_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod", "amax", "amin"})


def read_program(chain: Chain, depth: int, profile: str | None = None) -> dict[str, int]:
    """The forward's program (:mod:`adprof.backends.program`): the chain traced by autograd's own tracer with a node
    that keeps each primitive's name, inputs and output (``autograd.tracer.trace``, as ``autograd/misc/tracers.py``
    does), every node once: ``ops``, ``flops`` (a matrix product ``2*m*n*k``, a reduction one per input element,
    data movement none, anything else one per output element), ``bytes`` read and written, ``intermediate_bytes``
    the outputs."""
    from autograd.tracer import Node, trace

    count = program.ProgramCount()

    class Counting(Node):
        __slots__ = ()

        def __init__(self, value: Any, fun: Any, args: Any, kwargs: Any, parent_argnums: Any, parents: Any) -> None:
            name = getattr(fun, "__name__", "")
            outs = _arrays([value])
            ins = _arrays(args)
            if name in ("dot", "matmul", "inner", "tensordot") and len(ins) >= 2 and name != "tensordot":
                flops = program.matmul_flops(ins[0].shape, ins[1].shape)
            elif name == "einsum" and args and isinstance(args[0], str):
                spec = args[0].replace(" ", "").split("->")[0].split(",")
                flops = program.einsum_flops(spec, [a.shape for a in ins])
            elif name in _MOVEMENT:
                flops = 0
            elif name in _REDUCTIONS:
                flops = sum(int(a.size) for a in ins[:1])
            else:
                flops = sum(int(a.size) for a in outs)
            count.add(flops, sum(int(a.nbytes) for a in ins), sum(int(a.nbytes) for a in outs))

        def initialize_root(self, *args: Any, **kwargs: Any) -> None:
            pass

    trace(Counting.new_root(), _fn(chain, depth), np.asarray(chain.make_input()))
    return count.as_dict()


def _eager_calls(chain: Chain, depth: int) -> dict[str, Any]:
    """The eager loop's callables: ``make_vjp(f, x)`` (forward) and ``vjp(1.0)`` (backward) on fresh arrays."""
    a = chain.make_input()
    f = _fn(chain, depth)

    def forward(x: Any) -> tuple[Any, Any]:
        vjp, y = make_vjp(f, x)
        return y, vjp

    def backward(x: Any, vjp: Any) -> Any:
        return vjp(1.0)

    def warm_up() -> None:
        if first_time(chain, "eager"):
            vjp, _ = make_vjp(_fn(chain, 1), a.copy())
            vjp(1.0)

    return {
        "leaf": a.copy,
        "forward": forward,
        "backward": backward,
        "scalar": float,
        "check": _check,
        "warm_up": warm_up,
    }


def tape_arrays(vjp: Any) -> list[Any]:
    """The numpy arrays autograd's tape behind ``vjp`` (the function ``make_vjp`` returns) holds: what each node's
    VJP closure captured (its inputs, its result, whatever the rule keeps), walked iteratively from the end node
    through ``parents``, each buffer once (in walk order)."""
    cells = vjp.__closure__ or ()
    end = next((c.cell_contents for c in cells if isinstance(c.cell_contents, VJPNode)), None)
    if end is None:
        return []
    nodes, seen_nodes, stack = [], {id(end)}, [end]
    while stack:
        node = stack.pop()
        nodes.append(node)
        for parent in node.parents:
            if id(parent) not in seen_nodes:
                seen_nodes.add(id(parent))
                stack.append(parent)
    arrays: list[Any] = []
    seen: set[int] = set()
    todo: list[Any] = [node.vjp for node in nodes]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            root = numpy_root(obj)
            if root is obj or id(root) not in seen:
                seen.add(id(root))
                arrays.append(root)
        elif isinstance(obj, VJPNode):  # another node (a higher-order tape): walked as a node, not here
            continue
        elif isinstance(obj, types.FunctionType):
            todo.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            todo.extend(d for d in obj.__defaults__ or ())
        elif isinstance(obj, functools.partial):
            todo.extend((obj.func, *obj.args, *obj.keywords.values()))
        elif isinstance(obj, tuple | list):
            todo.extend(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif hasattr(obj, "_value") and hasattr(obj, "_node"):  # a box (nested grad): its value
            todo.append(obj._value)
    return arrays


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:  # an empty cell
        return False
    return True


def measure_eager(
    chain: Chain, depth: int, *, calls: int = DEFAULT_CALLS, on_phase: PhaseCallback = no_phase, memory: bool = False
) -> Point:
    """Calls of ``make_vjp(f, x)`` (forward) and ``vjp(1.0)`` (backward) on fresh arrays. With ``memory``, read
    between the calls, outside their timed blocks: ``saved_bytes`` the arrays the tape holds between forward and
    backward (:func:`tape_arrays`), ``retained`` those, the input and the gradient still alive after each call."""
    calls_memory = CallMemory(
        saved=lambda y, vjp: sum(int(a.nbytes) for a in tape_arrays(vjp)),
        made=lambda x, y, vjp, g: [x, y, g, *tape_arrays(vjp)],
        retained=Retained(size=numpy_bytes, key=numpy_buffer),
    )
    return _eager_loop(
        chain,
        depth,
        calls=calls,
        on_phase=on_phase,
        memory=calls_memory if memory else None,
        **_eager_calls(chain, depth),
    )


def count_eager(chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase) -> Point:
    """``--metric instructions``: one forward and one backward counted under callgrind, after a warm-up call
    (pure Python: its Python call counts decide by default; this is the cheap check of the counting)."""
    return measure_counted_eager(chain, depth, on_phase=on_phase, **_eager_calls(chain, depth))


#: Measure one point; ``mode`` must be ``eager`` and ``profile`` None.
measure_point = peer_measure_point("autograd", {"eager": measure_eager}, counted={"eager": count_eager})


__all__ = [
    "MODES",
    "PROFILES",
    "PointFailure",
    "count_eager",
    "measure_eager",
    "measure_point",
    "read_program",
    "tape_arrays",
    "xp",
]
