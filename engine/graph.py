"""Traced recording: tensors that hold a place in a graph, not data.

Every op on a :class:`TracedTensor` checks shapes and dtypes at once, then records one graph
fragment (a :class:`Node` pointing to its parent tensors) with a structural key per output, and
registers each output's metadata in the global table. Nothing is computed.

:func:`freeze` walks the fragments (iteratively: any depth) into a flat :class:`Program`,
deduplicating identical operation keys (CSE) as computegraph's ``materialize_merge`` does.
"""

from __future__ import annotations

import numpy as np

from . import keys as K
from . import metadata
from .checkpoint_chain import merge_chains
from .counters import COUNTERS
from .errors import DTypeError, TransformError
from .ops import SHAPE_RULES, Aval, Primitive
from .program import Program, ProgramBuilder
from .tensor import Tensor


class Node:
    """One recorded operation: primitive, parameters, parent tensors and its operation key."""

    __slots__ = ("prim", "params", "inputs", "opkey", "__weakref__")

    def __init__(self, prim: Primitive, params: dict, inputs: tuple, opkey) -> None:
        self.prim = prim
        self.params = params
        self.inputs = inputs
        self.opkey = opkey


class TracedTensor(Tensor):
    """A value in a recorded graph: a key, an abstract value, and where it comes from.

    Leaves (``node is None``) are placeholders (``engine.input``) or carry data (constants and
    checkpoint leaves). ``registered`` is true when this tensor holds its own metadata
    registration (recorded values); values of a derivative graph share their graph's ``scope``.
    """

    __slots__ = ("key", "aval", "node", "slot", "data", "registered", "scope", "chain", "owner", "__weakref__")

    def __init__(
        self,
        key,
        aval: Aval,
        node: Node | None = None,
        slot: int = 0,
        data=None,
        register: bool = True,
        scope=None,
        chain=None,
    ) -> None:
        self.key = key
        self.aval = aval
        self.node = node
        self.slot = slot
        self.data = data
        self.scope = scope
        self.chain = chain
        self.owner = None  # eager variables: weak reference to the tensor collecting the gradient
        self.registered = register
        if register:
            metadata.register_metadata(key, aval)

    def __del__(self) -> None:
        if self.registered:
            self.registered = False
            metadata.deregister_metadata(self.key)

    def close(self) -> None:
        """Release this tensor's metadata now (its own entry and its derivative graph's batch)."""
        if self.registered:
            self.registered = False
            metadata.deregister_metadata(self.key)
        if self.scope is not None:
            self.scope.close()

    # -- recording ------------------------------------------------------------------------
    def _bind(self, prim: Primitive, args, params):
        avals = []
        keys = []
        chain = None
        for a in args:
            if type(a) is not TracedTensor:
                raise TypeError(f"{prim.name}: cannot mix a traced tensor with {type(a).__name__}")
            avals.append(a.aval)
            keys.append(a.key)
            if a.chain is not None:
                chain = a.chain if chain is None else merge_chains(chain, a.chain)
        out_avals = SHAPE_RULES[prim](*avals, **params)
        opkey = K.op_key(prim, tuple(params.values()), tuple(keys))
        node = Node(prim, params, args, opkey)
        if prim.nout == 1:
            return TracedTensor(K.value_key(opkey, 0), out_avals[0], node, 0, None, True, None, chain)
        return tuple(
            TracedTensor(K.value_key(opkey, i), aval, node, i, chain=chain) for i, aval in enumerate(out_avals)
        )

    def _constant(self, array: np.ndarray) -> TracedTensor:
        return constant(array)

    @property
    def is_leaf(self) -> bool:
        return self.node is None

    def __repr__(self) -> str:
        what = (
            "input"
            if self.node is None and self.data is None
            else ("constant" if self.node is None else self.node.prim.name)
        )
        return f"TracedTensor({what}, {self.aval})"

    def __bool__(self):
        raise TransformError(
            "a traced tensor has no value at record time; use engine.numpy.where "
            "to select, or eager mode to branch on values"
        )

    def numpy(self):
        if self.data is not None:
            return self.data
        raise TransformError("a traced tensor has no value: compile and run it (engine.compile)")


def chain_aliases(outputs) -> dict | None:
    """``id(leaf) -> (leaf, target)`` over the checkpoint chains of ``outputs`` (None if none)."""
    aliases = {}
    for t in outputs:
        link = t.chain
        while link is not None:
            aliases[id(link.leaf)] = (link.leaf, link.target)
            link = link.prev
    COUNTERS.nodes_visited += len(aliases)
    return aliases or None


def input(shape, dtype="float64") -> TracedTensor:  # the public name is engine.input
    """A placeholder with a concrete shape (fed positionally when the compiled program runs)."""
    dt = np.dtype(dtype)
    if dt.kind not in "fb":
        raise DTypeError(f"engine.input: unsupported dtype {dt.name} (use float64, float32 or bool)")
    return TracedTensor(K.InputKey(), Aval(tuple(int(s) for s in shape), dt))


