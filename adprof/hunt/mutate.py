"""Drawing, mutating and reducing generators: the search's moves and the shrinker's steps.

Every move takes an explicit :class:`random.Random`, so a hunt's path is a function of its seed (and of what it
measures). A new generator is small (HotFuzz's small recursive instantiation: one to three nodes over the
latest state); mutations change an op, rewire an argument (a fan-out, a diamond, a skip connection to an older
state), insert or delete a node, widen or narrow the window, add or drop an output, switch what depth scales,
nest one more layer or a jit, change the input's shape. Invalid results are drawn again.

:func:`reductions` lists every generator one step smaller (a node replaced by any of its arguments, an edge moved
to a plainer value, a state, an output, a layer or a nesting removed, a reduction, matrix, linear-algebra or select
op made a plain elementwise one): the shrinker's candidates, in a fixed order so that shrinking is deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace

from adprof.hunt.gen import MAX_NODES, MAX_STEPS, MAX_WINDOW, OPS, SHAPES, Generator, GeneratorError, Node

#: How often each op is drawn (elementwise ops are the common case; linear algebra is costly everywhere).
OP_WEIGHTS: dict[str, float] = {
    "sin": 3.0,
    "cos": 2.0,
    "tanh": 2.0,
    "exp": 1.0,
    "neg": 0.5,
    "scale": 2.0,
    "shift": 1.0,
    "add": 3.0,
    "sub": 1.5,
    "mul": 3.0,
    "total": 0.7,
    "rowsum": 0.5,
    "matmul": 1.0,
    "transpose": 0.5,
    "svd_u": 0.4,
    "qr_q": 0.3,
    "qr_r": 0.3,
    "where": 0.7,
}
#: The plainest op of each arity (the shrinker's replacement of a rarer op).
PLAIN_OP = {1: "sin", 2: "add", 3: None}
TRIES = 40


def _ops_for(gen_shape: tuple[int, ...], arity: int | None = None) -> list[str]:
    matrix = len(gen_shape) == 2 and gen_shape[0] == gen_shape[1]
    return [n for n, s in OPS.items() if (matrix or not s.matrix) and (arity is None or s.arity == arity)]


def _pick_op(rng: random.Random, shape: tuple[int, ...], arity: int | None = None) -> str:
    names = _ops_for(shape, arity)
    return rng.choices(names, weights=[OP_WEIGHTS[n] for n in names])[0]


def _pick_ref(rng: random.Random, n_values: int, window: int) -> int:
    """An earlier value, favouring the latest state and the latest nodes (chains, not scattered graphs)."""
    refs = list(range(n_values))
    weights = [3.0 if r == 0 else (1.0 if r < window else 1.0 + r / n_values) for r in refs]
    return rng.choices(refs, weights=weights)[0]


def _node(rng: random.Random, op: str, n_values: int, window: int) -> Node:
    spec = OPS[op]
    args = tuple(_pick_ref(rng, n_values, window) for _ in range(spec.arity))
    return Node(op, args, rng.choice(spec.consts) if spec.consts else None)


def _valid(build: Callable[[], Generator]) -> Generator | None:
    try:
        return build().canonical()
    except GeneratorError:
        return None


def random_generator(rng: random.Random) -> Generator:
    """A fresh small generator: one to three nodes, usually over one state, sometimes a derivative order."""
    for _ in range(TRIES):
        scale = "order" if rng.random() < 0.25 else "layer"
        window = 1 if scale == "order" or rng.random() < 0.65 else rng.choice((2, 2, 3))
        shape = rng.choice(SHAPES)
        nodes: list[Node] = []
        for _ in range(rng.randint(1, 3)):
            nodes.append(_node(rng, _pick_op(rng, shape), window + len(nodes), window))
        last = window + len(nodes) - 1
        outputs: tuple[int, ...] = (last,)
        if window > 1 and len(nodes) > 1 and rng.random() < 0.4:
            outputs = (last - 1, last)
        gen = _valid(lambda: Generator(tuple(nodes), outputs, window, scale, shape=shape))  # noqa: B023
        if gen is not None:
            return gen
    return Generator((Node("sin", (0,)),))


# --------------------------------------------------------------------------- mutations


def _change_op(gen: Generator, rng: random.Random) -> Generator:
    i = rng.randrange(len(gen.nodes))
    node = gen.nodes[i]
    op = _pick_op(rng, gen.shape, OPS[node.op].arity)
    spec = OPS[op]
    const = rng.choice(spec.consts) if spec.consts else None
    nodes = list(gen.nodes)
    nodes[i] = Node(op, node.args, const)
    return replace(gen, nodes=tuple(nodes))


def _rewire(gen: Generator, rng: random.Random) -> Generator:
    i = rng.randrange(len(gen.nodes))
    node = gen.nodes[i]
    k = rng.randrange(len(node.args))
    args = list(node.args)
    args[k] = _pick_ref(rng, gen.window + i, gen.window)
    nodes = list(gen.nodes)
    nodes[i] = replace(node, args=tuple(args))
    return replace(gen, nodes=tuple(nodes))


def _insert(gen: Generator, rng: random.Random) -> Generator:
    """A new node at a random position, then one later use of the value before it routed through it."""
    if len(gen.nodes) >= MAX_NODES:
        raise GeneratorError("full")
    pos = rng.randint(0, len(gen.nodes))
    w = gen.window
    new = _node(rng, _pick_op(rng, gen.shape), w + pos, w)

    def shift(r: int) -> int:
        return r + 1 if r >= w + pos else r

    nodes = [replace(n, args=tuple(shift(a) for a in n.args)) for n in gen.nodes]
    nodes.insert(pos, new)
    outputs = tuple(shift(o) for o in gen.outputs)
    new_ref = w + pos
    later = [(j, k) for j in range(pos + 1, len(nodes)) for k in range(len(nodes[j].args))]
    if later and rng.random() < 0.8:
        j, k = rng.choice(later)
        args = list(nodes[j].args)
        args[k] = new_ref
        nodes[j] = replace(nodes[j], args=tuple(args))
    elif pos == len(nodes) - 1:
        outputs = tuple(new_ref if o == outputs[-1] else o for o in outputs)
    return replace(gen, nodes=tuple(nodes), outputs=outputs)


def _delete(gen: Generator, rng: random.Random) -> Generator:
    return drop_node(gen, rng.randrange(len(gen.nodes)))


def _widen(gen: Generator, rng: random.Random) -> Generator:
    if gen.window >= MAX_WINDOW or gen.scale == "order":
        raise GeneratorError("full")
    w = gen.window

    def shift(r: int) -> int:
        return r + 1 if r >= w else r

    nodes = [replace(n, args=tuple(shift(a) for a in n.args)) for n in gen.nodes]
    i = rng.randrange(len(nodes))
    args = list(nodes[i].args)
    args[rng.randrange(len(args))] = w  # the new, oldest state: a skip connection
    nodes[i] = replace(nodes[i], args=tuple(args))
    return replace(gen, nodes=tuple(nodes), outputs=tuple(shift(o) for o in gen.outputs), window=w + 1)


def _outputs(gen: Generator, rng: random.Random) -> Generator:
    refs = [r for r in range(gen.window, gen.window + len(gen.nodes)) if r not in gen.outputs]
    if len(gen.outputs) < gen.window and refs and rng.random() < 0.6:
        return replace(gen, outputs=(*gen.outputs, rng.choice(refs)))
    if len(gen.outputs) > 1:
        return replace(gen, outputs=gen.outputs[1:])
    raise GeneratorError("no change")


def _scale(gen: Generator, rng: random.Random) -> Generator:
    if gen.scale == "layer":
        if rng.random() < 0.5:  # the steps under the engine's own loop (lax.scan on JAX), or back
            return replace(gen, loop="python" if gen.loop == "scan" else "scan")
        if gen.window > 1:
            raise GeneratorError("a derivative order over one state")
        return replace(gen, scale="order", loop="python")
    move = rng.choice(("layer", "steps", "jit"))
    if move == "layer":
        return replace(gen, scale="layer", steps=1, jit=False)
    if move == "steps":
        return replace(gen, steps=max(1, min(MAX_STEPS, gen.steps + rng.choice((-1, 1)))))
    return replace(gen, jit=not gen.jit)


def _shape(gen: Generator, rng: random.Random) -> Generator:
    return replace(gen, shape=rng.choice([s for s in SHAPES if s != gen.shape]))


MUTATIONS: tuple[tuple[Callable[[Generator, random.Random], Generator], float], ...] = (
    (_change_op, 3.0),
    (_rewire, 3.0),
    (_insert, 3.0),
    (_delete, 1.0),
    (_widen, 1.0),
    (_outputs, 0.7),
    (_scale, 0.8),
    (_shape, 0.5),
)


def mutate(gen: Generator, rng: random.Random) -> Generator:
    """One random valid mutation of ``gen`` (a different generator), or a fresh one when none is found."""
    moves, weights = zip(*MUTATIONS, strict=True)
    for _ in range(TRIES):
        move = rng.choices(moves, weights=weights)[0]
        try:
            out = move(gen, rng).canonical()
            out.validate()
        except (GeneratorError, ValueError, IndexError):
            continue
        if out.key != gen.key:
            return out
    return random_generator(rng)


# --------------------------------------------------------------------------- reductions


def drop_node(gen: Generator, i: int, k: int = 0) -> Generator:
    """``gen`` without node ``i``: its uses read its ``k``-th argument instead (any argument of any op: a select
    or a binary op is replaced by the value it passes on)."""
    w = gen.window
    ref = w + i
    first = gen.nodes[i].args[k]

    def move(r: int) -> int:
        if r == ref:
            return first
        return r - 1 if r > ref else r

    nodes = [replace(n, args=tuple(move(a) for a in n.args)) for j, n in enumerate(gen.nodes) if j != i]
    return replace(gen, nodes=tuple(nodes), outputs=tuple(dict.fromkeys(move(o) for o in gen.outputs)))


def reductions(gen: Generator) -> Iterator[Generator]:
    """Every valid generator one step simpler than ``gen`` (see the module docstring), in a fixed order:
    nesting first, then nodes, states, outputs, edges, ops, the shape (a plain vector)."""
    seen = {gen.key}

    def emit(build: Callable[[], Generator]) -> Iterator[Generator]:
        out = _valid(build)
        if out is not None and out.key not in seen and out.size <= gen.size:
            seen.add(out.key)
            yield out

    for plainer in _unnested(gen):
        yield from emit(lambda plainer=plainer: plainer)
    for i, node in enumerate(gen.nodes):  # a node replaced by each of its (distinct) arguments
        for k in sorted({node.args.index(a) for a in node.args}):
            yield from emit(lambda i=i, k=k: drop_node(gen, i, k))
    if gen.window > 1:
        yield from emit(lambda: _narrow(gen))
    if len(gen.outputs) > 1:
        for k in range(len(gen.outputs)):
            yield from emit(lambda k=k: replace(gen, outputs=gen.outputs[:k] + gen.outputs[k + 1 :]))
    for i, node in enumerate(gen.nodes):  # an edge moved to a plainer value: the latest state
        for k, a in enumerate(node.args):
            if a != 0:
                yield from emit(lambda i=i, k=k: _set_arg(gen, i, k, 0))
    for i, node in enumerate(gen.nodes):  # a reduction, matrix, linear algebra or select op made elementwise
        plain = PLAIN_OP.get(OPS[node.op].arity)
        if plain and OPS[node.op].kind != "elementwise":
            yield from emit(lambda i=i, plain=plain: _set_op(gen, i, plain))
    if gen.shape != (3,) and not any(OPS[n.op].matrix for n in gen.nodes):
        yield from emit(lambda: replace(gen, shape=(3,)))


def _unnested(gen: Generator) -> list[Generator]:
    """``gen`` with one nesting less: no jit, no scan, one layer fewer inside the derivative."""
    out = []
    if gen.jit:
        out.append(replace(gen, jit=False))
    if gen.loop != "python":
        out.append(replace(gen, loop="python"))
    if gen.steps > 1:
        out.append(replace(gen, steps=gen.steps - 1))
    return out


def _narrow(gen: Generator) -> Generator:
    """``gen`` over one state fewer: the oldest state's uses read the one after it."""
    w = gen.window
    old = w - 1

    def move(r: int) -> int:
        if r == old:
            return w - 2
        return r - 1 if r >= w else r

    nodes = [replace(n, args=tuple(move(a) for a in n.args)) for n in gen.nodes]
    outputs = tuple(dict.fromkeys(move(o) for o in gen.outputs))[: w - 1]
    return replace(gen, nodes=tuple(nodes), outputs=outputs, window=w - 1)


def _set_arg(gen: Generator, i: int, k: int, ref: int) -> Generator:
    nodes = list(gen.nodes)
    args = list(nodes[i].args)
    args[k] = ref
    nodes[i] = replace(nodes[i], args=tuple(args))
    return replace(gen, nodes=tuple(nodes))


def _set_op(gen: Generator, i: int, op: str) -> Generator:
    nodes = list(gen.nodes)
    spec = OPS[op]
    nodes[i] = Node(op, nodes[i].args, spec.consts[0] if spec.consts else None)
    return replace(gen, nodes=tuple(nodes))


__all__ = ["MUTATIONS", "OP_WEIGHTS", "drop_node", "mutate", "random_generator", "reductions"]
