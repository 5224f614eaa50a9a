"""The PyTorch peer backend: the same chain file on ``array_api_compat.torch`` (float64, 1 thread).

Modes (no engine counters: points carry wall times, the lower quartile of repeats, and deterministic
work metrics, see :mod:`adprof.backends.base` and the declarations in :mod:`adprof.backends.builtin`):

* ``eager``: per call a fresh ``requires_grad`` leaf, ``forward`` = the chain, ``backward`` =
  ``loss.backward()``; ``calls`` calls: call 0 and the lower quartile of the warm calls;
  ``autograd_nodes`` (the ``grad_fn`` graph) in ``metrics["backward"]``.
* ``traced``: a real transform, traced to a graph: ``record`` = ``make_fx(f)(x)`` (``value_ops``),
  ``transform`` = ``make_fx(torch.func.grad(f))(x)`` (functorch's grad transform traced into an FX
  graph; ``derivative_ops``), ``drop`` = freeing that graph. Op counts are the graphs'
  ``call_function`` nodes.
* ``compile``: ``torch.compile`` of the chain with its gradient (Dynamo, AOTAutograd, Inductor; gcc as
  Inductor's C++ compiler), phase by phase: :mod:`adprof.backends.torch_compile`.

``xp`` is :data:`xp`: ``array_api_compat.torch`` with three documented changes so that chains
written for the engine's numpy-like namespace run unchanged: ``linalg.svd`` defaults to the reduced
SVD (``full_matrices=False``; torch and the array API default to the full one), ``transpose`` has
numpy's semantics (``transpose(x)`` reverses the axes, ``transpose(x, axes)`` permutes them;
torch's ``transpose(x, dim0, dim1)`` swaps two), and ``asarray`` of Python numbers or sequences
gives float64 (torch would give float32); ``xp.grad(fn)`` differentiates with
``torch.autograd.grad(create_graph=True)`` (derivative-order chains nest it). On import:
``torch.set_num_threads(1)``, and subnormal floats are flushed to zero (``torch.set_flush_denormal``), as
XLA does on CPU: chains like mul underflow after ~10 layers, and timing subnormal arithmetic would fake a
superlinear cost.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator, Sequence
from typing import Any

from adprof.backends import program
from adprof.backends.base import DEFAULT_CALLS, PhaseCallback, PointFailure, measure_phase, no_phase
from adprof.backends.memory import SAVED, Retained, memory_time
from adprof.backends.peer_common import (
    chain_binder,
    check_finite,
    check_output,
    describe_exception,
    failure,
    first_time,
    loss_calls,
    measure_counted_eager,
    measure_drop,
    measure_memory,
    namespace,
    not_installed,
    peer_measure_point,
)
from adprof.backends.peer_common import measure_eager as _eager_loop
from adprof.chain import Chain
from adprof.model import WARMUP_PHASE, Point

try:
    import array_api_compat.torch as _xt
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
except ImportError as _exc:
    raise not_installed("torch", _exc, "torch, array-api-compat") from None

torch.set_num_threads(1)
torch.set_flush_denormal(True)

PROFILES: tuple[None, ...] = (None,)
MODES: tuple[str, ...] = ("traced", "eager", "compile")
#: Depths suggested for this backend's time-only fits (>= 8x span, doublings).
DEPTHS: tuple[int, ...] = (8, 16, 32, 64, 128)


@functools.wraps(torch.linalg.svd)
def _svd(a: Any, full_matrices: bool = False, **kwargs: Any) -> Any:
    """``torch.linalg.svd`` defaulting to the reduced SVD (the engine's and the chains' convention)."""
    return torch.linalg.svd(a, full_matrices=full_matrices, **kwargs)


def _transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """numpy's ``transpose``: reverse the axes, or permute them by ``axes``."""
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return torch.permute(x, tuple(axes))


