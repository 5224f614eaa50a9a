"""Whole-program AD: grad / vjp / jvp as transforms of a recorded graph into a new graph.

A transform runs in three steps, as tenferro-ad does:

1. **freeze** the source graph into a flat program (``graph.freeze``);
2. **transform** the program: replay the forward equations into a new program, then emit the
   reverse (VJP) or tangent (JVP) equations from the primitives' rules. Unused derivative
   equations go; the replayed forward equations all stay in ``v08`` (tenferro's semantic VJP
   re-imports the whole forward program) and only the needed ones in ``fixed``;
3. **derivative traces**: rebuild a traced graph from **every** equation of the derivative program
   (:func:`derivative_traces_from_program`) and register its metadata in one scoped batch held by
   the result. The rebuilt keys are made by ``keys.op_key``: fresh objects in ``v08``
   (structurally equal to the live source keys but not identical, so registering them, and
   deregistering them when the result is dropped, compares them in full, whatever the VJP rules
   read), the interned source keys themselves in ``fixed``.

Compiling a derivative graph (``engine.compile``) and preparing a program still eliminate dead
code, so the run cost is the same in both profiles. The counters ``derivative_ops_rebuilt`` (every
equation rebuilt and registered) and ``derivative_ops_live`` (the ones the outputs need) report the
derivative program both ways.
"""

from __future__ import annotations

import time
from operator import attrgetter

import numpy as np

from . import keys as K
from . import profiles
from .counters import COUNTERS
from .errors import TransformError
from .graph import Node, TracedTensor, chain_aliases, freeze
from .metadata import MetadataScope
from .ops import JVP_RULES, VJP_RULES, add, full, rule
from .program import Program, ProgramBuilder, live_eqn_count, prune_inputs

_keep_forward = False
_key_of = attrgetter("key")


def _on_profile(name: str) -> None:
    global _keep_forward
    _keep_forward = name == "v08"


profiles.on_change(_on_profile)


def keeps_forward() -> bool:
    """Whether derivative programs keep every replayed forward equation (profile ``v08``)."""
    return _keep_forward


def _replay(program: Program, builder: ProgramBuilder):
    """Copy ``program``'s inputs, bindings and equations into ``builder``; return the var map."""
    env: list = [None] * len(program.avals)
    for i in program.inputs:
        env[i] = builder.add_input(program.avals[i])
    for v, array in program.bindings:
        env[v] = builder.add_binding(array)
    for e in program.eqns:
        outs = builder.bind(e.prim, [env[i] for i in e.ins], e.params)
        if e.prim.nout == 1:
            env[e.outs[0]] = outs
        else:
            for o, var in zip(e.outs, outs, strict=True):
                env[o] = var
    return env


def vjp_program(
    program: Program,
    wrt: list[int],
    out_index: int = 0,
    seed: np.ndarray | None = None,
    residuals: bool = False,
    keep_forward: bool | None = None,
) -> Program:
    """Reverse-mode transform of ``program`` w.r.t. its inputs at positions ``wrt``.

    The derivative program takes the source inputs and then, unless ``seed`` (an array) is given,
    one cotangent input for output ``out_index``; it returns the cotangents of ``wrt``. With
    ``residuals`` the forward is not replayed: every source variable becomes an input instead (the
    caller has the forward values, as eager mode does), and ``tags`` of the result name, per input,
    the source variable it stands for; unused inputs are pruned. ``keep_forward`` (default: the
    profile's, see :func:`keeps_forward`) keeps every replayed forward equation.
    """
    keep = _keep_forward if keep_forward is None else keep_forward
    b = ProgramBuilder()
    if residuals:
        env = [b.add_input(aval) for aval in program.avals]
        for v, var in enumerate(env):
            b.tags[var.idx] = v
    else:
        env = _replay(program, b)
    n_forward = len(b.eqns) if keep and not residuals else 0
    out_var = program.outputs[out_index]
    out_aval = program.avals[out_var]
    ct_seed = b.add_binding(seed) if seed is not None else b.add_input(out_aval)
    cts: dict[int, object] = {out_var: ct_seed}
    var = env.__getitem__
    for e in reversed(program.eqns):
        if len(e.outs) == 1:
            ct = cts.pop(e.outs[0], None)
            if ct is None:
                continue
            out_cts = [ct]
        else:
            out_cts = [cts.pop(o, None) for o in e.outs]
            if all(c is None for c in out_cts):
                continue
        if not e.prim.differentiable:
            continue
        vjp_rule = VJP_RULES.get(e.prim) or rule(e.prim, "vjp")
        in_cts = vjp_rule(out_cts, list(map(var, e.ins)), list(map(var, e.outs)), **e.params)
        for i, c in zip(e.ins, in_cts, strict=False):
            if c is None:
                continue
            prev = cts.get(i)
            cts[i] = c if prev is None else add(prev, c)
    results = []
    for pos in wrt:
        v = program.inputs[pos]
        c = cts.get(v)
        if c is None:  # the output does not depend on this input
            c = full(ct_seed, 0.0, program.avals[v].shape, program.avals[v].dtype)
        results.append(c)
    derivative = b.build(results, keep_prefix=n_forward)
    if residuals:
        derivative, _ = prune_inputs(derivative)
    return derivative


