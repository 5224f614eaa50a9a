"""``--backend torch --mode compile``: ``torch.compile`` of the chain with its gradient, phase by phase.

A repeat compiles a fresh function ``f(x) = chain(xp, x, depth)`` and runs its first forward and first
backward (Dynamo traces the forward, AOTAutograd builds and partitions the joint graph, Inductor compiles the
forward at the first call and the backward at the first ``backward()``). Nothing cached can hide a compile:
``torch._dynamo.reset()`` before each repeat, Inductor's FX graph cache and AOTAutograd's cache off, and a
fresh, then deleted, Inductor cache directory per repeat (so its C++ compile cache is empty).
Inductor compiles in this process (``compile_threads = 1``: its C++ compile is attributed, and no compile
worker outlives adprof). It needs a C++ compiler: gcc.

Phases (seconds, attributed from ``torch._dynamo.utils.compile_times()``, fw and bw summed):

* ``dynamo``: Dynamo's bytecode trace and guard building;
* ``aot_autograd``: AOTAutograd's metadata pass, joint graph trace, joint-graph passes and partition;
* ``inductor_codegen``: Inductor's work (``compile_fx_inner``: lowering, fusion, code generation, loading)
  minus its C++ compile;
* ``inductor_compile``: the C++ compiler (``compile_file``);
* ``run``: the compiled forward + backward afterwards (steady, not classified).

``extra["compile_seconds"]`` is the wall time of the first forward + first backward (what a user waits).
Metrics (deterministic): ``dynamo``: ``graph_nodes``, ``graph_ops``, ``guards`` (``CompilationMetrics`` of the
forward frames), ``calls_captured``, ``unique_graphs``, ``graph_breaks`` (``torch._dynamo.utils.counters``);
``inductor_codegen``: ``inductor_loop_body_ops`` (ops traced into Inductor's kernel loop bodies: every
pointwise producer inlined into a consumer is traced again, so this counts the inlining that
pytorch#148073 and #146663 blow up) and ``inductor_ir_nodes`` (``CompilationMetrics.ir_count``);
``compile`` (the whole, no time of its own): ``python_calls`` of one more compile under cProfile (Dynamo,
AOTAutograd and Inductor are Python), in the last timed repeat's cache directory: Dynamo, AOTAutograd and
Inductor run again from scratch, while the C++ it generates (the same source) is loaded, not compiled again
(gcc is not Python work: it is not counted either way, and skipping it halves the cost of a point). The
first compile of a chain in a process does one-time work (about a third more calls): an untimed compile at
depth 1 pays it first. The count is the same within a process, and varies between processes by a few calls
in 10^5 (Sinkhorn) to 0.4% (the GRU): Inductor's choices follow set orders of hashed strings.

Instruction counts (``--metric instructions``, counted in a valgrind'd worker by toggling around each
phase) would see gcc too: the hook is the two timed calls of :func:`_measure` (first forward, first
backward), which bracket the whole compile.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import sys
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from adprof.backends.base import (
    PhaseCallback,
    count_python_calls,
    more_repeats,
    no_phase,
    record_metric,
    record_samples,
    run_queue_wait,
    timed,
)
from adprof.backends.builtin import TORCH_COMPILE_PHASES
from adprof.backends.peer_common import check_finite, check_output, failure, first_time
from adprof.chain import Chain
from adprof.model import Point, wait_key
from adprof.util import procs

#: ``compile_times()`` keys summed into each phase (``inductor_codegen`` = ``compile_fx_inner`` minus the C++).
DYNAMO_KEYS = ("bytecode_tracing", "build_guards")
AOT_KEYS = (
    "aot_collect_metadata",
    "aot_trace_joint_graph",
    "_recursive_joint_graph_passes",
    "min_cut_rematerialization_partition",
)
INDUCTOR_KEY = "compile_fx_inner"
CPP_KEY = "compile_file"

_loop_body_ops: collections.Counter[str] = collections.Counter()
_configured: list[bool] = []


def _count_loop_bodies() -> None:
    """Count the ops Inductor traces into its loop bodies (``LoopBody._init_with_tracing``), if it has them."""
    try:
        from torch._inductor import loop_body
    except ImportError:
        return
    original = getattr(loop_body.LoopBody, "_init_with_tracing", None)
    if original is None or getattr(original, "__adprof_counting__", False):
        return

    def counting(self: Any, fn: Any, args: Any) -> Any:
        out = original(self, fn, args)
        _loop_body_ops["ops"] += sum(getattr(self, "op_counts", {}).values())
        _loop_body_ops["bodies"] += 1
        return out

    counting.__adprof_counting__ = True  # type: ignore[attr-defined]
    loop_body.LoopBody._init_with_tracing = counting


#: The calling thread's CPU seconds and run-queue wait inside Inductor's ``_compile_fx_inner`` (lowering, fusion, code
#: generation, and the wait for gcc, which spends no CPU of this thread), summed over the forward's and the
#: backward's compile since the last reset.
_inner_cpu: dict[str, float | None] = {"cpu": 0.0, "wait": 0.0}


def _time_inner_compiles() -> None:
    """Time Inductor's ``_compile_fx_inner`` on the calling thread's CPU clock (``compile_threads = 1``: its work runs
    on this thread), with the thread's run-queue wait (issue #35: a loaded machine preempts the codegen, whose wall
    time then grows with the load and not with the work). ``compile_fx_inner`` looks the function up at each call."""
    try:
        from torch._inductor import compile_fx
    except ImportError:
        return
    original = getattr(compile_fx, "_compile_fx_inner", None)
    if original is None or getattr(original, "__adprof_cpu__", False):
        return

    @functools.wraps(original)
    def on_cpu_clock(*args: Any, **kwargs: Any) -> Any:
        w0, c0 = run_queue_wait(), time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            c1, w1 = time.thread_time(), run_queue_wait()
            _inner_cpu["cpu"] = (_inner_cpu["cpu"] or 0.0) + (c1 - c0)
            waited = _inner_cpu["wait"]
            _inner_cpu["wait"] = None if waited is None or w0 is None or w1 is None else waited + max(0.0, w1 - w0)

    on_cpu_clock.__adprof_cpu__ = True  # type: ignore[attr-defined]
    compile_fx._compile_fx_inner = on_cpu_clock


def configure() -> None:
    """Once per process: caches off, Inductor compiling in this process, loop-body counting, quiet warnings."""
    if _configured:
        return
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    inductor_config.fx_graph_cache = False
    functorch_config.enable_autograd_cache = False
    inductor_config.compile_threads = 1
    warnings.filterwarnings("ignore", module=r"torch\._dynamo.*")
    warnings.filterwarnings("ignore", module=r"torch\._inductor.*")
    _count_loop_bodies()
    _time_inner_compiles()
    _configured.append(True)


@contextlib.contextmanager
def fresh_compile(directory: str | None = None, keep: bool = False) -> Iterator[str]:
    """A compile that no cache can hit: Dynamo reset, counters cleared, a fresh Inductor cache directory
    (or ``directory``: its C++ is reused); yields the directory, deleted at the end unless ``keep``."""
    from torch._dynamo import utils as dynamo_utils
    from torch._inductor.runtime.cache_dir_utils import temporary_cache_dir

    directory = directory or procs.temp_dir("adprof-inductor-")  # removed even if the worker is killed
    try:
        torch._dynamo.reset()
        dynamo_utils.counters.clear()
        getattr(dynamo_utils, "_compilation_metrics", []).clear()
        _loop_body_ops.clear()
        with temporary_cache_dir(directory):
            yield directory
    finally:
        torch._dynamo.reset()
        if not keep:
            procs.remove_dir(directory)


#: The forward's own compile (``torch.compile(f)`` on an input that needs no gradient: Dynamo and Inductor of the
#: inference graph only), once per depth in a worker: what the gradient's compile is read against (issue #34); not a
#: cost phase.
FORWARD_COMPILE = "forward_compile"


def _forward_compile(chain: Chain, depth: int, a: Any, bind: Callable[[Chain, int], Callable[[Any], Any]]) -> float:
    """Seconds of the forward's own compile at ``depth`` in a fresh cache: its compile phases summed as the
    gradient's are (the wall time of its first call where torch reports none)."""
    with fresh_compile():
        fn = torch.compile(bind(chain, depth))
        with torch.no_grad():
            wall, _ = timed(lambda: fn(torch.tensor(a)))
        attributed = sum(compile_phases(_compile_times()).values())
    return attributed if attributed > 0 else wall