def _asarray(obj: Any, /, *, dtype: Any = None, **kwargs: Any) -> Any:
    """``asarray``, float64 for Python floats/ints and sequences of them (as in the engine)."""
    if dtype is None and isinstance(obj, float | int | list | tuple) and not isinstance(obj, bool):
        dtype = torch.float64
    return _xt.asarray(obj, dtype=dtype, **kwargs)


def _grad(fn: Any) -> Any:
    """``xp.grad(fn)``: ``x -> d fn(x) / dx`` by ``torch.autograd.grad(create_graph=True)``, differentiable again
    (derivative-order chains nest it, pytorch#111563); ``x`` must require grad (eager mode's leaves do)."""

    def grad_of(x: Any) -> Any:
        with torch.enable_grad():
            (gx,) = torch.autograd.grad(fn(x), x, create_graph=True)
        return gx

    return grad_of


_linalg = namespace("adprof_torch_linalg", _xt.linalg, {"svd": _svd})
#: The ``xp`` chains get (see the module docstring).
xp = namespace("adprof_torch_xp", _xt, {"linalg": _linalg, "transpose": _transpose, "asarray": _asarray, "grad": _grad})

_warm = False


def _warm_up() -> None:
    """One tiny make_fx(grad) per process: its first use costs seconds of one-time set-up."""
    global _warm
    if not _warm:
        make_fx(torch.func.grad(lambda x: (x * x).sum()))(torch.ones(2, dtype=torch.float64))
        _warm = True


def _input(chain: Chain) -> Any:
    return torch.from_numpy(chain.make_input())


#: ``_fn(chain, depth)``: the chain as a function of ``x`` on :data:`xp`.
_fn = chain_binder(xp)


def _check(y: Any, depth: int) -> None:
    if not isinstance(y, torch.Tensor):
        check_output((), False, depth, type(y).__name__)
    check_output(tuple(y.shape), y.dtype.is_floating_point, depth)


def op_count(gm: Any) -> int:
    """``call_function`` nodes of an FX graph module."""
    return sum(1 for node in gm.graph.nodes if node.op == "call_function")


#: Ops that read only their input's shape and dtype (the backward's seed ``ones_like(loss)``): no value is kept for
#: them.
_SHAPE_ONLY = frozenset(
    {"ones_like", "zeros_like", "empty_like", "full_like", "new_ones", "new_zeros", "new_empty", "new_full"}
)


def _value_bytes(value: Any) -> int:
    """``numel * element_size`` of a node's value (``meta["val"]``: a tensor, or a tuple of them)."""
    if isinstance(value, torch.Tensor):
        return int(value.numel()) * int(value.element_size())
    if isinstance(value, list | tuple):
        return sum(_value_bytes(v) for v in value)
    return 0


def joint_saved(gm: Any) -> dict[Any, int]:
    """The forward values the backward reads in the joint graph of ``make_fx(torch.func.grad_and_value(f))``, each
    with its bytes (its ``meta["val"]``'s ``numel * element_size``).

    The graph holds the ops in the order they ran: the forward, ending at the loss (the output's value), then the
    backward. A value is saved when a backward op reads it: a placeholder (the input) or a forward op's result, a
    view resolved to the value it views (its storage: ``expand`` of a scalar keeps 8 bytes), each once; a constant
    (``get_attr``: a weight made inside the chain) once per constant, as eager mode's hooks count a weight once.
    Reads of shape only (:data:`_SHAPE_ONLY`, the seed ``ones_like(loss)``) keep nothing. The keys: nodes, or
    ``("constant", target)``."""
    nodes = list(gm.graph.nodes)
    loss = nodes[-1].args[0][1]  # output: (grad, value)
    end = nodes.index(loss) + 1
    forward = set(nodes[:end])
    saved: dict[Any, int] = {}
    for node in nodes[end:]:
        if node.op != "call_function":
            continue
        name = getattr(getattr(node.target, "overloadpacket", None), "__name__", "")
        if name in _SHAPE_ONLY:
            continue
        for arg in node.all_input_nodes:
            if arg.op != "get_attr" and arg not in forward:
                continue
            base = arg
            while (
                base.op == "call_function"
                and getattr(base.target, "is_view", False)
                and base.all_input_nodes
                and base.all_input_nodes[0] in forward
            ):
                base = base.all_input_nodes[0]
            key = ("constant", base.target) if base.op == "get_attr" else base
            saved[key] = _value_bytes(base.meta.get("val"))
    return saved


