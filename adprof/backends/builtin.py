"""The built-in backends' declarations (see :class:`adprof.backends.base.Backend`).

This module is light: it imports no engine. Each class's :meth:`measure_point` imports its
implementation module (``adprof.backends.<name>_backend``) in the worker, at the first point.
The notes say why a reported metric may not decide; the figures are measured on the sin chain
(``probes/chains.py::sin``) on this project's 2-core machines.
"""

from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType
from typing import Any, ClassVar

from adprof.backend_info import (
    CACHED_COMPILE,
    DROP_TAPES,
    ENGINE_CHECKPOINT,
    FEWER_UNROLLED,
    JAX_REMAT,
    REGIONAL_COMPILE,
    RESET_GRAD,
    STAGING,
    TORCH_AUTOGRAD_GRAD,
    TORCH_CHECKPOINT,
    TORCH_SCAN,
    WHOLE_COMPILE,
    XLA_SCAN,
    HuntPlan,
)
from adprof.backends.base import DEFAULT_CALLS, Backend, extra_install_hint, no_phase
from adprof.backends.memory import NOT_EAGER
from adprof.chain import Chain
from adprof.model import COUNTER_KEYS, Point

_EAGER_PHASES = ("forward0", "backward0", "forward", "backward")
_TRACED_PHASES = ("record", "transform", "drop")  # make_jaxpr(grad), make_fx(grad)
_PROGRAM_SIZE = (
    "program size, not the work of producing it: a transform can take exponential time for a linear program "
    "(jax#8184); shown beside the deciding metric"
)


class ModuleBackend(Backend):
    """A built-in backend whose measuring code is the module :attr:`implementation` (imported lazily)."""

    implementation: ClassVar[str] = ""

    def module(self) -> ModuleType:
        """The implementation module (imports the engine; later calls are a ``sys.modules`` lookup)."""
        return importlib.import_module(self.implementation)

    def measure_point(self, chain: Chain, mode: str, depth: int, profile: str | None = None, **options: Any) -> Point:
        """:meth:`Backend.measure_point` by the implementation module (``options``: the keyword options there)."""
        impl = self.module()
        self.check_arguments(mode, profile)
        self.prepare_process()
        kwargs: dict[str, Any] = {
            "calls": options.get("calls", DEFAULT_CALLS),
            "on_phase": options.get("on_phase", no_phase),
            "counter_budget": options.get("counter_budget"),
        }
        repeats, metric = options.get("repeats"), options.get("metric", "time")
        if repeats is not None:
            kwargs["repeats"] = repeats
        if metric != "time":
            if mode not in self.instruction_modes:
                raise self.PointFailure("metric", f"the {self.name} backend cannot count {metric} in {mode} mode")
            kwargs["metric"] = metric
        if options.get("memory") and mode in self.memory_figures:
            kwargs["memory"] = True
        return impl.measure_point(chain, mode, depth, profile, **kwargs)


#: Hunt on a backend that compiles at every point (seconds each): fewer, doubling depths.
_COMPILING_HUNT = HuntPlan(
    search_depths=(1, 2, 4, 8, 16),
    order_depths=(1, 2, 4),
    point_cap=1.0,
    calls=3,
    cost=2.0,
    check_depths=(1, 2, 4, 8, 16, 32),
    attribution_depths=(1, 2, 4, 8, 16),
)