def compile_phases(times: Mapping[str, float]) -> dict[str, float]:
    """Seconds per phase from aggregated ``compile_times`` (key -> seconds)."""
    inductor = float(times.get(INDUCTOR_KEY, 0.0))
    cpp = float(times.get(CPP_KEY, 0.0))
    return {
        "dynamo": sum(float(times.get(k, 0.0)) for k in DYNAMO_KEYS),
        "aot_autograd": sum(float(times.get(k, 0.0)) for k in AOT_KEYS),
        "inductor_codegen": max(0.0, inductor - cpp),
        "inductor_compile": cpp,
    }


def _compile_times() -> dict[str, float]:
    from torch._dynamo.utils import compile_times

    keys, values = compile_times(repr="csv", aggregate=True)
    return {k: float(v) for k, v in zip(keys, values, strict=True)}


def compile_metrics() -> dict[str, dict[str, float]]:
    """Deterministic counts of the last compile, per phase (see the module docstring)."""
    from torch._dynamo import utils as dynamo_utils

    frames = list(getattr(dynamo_utils, "_compilation_metrics", []))
    forward = [m for m in frames if getattr(m, "graph_node_count", None) is not None]
    stats = dynamo_utils.counters["stats"]
    dynamo = {
        "graph_nodes": float(sum(m.graph_node_count or 0 for m in forward)),
        "graph_ops": float(sum(m.graph_op_count or 0 for m in forward)),
        "guards": float(sum(m.guard_count or 0 for m in forward)),
        "calls_captured": float(stats.get("calls_captured", 0)),
        "unique_graphs": float(stats.get("unique_graphs", 0)),
        "graph_breaks": float(sum(dynamo_utils.counters["graph_break"].values())),
    }
    inductor = {"inductor_ir_nodes": float(sum(getattr(m, "ir_count", None) or 0 for m in frames))}
    if _loop_body_ops:
        inductor["inductor_loop_body_ops"] = float(_loop_body_ops["ops"])
    return {"dynamo": dynamo, "inductor_codegen": inductor}