def jvp_program(program: Program, wrt: list[int], keep_forward: bool | None = None) -> Program:
    """Forward-mode transform: inputs are the source inputs then one tangent per ``wrt``; outputs
    are the primal outputs followed by their tangents (``keep_forward`` as in :func:`vjp_program`)."""
    keep = _keep_forward if keep_forward is None else keep_forward
    b = ProgramBuilder()
    env = _replay(program, b)
    n_forward = len(b.eqns) if keep else 0
    tangents: dict[int, object] = {}
    for pos in wrt:
        v = program.inputs[pos]
        tangents[v] = b.add_input(program.avals[v])
    for e in program.eqns:
        ts = [tangents.get(i) for i in e.ins]
        if all(t is None for t in ts) or not e.prim.differentiable:
            continue
        jvp_rule = JVP_RULES.get(e.prim) or rule(e.prim, "jvp")
        outs = jvp_rule(ts, [env[i] for i in e.ins], [env[o] for o in e.outs], **e.params)
        for o, t in zip(e.outs, outs, strict=True):
            if t is not None:
                tangents[o] = t
    primals = [env[o] for o in program.outputs]
    tans = []
    for o in program.outputs:
        t = tangents.get(o)
        if t is None:
            t = full(primals[0], 0.0, program.avals[o].shape, program.avals[o].dtype)
        tans.append(t)
    return b.build(primals + tans, keep_prefix=n_forward)


def derivative_traces_from_program(
    program: Program,
    input_tensors: list[TracedTensor],
    output_slice: slice | None = None,
    bound_leaves: list[TracedTensor] = (),
) -> list[TracedTensor]:
    """Rebuild a traced graph from ``program`` and register its metadata in one scoped batch.

    ``input_tensors`` stand for the program's inputs (source leaves, cotangents); a binding that
    holds the data of one of ``bound_leaves`` (the source's constants) stands for that leaf, as
    source inputs keep their keys; other bindings (the seed) become new constant leaves. Every
    operation gets its key from ``keys.op_key``, built afresh from the rebuilt input keys
    (tenferro: ``derivative_traces_from_frozen_program``).
    """
    start = time.perf_counter()
    env: list = [None] * len(program.avals)
    for v, t in zip(program.inputs, input_tensors, strict=True):
        env[v] = t
    items = []
    source_constants = {id(t.data): t for t in bound_leaves}
    for v, array in program.bindings:
        leaf = source_constants.get(id(array))
        if leaf is None:
            leaf = TracedTensor(K.InputKey(), program.avals[v], data=array, register=False)
        env[v] = leaf
        items.append((leaf.key, leaf.aval))
    tensor = env.__getitem__
    avals = program.avals
    for e in program.eqns:
        args = tuple(map(tensor, e.ins))
        opkey = K.op_key(e.prim, tuple(e.params.values()), tuple(map(_key_of, args)))
        node = Node(e.prim, e.params, args, opkey)
        for slot, o in enumerate(e.outs):
            key = K.value_key(opkey, slot)
            env[o] = TracedTensor(key, avals[o], node, slot, None, False)
            items.append((key, avals[o]))
    COUNTERS.nodes_visited += len(program.eqns)
    COUNTERS.derivative_ops_rebuilt += len(program.eqns)
    COUNTERS.derivative_ops_live += live_eqn_count(program)
    scope = MetadataScope(items, on_close=_count_drop)
    COUNTERS.derivative_traces_built += 1
    outs = [env[o] for o in program.outputs]
    if output_slice is not None:
        outs = outs[output_slice]
    results = []
    for t in outs:
        if t.scope is None and t.node is not None:
            t.scope = scope
            results.append(t)
        else:  # an input passed straight through, or an output listed twice: wrap to hold the scope
            results.append(_alias(t, scope))
    COUNTERS.transform_seconds += time.perf_counter() - start
    return results


def _alias(t: TracedTensor, scope) -> TracedTensor:
    from .ops import reshape

    r = reshape(t, t.shape)
    r.scope = scope
    return r


def _count_drop() -> None:
    COUNTERS.derivative_traces_dropped += 1


def _as_list(x):
    return (list(x), True) if isinstance(x, list | tuple) else ([x], False)


def _check_traced(ts, what):
    for t in ts:
        if type(t) is not TracedTensor:
            raise TransformError(f"{what} must be traced tensors, got {type(t).__name__}")


