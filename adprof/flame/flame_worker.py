"""The looped probe that ``adprof flame`` runs as py-spy's child.

``python -m adprof.flame.flame_worker FILE::CHAIN --mode traced|eager --depth N --profile v08
--seconds S --status status.json`` loads the chain, sets the engine profile, then repeats one probe
iteration until ``S`` seconds of looping have passed (at least one iteration, and at least
:data:`MIN_SECONDS` so that py-spy gets to attach):

* traced: record the chain on a placeholder at depth N, ``engine.grad``, drop the derivative
  graph (``del g``), as in seed 001's sampling loop;
* eager: a fresh ``rt.variable``, the forward pass in a session, ``loss.backward()`` (seed 000).

py-spy loses its child's exit code (benfred/py-spy#717), so the worker reports through the
status JSON instead: ``{"state": "setup"|"running"|"done"|"error", "iterations": int,
"seconds": float, "error": str|None}``, rewritten atomically after setup, at most every 0.5 s
while looping, and at the end. A worker killed by py-spy's ``-d`` cap leaves ``"running"``; a worker
killed by a signal of its own (a segfault) leaves ``"running"`` too, plus faulthandler's dump in the
``--crash-log`` file, which tells the two apart.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import time
from typing import Any

MIN_SECONDS = 0.5
STATUS_EVERY = 0.5


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


def make_iteration(target: str, mode: str, depth: int, profile: str):
    """Load the chain and set the profile; return a no-argument callable running one iteration."""
    import engine
    from adprof.chain import load_chains, parse_target

    path, name = parse_target(target)
    chains = load_chains(path, [name] if name else None)
    chain = chains[0]
    engine.set_profile(profile)
    xp = engine.numpy
    a = chain.make_input()

    if mode == "traced":

        def traced_iteration() -> None:
            x = engine.input(a.shape, a.dtype)
            y = chain(xp, x, depth)
            g = engine.grad(y, x)
            del g  # drop the derivative graph: deregistration happens here
            del y, x

        return traced_iteration
    if mode == "eager":
        rt = engine.EagerRuntime()

        def eager_iteration() -> None:
            x = rt.variable(a)
            with rt.session():
                loss = chain(xp, x, depth)
            loss.backward()
            del loss, x

        return eager_iteration
    raise ValueError(f"unknown mode {mode!r}; expected traced or eager")


def resolve(target: str) -> int:
    """``--resolve``: load ``FILE[::CHAIN]`` and print ``{"ok": true, "target": "ABS::NAME", "name": NAME}``
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
        answer: dict[str, Any] = {"ok": True, "target": f"{Path(path).resolve()}::{chosen}", "name": chosen}
    except ChainError as exc:
        answer = {"ok": False, "error": str(exc)}
    except (Exception, SystemExit) as exc:  # a chain failing at import outside what ChainError covers
        why = f"the chain file called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else _one_line(exc)
        answer = {"ok": False, "error": f"loading {target}: {why}"}
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0 if answer["ok"] else 1


def probe_loop(iteration, seconds: float, status: str | None, done: list[float]) -> None:
    """Run ``iteration`` until ``seconds`` (>= MIN_SECONDS) have passed.

    ``done`` is ``[iterations, elapsed seconds]``, updated in place (so it survives an exception).
    """
    seconds = max(float(seconds), MIN_SECONDS)
    start = last = time.perf_counter()
    while True:
        iteration()
        now = time.perf_counter()
        done[0] += 1
        done[1] = now - start
        if done[1] >= seconds:
            return
        if now - last >= STATUS_EVERY:
            write_status(status, state="running", iterations=int(done[0]), seconds=done[1], error=None)
            last = now


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit code 0 on success, 1 if setup or an iteration raised (see the status)."""
    ap = argparse.ArgumentParser(
        prog="python -m adprof.flame.flame_worker", description=(__doc__ or "adprof flame").splitlines()[0]
    )
    ap.add_argument("target", help="FILE::CHAIN")
    ap.add_argument("--mode", choices=("traced", "eager"), default="traced")
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--profile", choices=("v08", "fixed"), default="fixed")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--status", default=None, help="path of the status JSON to write")
    ap.add_argument("--crash-log", default=None, help="file for faulthandler's dump if the worker crashes")
    ap.add_argument("--resolve", action="store_true", help="only load the chain; print it as one JSON line")
    args = ap.parse_args(argv)
    if args.resolve:
        return resolve(args.target)
    if args.crash_log:
        faulthandler.enable(file=open(args.crash_log, "w"))
    write_status(args.status, state="setup", iterations=0, seconds=0.0, error=None)
    done = [0, 0.0]
    try:
        iteration = make_iteration(args.target, args.mode, args.depth, args.profile)
        write_status(args.status, state="running", iterations=0, seconds=0.0, error=None)
        probe_loop(iteration, args.seconds, args.status, done)
    except (Exception, RecursionError, MemoryError, SystemExit) as exc:  # reported, not raised
        why = f"the chain called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else _one_line(exc)
        write_status(args.status, state="error", iterations=int(done[0]), seconds=done[1], error=why)
        print(f"adprof flame worker: {why}", file=sys.stderr)
        return 1
    write_status(args.status, state="done", iterations=int(done[0]), seconds=done[1], error=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
