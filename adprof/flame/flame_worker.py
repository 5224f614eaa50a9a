"""The looped probe that ``adprof flame`` runs as py-spy's child.

``python -m adprof.flame.flame_worker FILE::CHAIN --backend B --mode M --depth N --profile P --seconds S
--rate R --log log.json --status status.json`` loads the chain, then measures points with the backend's own
point runner (:meth:`adprof.backends.base.Backend.measure_point`, the one ``check`` uses):

1. one warm-up point, not logged (imports, caches and the first call's compiles happen here);
2. a clock anchor: :func:`_adprof_clock_anchor` spins for :func:`anchor_seconds` and logs when it started and
   ended, so that the parent can place py-spy's sample times on this process's clock (both monotonic);
3. points until ``S`` seconds have passed (at least one), every ``on_phase(name)`` logged with its time, and
   the end of each point too: the phase windows. Samples outside a window (setup, imports, the anchor, the
   worker's own loop) are left out by the parent, and each sample inside one carries its phase.

py-spy loses its child's exit code (benfred/py-spy#717), so the worker reports through the status JSON:
``{"state": "setup"|"running"|"done"|"error", "iterations": int, "seconds": float, "error": str|None}``,
rewritten atomically after setup, at most every 0.5 s while looping, and at the end. A worker killed by py-spy's
``-d`` cap leaves ``"running"``; a worker killed by a signal of its own (a segfault) leaves ``"running"`` too,
plus faulthandler's dump in the ``--crash-log`` file, which tells the two apart.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import os
import sys
import threading
import time
from typing import Any

MIN_SECONDS = 0.5
#: The loop ends after this many times ``--seconds`` on the wall clock, whatever the phases took.
WALL_FACTOR = 4.0
STATUS_EVERY = 0.5
#: The anchor's function name: the parent finds it in py-spy's trace.
ANCHOR = "_adprof_clock_anchor"
#: The worker's loop function: everything above it (and it) is cut from the stacks.
LOOP = "probe_loop"


def anchor_seconds(rate: float) -> float:
    """How long the clock anchor spins: 16 sample periods, at least 20 ms, at most 0.5 s."""
    return min(max(16.0 / rate, 0.02), 0.5)


def write_status(path: str | None, **status: Any) -> None:
    """Write the status JSON atomically (a temporary file renamed over ``path``)."""
    if not path:
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(status, fh)
    os.replace(tmp, path)


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _adprof_clock_anchor(seconds: float) -> tuple[float, float]:
    """Spin for ``seconds``; return (start, end) on :func:`time.perf_counter` (CLOCK_MONOTONIC on Linux)."""
    t0 = time.perf_counter()
    t1 = t0
    while t1 - t0 < seconds:
        t1 = time.perf_counter()
    return t0, t1


def make_point(target: str, backend_name: str, mode: str, depth: int, profile: str | None, calls: int):
    """Load the chain and the backend; return ``point(on_phase)`` measuring one point with the backend's runner
    (its ``phases``: the phases the backend declares for ``mode``, the measured ones)."""
    from adprof.backends import get_backend
    from adprof.chain import load_chains, parse_target

    path, name = parse_target(target)
    chain = load_chains(path, [name] if name else None)[0]
    backend = get_backend(backend_name)
    backend.check_arguments(mode, profile)

    def point(on_phase) -> None:
        try:
            backend.measure_point(chain, mode, depth, profile, calls=calls, on_phase=on_phase, repeats=1)
        except backend.PointFailure as exc:
            raise RuntimeError(f"the point failed ({exc.kind}): {exc.message}") from None

    point.phases = tuple(backend.phases.get(mode, ()))  # type: ignore[attr-defined]
    return point


def resolve(target: str) -> int:
    """``--resolve``: load ``FILE[::CHAIN]`` and print ``{"ok": true, "target": "ABS::NAME", "name": NAME, "modes":
    [...], "backend_modes": {backend: [...]}}``
    (or ``{"ok": false, "error": one line}``) as the last line of stdout; the chain's own prints go to stderr."""
    from pathlib import Path

    from adprof.chain import ChainError, load_chains, parse_target

    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # a chain that prints at import cannot corrupt the answer
    sys.stdout = sys.stderr
    faulthandler.enable()
    try:
        path, name = parse_target(target)
        chains = load_chains(path, [name] if name else None)
        if name is None and len(chains) != 1:
            names = ", ".join(c.name for c in chains)
            raise ChainError(f"{path} defines several chains ({names}); name one with {path}::CHAIN")
        chosen = name or chains[0].name
        ch = next((c for c in chains if c.name == chosen), chains[0])
        answer: dict[str, Any] = {"ok": True, "target": f"{Path(path).resolve()}::{chosen}", "name": chosen}
        answer["modes"] = list(ch.modes)
        answer["backend_modes"] = {b: list(m) for b, m in ch.backend_modes.items()}
    except ChainError as exc:
        answer = {"ok": False, "error": str(exc)}
    except (Exception, SystemExit) as exc:  # a chain failing at import outside what ChainError covers
        why = f"the chain file called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else _one_line(exc)
        answer = {"ok": False, "error": f"loading {target}: {why}"}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0 if answer["ok"] else 1