class EngineBackend(ModuleBackend):
    """adprof's instrumented reference engine: exact counters per phase decide."""

    name = "engine"
    implementation = "adprof.backends.engine"
    profiles = ("v08", "fixed")
    modes = ("traced", "eager")
    phases = {"traced": ("record", "transform", "compile", "run", "drop"), "eager": _EAGER_PHASES}
    metrics = {"traced": (), "eager": ()}
    deciding_metrics = {"traced": (), "eager": ()}  # its engine counters (Point.counters) decide
    metric_notes = {}
    statistic = "single run per phase (run and warm eager calls: lower quartile); the engine's counters decide"
    distributions = ("numpy",)  # adprof's own engine, on numpy (every series records adprof's version too)
    depths = None
    memory_figures = {"traced": ("saved_bytes",), "eager": ("saved_bytes", "retained")}
    memory_notes = {"traced": {"retained": NOT_EAGER}}
    memory_by_default = True
    deciding_counters = COUNTER_KEYS
    structural_keys = True
    named_by_profile = True
    #: no ``xp.grad`` in the engine's namespace
    no_nested_grad = ("traced", "eager")
    checkpoint_remedy = ENGINE_CHECKPOINT
    #: counted points cost hundredths of a second: many layer depths; a found chain keeps its adaptive schedule
    hunt_plans = dict.fromkeys(
        modes,
        HuntPlan(
            search_depths=(1, 2, 3, 4, 5, 6, 8, 11, 16, 22, 32),
            point_cap=2.0,
            timeout=20.0,
            calls=3,
            cost=0.05,
            check_depths=None,
            attribution_depths=None,
        ),
    )

    def check_arguments(self, mode: str, profile: str | None) -> None:
        super().check_arguments(mode, profile or "fixed")

    def prepare_process(self) -> None:
        return None  # the engine collects before every phase itself


class JaxBackend(ModuleBackend):
    """JAX (``jax.numpy``, float64, CPU, one thread)."""

    name = "jax"
    implementation = "adprof.backends.jax_backend"
    modes = ("traced", "compile", "eager")
    phases = {
        "traced": _TRACED_PHASES,
        "compile": ("transform", "lower", "compile", "run"),
        "eager": _EAGER_PHASES,
    }
    metrics = {
        "traced": ("python_calls", "jaxpr_eqns"),
        "compile": ("python_calls", "jaxpr_eqns", "hlo_instructions"),
        "eager": ("python_calls",),
    }
    deciding_metrics = {"traced": ("python_calls",), "compile": (), "eager": ("python_calls",)}
    metric_notes = {
        "traced": {"jaxpr_eqns": _PROGRAM_SIZE},
        "compile": {
            "python_calls": "blind to XLA's C++ compile: counted for transform and lower only; time decides",
            "jaxpr_eqns": _PROGRAM_SIZE,
            "hlo_instructions": (
                "size of the optimized program, not the compiler's work: XLA compile of the sin chain grows "
                "about d^1.7 while its HLO grows linearly (3 instructions per layer)"
            ),
        },
        "eager": {},
    }
    requires = ("jax", "jaxlib")
    distributions = ("jax", "jaxlib", "numpy")
    install_hint = extra_install_hint("jax")
    memory_figures = {"traced": ("saved_bytes",), "compile": ("saved_bytes",), "eager": ("saved_bytes", "retained")}
    memory_notes = {"traced": {"retained": NOT_EAGER}, "compile": {"retained": NOT_EAGER}}
    memory_by_default = True
    #: XLA's compile (a C++ compiler, on a thread of its own) counted under callgrind
    instruction_modes = ("compile",)
    phase_names = {
        "compile": {
            "transform": "tracing the gradient to a jaxpr",
            "lower": "lowering the jaxpr to StableHLO",
            "compile": "XLA's backend compile",
        }
    }
    remedies = {"compile": (XLA_SCAN, STAGING, CACHED_COMPILE)}
    cause_tails = {"compile": ": XLA compiles the unrolled chain as one program whose compile cost grows with its size"}
    checkpoint_remedy = JAX_REMAT
    #: an XLA compile per point; along the derivative order each order compiles a deeper nest
    hunt_plans = {
        "compile": dataclasses.replace(
            _COMPILING_HUNT, check_order_depths=(1, 2, 3, 4, 5), attribution_order_depths=(1, 2, 3, 4, 5)
        )
    }


#: torch.compile's phases (``--backend torch --mode compile``): Dynamo's trace, AOTAutograd (joint graph,
#: partition), Inductor's lowering/fusion/codegen and its C++ compile.
TORCH_COMPILE_PHASES = ("dynamo", "aot_autograd", "inductor_codegen", "inductor_compile")

