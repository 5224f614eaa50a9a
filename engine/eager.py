"""Eager mode: compute at once, record a trace, backpropagate it (tenferro's ``EagerRuntime``).

Every op on an :class:`EagerTensor` runs the primitive's numpy kernel immediately and records the
same traced fragment as traced mode (keys, metadata registration), so values can be read and
branched on. ``loss.backward()`` is a semantic VJP of the recorded trace through a
**prepared-derivative cache** keyed by (engine target, semantic fingerprint, concrete input
shapes): a miss transforms and prepares the derivative program, a hit reuses it.

What a backward costs besides running the program depends on the profile:

* ``v08`` (tenferro 0.8.0, seeds 000/002): every call, hit or miss, re-derives the whole trace
  into a source program and computes its fingerprint from scratch (:func:`rebuild_source_program`),
  and after running builds one derivative trace per gradient (fresh keys, registered in the
  global table next to the recorded trace's own keys) and drops it again when the gradient becomes
  a plain value. Both grow superlinearly with depth, and a warm cache does not help.
* ``fixed``: each tensor's fingerprint is maintained incrementally while recording, so a hit
  needs no rebuild, and no derivative trace is built unless ``create_graph=True``.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from . import context, profiles
from .ad import derivative_traces_from_program, vjp_program
from .counters import COUNTERS
from .errors import DTypeError, EngineError, TransformError
from .graph import TracedTensor, constant, freeze
from .keys import InputKey
from .ops import IMPL_RULES, Aval, Primitive, add_p
from .tensor import Tensor

ENGINE_TARGET = "cpu-numpy"
_new_aval = tuple.__new__  # Aval(...) without its keyword wrapper

_SESSION: EagerSession | None = None
_lazy_traces = False  # fixed profile: traces are recorded on first need, not with every op


def _on_profile(name: str) -> None:
    global _lazy_traces
    _lazy_traces = name == "fixed"


profiles.on_change(_on_profile)


def current_session() -> EagerSession | None:
    """The innermost open eager session, if any."""
    return _SESSION


def _context_constant(array) -> EagerTensor | TracedTensor:
    """A constant in the active context: the innermost open eager session, else the traced graph."""
    session = _SESSION
    return session.constant(array) if session is not None else constant(array)


context.make_constant = _context_constant


# A trace not recorded yet (fixed profile: recorded on first need) is a list, cheaper to build than an
# object with attributes: [primitive, params, args, ordinals, traces]. ``ordinals`` is the session
# ordinal of the output (None outside a session), or a list of them, one per slot, for a primitive with
# several outputs (which share one list); ``traces`` stays None until recorded.
_ARGS, _TRACES = 2, 4


class EagerTensor(Tensor):
    """A value computed at once, with its recorded trace (a traced tensor) behind it.

    In the ``fixed`` profile the trace is recorded lazily: only a derivative request that misses
    the cache (or ``create_graph``, or reading ``.trace``) records it, as tenferro defers the
    metadata analysis of eager traces; ``v08`` records it with every op, as traced mode does.

    Built by :func:`_eager_tensor` (and inline, field by field, on the hot path of ``_bind``): the
    class has no ``__init__``, since filling the slots of a bare instance costs about half as much as
    an ``__init__`` call on every eager op.
    """

    __slots__ = (
        "value",
        "_trace",
        "_pending",
        "_slot",
        "runtime",
        "fp",
        "session",
        "requires_grad",
        "grad",
        "_freed",
        "__weakref__",
    )

    # the abstract value is derived from the value on demand: building it for every eager op
    # would cost a third of the op's bookkeeping
    @property
    def aval(self) -> Aval:
        value = self.value
        return _new_aval(Aval, (value.shape, value.dtype))

    @property
    def shape(self) -> tuple:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def trace(self) -> TracedTensor | None:
        """The recorded trace (recorded now if it was deferred); None once freed by backward."""
        if self._trace is None and self._pending is not None and not self._freed:
            _record_pending(self)
        return self._trace

    @trace.setter
    def trace(self, value: TracedTensor | None) -> None:
        self._trace = value
        if value is None:
            self._pending = None

    # -- values -----------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The value (a numpy array; do not modify it in place)."""
        return self.value

    def __float__(self) -> float:
        if self.value.size != 1:
            raise TransformError(f"float() needs a single value, tensor has shape {list(self.shape)}")
        return float(self.value.reshape(()))

    def __bool__(self) -> bool:
        if self.value.size != 1:
            raise TransformError("the truth value of a tensor with more than one element is ambiguous")
        return bool(self.value.reshape(()))

    def item(self) -> float:
        return self.value.reshape(()).item()

    def __repr__(self) -> str:
        kind = "variable" if self.requires_grad else "tensor"
        return f"EagerTensor({kind}, {self.aval}, {np.array2string(self.value, threshold=6)})"

    def clear_grad(self) -> None:
        """Reset the accumulated gradient."""
        self.grad = None

    # -- recording ---------------------------------------------------------------------------
    def _bind(self, prim: Primitive, args, params):
        session = _SESSION
        if _lazy_traces and session is not None and prim.nout == 1 and session.runtime is self.runtime:
            # the common case, kept lean (fixed profile, inside a session, one output, operands that
            # are leaves or results of this session): run the kernel, defer the trace; anything
            # else (including every error) takes the general path, runtime._apply
            runtime = session.runtime
            fps = None
            if len(args) == 1:  # unary on a result of this session (chains of unary ops): no loop, no list
                a = args[0]
                if type(a) is EagerTensor and a.session is session and not a._freed:
                    fps = (a.fp,)
                    out = IMPL_RULES[prim](a.value, **params) if params else IMPL_RULES[prim](a.value)
            if fps is None:
                fps = []
                for a in args:
                    if type(a) is not EagerTensor or a._freed:
                        return runtime._apply(prim, args, params)
                    if a.session is session:  # a result of this session (so of its runtime; leaves carry none)
                        fps.append(a.fp)
                    elif a.runtime is runtime and a._pending is None and a._trace.node is None:
                        fps.append(session.leaf_fp(a))
                    else:
                        return runtime._apply(prim, args, params)
                fps = tuple(fps)
                out = IMPL_RULES[prim](*[a.value for a in args], **params)
            COUNTERS.ops_executed += 1
            v = out if type(out) is np.ndarray else np.asarray(out)
            values = session.values
            o = len(values)
            values.append(v)
            t = EagerTensor()  # what _eager_tensor does, inline
            t.value = v
            t._trace = None
            t._pending = [prim, params, args, o, None]
            t._slot = 0
            t.runtime = runtime
            t.fp = hash((prim.name, tuple(params.values()) if params else (), fps, o))
            t.session = session
            t.requires_grad = False
            t.grad = None
            t._freed = False
            return t
        return self.runtime._apply(prim, args, params)

    def _constant(self, array: np.ndarray) -> EagerTensor:
        return self.runtime.constant(array)

    # -- AD ---------------------------------------------------------------------------------
    def backward(self, create_graph: bool = False, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every variable this loss depends on.

        ``create_graph=True`` keeps a derivative trace so gradients can be differentiated again.
        The trace is freed afterwards unless ``retain_graph`` (or ``create_graph``) is set.
        """
        self.runtime._backward(self, create_graph, retain_graph or create_graph)


def _eager_tensor(
    value: np.ndarray,
    trace: TracedTensor | None,
    runtime: EagerRuntime,
    fp=None,
    session: EagerSession | None = None,
    requires_grad: bool = False,
    pending: list | None = None,
    slot: int = 0,
) -> EagerTensor:
    """An eager tensor: its value, its trace (or the ``pending`` list that records it on demand)."""
    t = EagerTensor()
    t.value = value
    t._trace = trace
    t._pending = pending
    t._slot = slot
    t.runtime = runtime
    t.fp = fp
    t.session = session
    t.requires_grad = requires_grad
    t.grad = None
    t._freed = False
    return t


@dataclass
class CacheStats:
    entries: int = 0
    retained_bytes: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    clears: int = 0


class _PreparedDerivative:
    __slots__ = ("program", "prepared", "leaf_ordinals", "wrt_ordinals", "retained_bytes")

    def __init__(self, program, prepared, leaf_ordinals) -> None:
        self.program = program
        self.prepared = prepared
        self.leaf_ordinals = leaf_ordinals  # session ordinals of the inputs (residual programs)
        self.wrt_ordinals = None
        self.retained_bytes = sum(a.nbytes for _, a in program.bindings)


class EagerSession:
    """A recording scope. Every value it sees gets an ordinal: leaves when first used, op results
    when computed. Ordinals make the incremental fingerprints canonical (the same code records the
    same ordinals) and let a cached derivative program find its inputs, residuals included,
    without walking the graph."""

    def __init__(self, runtime: EagerRuntime) -> None:
        self.runtime = runtime
        self.values: list[np.ndarray] = []  # ordinal -> value
        self.leaves: dict[int, EagerTensor] = {}  # ordinal -> leaf tensor (variables collect grads)
        self._leaf_ordinal: dict[int, int] = {}  # id(leaf tensor) -> ordinal
        self._leaf_fp: dict[int, int] = {}
        self._trace_ordinal: dict[int, int] = {}  # id(trace tensor) -> ordinal

    def constant(self, array) -> EagerTensor:
        return self.runtime.constant(array)

    def leaf_fp(self, t: EagerTensor) -> int:
        fp = self._leaf_fp.get(id(t))
        if fp is None:
            ordinal = len(self.values)
            self.values.append(t.value)
            self.leaves[ordinal] = t
            self._leaf_ordinal[id(t)] = ordinal
            self._trace_ordinal[id(t.trace)] = ordinal
            fp = hash(("leaf", ordinal, t.aval.shape, t.aval.dtype.str, t.requires_grad))
            self._leaf_fp[id(t)] = fp
        return fp

    def record(self, trace: TracedTensor | None, value: np.ndarray) -> int:
        """Give ``value`` the next ordinal (and its trace, when it has one already)."""
        ordinal = len(self.values)
        self.values.append(value)
        if trace is not None:
            self._trace_ordinal[id(trace)] = ordinal
        return ordinal

    def name_trace(self, trace: TracedTensor, ordinal: int) -> None:
        self._trace_ordinal[id(trace)] = ordinal

    def ordinal(self, trace: TracedTensor) -> int | None:
        """The ordinal of a live traced tensor recorded in this session, if any."""
        return self._trace_ordinal.get(id(trace))


class EagerRuntime:
    """Holds the prepared-derivative cache and its statistics (the AD rules live in ``engine.ops``)."""

    def __init__(self, cache_capacity: int = 256) -> None:
        self.cache_capacity = cache_capacity
        self._cache: OrderedDict = OrderedDict()
        self._stats = CacheStats()

    # -- leaves ------------------------------------------------------------------------------
    def variable(self, array) -> EagerTensor:
        """A leaf that collects gradients in ``.grad``."""
        value = _as_float_array(array, "variable")
        trace = TracedTensor(InputKey(), Aval(value.shape, value.dtype), data=value)
        var = _eager_tensor(value, trace, self, requires_grad=True)
        trace.owner = weakref.ref(var)
        return var

    def constant(self, array) -> EagerTensor:
        """A leaf that does not collect gradients."""
        value = np.asarray(array)
        if value.dtype.kind in "iu":
            value = value.astype(np.float64)
        trace = TracedTensor(InputKey(), Aval(value.shape, value.dtype), data=value)
        return _eager_tensor(value, trace, self)

    # -- sessions ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self, resume: EagerSession | None = None) -> Iterator[EagerSession]:
        """A scope in which ops on eager tensors compute at once and record their trace.

        ``resume`` re-enters an earlier session of this runtime (its tensors keep their
        incremental fingerprints, so a surrogate built on them stays cacheable).
        """
        global _SESSION
        if resume is not None and resume.runtime is not self:
            raise EngineError("cannot resume a session of another EagerRuntime")
        previous = _SESSION
        session = resume if resume is not None else EagerSession(self)
        _SESSION = session
        try:
            yield session
        finally:
            _SESSION = previous

    # -- ops ---------------------------------------------------------------------------------
    def _apply(self, prim: Primitive, args, params):
        session = _SESSION
        if session is not None and session.runtime is not self:
            raise EngineError("this eager tensor belongs to another EagerRuntime than the open session")
        lazy = _lazy_traces
        fps = [] if session is not None else None
        for a in args:
            if type(a) is not EagerTensor:
                raise TypeError(f"{prim.name}: cannot mix an eager tensor with {type(a).__name__}")
            if a.runtime is not self:
                raise EngineError("eager tensors of different EagerRuntimes cannot be combined")
            if a._freed:
                raise EngineError(
                    "this eager tensor's trace was freed by backward(); use retain_graph=True to reuse it"
                )
            if fps is not None:
                if a._pending is None and a._trace.node is None:  # a leaf
                    fps.append(session.leaf_fp(a))
                elif a.session is session:
                    fps.append(a.fp)
                else:
                    fps = None
        out = IMPL_RULES[prim](*[a.value for a in args], **params)
        COUNTERS.ops_executed += 1
        node_id = None if fps is None else (prim.name, tuple(params.values()) if params else (), tuple(fps))
        if lazy and prim.nout == 1:  # the common case, kept lean: one output, trace deferred
            v = out if type(out) is np.ndarray else np.asarray(out)
            o = None if session is None else session.record(None, v)
            fp = None if node_id is None else hash((*node_id, o))
            return _eager_tensor(v, None, self, fp, session, pending=[prim, params, args, o, None])
        if prim.nout == 1:
            out = (out,)
        values = [np.asarray(v) for v in out]
        if lazy:
            ordinals = [None if session is None else session.record(None, v) for v in values]
            pending = [prim, params, tuple(args), ordinals, None]
            results = [
                _eager_tensor(
                    v, None, self, None if node_id is None else hash((*node_id, o)), session, pending=pending, slot=i
                )
                for i, (v, o) in enumerate(zip(values, ordinals, strict=True))
            ]
        else:
            traces = TracedTensor._bind(None, prim, tuple(a.trace for a in args), params)
            traces = (traces,) if prim.nout == 1 else traces
            results = []
            for v, t in zip(values, traces, strict=True):
                fp = None
                if session is not None:
                    ordinal = session.record(t, v)
                    fp = None if node_id is None else hash((*node_id, ordinal))
                results.append(_eager_tensor(v, t, self, fp, session))
        return results[0] if prim.nout == 1 else tuple(results)

    # -- backward ----------------------------------------------------------------------------
    def _backward(self, loss: EagerTensor, create_graph: bool, retain_graph: bool) -> None:
        if type(loss) is not EagerTensor:
            raise TransformError("backward() needs an eager tensor")
        if loss._freed or (loss._trace is None and loss._pending is None):
            raise TransformError("backward() called twice on a freed trace; pass retain_graph=True to the first call")
        if loss.shape != ():
            raise TransformError(
                f"backward() needs a scalar loss, got shape {list(loss.shape)}; reduce it first (e.g. engine.numpy.sum)"
            )
        if loss.dtype.kind != "f":
            raise DTypeError(f"backward() needs a floating-point loss, got {loss.dtype.name}")
        v08 = not _lazy_traces
        if not v08 and not create_graph and loss.fp is not None and loss.session is not None:
            if self._backward_from_residuals(loss):
                self._release(loss, retain_graph)
                return
        # re-derive the whole trace into a source program, fingerprinted from scratch
        frozen = rebuild_source_program(loss.trace)
        leaves = frozen.input_leaves
        wrt = tuple(i for i, leaf in enumerate(leaves) if _owner(leaf) is not None)
        # v08 programs keep the replayed forward (their derivative traces rebuild it): keyed apart
        key = (ENGINE_TARGET, frozen.program.fingerprint, tuple(leaf.aval for leaf in leaves), wrt, v08)
        entry = self._cache_get(key)
        if entry is None:
            dprog = vjp_program(frozen.program, list(wrt), seed=np.ones((), dtype=loss.dtype))
            entry = _PreparedDerivative(dprog, dprog.prepare(), None)
            self._cache_put(key, entry)
        grads = entry.prepared.run_unchecked(*[leaf.data for leaf in leaves])
        owners = [_owner(leaves[i]) for i in wrt]
        if v08 or create_graph:
            for n, (owner, g) in enumerate(zip(owners, grads, strict=True)):
                trace = derivative_traces_from_program(entry.program, list(leaves), output_slice=slice(n, n + 1))[0]
                if create_graph:
                    grad_t = _eager_tensor(g, trace, self)
                    owner.grad = grad_t if owner.grad is None else _accumulate(self, owner.grad, grad_t)
                else:
                    del trace  # the gradient becomes a plain value: its derivative trace is dropped
                    _accumulate_plain(owner, g)
        else:
            for owner, g in zip(owners, grads, strict=True):
                _accumulate_plain(owner, g)
        self._release(loss, retain_graph)

    def _backward_from_residuals(self, loss: EagerTensor) -> bool:
        """fixed: the incremental fingerprint names the derivative program, whose inputs are the
        session's forward values (residuals: nothing is recomputed) read by ordinal. A miss
        re-derives the trace once; False when some value has no ordinal (mixed sessions)."""
        session = loss.session
        key = (ENGINE_TARGET, "residuals", loss.fp)
        entry = self._cache_get(key)
        if entry is None:
            frozen = rebuild_source_program(loss.trace, tag=True)
            source = frozen.program
            wrt = [i for i, leaf in enumerate(frozen.input_leaves) if _owner(leaf) is not None]
            dprog = vjp_program(source, wrt, seed=np.ones((), dtype=loss.dtype), residuals=True)
            ordinals = [session.ordinal(source.tags[dprog.tags[v]]) for v in dprog.inputs]
            wrt_ordinals = [session.ordinal(frozen.input_leaves[i]) for i in wrt]
            if None in ordinals or None in wrt_ordinals:
                return False
            entry = _PreparedDerivative(dprog, dprog.prepare(), ordinals)
            entry.wrt_ordinals = wrt_ordinals
            self._cache_put(key, entry)
        values = session.values
        grads = entry.prepared.run_unchecked(*[values[o] for o in entry.leaf_ordinals])
        for o, g in zip(entry.wrt_ordinals, grads, strict=True):
            _accumulate_plain(session.leaves[o], g)
        return True

    @staticmethod
    def _release(loss: EagerTensor, retain_graph: bool) -> None:
        if not retain_graph:
            loss._freed = True
            loss.trace = None

    # -- cache -------------------------------------------------------------------------------
    def _cache_get(self, key):
        entry = self._cache.get(key)
        if entry is None:
            return None
        self._cache.move_to_end(key)
        self._stats.hits += 1
        return entry

    def _cache_put(self, key, entry) -> None:
        self._stats.misses += 1
        self._cache[key] = entry
        while len(self._cache) > self.cache_capacity:
            self._cache.popitem(last=False)
            self._stats.evictions += 1

    def cache_stats(self) -> CacheStats:
        """Entries, retained bytes, hits, misses, evictions and clears of the derivative cache."""
        s = self._stats
        return CacheStats(
            len(self._cache),
            sum(e.retained_bytes for e in self._cache.values()),
            s.hits,
            s.misses,
            s.evictions,
            s.clears,
        )

    def clear_cache(self) -> None:
        self._cache.clear()
        self._stats.clears += 1


def tape_arrays(loss: EagerTensor) -> list[np.ndarray]:
    """The arrays the eager tape behind ``loss`` holds until backward: every value its session recorded
    (leaves and op results, each array once, in recording order); empty outside a session."""
    session = loss.session if type(loss) is EagerTensor else None
    if session is None:
        return []
    seen: set[int] = set()
    out = []
    for v in session.values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def tape_bytes(loss: EagerTensor) -> int:
    """Bytes of :func:`tape_arrays`: what the eager tape keeps alive between forward and backward (exact)."""
    return sum(int(a.nbytes) for a in tape_arrays(loss))


def _record_pending(t: EagerTensor) -> None:
    """Record the deferred traces behind ``t``, parents first (iterative: any depth)."""
    order: list[EagerTensor] = []  # one tensor per pending list to record
    seen: set[int] = set()
    stack = [(t, False)]
    while stack:
        x, done = stack.pop()
        if done:
            order.append(x)
            continue
        p = x._pending
        if id(p) in seen or p[_TRACES] is not None:
            continue
        seen.add(id(p))
        stack.append((x, True))
        for a in p[_ARGS]:
            if a._trace is None and a._pending is not None and a._pending[_TRACES] is None:
                stack.append((a, False))
    for x in order:
        prim, params, args, ordinals, _ = p = x._pending
        traces = TracedTensor._bind(None, prim, tuple(a.trace for a in args), params)
        if prim.nout == 1:
            traces, ordinals = (traces,), (ordinals,)
        p[_TRACES] = traces
        x._trace = traces[x._slot]
        session = x.session
        if session is not None:
            for trace, ordinal in zip(traces, ordinals, strict=True):
                session.name_trace(trace, ordinal)
    t._trace = t._pending[_TRACES][t._slot]


def rebuild_source_program(trace: TracedTensor, tag: bool = False):
    """Re-derive a recorded trace into a source program and fingerprint it from scratch."""
    frozen = freeze([trace], bind_data=False, allow_unbound=True, tag=tag)
    frozen.program.fingerprint  # noqa: B018 - computed here, as the cache key needs it
    COUNTERS.trace_rebuilds += 1
    return frozen


def _owner(leaf: TracedTensor) -> EagerTensor | None:
    """The live variable a trace leaf belongs to (``None`` for constants)."""
    ref = leaf.owner
    return None if ref is None else ref()


def _accumulate_plain(owner: EagerTensor, g: np.ndarray) -> None:
    owner.grad = g if owner.grad is None else _plain(owner.grad) + g


def _plain(g):
    return g.value if type(g) is EagerTensor else g


def _accumulate(runtime: EagerRuntime, a, b):
    if type(a) is not EagerTensor:
        a = runtime.constant(a)
    return runtime._apply(add_p, (a, b), {})


def _as_float_array(array, what) -> np.ndarray:
    value = np.array(array, dtype=None, copy=True)
    if value.dtype.kind in "iu":
        value = value.astype(np.float64)
    if value.dtype.kind != "f":
        raise DTypeError(f"{what}: expected floating-point data, got {value.dtype.name}")
    return value