def vjp(outputs, inputs, cotangents) -> list[TracedTensor]:
    """Cotangents of ``inputs`` given cotangents of ``outputs`` (one output supported per call).

    ``cotangents`` are traced tensors (placeholders, constants or computed values).
    """
    outs, _ = _as_list(outputs)
    ins, _ = _as_list(inputs)
    cts, _ = _as_list(cotangents)
    _check_traced(outs + ins + cts, "vjp arguments")
    if len(outs) != 1 or len(cts) != 1:
        raise TransformError("vjp takes one output and one cotangent")
    if cts[0].aval != outs[0].aval:
        raise TransformError(f"cotangent {cts[0].aval} does not match output {outs[0].aval}")
    return _reverse(outs[0], ins, cotangent=cts[0])


def grad(y, x):
    """Gradient of scalar ``y`` with respect to leaf ``x`` (or a list of leaves): a new graph."""
    xs, many = _as_list(x)
    _check_traced([y] + xs, "grad arguments")
    if y.shape != ():
        raise TransformError(
            f"grad needs a scalar output, got shape {list(y.shape)}; reduce it first "
            "(e.g. engine.numpy.sum) or use engine.vjp"
        )
    if y.dtype.kind != "f":
        raise TransformError(f"grad needs a floating-point output, got {y.dtype.name}")
    gs = _reverse(y, xs, cotangent=None)
    return gs if many else gs[0]


def _reverse(y: TracedTensor, xs: list[TracedTensor], cotangent):
    start = time.perf_counter()
    for x in xs:
        if x.node is not None:
            raise TransformError("differentiate with respect to leaves (engine.input / engine.constant)")
    frozen = freeze([y], inputs=xs, allow_unbound=True, aliases=chain_aliases([y]))
    COUNTERS.trace_rebuilds += 1
    seed = None if cotangent is not None else np.ones(y.shape, dtype=y.dtype)
    dprog = vjp_program(frozen.program, list(range(len(xs))), seed=seed)
    inputs = list(frozen.input_leaves) + ([cotangent] if cotangent is not None else [])
    COUNTERS.transform_seconds += time.perf_counter() - start
    return derivative_traces_from_program(dprog, inputs, bound_leaves=frozen.bound_leaves)


def residual_bytes(y, x) -> int:
    """Bytes of the forward values the gradient of scalar ``y`` with respect to leaf ``x`` (or a list of leaves)
    reads in its backward: the residuals a derivative program keeps alive between its forward and its backward.

    Exact and deterministic: the reverse transform in residual form (every source variable an input, the
    unused ones pruned, as eager ``fixed`` backward reads them) names the residuals; their abstract values
    give the bytes. Each residual counts once, whatever the number of rules that read it."""
    xs, _ = _as_list(x)
    _check_traced([y] + xs, "residual_bytes arguments")
    frozen = freeze([y], inputs=xs, allow_unbound=True, aliases=chain_aliases([y]))
    seed = np.ones(y.shape, dtype=y.dtype)
    dprog = vjp_program(frozen.program, list(range(len(xs))), seed=seed, residuals=True)
    return sum(_aval_bytes(dprog.avals[v]) for v in dprog.inputs)


def _aval_bytes(aval) -> int:
    n = aval.dtype.itemsize
    for d in aval.shape:
        n *= int(d)
    return n


def jvp(outputs, inputs, tangents) -> tuple[list[TracedTensor], list[TracedTensor]]:
    """Forward mode: ``(primal outputs, output tangents)`` for tangents of leaf ``inputs``."""
    outs, many_out = _as_list(outputs)
    ins, _ = _as_list(inputs)
    ts, _ = _as_list(tangents)
    _check_traced(outs + ins + ts, "jvp arguments")
    if len(ins) != len(ts):
        raise TransformError(f"jvp: {len(ins)} inputs but {len(ts)} tangents")
    for x, t in zip(ins, ts, strict=True):
        if x.aval != t.aval:
            raise TransformError(f"tangent {t.aval} does not match input {x.aval}")
    start = time.perf_counter()
    frozen = freeze(outs, inputs=ins, allow_unbound=True, aliases=chain_aliases(outs))
    COUNTERS.trace_rebuilds += 1
    dprog = jvp_program(frozen.program, list(range(len(ins))))
    # tangent inputs come after all source inputs
    n_src = len(frozen.input_leaves)
    order = list(frozen.input_leaves) + ts
    # jvp_program appended tangent inputs in wrt order after the source inputs
    assert len(dprog.inputs) == n_src + len(ts)
    COUNTERS.transform_seconds += time.perf_counter() - start
    results = derivative_traces_from_program(dprog, order, bound_leaves=frozen.bound_leaves)
    primals, tans = results[: len(outs)], results[len(outs) :]
    return (primals, tans) if many_out else (primals[0], tans[0])
