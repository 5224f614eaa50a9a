"""What memory measurement costs: the real CLI with and without it, side by side, per backend.

    python benchmarks/memory_overhead.py [--rounds 3] [--depths 2,4,8] [--backend engine,jax,...]

For each backend, ``python -m adprof check probes/chains.py --backend B --mode M --depths D --no-structure
--jobs 1`` runs with ``--memory`` and with ``--no-memory``, interleaved (the order alternates from round to
round), on fixed depths so that both do the same points; the wall time of each whole command (start-up,
imports, measuring, classifying, rendering) is taken, and the ratio with/without is printed per round and as
the ratio of the medians. The modes are those memory is measured in (torch's compile mode is left out: gcc
runs of minutes per check, and memory there is a note, nothing measured). The issue's bar: at most 1.2x; above
it, memory is opt-in on that backend (``Backend.memory_by_default``, docs/memory.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAINS = str(ROOT / "probes" / "chains.py")
#: backend -> (modes measured, the module it needs)
BACKENDS = {
    "engine": ("traced,eager", None),
    "jax": ("traced,eager,compile", "jax"),
    "torch": ("traced,eager", "torch"),
    "autograd": ("eager", "autograd"),
    "tinygrad": ("compile,eager", "tinygrad"),
}
BAR = 1.2


def run_check(backend: str, modes: str, depths: str, memory: bool, budget: float) -> float:
    """Wall seconds of one ``adprof check`` (exit 0 or 1: a finding is not a failure of the run)."""
    cmd = [
        sys.executable,
        "-m",
        "adprof",
        "check",
        CHAINS,
        "--backend",
        backend,
        "--mode",
        modes,
        "--depths",
        depths,
        "--no-structure",
        "--jobs",
        "1",
        "--budget",
        str(budget),
        "--memory" if memory else "--no-memory",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip().splitlines()[-1:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depths", default="2,4,8")
    ap.add_argument("--backend", default=",".join(BACKENDS))
    ap.add_argument("--budget", type=float, default=900.0, help="each check's budget (large: fixed work)")
    args = ap.parse_args()
    print(f"adprof check probes/chains.py --depths {args.depths} --no-structure --jobs 1, {args.rounds} rounds")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    summary = []
    for backend in args.backend.split(","):
        modes, module = BACKENDS[backend]
        if module is not None and importlib.util.find_spec(module) is None:
            print(f"{backend:9s} skipped: {module} is not installed")
            continue
        with_memory: list[float] = []
        without: list[float] = []
        for i in range(args.rounds):
            order = (True, False) if i % 2 == 0 else (False, True)
            for memory in order:
                secs = run_check(backend, modes, args.depths, memory, args.budget)
                (with_memory if memory else without).append(secs)
            print(
                f"{backend:9s} round {i + 1}: with memory {with_memory[-1]:7.2f} s, without {without[-1]:7.2f} s, "
                f"ratio {with_memory[-1] / without[-1]:.3f}",
                flush=True,
            )
        ratio = statistics.median(with_memory) / statistics.median(without)
        summary.append((backend, modes, statistics.median(with_memory), statistics.median(without), ratio))
    print()
    print(f"{'backend':9s} {'modes':22s} {'with (median)':>14s} {'without':>10s} {'ratio':>7s}  bar {BAR}")
    for backend, modes, on, off, ratio in summary:
        verdict = "cheap: on by default" if ratio <= BAR else "over the bar: opt-in (--memory)"
        print(f"{backend:9s} {modes:22s} {on:12.2f} s {off:8.2f} s {ratio:7.3f}  {verdict}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