_TORCH_COMPILE_METRICS = (
    "python_calls",
    "graph_nodes",
    "graph_ops",
    "guards",
    "calls_captured",
    "unique_graphs",
    "graph_breaks",
    "inductor_ir_nodes",
    "inductor_loop_body_ops",
)
_TORCH_COMPILE_NOTES = {
    "python_calls": (
        "calls of the whole compile (Dynamo, AOTAutograd and Inductor are Python), blind to the C++ compiler "
        "(gcc: inductor_compile's time, linear in the generated code) and to work inside a call"
    ),
    "graph_nodes": (
        "size of Dynamo's graph, a lower bound on Dynamo's and AOTAutograd's work: it decides when it grows "
        "superlinearly, and is blind to what Inductor does with each node"
    ),
    "graph_ops": "ops of Dynamo's graph: read as graph_nodes, shown beside",
    "guards": "guards Dynamo builds for the frame: constant without graph breaks",
    "calls_captured": "ops Dynamo captured: linear in an unrolled chain, not the compile's work",
    "unique_graphs": "graphs compiled: 1 without graph breaks, more with them",
    "graph_breaks": "graph breaks (each one restarts Dynamo's trace, pytorch#124437)",
    "inductor_ir_nodes": "size of Inductor's lowered graph, not the work of fusing and generating code for it",
    "inductor_loop_body_ops": (
        "ops traced into Inductor's kernel loop bodies (a pointwise producer inlined into a consumer is traced "
        "again): a lower bound on Inductor's codegen, blind to fusion's pair checks (pytorch#154652) and to the "
        "C++ compile; it decides when it grows superlinearly, else time decides"
    ),
}