def constant(array) -> TracedTensor:
    """A leaf that carries data (bound into compiled programs)."""
    array = np.asarray(array)
    if array.dtype.kind in "iu":
        array = array.astype(np.float64)
    if array.dtype.kind not in "fb":
        raise DTypeError(f"engine.constant: unsupported dtype {array.dtype.name}")
    return TracedTensor(K.InputKey(), Aval(array.shape, array.dtype), data=array)


def toposort(outputs, aliases: dict | None = None) -> list[Node]:
    """Nodes reachable from ``outputs``, parents first (iterative).

    ``aliases`` (``id(leaf) -> (leaf, target)``) makes a checkpoint leaf depend on its target.
    """
    order: list[Node] = []
    state: dict[int, int] = {}  # id(node) -> 1 visiting, 2 done
    roots = []
    for t in outputs:
        while t.node is None and aliases and id(t) in aliases:
            t = aliases[id(t)][1]
        roots.append(t)
    stack = [(t.node, False) for t in roots if t.node is not None]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            if state.get(nid) != 2:
                state[nid] = 2
                order.append(node)
            continue
        if nid in state:
            continue
        state[nid] = 1
        stack.append((node, True))
        for p in node.inputs:
            if p.node is None and aliases and id(p) in aliases:
                p = aliases[id(p)][1]
            if p.node is not None and id(p.node) not in state:
                stack.append((p.node, False))
    COUNTERS.nodes_visited += len(state)  # each node visited once
    return order


def value_op_count(outputs) -> int:
    """Recorded operations behind ``outputs`` (graph fragments, before any deduplication)."""
    return len(toposort(list(outputs)))


class Frozen:
    """A frozen source program plus the map from its input positions back to leaf tensors."""

    def __init__(self, program: Program, input_leaves: list[TracedTensor], bound_leaves: list[TracedTensor]) -> None:
        self.program = program
        self.input_leaves = input_leaves
        self.bound_leaves = bound_leaves


def freeze(
    outputs,
    inputs=(),
    cse: bool = True,
    allow_unbound: bool = False,
    bind_data: bool = True,
    aliases: dict | None = None,
    tag: bool = False,
) -> Frozen:
    """Materialize the graph behind ``outputs`` into one flat program.

    ``inputs`` are the placeholders fed positionally; leaves with data are bound as constants.
    With ``cse``, operations with equal keys are emitted once (equal keys compare structurally in
    ``v08``). Placeholders not listed raise :class:`TransformError` unless ``allow_unbound``, which
    appends them as extra inputs. With ``bind_data=False`` leaves with data become inputs too
    (eager backward feeds their current values). ``aliases`` maps ``id(leaf)`` to the tensor a
    checkpoint leaf stands for, so the transform sees through checkpoints. With ``tag`` the program's
    ``tags`` name a tensor for each variable (eager backward reads forward values through them).
    """
    outputs = list(outputs)
    inputs = list(inputs)
    b = ProgramBuilder()
    var_of: dict[int, object] = {}  # id(tensor) -> Var
    input_leaves: list[TracedTensor] = []
    for t in inputs:
        if type(t) is not TracedTensor:
            raise TransformError(f"inputs must be traced tensors, got {type(t).__name__}")
        if t.node is not None:
            raise TransformError("inputs must be leaves (engine.input, engine.constant or a checkpoint)")
        if id(t) in var_of:
            raise TransformError("the same input is listed twice")
        var_of[id(t)] = b.add_input(t.aval)
        input_leaves.append(t)
    bound: list[TracedTensor] = []
    nodes = toposort(outputs, aliases)

    def plain_leaf_var(t: TracedTensor):
        v = var_of.get(id(t))
        if v is None:
            if t.data is not None and bind_data:
                v = b.add_binding(t.data)
                bound.append(t)
            elif allow_unbound:
                v = b.add_input(t.aval)
                input_leaves.append(t)
            else:
                raise TransformError(f"placeholder {t.aval} is not among the inputs; pass it in inputs=[...]")
            var_of[id(t)] = v
        return v

    def leaf_var(t: TracedTensor):
        # (no nested function calls back into itself or var_for: no closure cycle keeps graphs alive)
        if aliases and id(t) in aliases:
            target = aliases[id(t)][1]
            return plain_leaf_var(target) if target.node is None else var_of[(id(target.node), target.slot)]
        return plain_leaf_var(t)

    def var_for(t: TracedTensor):
        v = leaf_var(t) if t.node is None else var_of[(id(t.node), t.slot)]
        if tag and v.idx not in b.tags:
            b.tags[v.idx] = t
        return v

    cse_map: dict = {}
    for node in nodes:
        ins = []
        for p in node.inputs:  # (var_for, with the common case inline)
            if p.node is None or tag:
                ins.append(var_for(p))
            else:
                ins.append(var_of[(id(p.node), p.slot)])
        outs = cse_map.get(node.opkey) if cse else None
        if outs is None:
            r = b.bind(node.prim, ins, node.params)
            outs = (r,) if node.prim.nout == 1 else r
            if cse:
                cse_map[node.opkey] = outs
        for slot, v in enumerate(outs):
            var_of[(id(node), slot)] = v
    out_vars = [var_for(t) for t in outputs]
    if tag:
        for t in input_leaves:
            b.tags.setdefault(var_of[id(t)].idx, t)
    program = b.build(out_vars, dce=True)
    return Frozen(program, input_leaves, bound)