def traced_saved_bytes(f: Any, x: Any) -> tuple[int, int]:
    """Saved-for-backward bytes of ``f`` at ``x`` in traced mode, and how many values: the joint graph of
    ``make_fx(torch.func.grad_and_value(f))(x)`` read by :func:`joint_saved` (shapes and dtypes of its values;
    deterministic)."""
    gm = make_fx(torch.func.grad_and_value(f))(x)
    saved = joint_saved(gm)
    return sum(saved.values()), len(saved)


def measure_traced(
    chain: Chain,
    depth: int,
    *,
    on_phase: PhaseCallback = no_phase,
    repeats: int | None = None,
    memory: bool = False,
) -> Point:
    """``make_fx(f)`` (record) and ``make_fx(torch.func.grad(f))`` (transform): repeats and python_calls.
    With ``memory``, after the drop: ``saved_bytes``, the forward values the backward reads in the joint graph
    (:func:`traced_saved_bytes`; how many in ``extra["saved_values"]``)."""
    pt = Point(depth=depth)
    x = _input(chain)
    f = _fn(chain, depth)
    phase = "record"
    try:
        first = first_time(chain, "traced")
        if first or not _warm:  # scale34 (#34): one-time set-up, under its own timeout (never the point's)
            on_phase(WARMUP_PHASE, None)
            t0 = time.perf_counter()
            _warm_up()
            if first:  # first use of each op, untimed
                make_fx(torch.func.grad(_fn(chain, 1)))(x)
            pt.warmup["once"] = time.perf_counter() - t0
        with torch.no_grad():
            y = f(x)
        _check(y, depth)
        value = float(y)
        check_finite(value, depth)
        pt.extra["value"] = value
        gm = measure_phase(
            pt, "record", lambda: make_fx(_fn(chain, depth))(x), on_phase, repeats=repeats, python_calls=True
        )
        pt.ops["value_ops"] = op_count(gm)
        del gm
        phase = "transform"
        gg = measure_phase(
            pt,
            "transform",
            lambda: make_fx(torch.func.grad(_fn(chain, depth)))(x),
            on_phase,
            repeats=repeats,
            python_calls=True,
        )
        pt.extra["transform_includes"] = "trace + grad (make_fx(torch.func.grad(f)))"
        pt.ops["derivative_ops"] = op_count(gg)
        phase = "drop"
        holder = [gg]
        del gg
        measure_drop(pt, holder, on_phase)
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    if memory:  # fxmem (#35): untimed, after the drop
        on_phase("memory", None)
        try:
            with memory_time(pt):
                saved, values = traced_saved_bytes(_fn(chain, depth), x)
            pt.memory[SAVED] = float(saved)
            pt.extra["saved_values"] = values
        except (Exception, RecursionError, MemoryError) as exc:
            pt.extra["memory_error"] = describe_exception(exc, chain)
    return pt


def autograd_nodes(loss: Any) -> int:
    """Nodes of the autograd graph behind ``loss`` (``grad_fn`` and everything reachable through
    ``next_functions``, leaf accumulators included), walked iteratively."""
    root = getattr(loss, "grad_fn", None)
    if root is None:
        return 0
    seen = {root}
    stack = [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return len(seen)


#: Reductions: one FLOP per input element.
_REDUCTIONS = frozenset(
    {"sum", "mean", "amax", "amin", "max", "min", "prod", "logsumexp", "norm", "linalg_vector_norm"}
)


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    return []


def _tensor_bytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def _storage(t: Any) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr())
    except Exception:
        return None


