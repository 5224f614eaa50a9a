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
while looping, and at the end. A worker killed by py-spy's ``-d`` cap leaves ``"running"``.
"""

from __future__ import annotations

import argparse
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
    ap = argparse.ArgumentParser(prog="python -m adprof.flame.flame_worker", description=__doc__.splitlines()[0])
    ap.add_argument("target", help="FILE::CHAIN")
    ap.add_argument("--mode", choices=("traced", "eager"), default="traced")
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--profile", choices=("v08", "fixed"), default="fixed")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--status", default=None, help="path of the status JSON to write")
    args = ap.parse_args(argv)
    write_status(args.status, state="setup", iterations=0, seconds=0.0, error=None)
    done = [0, 0.0]
    try:
        iteration = make_iteration(args.target, args.mode, args.depth, args.profile)
        write_status(args.status, state="running", iterations=0, seconds=0.0, error=None)
        probe_loop(iteration, args.seconds, args.status, done)
    except (Exception, RecursionError, MemoryError) as exc:  # reported, not raised
        write_status(args.status, state="error", iterations=int(done[0]), seconds=done[1], error=_one_line(exc))
        print(f"adprof flame worker: {_one_line(exc)}", file=sys.stderr)
        return 1
    write_status(args.status, state="done", iterations=int(done[0]), seconds=done[1], error=None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