class TorchBackend(ModuleBackend):
    """PyTorch (``array_api_compat.torch``, float64, CPU, one thread)."""

    name = "torch"
    implementation = "adprof.backends.torch_backend"
    modes = ("traced", "eager", "compile")
    phases = {
        "traced": _TRACED_PHASES,
        "eager": _EAGER_PHASES,
        "compile": (*TORCH_COMPILE_PHASES, "run"),
    }
    metrics = {
        "traced": ("python_calls",),
        "eager": ("python_calls", "autograd_nodes"),
        "compile": _TORCH_COMPILE_METRICS,
    }
    deciding_metrics = {"traced": ("python_calls",), "eager": (), "compile": ("python_calls",)}
    lower_bound_metrics = {
        "eager": ("autograd_nodes",),
        "compile": ("inductor_loop_body_ops", "graph_nodes"),
    }
    metric_notes = {
        "traced": {},
        "eager": {
            "python_calls": (
                "sees the forward's op calls, but backward() runs in the C++ autograd engine (a constant handful "
                "of Python calls at any depth): time decides"
            ),
            "autograd_nodes": (
                "size of the autograd graph: a lower bound on the backward's work (every node runs once), blind "
                "to the C++ engine's bookkeeping; it decides when it grows superlinearly, else time decides"
            ),
        },
        "compile": _TORCH_COMPILE_NOTES,
    }
    #: Unit steps first (an inlining blowup shows there), then doublings: every point costs seconds (gcc).
    mode_depths = {"compile": (1, 2, 3, 4, 6, 8, 16, 32, 64)}
    #: One compile (forward and backward, two gcc runs) takes 3-6 s on these machines, the first one of a process
    #: ~40 s: a 1.5 s cap would stop every series at its first depth.
    caps = {"compile": 60.0}
    #: A size-axis chain's compile series measured in 40-60 s on a quiet machine (two compiles per depth, gcc)
    series_budgets = {"compile": 100.0}
    requires = ("torch", "array_api_compat")
    distributions = ("torch", "array_api_compat", "numpy")
    install_hint = extra_install_hint("torch")
    #: traced: the forward values the backward reads in the joint graph of make_fx(grad_and_value(f)) (fxmem, #35)
    memory_figures = {"traced": ("saved_bytes",), "eager": ("saved_bytes", "retained")}
    memory_notes = {
        "traced": {"retained": NOT_EAGER},
        "compile": {
            "saved_bytes": (
                "the activations AOTAutograd's partitioner saves live inside the compiled function, where no hook "
                "sees them (eager mode counts what autograd saves)"
            ),
            "retained": NOT_EAGER,
        },
    }
    memory_by_default = True
    #: the C++ autograd engine's backward counted under callgrind
    instruction_modes = ("eager",)
    cost_phases = {"compile": (*TORCH_COMPILE_PHASES, WHOLE_COMPILE)}
    phase_names = {
        "compile": {
            "dynamo": "Dynamo's trace (bytecode to FX graph, guards)",
            "aot_autograd": "AOTAutograd (joint forward-backward graph, partition)",
            "inductor_codegen": "Inductor's lowering, fusion and code generation",
            "inductor_compile": "Inductor's C++ compile (gcc) and module load",
        }
    }
    remedies = {"compile": (REGIONAL_COMPILE, FEWER_UNROLLED, TORCH_SCAN)}
    #: each point is a fresh static compile; its kernels depend on the concrete sizes below Inductor's thresholds
    specializes_shapes = {
        "compile": (
            "torch.compile specializes small shapes: Inductor unrolls a reduction of fewer than 8 elements "
            "(unroll_reductions_threshold) into pointwise code, turns a size-1 one into a pointwise op and picks its "
            "C++ vectorization by size"
        )
    }
    bound_tails = {
        "compile": {
            "inductor_loop_body_ops": (
                ": the ops Inductor traces into its kernels' loop bodies grow as fast while Dynamo's graph grows "
                "linearly: pointwise producers are inlined into each consumer, a tree of the shared values"
            )
        }
    }
    checkpoint_remedy = TORCH_CHECKPOINT
    leak_holder = (
        "a reference cycle through the gradient (`backward(create_graph=True)` stores in `x.grad` a tensor "
        "whose `grad_fn` refers back to `x`), or a tape kept after backward"
    )
    leak_remedies = (TORCH_AUTOGRAD_GRAD, RESET_GRAD, DROP_TAPES)
    #: functorch's grad (traced) and AOTAutograd (compile) refuse a nested ``torch.autograd.grad``
    no_nested_grad = ("traced", "compile")
    hunt_plans = {
        # two gcc runs per point: tens of seconds
        "compile": HuntPlan(
            search_depths=(1, 2, 3, 4),
            order_depths=(1, 2, 3, 4),
            point_cap=40.0,
            timeout=240.0,
            calls=3,
            cost=20.0,
            check_depths=(1, 2, 3, 4, 5),
            check_cap=120.0,
            attribution_depths=(1, 2, 3, 4),
        ),
        # functorch's trace: seconds at a dozen layers
        "traced": HuntPlan(
            search_depths=(1, 2, 3, 4, 6, 8, 12),
            order_depths=(1, 2, 3, 4, 6, 8, 12),
            calls=3,
            cost=2.5,
            attribution_depths=(1, 2, 3, 4, 6, 8, 12, 16),
            attribution_order_depths=(1, 2, 3, 4, 5),
        ),
    }


class AutogradBackend(ModuleBackend):
    """HIPS autograd (``autograd.numpy``: numpy with a tape, pure Python, iterative toposort)."""

    name = "autograd"
    implementation = "adprof.backends.autograd_backend"
    modes = ("eager",)
    phases = {"eager": _EAGER_PHASES}
    metrics = {"eager": ("python_calls",)}
    deciding_metrics = {"eager": ("python_calls",)}
    metric_notes = {"eager": {}}
    requires = ("autograd",)
    distributions = ("autograd", "numpy")
    install_hint = extra_install_hint("autograd")
    memory_figures = {"eager": ("saved_bytes", "retained")}
    memory_by_default = True
    #: its Python call counts decide by default; counting is the cheap check of the instruction mechanism
    instruction_modes = ("eager",)
    #: autograd.numpy has no QR
    unsupported_ops = frozenset({"qr_q", "qr_r"})


