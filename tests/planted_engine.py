"""``planted``: a small plugin backend for the hunt's tests, an engine adprof has never seen, with two planted
pathologies, each triggered by a program shape and each in one of its two modes only.

A tape-based reverse mode on numpy (``Var`` records each op's inputs and VJP; the backward walks the tape once,
in reverse topological order). Its modes:

* ``traced``: ``record`` (the forward, building the tape), ``transform`` (the backward), ``drop``. Its backward
  *rematerialises* the input of every ``tanh`` instead of keeping it, and a rematerialised ``tanh`` recomputes
  its own input twice: a chain of nested ``tanh`` costs ``2^k`` steps at nesting ``k`` (**time**: exponential in
  the nesting of ``tanh``; every other op costs one step). Counted exactly by ``tape_steps`` (the policy's step
  count, read from the tape: computed, not run, so no test waits on a blow-up);
* ``eager``: ``forward``/``backward`` calls on fresh inputs. Each ``cos`` saves for its backward a snapshot of
  every value it depends on (a checkpoint of its history, copied): ``saved_bytes`` grows quadratically with the
  number of chained ``cos`` (**memory**: superlinear). Its ``tape_steps`` are one per node: linear.

So ``y = tanh(y)`` is exponential on ``planted traced`` and linear on ``planted eager``; ``y = cos(y)`` saves
quadratic bytes on ``planted eager`` and linear bytes on ``planted traced``: both are *engine-specific*.

Registered by the tests as an ``adprof.backends`` entry point (:func:`install`): a ``*.dist-info`` directory on
``sys.path`` and on the workers' ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adprof.backends.base import (
    Backend,
    UnsupportedOpError,
    measure_phase,
    no_phase,
    record_metric,
)
from adprof.backends.memory import CallMemory
from adprof.backends.peer_common import check_finite, check_output, failure
from adprof.backends.peer_common import measure_eager as eager_loop
from adprof.model import Point

NAME = "planted"
#: The op whose nesting the traced mode's backward pays exponentially for, and the op whose history the eager
#: mode's backward keeps (the planted shapes: the tests read them from here, the generators never do).
REMAT_OP = "tanh"
SNAPSHOT_OP = "cos"


# --------------------------------------------------------------------------- the tape


class Var:
    """A value on the tape: its array, the op that made it, its parents, its VJP, what it saved."""

    __slots__ = ("value", "op", "parents", "vjp", "saved", "__weakref__")
    __array_priority__ = 100.0

    def __init__(
        self,
        value: Any,
        op: str = "leaf",
        parents: Sequence[Var] = (),
        vjp: Callable[[Any], Sequence[Any]] | None = None,
        saved: Sequence[Any] = (),
    ) -> None:
        self.value = np.asarray(value, dtype=np.float64)
        self.op, self.parents, self.vjp, self.saved = op, tuple(parents), vjp, tuple(saved)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    def __add__(self, other: Any) -> Var:
        return _binary("add", self, other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Var:
        return _binary("sub", self, other)

    def __rsub__(self, other: Any) -> Var:
        return _binary("sub", _lift(other), self)

    def __mul__(self, other: Any) -> Var:
        return _binary("mul", self, other)

    __rmul__ = __mul__

    def __neg__(self) -> Var:
        return _unary("neg", self, -self.value, lambda g: (-g,), (self.value,))

    def __matmul__(self, other: Any) -> Var:
        a, b = self, _lift(other)
        return Var(a.value @ b.value, "matmul", (a, b), lambda g: (g @ b.value.T, a.value.T @ g), (a.value, b.value))

    def __gt__(self, other: Any) -> Any:
        return self.value > (other.value if isinstance(other, Var) else other)


def _lift(x: Any) -> Var:
    return x if isinstance(x, Var) else Var(x, "const")


def _unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(axis=i, keepdims=True)
    return g


def _binary(op: str, a: Any, b: Any) -> Var:
    a, b = _lift(a), _lift(b)
    x, y = a.value, b.value
    if op == "add":
        out, rule = x + y, (lambda g: (g, g))
    elif op == "sub":
        out, rule = x - y, (lambda g: (g, -g))
    else:
        out, rule = x * y, (lambda g: (g * y, g * x))

    def vjp(g: Any) -> tuple[Any, Any]:
        ga, gb = rule(g)
        return _unbroadcast(ga, x.shape), _unbroadcast(gb, y.shape)

    return Var(out, op, (a, b), vjp, (x, y) if op == "mul" else ())


def _unary(op: str, a: Var, value: Any, vjp: Callable[[Any], Sequence[Any]], saved: Sequence[Any]) -> Var:
    return Var(value, op, (a,), vjp, saved)


def _history(v: Var) -> list[Any]:
    """Copies of the values of every node ``v`` depends on (each once): the eager mode's ``cos`` checkpoint."""
    out, seen, stack = [], {id(v)}, [v]
    while stack:
        node = stack.pop()
        out.append(node.value.copy())
        for p in node.parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    return out


