"""What a backend declares about one of its modes, as plain data the analysis reads without importing backends.

:class:`BackendInfo` is built by :meth:`adprof.backends.base.Backend.info` from the backend's class declarations
and carried on every series (``Series.backend_info``). A series built without one (a test's, a report read from
JSON) finds its backend's through :func:`declared_info`: every backend adprof resolves registers its declarations
here (:func:`register`); an unknown backend gets :func:`generic_info`, the rules every backend starts from.

The remedy sentences that analysis and the built-in declarations share live here too (a plugin writes its own in
its own file); :mod:`adprof.analysis.explain` re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: Where torch's compile mode puts the metrics of the whole compile (no time of its own): classified too.
WHOLE_COMPILE = "compile"


def generic_cost_phases(mode: str) -> tuple[str, ...]:
    """The phases classified in ``mode`` unless the backend declares its own: eager ``backward``, compile
    ``transform lower compile drop``, any other mode ``transform drop``."""
    if mode == "eager":
        return ("backward",)
    if mode == "compile":
        return ("transform", "lower", "compile", "drop")
    return ("transform", "drop")


#: Search depths: of a chain along its layers on a peer engine, and along the derivative order.
PEER_SEARCH_DEPTHS = (1, 2, 3, 4, 6, 8)
ORDER_SEARCH_DEPTHS = (1, 2, 3, 4, 5, 6)
#: The depths a found chain is checked at, and attributed on another engine at, on a peer whose points are cheap.
PEER_CHECK_DEPTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


@dataclass(frozen=True)
class HuntPlan:
    """How ``adprof hunt`` measures a generator on one backend and mode (docs/hunt.md): searched at a few small
    depths, then a found chain checked and attributed at more. The defaults are a peer's whose points cost tenths
    of a second; a backend whose points cost more (a compile per point) declares fewer depths."""

    #: The search's depths along the layers, and along the derivative order (ascending).
    search_depths: tuple[int, ...] = PEER_SEARCH_DEPTHS
    order_depths: tuple[int, ...] = ORDER_SEARCH_DEPTHS
    #: A search point's wall time past which the series goes no deeper; the timeout that kills a point.
    point_cap: float = 3.0
    timeout: float = 60.0
    #: Eager calls per search point.
    calls: int = 2
    #: Rough seconds of one evaluation (a target's tier before its cost is measured); None: a peer's (see
    #: :meth:`evaluation_cost`).
    cost: float | None = None
    #: The explicit depths a found chain is written with (None: the chain's adaptive schedule), and its cap.
    check_depths: tuple[int, ...] | None = PEER_CHECK_DEPTHS
    check_cap: float | None = None
    #: The depths of a found chain along the derivative order.
    check_order_depths: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7)
    #: The explicit depths of an attribution run on this target (None: the chain's own schedule), and along the
    #: derivative order.
    attribution_depths: tuple[int, ...] | None = PEER_CHECK_DEPTHS
    attribution_order_depths: tuple[int, ...] = ORDER_SEARCH_DEPTHS

    def evaluation_cost(self, mode: str) -> float:
        """:attr:`cost`, else a peer's in ``mode``: a traced evaluation 0.3 s (no eager calls), another 0.8 s."""
        if self.cost is not None:
            return self.cost
        return 0.3 if mode == "traced" else 0.8


@dataclass(frozen=True)
class BackendInfo:
    """One backend's declarations for one mode (see :class:`adprof.backends.base.Backend`, whose class attributes
    of the same names these are, per mode)."""

    #: The phases whose cost is classified and watched by the depth schedule.
    cost_phases: tuple[str, ...] = ()
    #: What each phase does, in words (the cause names the growing phase so); a phase absent here: its name.
    phase_names: Mapping[str, str] = field(default_factory=dict)
    #: The remedies of a time pathology in this mode (empty: the generic ones, from what decided).
    remedies: tuple[str, ...] = ()
    #: A clause the cause of a time pathology ends with (what the engine does with the growing program).
    cause_tail: str = ""
    #: Lower-bound metric -> the clause the cause ends with when it decided (the mechanism it shows).
    bound_tails: Mapping[str, str] = field(default_factory=dict)
    #: Memory: the remedy that saves fewer residuals per step (the engine's checkpoint), "" when none is declared.
    checkpoint_remedy: str = ""
    #: Memory: what holds the bytes a call leaves behind, in words ("" : the generic sentence).
    leak_holder: str = ""
    #: Memory: the remedies of a per-call leak, first (the generic ones follow).
    leak_remedies: tuple[str, ...] = ()
    #: The engine counters (``Point.counters`` keys) whose sum decides, before any metric or time. None: whatever
    #: the points report (:data:`adprof.model.COUNTER_KEYS` where present, else all their keys); empty: counters
    #: are shown but never decide.
    deciding_counters: tuple[str, ...] | None = None
    #: Whether the engine compares structural keys (a predicted exponential base from the recording applies to it).
    structural_keys: bool = False
    #: Ops of the generator language (:mod:`adprof.hunt.gen`) this backend lacks: never sent there.
    unsupported_ops: tuple[str, ...] = ()
    #: Whether the chain's own gradient can be nested here (``xp.grad``: chains along the ``order`` axis).
    nests_grad: bool = True
    #: The profile that names this engine in tables instead of the backend (``v08`` for ``engine/v08``).
    named_by_profile: bool = False
    #: How ``adprof hunt`` searches, checks and attributes a generator here.
    hunt: HuntPlan = field(default_factory=HuntPlan)
    #: How this mode's compile specializes small shapes, in words ("" : it does not): where a series' program is
    #: the same at every depth, its exact counts are read from the depth they settle on (:mod:`adprof.analysis.settle`).
    specializes_shapes: str = ""

    @property
    def counters_decide(self) -> bool:
        """Whether reported counters may decide at all."""
        return self.deciding_counters is None or bool(self.deciding_counters)

    def phase_name(self, phase: str) -> str:
        """What ``phase`` does, in words (the phase name when not declared)."""
        return self.phase_names.get(phase, phase)


