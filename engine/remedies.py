"""Remedies as library helpers: ``checkpoint`` and staged evaluation (``Staged``).

**checkpoint** evaluates an intermediate to a leaf so that downstream keys restart from it; the
leaf remembers what it stands for in a checkpoint chain, so a transform still differentiates
through it. Every op merges its inputs' chains (``checkpoint_chain``: exponential in ``v08``,
deduplicated in ``fixed``).

**Staged** runs a chain in stages with one transform (traced) or one backward (eager) per stage,
chaining cotangents backwards with the surrogate ``L_n = <T_{n+1}, ct_{n+1}> + c_n * extra_n``,
so no transform or backward ever sees more than one stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from . import graph
from .ad import grad as _grad
from .ad import vjp_program
from .checkpoint_chain import CheckpointNode, chain_length  # noqa: F401 - engine.remedies.chain_length
from .compile import compile as _compile
from .errors import TransformError
from .graph import TracedTensor, freeze
from .keys import InputKey


def checkpoint(t: TracedTensor) -> TracedTensor:
    """Evaluate ``t`` now and return a leaf holding its value that stands for ``t`` in transforms.

    The graph behind ``t`` must have values: build its inputs with ``engine.constant``.
    """
    if type(t) is not TracedTensor:
        raise TransformError(f"checkpoint takes a traced tensor, got {type(t).__name__}")
    if t.node is None and t.data is not None:
        return t
    try:
        program = freeze([t], aliases=graph.chain_aliases([t])).program
    except TransformError as exc:
        raise TransformError(f"checkpoint needs values: build the inputs with engine.constant(array) ({exc})") from None
    value = program.prepare()()[0]
    leaf = TracedTensor(InputKey(), t.aval, data=value)
    leaf.chain = CheckpointNode(leaf, t, t.chain)
    return leaf


# ----------------------------------------------------------------------------------------------
# Staging


def _split(result):
    if isinstance(result, tuple):
        if len(result) != 2:
            raise TransformError("a stage returns t_next or (t_next, extra)")
        return result
    return result, None


class _StagePrograms:
    """The programs of one stage shape: forward (value only), and either a backward that recomputes
    the forward, or a forward that also returns the residuals its backward program reads."""

    def __init__(self, fwd, has_extra: bool) -> None:
        self.fwd = fwd.prepare()
        self.fwd_ops = fwd.op_count
        self.has_extra = has_extra
        self.bwd = None
        self.bwd_ops = 0
        self.fwd_res = None  # t -> (t_next, [extra], residuals...)
        self.sources: list[tuple[str, int]] = []  # per backward input: ("t"|"ct"|"c"|"res", index)

    def with_residuals(self, t, ct, c, fwd_outs, surrogate) -> None:
        """Build the residual pair; leaves ``bwd`` unset when a residual would need ``ct`` or ``c``."""
        source = freeze([surrogate], inputs=[t, ct, c], tag=True).program
        seed = np.ones((), dtype=surrogate.dtype)
        derivative = vjp_program(source, [0], seed=seed, residuals=True)
        needed = [source.tags[derivative.tags[v]] for v in derivative.inputs]
        residuals: list = []
        sources = []
        for tensor in needed:
            named = next((n for n, x in (("t", t), ("ct", ct), ("c", c)) if tensor is x), None)
            if named is not None:
                sources.append((named, 0))
            else:
                sources.append(("res", len(residuals)))
                residuals.append(tensor)
        try:
            fwd_res = _compile(list(fwd_outs) + residuals, inputs=[t])
        except TransformError:  # a residual depends on the cotangent: keep the recomputing backward
            return
        self.fwd_res = fwd_res.prepare()
        self.sources = sources
        self.bwd = derivative.prepare()
        self.bwd_ops = derivative.op_count


class Staged:
    """A chain run in stages: ``t_{n+1}, extra_n = stages[n](xp, t_n)``, then ``final(xp, t_N)``.

    The objective is ``J = sum_n weights[n] * extra_n + final(t_N)``; :meth:`value_and_grad` gives
    ``J`` and ``dJ/dt_0`` with one backward per stage. Traced mode builds three programs per stage
    (forward, and backward = grad of the surrogate, from placeholders) once per (stage, shape) and
    reuses them; eager mode records each stage in its own session and reuses the derivative cache.
    Stages that are the same callable object (or share a ``stage_key`` attribute) share programs.
    With ``keep_residuals`` (default) traced stages keep the forward values their backward needs,
    as eager stages do; without it each backward program recomputes its stage's forward (less
    memory: only the stage inputs are kept, like a checkpoint per stage).
    """

    def __init__(
        self,
        stages: Sequence[Callable],
        final: Callable,
        weights: Sequence[float] | None = None,
        keep_residuals: bool = True,
    ):
        self.keep_residuals = keep_residuals
        self.stages = list(stages)
        self.final = final
        self.weights = [1.0] * len(self.stages) if weights is None else [float(w) for w in weights]
        if len(self.weights) != len(self.stages):
            raise ValueError(f"{len(self.weights)} weights for {len(self.stages)} stages")
        self._programs: dict = {}
        self.build_seconds = 0.0

    # -- traced -------------------------------------------------------------------------------
    def _stage_programs(self, stage, shape, dtype) -> _StagePrograms:
        from . import numpy as xnp

        key = (getattr(stage, "stage_key", stage), shape, np.dtype(dtype).str)
        progs = self._programs.get(key)
        if progs is None:
            t = graph.input(shape, dtype)
            t_next, extra = _split(stage(xnp, t))
            fwd_outs = [t_next] + ([extra] if extra is not None else [])
            fwd = _compile(fwd_outs, inputs=[t])
            ct = graph.input(t_next.shape, t_next.dtype)
            c = graph.input((), t_next.dtype)
            surrogate = xnp.sum(t_next * ct)
            if extra is not None:
                surrogate = surrogate + extra * c
            progs = _StagePrograms(fwd, extra is not None)
            if self.keep_residuals:
                progs.with_residuals(t, ct, c, fwd_outs, surrogate)
            if progs.bwd is None:  # recompute the stage's forward inside its backward program
                bwd = _compile(_grad(surrogate, t), inputs=[t, ct, c])
                progs.bwd, progs.bwd_ops = bwd.prepare(), bwd.op_count
            self._programs[key] = progs
        return progs

    def _final_programs(self, shape, dtype):
        from . import numpy as xnp

        key = ("final", shape, np.dtype(dtype).str)
        progs = self._programs.get(key)
        if progs is None:
            t = graph.input(shape, dtype)
            f = self.final(xnp, t)
            progs = (_compile(f, inputs=[t]).prepare(), _compile(_grad(f, t), inputs=[t]).prepare())
            self._programs[key] = progs
        return progs

    def value(self, x0, mode: str = "traced", runtime=None) -> float:
        """``J`` only (traced: forward programs only)."""
        if mode == "eager":
            return self.value_and_grad(x0, "eager", runtime)[0]
        ts, total = self._traced_forward(np.asarray(x0, dtype=np.float64))
        fin, _ = self._final_programs(ts[-1].shape, ts[-1].dtype)
        return total + float(fin(ts[-1])[0])

    def _traced_forward(self, x0, residuals: list | None = None):
        ts = [x0]
        total = 0.0
        for stage, w in zip(self.stages, self.weights, strict=True):
            progs = self._stage_programs(stage, ts[-1].shape, ts[-1].dtype)
            if residuals is not None and progs.fwd_res is not None:
                outs = progs.fwd_res(ts[-1])
                residuals.append(outs[1 + progs.has_extra :])
            else:
                outs = progs.fwd(ts[-1])
                if residuals is not None:
                    residuals.append(None)
            ts.append(outs[0])
            if progs.has_extra:
                total += w * float(outs[1])
        return ts, total

    def value_and_grad(self, x0, mode: str = "traced", runtime=None) -> tuple[float, np.ndarray]:
        """``(J, dJ/dt_0)`` with one backward per stage, in ``mode`` "traced" or "eager"."""
        x0 = np.asarray(x0, dtype=np.float64)
        if mode == "eager":
            return self._eager(x0, runtime)
        if mode != "traced":
            raise ValueError(f"mode must be 'traced' or 'eager', got {mode!r}")
        residuals: list = []
        ts, total = self._traced_forward(x0, residuals)
        fin, fin_bwd = self._final_programs(ts[-1].shape, ts[-1].dtype)
        value = total + float(fin(ts[-1])[0])
        ct = fin_bwd(ts[-1])[0]
        for n in range(len(self.stages) - 1, -1, -1):
            progs = self._stage_programs(self.stages[n], ts[n].shape, ts[n].dtype)
            c = np.asarray(self.weights[n])
            if residuals[n] is None:
                ct = progs.bwd(ts[n], ct, c)[0]
            else:
                given = {"t": (ts[n],), "ct": (ct,), "c": (c,), "res": residuals[n]}
                ct = progs.bwd.run_unchecked(*[given[kind][i] for kind, i in progs.sources])[0]
            residuals[n] = None  # free as we go
        return value, ct

    # -- eager --------------------------------------------------------------------------------
    def _eager(self, x0, runtime):
        from . import numpy as xnp
        from .eager import EagerRuntime

        rt = runtime if runtime is not None else EagerRuntime()
        leaves, outs, sessions = [], [], []
        t = x0
        total = 0.0
        for stage, w in zip(self.stages, self.weights, strict=True):
            leaf = rt.variable(t)
            with rt.session() as s:
                t_next, extra = _split(stage(xnp, leaf))
            leaves.append(leaf)
            outs.append((t_next, extra))
            sessions.append(s)
            if extra is not None:
                total += w * float(extra)
            t = t_next.numpy()
        last = rt.variable(t)
        with rt.session():
            fin = self.final(xnp, last)
        value = total + float(fin)
        fin.backward()
        ct = last.grad
        for n in range(len(self.stages) - 1, -1, -1):
            t_next, extra = outs[n]
            with rt.session(sessions[n]):  # resume the stage's session: one canonical program
                surrogate = xnp.sum(t_next * rt.constant(ct))
                if extra is not None:
                    surrogate = surrogate + extra * rt.constant(np.asarray(self.weights[n]))
            surrogate.backward()
            ct = leaves[n].grad
        return value, ct

    def program_summary(self) -> list[tuple]:
        """(stage key, shape, forward ops, backward ops) per traced stage program built so far."""
        return [(k[0], k[1], v.fwd_ops, v.bwd_ops) for k, v in self._programs.items() if k[0] != "final"]