class Namespace:
    """The ``xp`` chains get: numpy's names the generator language uses, on :class:`Var`."""

    __name__ = "adprof_planted"

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.linalg = _Linalg()

    def sin(self, a: Var) -> Var:
        return _unary("sin", a, np.sin(a.value), lambda g: (g * np.cos(a.value),), (a.value,))

    def cos(self, a: Var) -> Var:
        saved = _history(a) if self.mode == "eager" else [a.value]  # the planted memory pathology
        return _unary("cos", a, np.cos(a.value), lambda g: (-g * np.sin(a.value),), saved)

    def tanh(self, a: Var) -> Var:
        t = np.tanh(a.value)
        return _unary("tanh", a, t, lambda g: (g * (1 - t * t),), (t,))

    def exp(self, a: Var) -> Var:
        e = np.exp(a.value)
        return _unary("exp", a, e, lambda g: (g * e,), (e,))

    def sum(self, a: Var, axis: int | None = None) -> Var:
        shape = a.shape
        if axis is None:
            return _unary("sum", a, a.value.sum(), lambda g: (np.broadcast_to(g, shape).copy(),), ())
        return _unary(
            "sum", a, a.value.sum(axis=axis), lambda g: (np.broadcast_to(np.expand_dims(g, axis), shape).copy(),), ()
        )

    def transpose(self, a: Var) -> Var:
        return _unary("transpose", a, a.value.T, lambda g: (g.T,), ())

    def where(self, cond: Any, a: Any, b: Any) -> Var:
        a, b = _lift(a), _lift(b)
        c = np.asarray(cond)
        out = np.where(c, a.value, b.value)

        def vjp(g: Any) -> tuple[Any, Any]:
            return _unbroadcast(np.where(c, g, 0.0), a.shape), _unbroadcast(np.where(c, 0.0, g), b.shape)

        return Var(out, "where", (a, b), vjp, (c,))


class _Linalg:
    def __getattr__(self, name: str) -> Any:
        raise UnsupportedOpError(f"the planted backend has no linalg.{name}")


# --------------------------------------------------------------------------- the backward