def generic_info(mode: str) -> BackendInfo:
    """The declarations of a backend that declares nothing of ``mode`` beyond its phases."""
    return BackendInfo(cost_phases=generic_cost_phases(mode))


_DECLARED: dict[str, Callable[[str], BackendInfo]] = {}


def register(name: str, info: Callable[[str], BackendInfo]) -> None:
    """Record backend ``name``'s declarations (``info(mode)``), for series that carry none."""
    _DECLARED[name] = info


def declared_info(backend: str, mode: str) -> BackendInfo:
    """The declarations of ``backend`` in ``mode`` as registered (:func:`register`), else :func:`generic_info`."""
    info = _DECLARED.get(backend)
    return info(mode) if info is not None else generic_info(mode)


# --------------------------------------------------------------------------- remedies shared with the built-ins

STAGING = (
    "staging: cut the chain into short stages (one transform/backward per stage) and chain the "
    "cotangents by hand, so no single transform or backward sees the whole depth"
)
XLA_SCAN = (
    "write the repeated layers as `jax.lax.scan` (or `lax.fori_loop`) over stacked parameters instead of an "
    "unrolled Python loop: XLA then compiles one layer body, not depth copies"
)
CACHED_COMPILE = (
    "compile once and reuse: keep the jitted function (and its input shapes) stable so later calls hit the "
    "compilation cache, or enable JAX's persistent compilation cache"
)
REGIONAL_COMPILE = (
    "regional compilation: compile the repeated block, not the whole unrolled function "
    "(`torch.compile` on the layer or cell, or `torch.compiler.nested_compile_region`), so one block is "
    "traced, fused and compiled once and reused"
)
FEWER_UNROLLED = (
    "unroll fewer steps per compiled graph: compile a few steps and loop over them in Python (the compiled "
    "graph is cached and reused), or mark the loop count dynamic"
)
TORCH_SCAN = (
    "keep the loop rolled: `torch._higher_order_ops.scan` (prototype) gives the compiler one step body "
    "instead of depth copies"
)
JAX_REMAT = (
    "residuals per step: wrap the layer (or the `lax.scan` body) in `jax.checkpoint` (`jax.remat`, with a "
    "`policy` such as `jax.checkpoint_policies.dots_saveable`) so the backward recomputes it instead of saving its "
    "residuals; `jax.ad_checkpoint.print_saved_residuals` lists what is saved"
)
TORCH_CHECKPOINT = (
    "residuals per step: `torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)` on the repeated block "
    "(or `checkpoint_sequential` over the layers) saves only the block's inputs and recomputes the rest in the "
    "backward; `torch.autograd.graph.saved_tensors_hooks` shows (or offloads) what is saved"
)
ENGINE_CHECKPOINT = (
    "residuals per step: checkpoint the chain into segments (the engine's checkpoint chain) so only each "
    "segment's input is kept and the backward recomputes inside it: about sqrt(d) residuals instead of d"
)
TORCH_AUTOGRAD_GRAD = (
    "reference cycle: use `torch.autograd.grad(loss, x, create_graph=True)` instead of "
    "`loss.backward(create_graph=True)`: the gradient is returned, not stored in `x.grad`, so no cycle "
    "x -> x.grad -> grad_fn -> x keeps the graph alive (pytorch/pytorch#7343)"
)
RESET_GRAD = (
    "reset the gradients to None after each step (`x.grad = None`, `optimizer.zero_grad(set_to_none=True)`), so a "
    "`.grad` that holds a graph (create_graph=True) is released with it"
)
DROP_TAPES = (
    "tapes kept after backward: do not keep the outputs, losses or VJP functions of earlier calls (append "
    "`loss.item()` or a detached copy, not the tensor; no `retain_graph=True` unless a second backward needs it), "
    "and clear caches that key on each call"
)

__all__ = [
    "DROP_TAPES",
    "RESET_GRAD",
    "CACHED_COMPILE",
    "ENGINE_CHECKPOINT",
    "FEWER_UNROLLED",
    "JAX_REMAT",
    "REGIONAL_COMPILE",
    "STAGING",
    "TORCH_AUTOGRAD_GRAD",
    "TORCH_CHECKPOINT",
    "TORCH_SCAN",
    "WHOLE_COMPILE",
    "XLA_SCAN",
    "BackendInfo",
    "HuntPlan",
    "declared_info",
    "generic_cost_phases",
    "generic_info",
    "register",
]
