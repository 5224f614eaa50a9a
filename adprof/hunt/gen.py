"""The generator language: a small, serialisable description of one layer of a chain, and what ``depth`` scales.

A :class:`Generator` is a straight-line program over *values*: the states of the last ``window`` steps (``y``
is the latest, ``y1`` the one before, ...) and the results of its :class:`Node` s, each an op of the chain
namespace (:data:`OPS`: elementwise, matmul, reductions, transpose, linear algebra, a select) applied to
earlier values. How often a value is used is the shape that matters: ``mul(y, y)`` uses the previous value
twice (fan-out), two nodes that both read ``y`` and are joined again make a diamond, a node that reads
``y1`` is a skip connection to the layer before. Each step appends its ``outputs`` (nodes) to the history:
one output over a window of two is a recurrence (``y <- y + y1``: Fibonacci's), two outputs a
Fibonacci-like unroll (``c = y + y1; d = y * y1``).

What ``depth`` scales (``scale``):

* ``layer``: the number of steps (the axis reads ``layer`` with a window of one, ``unroll`` with more);
  ``loop="scan"``: the steps run under ``jax.lax.scan`` where the chain runs on JAX (control flow where the
  engine has it: one traced body), as a Python loop elsewhere;
* ``order``: the derivative order: the layer applied ``steps`` times is summed into a scalar function, and
  ``depth - 1`` nested ``xp.grad`` take its derivatives (``jit``: each nested grad under ``jax.jit`` where the
  chain runs on JAX: jit inside grad; compile mode puts jit outside).

A generator round-trips through JSON (:meth:`Generator.to_dict` / :meth:`Generator.from_dict`), and
:func:`chain_source` writes it out as a readable chain file with ``@adprof.chain``: that file is what every
backend measures (the search, the confirmation, ``adprof check``), so the generator has one semantics.
:func:`instantiate` loads it into a :class:`~adprof.chain.Chain` in-process.

Static analysis, before any measurement: the live nodes, the size, the use counts and the predicted base
per step (the spectral radius of the step's path-count matrix: how fast a transform that walks the graph as
a tree grows). Pure: imports only numpy and the chain layer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = [
    "OPS",
    "SCALES",
    "Generator",
    "ChainOptions",
    "GeneratorError",
    "Node",
    "OpSpec",
    "chain_source",
    "function_source",
    "instantiate",
    "parse_generator",
]

SCALES = ("layer", "order")
LOOPS = ("python", "scan")
#: Window sizes (states visible to a layer) and node counts a generator may have.
MAX_WINDOW = 3
MAX_NODES = 12
MAX_STEPS = 3  # order scale: layers inside the differentiated function
SHAPES: tuple[tuple[int, ...], ...] = ((3,), (3, 3), (2,))


class GeneratorError(ValueError):
    """A generator description that is not valid; the message is one line."""


@dataclass(frozen=True)
class OpSpec:
    """One op of the generator language: how many values it reads, how it is written in a chain, and what it
    needs. ``template`` formats the argument names ``{0}``, ``{1}`` ... and the constant ``{c}``."""

    name: str
    arity: int
    template: str
    kind: str  # "elementwise" | "reduce" | "matrix" | "linalg" | "select"
    consts: tuple[float, ...] = ()  # the constants it may carry (the first is the default)
    matrix: bool = False  # its arguments must be square matrices (input shape (n, n))
    reduces: bool = False  # its result is a reduced value (broadcasts against full ones)

    @property
    def has_const(self) -> bool:
        return bool(self.consts)


_OPS: tuple[OpSpec, ...] = (
    OpSpec("sin", 1, "xp.sin({0})", "elementwise"),
    OpSpec("cos", 1, "xp.cos({0})", "elementwise"),
    OpSpec("tanh", 1, "xp.tanh({0})", "elementwise"),
    OpSpec("exp", 1, "xp.exp({0})", "elementwise"),
    OpSpec("neg", 1, "-{0}", "elementwise"),
    OpSpec("scale", 1, "{0} * {c}", "elementwise", consts=(0.5, 0.9)),
    OpSpec("shift", 1, "{0} + {c}", "elementwise", consts=(0.25,)),
    OpSpec("add", 2, "{0} + {1}", "elementwise"),
    OpSpec("sub", 2, "{0} - {1}", "elementwise"),
    OpSpec("mul", 2, "{0} * {1}", "elementwise"),
    OpSpec("total", 1, "xp.sum({0}) * {c}", "reduce", consts=(0.1,), reduces=True),
    OpSpec("rowsum", 1, "xp.sum({0}, axis=0) * {c}", "reduce", consts=(0.25,), reduces=True),
    OpSpec("matmul", 2, "{0} @ {1}", "matrix", matrix=True),
    OpSpec("transpose", 1, "xp.transpose({0})", "matrix", matrix=True),
    OpSpec("svd_u", 1, "xp.linalg.svd({0})[0]", "linalg", matrix=True),
    OpSpec("qr_q", 1, "xp.linalg.qr({0})[0]", "linalg", matrix=True),
    OpSpec("qr_r", 1, "xp.linalg.qr({0})[1]", "linalg", matrix=True),
    OpSpec("where", 3, "xp.where({0} > {c}, {1}, {2})", "select", consts=(0.5,)),
)
#: The ops of the generator language, by name.
OPS: dict[str, OpSpec] = {op.name: op for op in _OPS}


@dataclass(frozen=True)
class Node:
    """One op applied to earlier values. ``args`` are value references: ``0 .. window-1`` the states (``0`` the
    latest), then ``window + i`` the result of node ``i``. ``const``: the op's constant (scale's factor)."""

    op: str
    args: tuple[int, ...]
    const: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "args": list(self.args)}
        if self.const is not None:
            out["const"] = self.const
        return out


@dataclass(frozen=True)
class Generator:
    """One layer of a chain and what ``depth`` scales (see the module docstring).

    ``outputs``: the values appended to the history each step (empty: the last node). ``shape``: the input's
    shape. ``steps`` and ``jit`` apply to the ``order`` scale, ``loop`` to the ``layer`` scale."""

    nodes: tuple[Node, ...]
    outputs: tuple[int, ...] = ()
    window: int = 1
    scale: str = "layer"
    steps: int = 1
    shape: tuple[int, ...] = (3,)
    jit: bool = False
    loop: str = "python"
    _analysis: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        outs = tuple(self.outputs) or ((self.window + len(self.nodes) - 1,) if self.nodes else ())
        object.__setattr__(self, "outputs", outs)
        self.validate()

    # ------------------------------------------------------------------ validity

    def validate(self) -> None:
        """Raise :class:`GeneratorError` unless every reference, arity, constant and shape is valid."""
        self._validate_frame()
        matrix = len(self.shape) == 2 and self.shape[0] == self.shape[1]
        reduced = [False] * self.window
        for i, node in enumerate(self.nodes):
            reduced.append(self._validate_node(i, node, matrix, reduced))
        if not self.outputs or len(self.outputs) > self.window:
            raise GeneratorError(f"a step appends 1..window ({self.window}) outputs, got {len(self.outputs)}")
        for o in self.outputs:
            if not isinstance(o, int) or not 0 <= o < self.window + len(self.nodes):
                raise GeneratorError(f"output {o!r} is not a value")
            if o < self.window:
                raise GeneratorError(f"output {o} copies a state: a step appends what its nodes compute")
            if reduced[o]:
                raise GeneratorError(f"output {o} is a reduced value: a state keeps the input's shape")
        if len(set(self.outputs)) != len(self.outputs):
            raise GeneratorError("an output appears twice")
        if self.window > 1 and not any(0 < a < self.window for n in self.nodes for a in n.args):
            raise GeneratorError("no node reads an older state: the window is one state (the others only ride along)")

    def _validate_frame(self) -> None:
        if self.scale not in SCALES:
            raise GeneratorError(f"scale must be one of {', '.join(SCALES)}, got {self.scale!r}")
        if not isinstance(self.window, int) or not 1 <= self.window <= MAX_WINDOW:
            raise GeneratorError(f"window must be 1..{MAX_WINDOW}, got {self.window!r}")
        if not self.nodes:
            raise GeneratorError("a generator needs at least one node")
        if len(self.nodes) > MAX_NODES:
            raise GeneratorError(f"at most {MAX_NODES} nodes, got {len(self.nodes)}")
        if not 1 <= self.steps <= MAX_STEPS:
            raise GeneratorError(f"steps must be 1..{MAX_STEPS}, got {self.steps}")
        if self.scale != "order" and (self.steps != 1 or self.jit):
            raise GeneratorError("steps and jit apply to the order scale only")
        if self.loop not in LOOPS:
            raise GeneratorError(f"loop must be one of {', '.join(LOOPS)}, got {self.loop!r}")
        if self.loop != "python" and self.scale != "layer":
            raise GeneratorError("a scan loop applies to the layer scale only")
        if any(n < 1 for n in self.shape) or len(self.shape) > 2:
            raise GeneratorError(f"shape must be a vector or a matrix of positive sizes, got {self.shape}")

    def _validate_node(self, i: int, node: Node, matrix: bool, reduced: list[bool]) -> bool:
        """Check node ``i``; whether its value is a reduced one."""
        spec = OPS.get(node.op)
        if spec is None:
            raise GeneratorError(f"node {i}: unknown op {node.op!r}; known ops: {', '.join(OPS)}")
        if len(node.args) != spec.arity:
            raise GeneratorError(f"node {i}: {node.op} takes {spec.arity} values, got {len(node.args)}")
        for a in node.args:
            if not isinstance(a, int) or isinstance(a, bool) or not 0 <= a < self.window + i:
                raise GeneratorError(f"node {i}: reference {a!r} is not an earlier value")
        if spec.has_const and (node.const is None or node.const not in spec.consts):
            raise GeneratorError(f"node {i}: {node.op} needs a constant in {list(spec.consts)}")
        if not spec.has_const and node.const is not None:
            raise GeneratorError(f"node {i}: {node.op} takes no constant")
        if spec.matrix and not matrix:
            raise GeneratorError(f"node {i}: {node.op} needs a square matrix input, the shape is {self.shape}")
        arg_reduced = [reduced[a] for a in node.args]
        if (spec.matrix or spec.reduces) and any(arg_reduced):
            raise GeneratorError(f"node {i}: {node.op} needs full-shape values, not reduced ones")
        return spec.reduces or (all(arg_reduced) and bool(arg_reduced))

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able); :meth:`from_dict` reads it back to an equal generator."""
        out: dict[str, Any] = {
            "nodes": [n.to_dict() for n in self.nodes],
            "outputs": list(self.outputs),
            "window": self.window,
            "scale": self.scale,
            "shape": list(self.shape),
        }
        if self.scale == "order":
            out["steps"] = self.steps
            out["jit"] = self.jit
        if self.loop != "python":
            out["loop"] = self.loop
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Generator:
        """A generator from :meth:`to_dict`'s plain data; raises :class:`GeneratorError` (one line)."""
        if not isinstance(data, Mapping):
            raise GeneratorError(f"a generator is a JSON object, got {type(data).__name__}")
        unknown = set(data) - {"nodes", "outputs", "window", "scale", "shape", "steps", "jit", "loop"}
        if unknown:
            raise GeneratorError(f"unknown generator field(s): {', '.join(sorted(unknown))}")
        try:
            nodes = tuple(
                Node(str(n["op"]), tuple(int(a) for a in n["args"]), _const(n.get("const"))) for n in data["nodes"]
            )
            return cls(
                nodes=nodes,
                outputs=tuple(int(o) for o in data.get("outputs") or ()),
                window=int(data.get("window", 1)),
                scale=str(data.get("scale", "layer")),
                steps=int(data.get("steps", 1)),
                shape=tuple(int(s) for s in data.get("shape", (3,))),
                jit=bool(data.get("jit", False)),
                loop=str(data.get("loop", "python")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, GeneratorError):
                raise
            raise GeneratorError(f"not a generator description: {type(exc).__name__}: {exc}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Generator:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise GeneratorError(f"not JSON: {exc}") from None

    @property
    def key(self) -> str:
        """A short stable name of the generator's canonical form (equal generators, equal keys)."""
        return hashlib.sha1(self.canonical().to_json().encode()).hexdigest()[:12]

    # ------------------------------------------------------------------ structure

    def live(self) -> list[bool]:
        """Per node: does it reach an output (dead nodes change nothing the gradient sees)."""
        need = [False] * (self.window + len(self.nodes))
        for o in self.outputs:
            need[o] = True
        for i in range(len(self.nodes) - 1, -1, -1):
            if need[self.window + i]:
                for a in self.nodes[i].args:
                    need[a] = True
        return need[self.window :]

    def canonical(self) -> Generator:
        """The same program without dead nodes (references renumbered) and without older states no node
        reads (the window narrowed)."""
        gen = self
        live = gen.live()
        if not all(live):
            new_ref: dict[int, int] = {s: s for s in range(gen.window)}
            nodes: list[Node] = []
            for i, (node, keep) in enumerate(zip(gen.nodes, live, strict=True)):
                if keep:
                    new_ref[gen.window + i] = gen.window + len(nodes)
                    nodes.append(replace(node, args=tuple(new_ref[a] for a in node.args)))
            gen = replace(gen, nodes=tuple(nodes), outputs=tuple(new_ref[o] for o in gen.outputs))
        while gen.window > 1 and len(gen.outputs) < gen.window:
            oldest = gen.window - 1
            if any(oldest in n.args for n in gen.nodes):
                break
            w = gen.window

            def down(r: int, w: int = w) -> int:
                return r - 1 if r >= w else r

            gen = replace(
                gen,
                nodes=tuple(replace(n, args=tuple(down(a) for a in n.args)) for n in gen.nodes),
                outputs=tuple(down(o) for o in gen.outputs),
                window=w - 1,
            )
        return gen

    @property
    def axis(self) -> str:
        """What a depth counts: ``order``, ``unroll`` (a window of several states) or ``layer``."""
        if self.scale == "order":
            return "order"
        return "unroll" if self.window > 1 else "layer"

    @property
    def size(self) -> int:
        """The generator's complexity (the search's penalty, the shrinker's measure): live nodes, plus one per
        extra state, output, layer and nesting."""
        live = sum(self.live())
        extra = (self.window - 1) + (len(self.outputs) - 1) + (self.steps - 1) + int(self.jit)
        extra += int(self.loop != "python")
        extra += int(self.scale == "order") + len(self.shape) - 1
        return live + extra

    def path_matrix(self) -> np.ndarray:
        """``P[i, j]``: paths from state ``j`` to the new state ``i`` of one step (an unchanged state: 1 on
        its own shifted position). A transform that walks the graph as a tree pays these products."""
        w = self.window
        paths = np.zeros((w + len(self.nodes), w))
        for s in range(w):
            paths[s, s] = 1.0
        for i, node in enumerate(self.nodes):
            for a in node.args:
                paths[w + i] += paths[a]
        history = [paths[s] for s in range(w - 1, -1, -1)] + [paths[o] for o in self.outputs]
        new = history[-w:]  # oldest first
        return np.array(new[::-1])  # row 0: the new latest state

    @property
    def predicted_base(self) -> float:
        """The tree size's growth per step: the spectral radius of :meth:`path_matrix` (1 without reuse)."""
        if "base" not in self._analysis:
            m = self.path_matrix()
            rho = float(max(abs(np.linalg.eigvals(m)))) if m.size else 0.0
            self._analysis["base"] = round(rho, 6)
        return self._analysis["base"]

    @property
    def uses(self) -> int:
        """How many times a step uses the previous state (paths from ``y`` to the step's outputs)."""
        m = self.path_matrix()
        return int(round(float(m[: len(self.outputs), 0].sum()))) if m.size else 0

    @property
    def reuses(self) -> bool:
        """The step reuses a value (predicted base above 1.15): a tree-walking transform would blow up."""
        return self.predicted_base > 1.15

    # ------------------------------------------------------------------ text

    def value_names(self) -> list[str]:
        """Names of every value in the written chain: the states, then one letter per node."""
        states = ["y"] + [f"y{k}" for k in range(1, self.window)]
        letters = [c for c in "abcdefghijklmnopqrstuvw" if c not in "xy"]
        return states + [letters[i] if i < len(letters) else f"v{i}" for i in range(len(self.nodes))]

    def statements(self) -> list[str]:
        """The step as the chain writes it: ``name = expression`` per live node, then the state update (a step
        of one state whose output is its last node assigns that node to ``y`` directly: ``y = y * y``)."""
        names = self.value_names()
        last = self.window + len(self.nodes) - 1
        inline = self.window == 1 and self.outputs == (last,)
        out = []
        for i, (node, keep) in enumerate(zip(self.nodes, self.live(), strict=True)):
            if keep:
                target = "y" if inline and self.window + i == last else names[self.window + i]
                out.append(f"{target} = {node_text(node, names)}")
        if not inline:
            out.append(self.update())
        return out

    def new_states(self) -> list[str]:
        """The names of the states after a step, latest first (``a, y``: the output, then the old latest)."""
        names = self.value_names()
        states = names[: self.window]
        history = states[::-1] + [names[o] for o in self.outputs]
        return history[-self.window :][::-1]

    def update(self) -> str:
        """The state update of a step: ``y = a``, ``y, y1 = a, y`` (one output over a window of two) ..."""
        names = self.value_names()
        states = names[: self.window]  # y, y1, y2: latest first
        history = states[::-1] + [names[o] for o in self.outputs]
        new = history[-self.window :][::-1]
        return f"{', '.join(states)} = {', '.join(new)}"

    def summary(self) -> str:
        """One line: ``a = y * y; y = a`` (order scale: ``d^n/dx^n sum(...)``)."""
        body = "; ".join(self.statements())
        if self.scale == "order":
            inner = body if self.steps == 1 else f"({body}) x{self.steps}"
            jit = " (each under jit)" if self.jit else ""
            return f"nested grad (order depth - 1) of sum(y) after: {inner}{jit}"
        return body + (" (under lax.scan on JAX)" if self.loop == "scan" else "")


def _const(value: Any) -> float | None:
    return None if value is None else float(value)


def node_text(node: Node, names: Sequence[str]) -> str:
    """The expression of ``node`` over ``names`` (the chain's code for it)."""
    spec = OPS[node.op]
    c = "" if node.const is None else _fmt_const(node.const)
    return spec.template.format(*(names[a] for a in node.args), c=c)


def _fmt_const(c: float) -> str:
    text = repr(float(c))
    return text


# --------------------------------------------------------------------------- the chain file


@dataclass
class ChainOptions:
    """The ``@adprof.chain`` options a written generator gets (what its depth scale and its target need)."""

    name: str
    depths: tuple[int, ...] | None = None  # explicit depths (then adaptive=False)
    max_depth: int | None = None
    cap: float | None = None
    description: str = ""
    modes: tuple[str, ...] = ("traced", "eager", "compile")


def _decorator(gen: Generator, opts: ChainOptions) -> str:
    args = [f"input_shape={tuple(gen.shape)!r}"]
    if gen.scale == "layer" and gen.reuses and gen.window == 1:
        args.append(f"reuse={gen.uses}")
    if gen.axis != "layer":
        args.append(f'axis="{gen.axis}"')
    if opts.depths:
        args.append(f"depths={tuple(opts.depths)!r}")
        args.append("adaptive=False")
    elif opts.max_depth:
        args.append(f"max_depth={opts.max_depth}")
    args.append("modes=(" + ", ".join(f'"{m}"' for m in opts.modes) + ("," if len(opts.modes) == 1 else "") + ")")
    if opts.cap is not None:
        args.append(f"cap={opts.cap:g}")
    one = "@adprof.chain(" + ", ".join(args) + ")"
    if len(one) <= 120:
        return one
    return "@adprof.chain(\n" + "".join(f"    {a},\n" for a in args) + ")"


def _initial_states(gen: Generator) -> list[str]:
    """The states before the first step: ``y = x``; older ones scaled copies (distinct values)."""
    names = gen.value_names()[: gen.window]
    if gen.window == 1:
        return ["y = x"]
    values = ["x"] + [f"x * {1.0 - 0.25 * k!r}" for k in range(1, gen.window)]
    return [f"{', '.join(names)} = {', '.join(values)}"]


def _readout(gen: Generator) -> str:
    names = gen.value_names()[: gen.window]
    return " + ".join(f"xp.sum({n})" for n in names)


def _expressions(gen: Generator) -> list[str]:
    """``name = expression`` of each live node (no state update: a scan's step returns the new states)."""
    names = gen.value_names()
    return [
        f"{names[gen.window + i]} = {node_text(node, names)}"
        for i, (node, keep) in enumerate(zip(gen.nodes, gen.live(), strict=True))
        if keep
    ]


def _body_lines(gen: Generator, indent: str) -> list[str]:
    return [indent + line for line in gen.statements()]


def function_source(gen: Generator, opts: ChainOptions) -> str:
    """The decorated chain function of ``gen`` (no imports)."""
    doc = opts.description or gen.summary()
    lines = [_decorator(gen, opts), f"def {opts.name}(xp, x, depth):", f"    {_docstring(doc, '    ')}"]
    if gen.scale == "layer" and gen.loop == "scan":
        states = gen.value_names()[: gen.window]
        lines.append("")
        lines.append(f"    def step({', '.join(states)}):")
        lines += ["        " + e for e in _expressions(gen)]
        new = gen.new_states()
        lines.append(f"        return ({new[0]},)" if gen.window == 1 else f"        return {', '.join(new)}")
        lines.append("")
        lines += ["    " + s for s in _initial_states(gen)]
        carry = f"({states[0]},)" if gen.window == 1 else f"({', '.join(states)})"
        target = f"({states[0]},)" if gen.window == 1 else ", ".join(states)
        lines.append(f"    {target} = _repeat(xp, step, {carry}, depth)  # lax.scan on JAX")
        lines.append(f"    return {_readout(gen)}")
        return "\n".join(lines) + "\n"
    if gen.scale == "layer":
        lines += ["    " + s for s in _initial_states(gen)]
        lines.append("    for _ in range(depth):")
        lines += _body_lines(gen, "        ")
        lines.append(f"    return {_readout(gen)}")
        return "\n".join(lines) + "\n"
    lines.append("")
    lines.append("    def f(x):")
    lines += ["        " + s for s in _initial_states(gen)]
    if gen.steps == 1:
        lines += _body_lines(gen, "        ")
    else:
        lines.append(f"        for _ in range({gen.steps}):")
        lines += _body_lines(gen, "            ")
    lines.append(f"        return {_readout(gen)}")
    lines.append("")
    if gen.jit:
        lines.append("    jit = _jax_jit(xp)  # jax.jit where the chain runs on JAX (jit inside grad), else no-op")
        lines.append("    g = jit(f)")
        lines.append("    for _ in range(depth - 1):")
        lines.append("        g = jit((lambda h: lambda x: xp.sum(xp.grad(h)(x)))(g))")
    else:
        lines.append("    g = f")
        lines.append("    for _ in range(depth - 1):  # one more derivative order per depth")
        lines.append("        g = (lambda h: lambda x: xp.sum(xp.grad(h)(x)))(g)")
    lines.append("    return g(x)")
    return "\n".join(lines) + "\n"


_REPEAT = '''

def _repeat(xp, step, states, depth):
    """``depth`` steps of ``step`` over the states: one ``jax.lax.scan`` when the chain runs on JAX's namespace
    (one traced body, whatever the depth), else a Python loop."""
    if getattr(xp, "__name__", "").startswith("adprof_jax"):
        import jax

        states, _ = jax.lax.scan(lambda s, _: (tuple(step(*s)), None), tuple(states), None, length=depth)
        return states
    for _ in range(depth):
        states = step(*states)
    return states
'''

_JAX_JIT = '''

def _jax_jit(xp):
    """jax.jit when the chain runs on JAX's namespace, else the identity (jit inside grad)."""
    if getattr(xp, "__name__", "").startswith("adprof_jax"):
        import jax

        return jax.jit
    return lambda f: f
'''


def _docstring(text: str, indent: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', "'''")
    return f'"""{text}"""'


def chain_source(gens: Sequence[tuple[Generator, ChainOptions]], module_doc: str = "") -> str:
    """A chain file of one or more generators (each with its options), formatted as ``ruff format`` would."""
    parts = []
    if module_doc:
        parts.append(_docstring(module_doc.strip() + "\n", "") + "\n\n")
    parts.append("import adprof\n")
    if any(g.jit for g, _ in gens):
        parts.append(_JAX_JIT)
    if any(g.loop == "scan" for g, _ in gens):
        parts.append(_REPEAT)
    for gen, opts in gens:
        if not re.fullmatch(r"[A-Za-z_]\w*", opts.name):
            raise GeneratorError(f"not a chain name: {opts.name!r}")
        parts.append("\n\n" + function_source(gen, opts))
    return "".join(parts)


def instantiate(gen: Generator, name: str = "generated", **options: Any) -> Any:
    """The generator as a :class:`~adprof.chain.Chain` in this process (its chain file's source, executed)."""
    from adprof.chain import as_chain

    opts = ChainOptions(name=name, **options)
    namespace: dict[str, Any] = {"__name__": f"_adprof_hunt_{name}"}
    exec(compile(chain_source([(gen, opts)]), f"<generator {gen.key}>", "exec"), namespace)
    chain = as_chain(namespace[name])
    assert chain is not None
    return chain


def parse_generator(text_or_data: str | Mapping[str, Any]) -> Generator:
    """A generator from JSON text or plain data (one-line :class:`GeneratorError` otherwise)."""
    if isinstance(text_or_data, str):
        return Generator.from_json(text_or_data)
    return Generator.from_dict(text_or_data)