def topo(loss: Var) -> list[Var]:
    """The tape's nodes from ``loss``, parents before children (iterative)."""
    order: list[Var] = []
    seen: set[int] = set()
    stack: list[tuple[Var, bool]] = [(loss, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((p, False) for p in node.parents if id(p) not in seen)
    return order


def backward(loss: Var) -> Any:
    """The gradient of ``loss`` with respect to its leaf (each node's VJP once, in reverse order)."""
    grads: dict[int, Any] = {id(loss): np.ones_like(loss.value)}
    leaf = None
    for node in reversed(topo(loss)):
        g = grads.pop(id(node), None)
        if node.op == "leaf":
            leaf = g
            continue
        if g is None or node.vjp is None:
            continue
        for p, gp in zip(node.parents, node.vjp(g), strict=True):
            if p.op != "const":
                grads[id(p)] = gp if id(p) not in grads else grads[id(p)] + gp
    return leaf


def tape_steps(loss: Var, mode: str) -> int:
    """The backward's steps: one per node; on ``traced``, each ``tanh`` also rematerialises its input, a
    rematerialised ``tanh`` recomputing its own input twice (``remat(tanh) = 1 + 2 remat(its input)``)."""
    nodes = topo(loss)
    if mode != "traced":
        return len(nodes)
    remat: dict[int, int] = {}
    steps = 0
    for node in nodes:  # parents first: each node's rematerialisation cost from its input's
        if node.op == REMAT_OP:
            parent = node.parents[0]
            remat[id(node)] = 1 + 2 * remat.get(id(parent), 0)
            steps += 1 + remat.get(id(parent), 1)
        else:
            steps += 1
    return steps


def saved_bytes(loss: Var) -> int:
    """The bytes the tape saved for its backward."""
    return sum(int(np.asarray(a).nbytes) for node in topo(loss) for a in node.saved)


# --------------------------------------------------------------------------- the backend


class PlantedBackend(Backend):
    """The planted backend (see the module docstring)."""

    name = NAME
    modes = ("traced", "eager")
    phases = {"traced": ("record", "transform", "drop"), "eager": ("forward0", "backward0", "forward", "backward")}
    metrics = {"traced": ("python_calls", "tape_steps"), "eager": ("python_calls", "tape_steps")}
    deciding_metrics = {"traced": ("tape_steps",), "eager": ("tape_steps",)}
    metric_notes = {
        "traced": {"python_calls": "the rematerialisation is counted by tape_steps"},
        "eager": {"python_calls": "numpy's work is in C"},
    }
    requires = ("numpy",)
    install_hint = "pip install numpy"
    memory_figures = {"traced": ("saved_bytes",), "eager": ("saved_bytes",)}
    memory_by_default = True
    #: What it cannot run, declared (docs/backends.md): no linear algebra, no ``xp.grad`` to nest.
    unsupported_ops = frozenset({"svd_u", "qr_q", "qr_r"})
    no_nested_grad = ("traced", "eager")

    def measure_point(
        self,
        chain: Any,
        mode: str,
        depth: int,
        profile: str | None = None,
        *,
        calls: int = 3,
        on_phase: Any = no_phase,
        counter_budget: int | None = None,
        repeats: int | None = None,
        memory: bool = False,
    ) -> Point:
        self.check_arguments(mode, profile)
        xp = Namespace(mode)

        def forward(x: Any) -> tuple[Var, Var]:
            loss = _lift(chain(xp, Var(x), depth))
            return loss, loss

        if mode == "eager":
            calls_memory = CallMemory(saved=lambda loss, _: saved_bytes(loss), made=lambda *_: [])
            return eager_loop(
                chain,
                depth,
                calls=calls,
                on_phase=on_phase,
                leaf=chain.make_input,
                forward=forward,
                backward=lambda x, loss: backward(loss),
                scalar=lambda loss: float(loss.value),
                check=lambda loss, d: check_output(loss.shape, True, d),
                graph_metrics=lambda loss, _: {"tape_steps": tape_steps(loss, mode)},
                memory=calls_memory if memory else None,
            )
        pt = Point(depth=depth)
        phase = "record"
        try:
            a = chain.make_input()
            loss = measure_phase(pt, "record", lambda: forward(a)[0], on_phase, repeats=repeats)
            check_output(loss.shape, True, depth)
            check_finite(float(loss.value), depth)
            pt.extra["value"] = float(loss.value)
            if memory:
                pt.memory["saved_bytes"] = float(saved_bytes(loss))
            phase = "transform"
            measure_phase(pt, "transform", lambda: backward(loss), on_phase, repeats=repeats, python_calls=True)
            record_metric(pt, "transform", "tape_steps", tape_steps(loss, mode))
            phase = "drop"
            holder = [loss]
            measure_phase(pt, "drop", lambda: holder.clear(), on_phase, repeats=1)
        except Exception as exc:
            raise failure(exc, chain, depth, phase, pt) from None
        return pt


# --------------------------------------------------------------------------- installing it


def install(root: Path) -> Path:
    """Write a distribution declaring :class:`PlantedBackend` under ``adprof.backends`` into ``root`` (this
    module copied beside it): put ``root`` on ``sys.path`` and the workers' ``PYTHONPATH``."""
    (root / "adprof_planted_engine.py").write_text(Path(__file__).read_text())
    info = root / "adprof_planted-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: adprof-planted\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[adprof.backends]\n{NAME} = adprof_planted_engine:PlantedBackend\n")
    return root


def environment(root: Path) -> dict[str, str]:
    """The environment of a process (a worker, an ``adprof`` command) that sees the plugin of ``root``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return env


__all__ = ["NAME", "PlantedBackend", "Var", "backward", "environment", "install", "saved_bytes", "tape_steps"]