@contextlib.contextmanager
def chain_module(chain: Chain) -> Iterator[None]:
    """The chain's module importable by name while it compiles: adprof loads chain files in isolation (the
    module is not left in ``sys.modules``), and Dynamo imports the module of a function whose globals it guards
    (``No module named '_adprof_chains_...'``). A stand-in module holding the same globals is registered."""
    fn = inspect.unwrap(chain.fn)
    name = getattr(fn, "__module__", None)
    if not name or name in sys.modules or not hasattr(fn, "__globals__"):
        yield
        return
    stand_in = types.ModuleType(name)
    stand_in.__dict__.update(fn.__globals__)
    sys.modules[name] = stand_in
    try:
        yield
    finally:
        sys.modules.pop(name, None)


_warm: list[bool] = []


def warm_up(xp: Any, on_phase: PhaseCallback) -> None:
    """One tiny compiled gradient per process (untimed): Inductor's imports, its ISA probe and the first gcc
    run cost tens of seconds once."""
    if _warm:
        return
    on_phase("warm-up", None)
    with fresh_compile():
        x = torch.ones(3, dtype=torch.float64, requires_grad=True)
        torch.compile(lambda x: xp.sum(xp.sin(x) * x))(x).backward()
    _warm.append(True)


def measure_compile(
    chain: Chain,
    depth: int,
    *,
    xp: Any,
    bind: Callable[[Chain, int], Callable[[Any], Any]],
    on_phase: PhaseCallback = no_phase,
    repeats: int | None = None,
) -> Point:
    """torch.compile of ``chain`` at ``depth`` with its gradient: the phases of each repeat's first forward and
    backward (a fresh compile each), then the steady compiled run. The repeat policy sees the compile wall time
    (one repeat once it exceeds half a second, as for every phase)."""
    configure()
    with chain_module(chain):
        return _measure(chain, depth, xp=xp, bind=bind, on_phase=on_phase, repeats=repeats)


