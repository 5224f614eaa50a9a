"""The measuring subprocess: ``python -m adprof.measure.worker``.

It reads one JSON request per line on its *original* stdin and answers on its *original* stdout,
both of which it keeps to itself: at start-up fd 1 is redirected to stderr, so a chain that prints
cannot corrupt the protocol, and fd 0 to ``/dev/null``, so a chain that reads its input sees an end
of file instead of waiting on (or eating) the next request. A request may be answered by
``{"event": ...}`` progress lines before the final answer (which has an ``ok`` field). Requests:

* ``{"op": "list", "file": F, "names": [..] | null}`` -> ``{"ok": true, "chains": [metadata, ...]}``
  (sweeps expanded into variants);
* ``{"op": "structure", "file": F, "chain": NAME, "depths": [..]}`` -> ``{"ok": true, "structure": {..}}``,
  the recording of :func:`~adprof.measure.structure_probe.record_structure` (events ``{"event": "depth", "depth": d}``);
* ``{"op": "point", "file": F, "chain": NAME, "backend": B, "profile": P, "mode": M, "depth": d,
  "calls": K, "counter_budget": N, "repeats": R (optional), "metric": "instructions" (optional: each
  phase counted once, in a worker started under callgrind), "memory": true (optional: the point's memory,
  outside its timed regions: ``peak_bytes`` here, the backend's own figures where it declares them)}`` ->
  ``{"ok": true, "point": {..}}``
  (events ``{"event": "phase", "phase": name, "call": i}`` when each phase starts);
* ``{"op": "exit"}``.

Failures answer ``{"ok": false, "kind": ..., "error": one line, ...}`` with kind ``load`` (a
:class:`adprof.chain.ChainError`: ``error_type`` names the class), ``chain``, ``output``,
``budget``, ``resource`` (with ``phase`` and the partial ``point``) or ``internal``. The parent
(:mod:`adprof.measure.client`) owns the schedule and the timeouts, and kills this process (its whole
process group: the worker is a session leader) when a point hangs; a crash (segfault) shows as
end-of-file on the protocol stream. A watchdog thread kills the group when the parent dies, and the
clock functions of :mod:`time` are restored after every request, so a chain that patches them
cannot falsify the measurements of the next one; so are the array namespaces (``xp``, numpy) and the
working directory, so that a chain's
``os.chdir`` cannot move the files of the next request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import gc
import json
import math
import os
import select
import signal
import sys
import threading
import time
from typing import Any, TextIO

from adprof.backends.instructions import COUNT_ENV, DUMPS_KEY
from adprof.backends.memory import PEAK, PeakWatch, memory_time
from adprof.backends.program import PROGRAM_SECONDS, read_program
from adprof.chain import Chain, ChainError, ChainFile, import_chain_file
from adprof.constants import DEFAULT_CALLS
from adprof.measure.structure_probe import STRUCTURE_DEPTHS, record_structure
from adprof.model import Point
from adprof.util import procs

#: Under callgrind a program reader runs this many times slower: its bound is scaled so.
COUNTING_SLOWDOWN = 20


def _freeze() -> None:
    """Collect, then move every live object to the permanent generation: the ``gc.collect()``
    before each timed phase then only scans what the measurement itself allocated (about 12 ms
    less per collection once numpy, scipy and the engine are imported)."""
    gc.collect()
    gc.freeze()


#: ``time`` functions a chain could patch; restored after every request.
_CLOCKS = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time")
#: The array namespaces chains are given as ``xp`` (and numpy, which they import): a chain that sets or deletes
#: one of their attributes (``xp.sin = ...``) must not break or falsify the chains measured after it.
_NAMESPACES = ("engine.numpy", "numpy", "jax.numpy", "autograd.numpy", "array_api_compat.torch", "math")


def _namespaces() -> dict[str, dict[str, Any]]:
    """The attributes of each loaded module of :data:`_NAMESPACES`."""
    return {name: dict(vars(mod)) for name in _NAMESPACES if (mod := sys.modules.get(name)) is not None}


def _restore_namespaces(saved: dict[str, dict[str, Any]]) -> None:
    """Put back the attributes :func:`_namespaces` saw (one added since stays: modules cache their lazily
    imported submodules so)."""
    for name, attrs in saved.items():
        mod = sys.modules.get(name)
        if mod is None:
            continue
        now = vars(mod)
        for key, value in attrs.items():
            if now.get(key, _MISSING) is not value:
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(mod, key, value)


_MISSING = object()


def _bad_number(value: Any) -> bool:
    """Not a finite, non-negative real number (a bool, None, a string, NaN, -1, 10**400 are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    try:
        return not math.isfinite(float(value)) or value < 0
    except OverflowError:
        return True


def point_problem(pt: Any, backend: Any, mode: str) -> str | None:
    """What is wrong with the point a backend's ``measure_point`` returned (a plugin's may be anything), as one
    line naming the backend; None when it is a :class:`~adprof.model.Point` with a time for one of the mode's
    phases and finite, non-negative times and metrics."""
    who = f"backend {backend.name!r}"
    if not isinstance(pt, Point):
        return f"{who} returned a {type(pt).__name__}, not a Point"
    declared = tuple(backend.phases.get(mode, ()))
    counted = (
        pt.extra.get(DUMPS_KEY) if isinstance(pt.extra, dict) else None
    ) or {}  # a counted phase's time is filled by the parent from its dump
    if declared and not any(ph in pt.times or ph in counted for ph in declared):
        return f"{who} returned no time for any phase of {mode} ({', '.join(declared)})"
    for phase, t in pt.times.items():
        if _bad_number(t):
            return f"{who} returned {t!r} seconds for {phase} (not a finite, non-negative number)"
    for phase, values in pt.metrics.items():
        for metric, v in (values or {}).items():
            if v is not None and _bad_number(v):
                shown = repr(v) if len(repr(v)) <= 40 else f"a {len(str(v))}-digit number"
                return f"{who} returned {metric} = {shown} in {phase} (not a finite, non-negative number)"
    return None


def _kill_family() -> None:
    """Kill what the chains started (detached or not) and this worker's process group with the worker itself;
    the guardian kills what already left the family."""
    for _ in range(3):
        for pid in procs.descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    os.killpg(0, signal.SIGKILL)


def _watch_parent(parent: int) -> None:
    """Kill this worker's family once adprof is gone."""
    while True:
        if os.getppid() != parent:
            _kill_family()
        time.sleep(0.2)


def _watch_hangup(fd: int) -> None:
    """As :func:`_watch_parent`, without waking up: block until the request pipe's writer (adprof) is gone.
    Under callgrind a counted phase sees every thread's instructions, so the watchdog must stay asleep."""
    poller = select.poll()
    poller.register(fd, 0)  # no events asked for: only a hang-up or an error ends the wait
    while True:
        for _, events in poller.poll():
            if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                _kill_family()


class _Worker:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.files: dict[str, ChainFile] = {}
        self.named: dict[tuple[str, str], Chain] = {}
        self.programs: dict[tuple[Any, ...], dict[str, int] | None] = {}
        self.cwd = os.getcwd()  # the directory relative targets are given from

    def send(self, msg: dict[str, Any]) -> None:
        self.out.write(json.dumps(msg) + "\n")
        self.out.flush()

    # -- chains ------------------------------------------------------------------------------
    def chain_file(self, file: str) -> ChainFile:
        """``file`` imported once for measuring in this worker (every chain of it measured here reads one module)."""
        found = self.files.get(file)
        if found is None:
            found = self.files[file] = import_chain_file(file)
            _freeze()
        return found

    def chain(self, file: str, name: str) -> Chain:
        ch = self.named.get((file, name))
        if ch is None:
            ch = self.named[(file, name)] = self.chain_file(file).variant(name)
        return ch

    def list(self, file: str, names: list[str] | None) -> list[dict[str, Any]]:
        """The metadata of ``file``'s chains, from an import of its own: a worker that listed them and then measures
        them (the first lane's) imports the file again for its first point, as a fresh worker does, so that what
        the file does at import (seeding a generator, patching numpy) is in place for the measuring in every lane."""
        out = []
        for ch in import_chain_file(file).select(names):
            for v in ch.variants():
                meta = v.metadata()
                meta["reuse"] = v.reuse if isinstance(v.reuse, int | float) else None
                meta["source"] = file
                out.append(meta)
        return out

    def program(self, backend: Any, ch: Chain, req: dict[str, Any]) -> dict[str, int] | None:
        """The forward's program at the request's depth (:func:`adprof.backends.program.read_program`: bounded,
        None when unknown), read once per (chain, backend, profile, depth) in this worker; outside the point's
        timed phases, as a phase of its own (``program``) so that its time is not charged to the last one."""
        key = (req["file"], req["chain"], backend.name, req.get("profile"), int(req["depth"]))
        if key not in self.programs:
            self.send({"event": "phase", "phase": "program", "call": None})
            seconds = PROGRAM_SECONDS * (COUNTING_SLOWDOWN if os.environ.get(COUNT_ENV) else 1)
            self.programs[key] = read_program(backend, ch, int(req["depth"]), req.get("profile"), seconds)
        found = self.programs[key]
        return dict(found) if found is not None else None

    # -- requests ----------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> None:
        clocks = {name: getattr(time, name) for name in _CLOCKS}
        namespaces = _namespaces()
        try:
            self.handle_request(req)
        finally:
            for name, fn in clocks.items():
                setattr(time, name, fn)
            _restore_namespaces(namespaces)
            with contextlib.suppress(OSError):  # a chain's os.chdir must not move the next request's files
                os.chdir(self.cwd)

    def handle_request(self, req: dict[str, Any]) -> None:
        op = req.get("op")
        if op == "ping":
            self.send({"ok": True, "pid": os.getpid()})
        elif op == "list":
            self.send({"ok": True, "chains": self.list(req["file"], req.get("names"))})
        elif op == "structure":
            ch = self.chain(req["file"], req["chain"])
            self.send({"event": "loaded"})
            rec = record_structure(
                ch,
                req.get("depths") or STRUCTURE_DEPTHS,
                on_depth=lambda d: self.send({"event": "depth", "depth": d}),
            )
            self.send({"ok": True, "structure": rec})
        elif op == "point":
            from adprof.backends import get_backend

            backend = get_backend(req.get("backend", "engine"))
            ch = self.chain(req["file"], req["chain"])
            self.send({"event": "loaded"})
            memory = bool(req.get("memory")) and req.get("metric", "time") == "time"
            peak = PeakWatch()
            if memory:
                peak.start()
            try:
                pt = backend.measure_point(
                    ch,
                    req["mode"],
                    int(req["depth"]),
                    req.get("profile"),
                    calls=int(req.get("calls", DEFAULT_CALLS)),
                    on_phase=lambda name, call: self.send({"event": "phase", "phase": name, "call": call}),
                    counter_budget=req.get("counter_budget"),
                    **({"repeats": int(req["repeats"])} if req.get("repeats") else {}),
                    **({"metric": req["metric"]} if req.get("metric", "time") != "time" else {}),
                    **({"memory": True} if memory and req["mode"] in backend.memory_figures else {}),
                )
            except backend.PointFailure as f:
                self.send(
                    {
                        "ok": False,
                        "kind": f.kind,
                        "error": f.message,
                        "phase": f.phase,
                        "point": dataclasses.asdict(f.point) if f.point is not None else None,
                    }
                )
                return
            problem = point_problem(pt, backend, req["mode"])
            if problem is not None:
                self.send({"ok": False, "kind": "output", "error": f"depth {req['depth']}: {problem}"})
                return
            if pt.program is None:
                pt.program = self.program(backend, ch, req)
            if memory:
                with memory_time(pt):  # the peak's own cost: reading /proc/self/status
                    peak_bytes = peak.bytes()
                if peak_bytes is not None:
                    pt.memory[PEAK] = float(peak_bytes)
            self.send({"ok": True, "point": dataclasses.asdict(pt)})
        else:
            self.send({"ok": False, "kind": "internal", "error": f"unknown request {op!r}"})


def main() -> None:
    """Serve requests until stdin closes or ``exit`` arrives."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    requests = os.fdopen(os.dup(0), "r")
    os.dup2(2, 1)  # user prints go to stderr
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # a chain reading stdin reads an end of file, never the protocol
    os.close(null)
    sys.stdin = open(os.devnull)  # the process' own stdin, for its lifetime
    faulthandler.enable()
    if os.getpgrp() == os.getpid():  # our own group (started by adprof): nothing of it may outlive adprof
        if os.environ.get(COUNT_ENV):  # counting instructions under callgrind
            threading.Thread(target=_watch_hangup, args=(requests.fileno(),), daemon=True).start()
        else:
            threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    import adprof.backends.engine  # noqa: F401 - imported before freezing

    _freeze()
    w = _Worker(out)
    w.send({"event": "ready", "pid": os.getpid()})
    for line in requests:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except json.JSONDecodeError as exc:
            w.send({"ok": False, "kind": "internal", "error": f"bad request: {exc}"})
            continue
        if req.get("op") == "exit":
            break
        try:
            w.handle(req)
        except ChainError as exc:
            w.send({"ok": False, "kind": "load", "error_type": type(exc).__name__, "error": str(exc)})
        except (RecursionError, MemoryError) as exc:
            w.send({"ok": False, "kind": "resource", "error": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:  # a bug of ours, or a chain failing outside a point (e.g. its input)
            msg = str(exc).splitlines()[0] if str(exc) else ""
            w.send({"ok": False, "kind": "internal", "error": f"{type(exc).__name__}: {msg}".rstrip(": ")})
        except (SystemExit, KeyboardInterrupt, GeneratorExit):
            raise  # the chain ends the worker: a crash, reported with its exit status
        except BaseException as exc:  # a chain's own BaseException subclass: its failure, named by its class
            msg = str(exc).splitlines()[0] if str(exc) else ""
            what = f"{type(exc).__name__} (a BaseException, not an Exception): {msg}".rstrip(": ")
            w.send({"ok": False, "kind": "chain", "error": what})


if __name__ == "__main__":
    main()