def _call_flops(name: str, ins: list[Any], outs: list[Any], args: Any) -> int:
    """FLOPs of one torch function call (conventions of :mod:`adprof.backends.program`)."""
    if name in ("matmul", "mm", "bmm", "rmatmul", "mv", "dot", "inner"):
        a, b = (ins[1], ins[0]) if name == "rmatmul" else (ins[0], ins[1])
        return program.matmul_flops(tuple(a.shape), tuple(b.shape))
    if name == "einsum" and args and isinstance(args[0], str):
        spec = args[0].replace(" ", "").split("->")[0].split(",")
        return program.einsum_flops(spec, [tuple(t.shape) for t in ins])
    if name in program.MOVEMENT_OPS:
        return 0
    if name in _REDUCTIONS:
        return sum(int(t.numel()) for t in ins[:1])
    return sum(int(t.numel()) for t in outs)


def read_program(chain: Chain, depth: int, profile: str | None = None) -> dict[str, int]:
    """The forward's program (:mod:`adprof.backends.program`), from one forward under a ``TorchFunctionMode`` that
    sees every torch function the chain calls (nested calls inside one are not seen twice): ``ops`` the calls
    that make a new tensor from tensors (views, which share an input's storage, and constants made from data are
    not ops), ``flops`` ``2*m*n*k`` per
    matrix product (``FlopCounterMode``'s formula; the mode itself is not used: its first use imports
    ``torch._dynamo``, seconds to tens of seconds, which killed the reader), one per output element of an
    elementwise op, one per input element of a reduction, none for data movement; ``bytes`` the bytes each call
    reads and writes; ``intermediate_bytes`` the bytes of every call's new tensors."""
    from torch.overrides import TorchFunctionMode

    count = program.ProgramCount()

    class Counting(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            outs = _tensors(out)
            if not outs:
                return out
            ins = _tensors(list(args)) + _tensors(list(kwargs.values()))
            if not ins:  # a constant made from data (asarray, ones): a leaf, as in the engine and JAX
                return out
            shared = {_storage(t) for t in ins} - {None}
            outs = [t for t in outs if _storage(t) not in shared]  # views: no new value
            if not outs:
                return out
            name = getattr(func, "__name__", "").strip("_")
            count.add(_call_flops(name, ins, outs, args), sum(map(_tensor_bytes, ins)), sum(map(_tensor_bytes, outs)))
            return out

    x = _input(chain).requires_grad_(True)
    f = _fn(chain, depth)
    with Counting():
        f(x)
    return count.as_dict()


def _eager_calls(chain: Chain, depth: int) -> dict[str, Any]:
    """The eager loop's callables: fresh ``requires_grad`` leaves, the chain, ``loss.backward()``."""
    a = chain.make_input()
    f = _fn(chain, depth)

    forward, backward = loss_calls(f, lambda x: x.grad)

    def warm_up() -> None:
        if first_time(chain, "eager"):
            x = torch.tensor(a, requires_grad=True)
            chain(xp, x, 1).backward()

    return {
        "leaf": lambda: torch.tensor(a, requires_grad=True),
        "forward": forward,
        "backward": backward,
        "scalar": lambda y: float(y.detach()),
        "check": _check,
        "warm_up": warm_up,
    }


class SavedTensors:
    """What autograd saves for backward during a forward, from ``torch.autograd.graph.saved_tensors_hooks``: the
    pack hook sees every tensor an op saves (and returns it unchanged: nothing is copied or moved)."""

    def __init__(self) -> None:
        self.tensors: list[Any] = []

    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        """Record the pack calls of the ``with`` body (the list starts empty)."""
        self.tensors = []

        def pack(t: Any) -> Any:
            self.tensors.append(t)
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            yield

    def packed_bytes(self) -> int:
        """``numel * element_size`` summed over every pack call (a tensor saved by two ops counts twice)."""
        return sum(t.numel() * t.element_size() for t in self.tensors)

    def bytes(self) -> int:
        """``numel * element_size`` over the distinct tensors saved: a pack call of a view already packed (the
        same storage, offset, sizes, strides and dtype: ``x * x`` saves ``x`` twice) counts once. Deterministic:
        the saved tensors stay alive until backward, so equal addresses are the same tensor."""
        seen: dict[tuple[Any, ...], int] = {}
        for t in self.tensors:
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)
            seen.setdefault(key, t.numel() * t.element_size())
        return sum(seen.values())

    def take(self) -> list[Any]:
        """The saved tensors, forgotten here (so that only the graph keeps them alive)."""
        out, self.tensors = self.tensors, []
        return out