def _measure(
    chain: Chain,
    depth: int,
    *,
    xp: Any,
    bind: Callable[[Chain, int], Callable[[Any], Any]],
    on_phase: PhaseCallback,
    repeats: int | None,
) -> Point:
    pt = Point(depth=depth)
    a = chain.make_input()
    phase = "compile_forward"
    samples: dict[str, list[float]] = {ph: [] for ph in TORCH_COMPILE_PHASES}
    walls: list[float] = []
    codegen_cpu: list[float | None] = []  # the calling thread's CPU seconds in Inductor's compile, per repeat
    codegen_wait: list[float | None] = []  # ... and its run-queue wait
    last_dir = ""
    try:
        warm_up(xp, on_phase)
        if first_time(chain, "compile"):  # the chain's one-time compile work (first use of its ops), untimed
            on_phase("warm-up", None)
            with fresh_compile():
                x0 = torch.tensor(a, requires_grad=True)
                torch.compile(bind(chain, 1))(x0).backward()
        metrics: dict[str, dict[str, float]] = {}
        fn: Any = None
        x: Any = None
        while more_repeats(walls, repeats):
            fn = x = None
            if last_dir:
                procs.remove_dir(last_dir)
            with fresh_compile(keep=True) as last_dir:
                x = torch.tensor(a, requires_grad=True)
                fn = torch.compile(bind(chain, depth))
                _inner_cpu.update(cpu=0.0, wait=0.0)
                phase = "compile_forward"
                on_phase(phase, None)
                t_forward, y = timed(lambda fn=fn, x=x: fn(x))
                if not isinstance(y, torch.Tensor):
                    check_output((), False, depth, type(y).__name__)
                check_output(tuple(y.shape), y.dtype.is_floating_point, depth)
                value = float(y.detach())
                check_finite(value, depth)
                phase = "compile_backward"
                on_phase(phase, None)
                t_backward, _ = timed(y.backward)
                attributed = compile_phases(_compile_times())
                metrics = compile_metrics()
                pt.extra["value"] = value
                pt.extra["finite_gradient"] = bool(torch.isfinite(x.grad).all())
                walls.append(t_forward + t_backward)
                for ph, t in attributed.items():
                    samples[ph].append(t)
                codegen_cpu.append(_inner_cpu["cpu"])
                codegen_wait.append(_inner_cpu["wait"])
                del y
                phase = "run"
                if not more_repeats(walls, repeats):  # the last repeat's compiled function runs steady
                    _steady_run(pt, fn, a, on_phase, repeats)
        fn = x = None
        if first_time(chain, f"{FORWARD_COMPILE} {depth}"):  # once per depth in this worker (later passes: not)
            phase = FORWARD_COMPILE
            on_phase(phase, None)
            record_samples(pt, phase, [_forward_compile(chain, depth, a, bind)])
        for ph, values in samples.items():
            record_samples(pt, ph, values)
        _record_codegen_cpu(pt, codegen_cpu, codegen_wait)
        for ph, values in metrics.items():
            for name, value in values.items():
                record_metric(pt, ph, name, value)
        phase = "compile_calls"
        on_phase(phase, None)
        record_metric(pt, "compile", "python_calls", _compile_calls(chain, depth, a, bind, last_dir))
        pt.extra["compile_seconds"] = min(walls)
        pt.extra["compile_walls"] = list(walls)
        pt.extra["transform_includes"] = "torch.compile(f): Dynamo, AOTAutograd, Inductor (first forward + backward)"
    except (Exception, RecursionError, MemoryError) as exc:
        raise failure(exc, chain, depth, phase, pt) from None
    finally:
        if last_dir:
            procs.remove_dir(last_dir)
    return pt


def _record_codegen_cpu(pt: Point, cpus: list[float | None], waits: list[float | None]) -> None:
    """``inductor_codegen``'s CPU seconds beside its walls (``cpu_samples``: the calling thread's CPU time in Inductor's
    compile; the C++ compile runs in gcc's own process, not on it), and the thread's run-queue waits
    (``extra[wait_key(phase)]``), one per repeat; nothing where a repeat has none."""
    ph = "inductor_codegen"
    if not cpus or len(cpus) != len(pt.samples.get(ph, ())) or any(c is None for c in cpus):
        return
    pt.cpu_samples[ph] = [float(c) for c in cpus if c is not None]
    if all(w is not None for w in waits) and len(waits) == len(cpus):
        pt.extra[wait_key(ph)] = [float(w) for w in waits if w is not None]


def _compile_calls(
    chain: Chain, depth: int, a: Any, bind: Callable[[Chain, int], Callable[[Any], Any]], directory: str
) -> int:
    """Python calls of one more compile (first forward + first backward) under cProfile, in ``directory`` (the
    timed repeat's: its C++ is loaded, not compiled again); the directory is deleted afterwards."""
    with fresh_compile(directory):
        x = torch.tensor(a, requires_grad=True)
        fn = torch.compile(bind(chain, depth))
        n, _ = count_python_calls(lambda: fn(x).backward())
    return n


def _steady_run(pt: Point, fn: Any, a: Any, on_phase: PhaseCallback, repeats: int | None) -> None:
    """Phase ``run``: the compiled forward + backward on fresh leaves (guards hold: no recompile)."""
    from adprof.backends.base import measure_phase

    def step() -> Any:
        x = torch.tensor(a, requires_grad=True)
        fn(x).backward()
        return x.grad

    step()
    measure_phase(pt, "run", step, on_phase, repeats=repeats)


__all__ = ["compile_metrics", "compile_phases", "configure", "fresh_compile", "measure_compile", "warm_up"]