def probe_loop(point, seconds: float, status: str | None, done: list[float], events: list) -> None:
    """Measure points until ``seconds`` (>= MIN_SECONDS) have passed inside the phases (or ``WALL_FACTOR`` times
    that on the wall clock), logging the phase windows in ``events``: a shallow depth gets as many samples as a
    deep one.

    ``done`` is ``[iterations, elapsed seconds]``, updated in place (so it survives an exception); ``events``
    gets ``[time, phase]`` at each phase start and ``[time, None]`` at each point's end.
    """
    clock = time.perf_counter
    seconds = max(float(seconds), MIN_SECONDS)
    kept = set(getattr(point, "phases", ()))  # the measured phases (empty: every phase)

    def on_phase(name: str, call: int | None) -> None:
        events.append([clock(), str(name)])

    start = last = clock()
    while True:
        first = len(events)
        point(on_phase)
        now = clock()
        events.append([now, None])
        done[0] += 1
        pairs = zip(events[first:], events[first + 1 :], strict=False)
        done[1] += sum(b[0] - a[0] for a, b in pairs if a[1] is not None and (not kept or a[1] in kept))
        if done[1] >= seconds or now - start >= WALL_FACTOR * seconds:
            return
        if now - last >= STATUS_EVERY:
            write_status(status, state="running", iterations=int(done[0]), seconds=done[1], error=None)
            last = clock()


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit code 0 on success, 1 if setup or a point raised (see the status)."""
    ap = argparse.ArgumentParser(
        prog="python -m adprof.flame.flame_worker", description=(__doc__ or "adprof flame").splitlines()[0]
    )
    ap.add_argument("target", help="FILE::CHAIN")
    ap.add_argument("--backend", default="engine")
    ap.add_argument("--mode", default="traced")
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--calls", type=int, default=6, help="eager calls per point")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rate", type=float, default=250.0, help="py-spy's rate (sizes the clock anchor)")
    ap.add_argument("--status", default=None, help="path of the status JSON to write")
    ap.add_argument("--log", default=None, help="path of the phase log JSON to write")
    ap.add_argument("--crash-log", default=None, help="file for faulthandler's dump if the worker crashes")
    ap.add_argument("--resolve", action="store_true", help="only load the chain; print it as one JSON line")
    args = ap.parse_args(argv)
    if args.resolve:
        return resolve(args.target)
    if args.crash_log:
        faulthandler.enable(file=open(args.crash_log, "w"))
    write_status(args.status, state="setup", iterations=0, seconds=0.0, error=None)
    done = [0, 0.0]
    events: list = []
    anchor = (0.0, 0.0)
    try:
        point = make_point(args.target, args.backend, args.mode, args.depth, args.profile, args.calls)
        point(lambda name, call: None)  # the warm-up point: not logged
        gc.collect()
        gc.freeze()  # as the measuring worker does: the harness's collections skip what setup made
        anchor = _adprof_clock_anchor(anchor_seconds(args.rate))
        write_status(args.status, state="running", iterations=0, seconds=0.0, error=None)
        probe_loop(point, args.seconds, args.status, done, events)
    except (Exception, RecursionError, MemoryError, SystemExit) as exc:  # reported, not raised
        why = f"the chain called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else _one_line(exc)
        write_status(args.status, state="error", iterations=int(done[0]), seconds=done[1], error=why)
        print(f"adprof flame worker: {why}", file=sys.stderr)
        return 1
    if args.log:
        log = {"anchor": list(anchor), "events": events, "tid": threading.get_ident(), "iterations": int(done[0])}
        log["phases"] = list(getattr(point, "phases", ()))
        write_status(args.log, **log)
    write_status(args.status, state="done", iterations=int(done[0]), seconds=done[1], error=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
