"""Helpers shared by the backends: failures and their one-line descriptions (all backends), and the
peers' (``jax``, ``torch``) timing, namespaces and eager loop.

Peers have no counters: their points carry times only (``Point.counters`` stays empty, so the
classifier fits time). To make a time-only point robust:

* ``Point.times`` are *process CPU seconds* (``time.process_time``). The peers run single-threaded,
  so CPU time equals wall time on an idle machine, but it does not count the slices the process
  is preempted on a loaded one (single samples such as call 0 otherwise jump by +4..6 ms, enough
  to fake a superlinear fit). Wall seconds of the same blocks are in ``extra["wall"]`` (phase ->
  seconds) and, for eager points, ``extra["backward_calls_wall"]`` / ``extra["forward_calls_wall"]``.
* a traced phase is repeated and its fastest run kept (:func:`repeat_median`): 5 runs when one run
  is fast, 3 when it is moderate, 1 when it is slow; eager points get extra calls while fast and keep
  the lower quartile of the warm calls. Load only ever adds time, so the lower envelope is the
  robust estimate of a point's own cost (medians still flipped about 1 series in 20 to
  "superlinear" on a busy 2-core machine).
* every timed block starts on a fresh scheduler slice, the garbage collector collected before and
  disabled inside; one-time costs (first use of each op) are paid in an untimed warm-up.

This module imports neither jax nor torch.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import traceback
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from adprof.chain import Chain
from adprof.constants import DEFAULT_CALLS
from adprof.model import Point

INSTALL_HINT = "pip install 'adprof[peers]'"
#: Repeat policy of :func:`repeat_median`: one run below FAST s -> 5 runs, below SLOW s -> 3, else 1.
FAST, SLOW = 0.1, 1.0
#: Eager: keep calling (beyond ``calls``) up to this many calls while the point is this young (s).
EXTRA_CALLS_UP_TO, EXTRA_CALLS_WITHIN = 61, 0.25
YIELD_BEFORE = 0.001
#: What ``Point.times`` holds for the peers (recorded as ``extra["clock"]``).
CLOCK = "process_cpu"

PhaseCallback = Callable[[str, int | None], None]


class PointFailure(Exception):
    """A point could not be measured; ``kind`` says why, ``point`` holds what was measured.

    Shared by every backend (the engine's too): kinds ``chain``, ``output``, ``budget``, ``resource``.
    """

    def __init__(self, kind: str, message: str, phase: str | None = None, point: Point | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.phase = phase
        self.point = point


def not_installed(backend: str, exc: ImportError, packages: str) -> ImportError:
    """The ImportError a peer backend raises when its packages are missing (one line, with the fix)."""
    missing = getattr(exc, "name", None) or str(exc)
    return ImportError(f"backend {backend!r} is not installed (needs {packages}; missing {missing}): {INSTALL_HINT}")


_frozen = False


def prepare_process() -> None:
    """Once per process, at the first point: ``gc.collect(); gc.freeze()``.

    With jax/torch imported (~200k objects) a full collection costs ~0.15 s; frozen objects are
    skipped by later collections, so the collection at each point start stays cheap.
    """
    global _frozen
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True
    gc.collect()


_seen: set[tuple[Any, ...]] = set()


def first_time(chain: Chain, mode: str) -> bool:
    """True the first time this (chain, mode) is measured in the process (then warm it up)."""
    key = (chain.source, chain.name, tuple(sorted(chain.params.items())), mode)
    if key in _seen:
        return False
    _seen.add(key)
    return True


def no_phase(name: str, call: int | None) -> None:
    """The default phase callback (does nothing)."""
    return None


def _where(exc: BaseException, chain: Chain) -> str:
    code = getattr(getattr(chain.fn, "__wrapped__", chain.fn), "__code__", None)
    files = {f for f in (chain.source, code.co_filename if code else None) if f}
    resolved = {str(Path(f).resolve()) for f in files}
    line = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if fr.filename in files or str(Path(fr.filename).resolve()) in resolved:
            line = (Path(fr.filename).name, fr.lineno)
    return f" ({line[0]} line {line[1]})" if line else ""


def describe_exception(exc: BaseException, chain: Chain) -> str:
    """``Type: first message line (file line N)``: one line."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    if len(head) > 200:
        head = head[:197] + "..."
    return head + _where(exc, chain)


def failure(exc: BaseException, chain: Chain, depth: int, phase: str, pt: Point) -> PointFailure:
    """A PointFailure for an exception raised while measuring ``phase``."""
    if isinstance(exc, PointFailure):
        exc.point = pt
        return exc
    kind = "resource" if isinstance(exc, RecursionError | MemoryError) else "chain"
    msg = describe_exception(exc, chain)
    if kind == "chain":
        where = "recording the chain" if phase in ("record", "forward", "forward0") else phase
        msg = f"depth {depth} ({where}): {msg}"
    return PointFailure(kind, msg, phase, pt)


def check_output(shape: tuple[int, ...], is_float: bool, depth: int, type_name: str | None = None) -> None:
    """Raise an ``output`` PointFailure unless the chain returned a floating-point scalar tensor."""
    if type_name is not None:
        raise PointFailure(
            "output",
            f"depth {depth}: the chain returned {type_name}, not a tensor (build the result with xp operations on x)",
        )
    if tuple(shape) != ():
        raise PointFailure(
            "output",
            f"depth {depth}: the chain's output is not a scalar (shape {tuple(shape)}); reduce it, e.g. with xp.sum",
        )
    if not is_float:
        raise PointFailure("output", f"depth {depth}: the chain's output is not floating point")


def check_finite(value: float, depth: int) -> None:
    """Raise an ``output`` PointFailure when the chain's value is not finite."""
    if not math.isfinite(value):
        raise PointFailure("output", f"depth {depth}: the chain's output is {value} (not finite)")


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """``(cpu seconds, wall seconds, fn())``: young gc generations collected before, gc disabled during.

    A :data:`YIELD_BEFORE` s sleep first starts the block on a fresh scheduler slice: on a loaded
    machine it cuts the share of calls hit by a preemption (+4..6 ms) about fivefold.
    """
    gc.collect(1)
    time.sleep(YIELD_BEFORE)
    gc.disable()
    c0 = time.process_time()
    t0 = time.perf_counter()
    try:
        out = fn()
    finally:
        t1 = time.perf_counter()
        c1 = time.process_time()
        gc.enable()
    return c1 - c0, t1 - t0, out


def repeat_median(
    fn: Callable[[], Any], name: str, on_phase: PhaseCallback = no_phase, fast: float = FAST, slow: float = SLOW
) -> tuple[float, float, list[float], Any]:
    """Run ``fn`` 1, 3 or 5 times (by the first run's time).

    Returns ``(fastest cpu s, median wall s, all cpu s, last result)``; ``on_phase(name, None)`` is
    called before every run (it resets the parent's phase timeout).
    """
    on_phase(name, None)
    c, w, out = timed(fn)
    cpu, wall = [c], [w]
    n = 5 if w < fast else 3 if w < slow else 1
    while len(cpu) < n:
        on_phase(name, None)
        del out  # the previous result is freed outside the timed block
        c, w, out = timed(fn)
        cpu.append(c)
        wall.append(w)
    return min(cpu), statistics.median(wall), cpu, out


def measure_phase(
    pt: Point, name: str, fn: Callable[[], Any], on_phase: PhaseCallback = no_phase, repeat: bool = True
) -> Any:
    """Time ``fn`` as phase ``name`` of ``pt`` (median of repeats unless ``repeat`` is False).

    Stores CPU seconds in ``pt.times[name]``, wall seconds in ``pt.extra["wall"][name]`` and the
    CPU samples in ``pt.extra[name + "_samples"]``; returns ``fn``'s (last) result.
    """
    if repeat:
        cpu, wall, samples, out = repeat_median(fn, name, on_phase)
    else:
        on_phase(name, None)
        cpu, wall, out = timed(fn)
        samples = [cpu]
    pt.times[name] = cpu
    pt.extra.setdefault("wall", {})[name] = wall
    pt.extra[f"{name}_samples"] = samples
    pt.extra["clock"] = CLOCK
    return out


def namespace(name: str, base: types.ModuleType, overrides: Mapping[str, Any]) -> types.ModuleType:
    """A module copying ``base``'s attributes with ``overrides`` applied (lookups stay plain dict hits).

    Names the copy lacks (lazy module attributes) fall back to ``base``.
    """
    ns = types.ModuleType(name, getattr(base, "__doc__", None))
    ns.__dict__.update({k: v for k, v in vars(base).items() if not k.startswith("__")})
    ns.__dict__.update(overrides)

    def __getattr__(attr: str) -> Any:  # PEP 562 module __getattr__
        return getattr(base, attr)

    ns.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return ns


# --------------------------------------------------------------------------- eager loop


def measure_eager(
    chain: Chain,
    depth: int,
    *,
    calls: int,
    on_phase: PhaseCallback,
    leaf: Callable[[], Any],
    forward: Callable[[Any], tuple[Any, Any]],
    backward: Callable[[Any, Any], Any],
    scalar: Callable[[Any], float],
    check: Callable[[Any, int], None],
    warm_up: Callable[[], None] | None = None,
) -> Point:
    """``calls`` forward+backward calls, each on a fresh leaf from ``leaf()``; fast points get more
    calls (up to :data:`EXTRA_CALLS_UP_TO` while the point has taken less than
    :data:`EXTRA_CALLS_WITHIN` s), so that a median of wall times resists a burst of load.

    ``forward(x) -> (loss, state)`` runs the chain (and whatever a backward needs), ``backward(x,
    state) -> gradient`` runs the backward pass, both synchronous (results ready when they return).
    ``check(loss, depth)`` validates the output of call 0, ``scalar(loss)`` reads its value.
    ``warm_up()`` (untimed, e.g. one call at depth 1 the first time a chain is seen in the process)
    keeps one-time costs of the process (first use of each op) out of call 0.
    Times: ``forward0``, ``backward0`` (call 0), ``forward``, ``backward`` (median of calls 1..K-1);
    ``extra``: ``calls``, ``forward_calls``, ``backward_calls``, ``value``, ``finite_gradient``.
    """
    calls = max(2, int(calls))
    start = time.perf_counter()
    pt = Point(depth=depth)
    fwd: list[float] = []
    bwd: list[float] = []
    fwd_wall: list[float] = []
    bwd_wall: list[float] = []
    phase = "forward0"
    try:
        if warm_up is not None:
            warm_up()
        i = 0
        while i < calls or (i < EXTRA_CALLS_UP_TO and time.perf_counter() - start < EXTRA_CALLS_WITHIN):
            x = leaf()
            phase = "forward0" if i == 0 else "forward"
            on_phase(phase, i)
            t, w, (loss, state) = timed(lambda x=x: forward(x))
            fwd.append(t)
            fwd_wall.append(w)
            if i == 0:
                pt.times["forward0"] = t
                check(loss, depth)
                value = scalar(loss)
                check_finite(value, depth)
                pt.extra["value"] = value
            phase = "backward0" if i == 0 else "backward"
            on_phase(phase, i)
            t, w, g = timed(lambda x=x, state=state: backward(x, state))
            bwd.append(t)
            bwd_wall.append(w)
            if i == 0:
                pt.times["backward0"] = t
                pt.extra["finite_gradient"] = _all_finite(g)
            del loss, state, g, x
            i += 1
    except (Exception, RecursionError, MemoryError) as exc:  # explicit on purpose
        raise failure(exc, chain, depth, phase, _eager_summary(pt, fwd, bwd, fwd_wall, bwd_wall)) from None
    return _eager_summary(pt, fwd, bwd, fwd_wall, bwd_wall)


def _all_finite(g: Any) -> bool:
    import numpy as np

    try:
        return bool(np.all(np.isfinite(np.asarray(g))))
    except Exception:  # a gradient we cannot read is not "finite"
        return False


def _lower_quartile(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[(len(ordered) - 1) // 4]


def _eager_summary(
    pt: Point, fwd: list[float], bwd: list[float], fwd_wall: list[float], bwd_wall: list[float]
) -> Point:
    wall = pt.extra.setdefault("wall", {})
    for name, cpu, walls in (("forward", fwd, fwd_wall), ("backward", bwd, bwd_wall)):
        if cpu:
            wall[f"{name}0"] = walls[0]
        if len(cpu) > 1:
            pt.times[name] = _lower_quartile(cpu[1:])
            wall[name] = statistics.median(walls[1:])
    pt.extra["calls"] = len(bwd)
    pt.extra["forward_calls"] = list(fwd)
    pt.extra["backward_calls"] = list(bwd)
    pt.extra["forward_calls_wall"] = list(fwd_wall)
    pt.extra["backward_calls_wall"] = list(bwd_wall)
    pt.extra["clock"] = CLOCK
    return pt


__all__ = [
    "CLOCK",
    "DEFAULT_CALLS",
    "INSTALL_HINT",
    "PointFailure",
    "check_finite",
    "check_output",
    "describe_exception",
    "failure",
    "first_time",
    "prepare_process",
    "measure_eager",
    "measure_phase",
    "namespace",
    "no_phase",
    "not_installed",
    "repeat_median",
    "timed",
]
