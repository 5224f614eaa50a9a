"""The program of a chain's forward, read deterministically from the forward alone (issue #34, layer 1).

What a gradient's cost is read against: the forward's *size* (``ops``: recorded operations, jaxpr equations,
aten ops, autograd nodes), its *arithmetic* (``flops``; ``bytes``: what each op reads and writes) and its
*intermediates* (``intermediate_bytes``: the bytes of every value the forward computes, what a tape that keeps
each intermediate once would hold). One plain dict per point, :data:`PROGRAM_KEYS`, in ``Point.program``.

Conventions, the same on every backend (each backend's reader counts its own primitives with them):

* an elementwise op (``add``, ``mul``, ``sin``, ``exp``, a comparison, a select) is one FLOP per output
  element: transcendentals count as one (XLA puts them apart, FlopCounterMode does not see them);
* a matrix product of ``(..., m, k) @ (..., k, n)`` is ``2*m*n*k`` FLOPs per batch element; an einsum twice
  the product of the sizes of all its indices; a reduction one FLOP per input element;
* shape ops (reshape, transpose, broadcast, slicing, copies) are zero FLOPs, but their outputs are values the
  forward computes: they count in ``ops`` and ``intermediate_bytes``;
* ``bytes`` is the sum over ops of their inputs' and outputs' bytes.

Readers run in the worker after the point's timed phases, outside them, and are bounded: :func:`read_program`
gives up after :data:`PROGRAM_SECONDS` (an alarm in the worker's main thread) and returns None, as it does on
any failure: an unknown program is never an error of the point.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The keys of ``Point.program``.
PROGRAM_KEYS: tuple[str, ...] = ("ops", "flops", "bytes", "intermediate_bytes")
#: Wall seconds a reader may take at one point before it gives up (the program is then unknown, None).
PROGRAM_SECONDS = 3.0

#: Ops of zero FLOPs: data movement, views, constants (names as the backends spell them, lower case).
MOVEMENT_OPS = frozenset(
    {
        "reshape",
        "view",
        "_unsafe_view",
        "transpose",
        "t",
        "permute",
        "expand",
        "broadcast_in_dim",
        "broadcast_to",
        "squeeze",
        "unsqueeze",
        "expand_dims",
        "slice",
        "dynamic_slice",
        "gather",
        "select",  # torch's aten.select (indexing); the engine's select (a where) is its own reader's
        "index",
        "concatenate",
        "cat",
        "stack",
        "copy",
        "copy_",
        "clone",
        "convert_element_type",
        "_to_copy",
        "to",
        "full",
        "full_like",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "eye",
        "iota",
        "diag",
        "diag_embed",
        "diagonal",
        "tril",
        "triu",
        "pad",
        "rev",
        "flip",
        "squeeze_",
        "detach",
        "alias",
        "lift_fresh",
        "scalar_tensor",
        "split",
        "split_with_sizes",
        "unbind",
        "pjit",
        "jit",
        "custom_jvp_call",
        "custom_vjp_call",
        "stop_gradient",
    }
)


@dataclass
class ProgramCount:
    """The running totals of one forward's program (each op added once with :meth:`add`)."""

    ops: int = 0
    flops: int = 0
    bytes: int = 0
    intermediate_bytes: int = 0

    def add(self, flops: int, in_bytes: int, out_bytes: int) -> None:
        """One op: its FLOPs, the bytes of its inputs and of its outputs."""
        self.ops += 1
        self.flops += int(flops)
        self.bytes += int(in_bytes) + int(out_bytes)
        self.intermediate_bytes += int(out_bytes)

    def as_dict(self) -> dict[str, int]:
        """The plain form stored in ``Point.program``."""
        return {
            "ops": self.ops,
            "flops": self.flops,
            "bytes": self.bytes,
            "intermediate_bytes": self.intermediate_bytes,
        }


def numel(shape: Sequence[int]) -> int:
    """Elements of an array of ``shape`` (1 for a scalar)."""
    return math.prod(int(d) for d in shape)


def nbytes(shape: Sequence[int], itemsize: int) -> int:
    """Bytes of an array of ``shape`` with ``itemsize`` bytes per element."""
    return numel(shape) * int(itemsize)