def storage_bytes(t: Any) -> int:
    """Bytes of the storage behind tensor ``t``."""
    return int(t.untyped_storage().nbytes())


def storage_key(t: Any) -> int:
    """The storage behind tensor ``t`` (its address: two views of one storage count once among live tensors)."""
    return int(t.untyped_storage().data_ptr())


def measure_eager(
    chain: Chain, depth: int, *, calls: int = DEFAULT_CALLS, on_phase: PhaseCallback = no_phase, memory: bool = False
) -> Point:
    """``calls`` (or more) forward + ``backward()`` calls, each on a fresh ``requires_grad`` leaf.

    With ``memory``, then, :data:`~adprof.backends.memory.MEMORY_CALLS` untimed calls: ``saved_bytes`` from the
    saved-tensor hooks around the forward (:meth:`SavedTensors.bytes`; every pack call's sum in
    ``extra["saved_bytes_packed"]``), ``retained`` the storages still alive after each call of its leaf, its
    gradient, its loss and the tensors saved for its backward (a reference cycle through ``x.grad``,
    pytorch#7343, keeps them)."""
    pt = _eager_loop(
        chain,
        depth,
        calls=calls,
        on_phase=on_phase,
        graph_metrics=lambda loss, state: {"autograd_nodes": autograd_nodes(loss)},
        **_eager_calls(chain, depth),
    )
    if memory:
        fns = _eager_calls(chain, depth)
        saved = SavedTensors()
        packed: list[int] = []

        def saved_bytes(loss: Any, state: Any) -> int:
            packed.append(saved.packed_bytes())
            return saved.bytes()

        measure_memory(
            pt,
            chain,
            leaf=fns["leaf"],
            forward=fns["forward"],
            backward=fns["backward"],
            saved=saved_bytes,
            retained=Retained(size=storage_bytes, key=storage_key),
            made=lambda x, loss, state, g: [x, g, loss, *saved.take()],
            forward_context=saved.hooks,
            on_phase=on_phase,
        )
        if packed:
            pt.extra["saved_bytes_packed"] = packed[0]
    return pt


def count_eager(chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase) -> Point:
    """``--metric instructions``: one forward and one ``backward()`` (the C++ autograd engine) counted under
    callgrind, after a warm-up call."""
    return measure_counted_eager(chain, depth, on_phase=on_phase, **_eager_calls(chain, depth))


def measure_compile(
    chain: Chain, depth: int, *, on_phase: PhaseCallback = no_phase, repeats: int | None = None
) -> Point:
    """``torch.compile`` of the chain with its gradient (see :mod:`adprof.backends.torch_compile`)."""
    from adprof.backends import torch_compile

    return torch_compile.measure_compile(chain, depth, xp=xp, bind=_fn, on_phase=on_phase, repeats=repeats)


#: Measure one point; ``mode`` is ``eager``, ``traced`` or ``compile``; ``profile`` must be None.
measure_point = peer_measure_point(
    "torch",
    {"traced": measure_traced, "eager": measure_eager, "compile": measure_compile},
    counted={"eager": count_eager},
)


__all__ = [
    "DEPTHS",
    "MODES",
    "PROFILES",
    "PointFailure",
    "SavedTensors",
    "count_eager",
    "measure_compile",
    "measure_eager",
    "measure_point",
    "measure_traced",
    "read_program",
    "autograd_nodes",
    "joint_saved",
    "op_count",
    "storage_bytes",
    "storage_key",
    "traced_saved_bytes",
    "xp",
]
