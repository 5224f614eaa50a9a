"""What memory measurement costs: the real CLI with and without it, side by side, per backend.

    python benchmarks/memory_overhead.py [--rounds 3] [--depths 2,4,8] [--backend engine,jax,...]

For each backend, ``python -m adprof check probes/chains.py --backend B --mode M --depths D --no-structure
--jobs 1`` runs with ``--memory`` and with ``--no-memory``, interleaved (the order alternates from round to
round), on fixed depths so that both do the same points; the wall time of each whole command (start-up,
imports, measuring, classifying, rendering) is taken, and the ratio with/without is printed per round and as
the ratio of the medians. Whole commands on a shared machine vary by tens of percent from run to run (the
time schedule re-measures points a burst of load slowed), so each run with memory also reports, from its JSON,
the seconds its points spent measuring memory (``extra["memory_seconds"]``) against the rest of its points'
wall time: the same run's own figure, which load moves far less. The modes are those memory is measured in
(torch's compile mode is left out: gcc runs of minutes per check, and memory there is a note, nothing
measured). The issue's bar: at most 1.2x; above it, memory is opt-in on that backend
(``Backend.memory_by_default``, docs/memory.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
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


def run_check(backend: str, modes: str, depths: str, memory: bool, budget: float) -> tuple[float, float, float]:
    """``(wall seconds of one adprof check, seconds its points spent measuring memory, its points' wall seconds)``
    (exit 0 or 1: a finding is not a failure of the run); the second and third from its JSON report (each point's
    ``extra["memory_seconds"]`` and ``wall_seconds``)."""
    with tempfile.TemporaryDirectory(prefix="adprof-memory-overhead-") as tmp:
        out = Path(tmp) / "report.json"
        seconds = _run(backend, modes, depths, memory, budget, out)
        points = [p for r in json.loads(out.read_text())["results"] for p in r["points"]]
    spent = sum(p["extra"].get("memory_seconds", 0.0) for p in points)
    return seconds, spent, sum(p.get("wall_seconds") or 0.0 for p in points)


def _run(backend: str, modes: str, depths: str, memory: bool, budget: float, out: Path) -> float:
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
        "--json",
        str(out),
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
        shares: list[float] = []
        for i in range(args.rounds):
            order = (True, False) if i % 2 == 0 else (False, True)
            for memory in order:
                secs, spent, point_walls = run_check(backend, modes, args.depths, memory, args.budget)
                (with_memory if memory else without).append(secs)
                if memory:
                    shares.append(spent / max(point_walls - spent, 1e-9))
            print(
                f"{backend:9s} round {i + 1}: with memory {with_memory[-1]:7.2f} s, without {without[-1]:7.2f} s, "
                f"ratio {with_memory[-1] / without[-1]:.3f}; memory's own seconds {shares[-1]:.1%} of the points' rest",
                flush=True,
            )
        ratio = statistics.median(with_memory) / statistics.median(without)
        pairs = statistics.median(a / b for a, b in zip(with_memory, without, strict=True))
        summary.append(
            (backend, modes, statistics.median(with_memory), statistics.median(without), ratio, pairs, max(shares))
        )
    print()
    print(
        f"{'backend':9s} {'modes':22s} {'with (median)':>14s} {'without':>10s} {'ratio':>7s} {'pairs':>7s} "
        f"{'own':>7s}  bar {BAR}"
    )
    for backend, modes, on, off, ratio, pairs, own in summary:
        verdict = "cheap: on by default" if 1 + own <= BAR else "over the bar: opt-in (--memory)"
        print(f"{backend:9s} {modes:22s} {on:12.2f} s {off:8.2f} s {ratio:7.3f} {pairs:7.3f} {1 + own:7.3f}  {verdict}")
    print(
        "ratio: median with / median without (whole commands); pairs: median of the rounds' ratios; own: 1 + the "
        "seconds the points spent measuring memory over the rest of their seconds, in the same run (the largest "
        "round): the cost without the load's noise"
    )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