class TinygradBackend(ModuleBackend):
    """tinygrad (lazy tensors scheduled into kernels; ``DEV=PYTHON``: no C compiler needed)."""

    name = "tinygrad"
    implementation = "adprof.backends.tinygrad_backend"
    modes = ("compile", "eager")
    phases = {"compile": ("transform", "lower", "compile", "run"), "eager": _EAGER_PHASES}
    metrics = {"compile": ("python_calls",), "eager": ("python_calls",)}
    deciding_metrics = {"compile": (), "eager": ()}
    metric_notes = {
        "compile": {
            "python_calls": (
                "linear in depth while the codegen time grows superlinearly: the extra work is inside calls "
                "(the linearizer's sorted() comparing nested UOp tuples), and the count varies by ~2% between "
                "runs of codegen: time decides"
            )
        },
        "eager": {
            "python_calls": (
                "call 0 does the codegen (superlinear in time, linear in calls; see compile mode), warm calls "
                "hit tinygrad's caches: time decides"
            )
        },
    }
    requires = ("tinygrad",)
    distributions = ("tinygrad", "numpy")
    install_hint = extra_install_hint("tinygrad")
    memory_notes = {
        mode: {
            "saved_bytes": (
                "tinygrad is lazy: the forward realizes no buffer, the backward is scheduled with it from the UOp "
                "graph, so nothing is saved between them that adprof could count (the peak is measured)"
            ),
            "retained": (
                "tinygrad's buffers live in its own allocator and caches (realized lazily, reused across calls): "
                "no per-call count of them is exposed"
            ),
        }
        for mode in ("compile", "eager")
    }
    memory_by_default = True
    #: its tensor namespace raises UnsupportedOpError for these, and it has no ``xp.grad``
    unsupported_ops = frozenset({"where", "svd_u", "qr_q", "qr_r", "rowsum"})
    no_nested_grad = ("compile", "eager")
    hunt_plans = dict.fromkeys(modes, _COMPILING_HUNT)  # both modes generate and compile kernels at each depth


class CmdBackend(ModuleBackend):
    """Any program, in any language, driven by ``--cmd 'PROG ARGS {depth}'`` (``cli/cmd.py``): it prints
    the JSON protocol (docs/native.md); its points are run by the series loop."""

    name = "cmd"
    distributions = ()  # a program: adprof knows nothing of what it links
    implementation = "adprof.backends.cmd"
    modes = ("traced", "eager")
    phases = {
        "traced": ("record", "transform", "lower", "compile", "run", "drop", "process"),
        "eager": (*_EAGER_PHASES, "process"),
    }
    metrics = {"traced": ("instructions",), "eager": ("instructions",)}
    # --metric instructions declares instructions deciding for that series; otherwise a command's own
    # counters decide, else time
    deciding_metrics = {"traced": (), "eager": ()}
    metric_notes = {
        mode: {"instructions": "decides when asked for (--metric instructions), else a command's counters or time"}
        for mode in ("traced", "eager")
    }
    #: What the program reports (protocol keys ``saved_bytes``, ``peak_bytes``, ``retained``: docs/native.md);
    #: reading them costs nothing.
    memory_figures = {"traced": ("saved_bytes",), "eager": ("saved_bytes", "retained")}
    memory_notes = {"traced": {"retained": NOT_EAGER}}
    memory_by_default = True


BUILTIN_BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls for cls in (EngineBackend, JaxBackend, TorchBackend, AutogradBackend, TinygradBackend, CmdBackend)
}

__all__ = [
    "BUILTIN_BACKENDS",
    "AutogradBackend",
    "CmdBackend",
    "EngineBackend",
    "JaxBackend",
    "ModuleBackend",
    "TinygradBackend",
    "TorchBackend",
]