def matmul_flops(a: Sequence[int], b: Sequence[int]) -> int:
    """FLOPs of ``a @ b`` (numpy's rules: 1-d operands, broadcast batch dimensions): 2 per multiply-add."""
    a, b = tuple(a), tuple(b)
    if not a or not b:
        return numel(a) * numel(b)
    k = int(a[-1])
    m = int(a[-2]) if len(a) >= 2 else 1
    n = int(b[-1]) if len(b) >= 2 else 1
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = (1,) * (width - len(batch_a)) + batch_a
    batch_b = (1,) * (width - len(batch_b)) + batch_b
    batch = math.prod(max(int(x), int(y)) for x, y in zip(batch_a, batch_b, strict=True))
    return 2 * batch * m * n * k


def einsum_flops(inputs: Sequence[str], shapes: Sequence[Sequence[int]]) -> int:
    """FLOPs of an einsum contraction done as one loop nest: 2 per multiply-add over every index (1 per element of
    the result for a single operand: a sum or a copy)."""
    sizes: dict[str, int] = {}
    for spec, shape in zip(inputs, shapes, strict=False):
        for c, d in zip(spec, shape, strict=False):
            sizes[c] = max(sizes.get(c, 1), int(d))
    loop = math.prod(sizes.values()) if sizes else 1
    return loop if len(inputs) <= 1 else 2 * loop


class ProgramTimeout(BaseException):
    """A reader ran past its bound (a BaseException: a reader's own ``except Exception`` must not swallow it)."""


@contextlib.contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Raise :class:`ProgramTimeout` in the block after ``seconds`` (a real-time alarm; only in the main thread,
    where signals arrive: elsewhere the block is unbounded). The previous alarm and handler are restored."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise ProgramTimeout(f"the program reader ran past {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    previous = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if previous[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *previous)


#: A backend's reader: ``reader(chain, depth, profile) -> dict | None`` (the counts of :data:`PROGRAM_KEYS`).
Reader = Callable[[Any, int, "str | None"], "Mapping[str, int] | None"]

#: The built-in backends' readers: backend name -> (module, function), imported on first use.
READERS: dict[str, tuple[str, str]] = {
    "engine": ("adprof.backends.engine", "read_program"),
    "jax": ("adprof.backends.jax_backend", "read_program"),
    "torch": ("adprof.backends.torch_backend", "read_program"),
    "autograd": ("adprof.backends.autograd_backend", "read_program"),
    "tinygrad": ("adprof.backends.tinygrad_backend", "read_program"),
}


def reader_for(backend: Any) -> Reader | None:
    """The program reader of a backend (a :class:`~adprof.backends.base.Backend` or its name): a built-in one, or
    the backend's own ``read_program`` attribute (plugins); None when it has none."""
    name = backend if isinstance(backend, str) else getattr(backend, "name", "")
    own = None if isinstance(backend, str) else getattr(backend, "read_program", None)
    if callable(own):
        return own
    where = READERS.get(name)
    if where is None:
        return None
    fn = getattr(importlib.import_module(where[0]), where[1], None)
    return fn if callable(fn) else None


def checked(counts: Mapping[str, Any] | None) -> dict[str, int] | None:
    """``counts`` as ``Point.program`` holds it: every key of :data:`PROGRAM_KEYS` a non-negative int; None when
    one is missing or is not."""
    if not isinstance(counts, Mapping):
        return None
    out: dict[str, int] = {}
    for key in PROGRAM_KEYS:
        v = counts.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            return None
        out[key] = int(v)
    return out


def read_program(
    backend: Any, chain: Any, depth: int, profile: str | None = None, seconds: float = PROGRAM_SECONDS
) -> dict[str, int] | None:
    """The program of ``chain``'s forward at ``depth`` on ``backend`` (:data:`PROGRAM_KEYS`), within ``seconds``;
    None when the backend has no reader, the reader fails or runs out of time."""
    reader = reader_for(backend)
    if reader is None:
        return None
    try:
        with bounded(seconds):
            return checked(reader(chain, depth, profile))
    except (Exception, RecursionError, MemoryError, ProgramTimeout):
        return None


def count_ops(ops: Iterable[tuple[int, int, int]]) -> dict[str, int]:
    """:class:`ProgramCount` of ``(flops, in_bytes, out_bytes)`` per op, as a dict."""
    c = ProgramCount()
    for flops, ins, outs in ops:
        c.add(flops, ins, outs)
    return c.as_dict()


__all__ = [
    "MOVEMENT_OPS",
    "PROGRAM_KEYS",
    "PROGRAM_SECONDS",
    "READERS",
    "ProgramCount",
    "ProgramTimeout",
    "bounded",
    "checked",
    "count_ops",
    "einsum_flops",
    "matmul_flops",
    "nbytes",
    "numel",
    "read_program",
    "reader_for",
]
