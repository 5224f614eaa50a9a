"""Time-decided linear chains, run by run: torch eager (or another time-decided backend) on the standard
linear chains and the diamonds must read ``linear`` (never a pathology), on a quiet machine and under load.

    python benchmarks/eager_linear.py [--runs 10] [--backend torch] [--busy] [--chains sin,linear,...]

Each run is ``python -m adprof check FILE::CHAIN --backend B --mode eager --json -`` (the real CLI, its
default budget). ``--busy`` keeps a busy loop spinning on another core for the whole run (a loaded
machine). The table counts verdicts per chain; the script exits 1 when any run reads a pathology
(superlinear or exponential), and says how loaded the machine was (load average before and after).

For the acceptance figure ("10 of 10 linear on a quiet machine"): run it with nothing else on the machine,
``python benchmarks/eager_linear.py --runs 10``, then ``--busy`` for "never a pathology under load".
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAINS = {
    "sin": "probes/chains.py::sin",
    "linear": "probes/chains.py::linear",
    "matmul": "probes/chains.py::matmul",
    "diamond2": "benchmarks/linear_diamonds.py::diamond2",
    "diamond3": "benchmarks/linear_diamonds.py::diamond3",
}
PATHOLOGY = ("superlinear", "exponential")


def _spin(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def run_check(target: str, backend: str, budget: float | None) -> dict:
    argv = [sys.executable, "-m", "adprof", "check", target, "--backend", backend, "--mode", "eager"]
    argv += ["--no-color", "--json", "-"] + (["--budget", f"{budget:g}"] if budget else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=(budget or 60) + 120)
    wall = time.monotonic() - t0
    try:
        r = json.loads(done.stdout)["results"][0]
    except (json.JSONDecodeError, KeyError, IndexError):
        return {"verdict": "error", "interval": (done.stderr.strip().splitlines() or ["?"])[-1][:120], "wall": wall}
    depths = sorted({p["depth"] for p in r.get("points") or []})
    return {
        "verdict": r["verdict"],
        "interval": r.get("interval_text") or "",
        "wall": wall,
        "points": len(r.get("points") or []),
        "depths": f"{depths[0]}..{depths[-1]}" if depths else "-",
        "reason": (r.get("fit") or {}).get("reason", "")[:120],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--backend", default="torch")
    ap.add_argument("--chains", default=",".join(CHAINS))
    ap.add_argument("--busy", action="store_true", help="spin a busy loop on another core meanwhile")
    ap.add_argument("--budget", type=float, default=None, help="--budget of each check (default: adprof's)")
    args = ap.parse_args(argv)
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,), daemon=True) if args.busy else None
    load0 = os.getloadavg()
    if spinner is not None:
        spinner.start()
    results: dict[str, list[dict]] = defaultdict(list)
    try:
        for k in range(args.runs):
            for name in args.chains.split(","):
                res = run_check(CHAINS.get(name, name), args.backend, args.budget)
                results[name].append(res)
                print(
                    f"run {k + 1}: {name:9s} {res['verdict']:22s} {res['interval']:24s} {res.get('depths', ''):>9s} "
                    f"{res.get('points', 0):4d} pts {res['wall']:5.1f} s {res.get('reason', '')}",
                    flush=True,
                )
    finally:
        stop.set()
        if spinner is not None:
            spinner.join(timeout=5)
    load1 = os.getloadavg()
    print(
        f"\nload average (1, 5, 15 min) before {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}, after "
        f"{load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}; cpus {os.cpu_count()}; busy loop: {bool(args.busy)}"
    )
    bad = 0
    for name, rs in results.items():
        counts = Counter(r["verdict"] for r in rs)
        bad += sum(n for v, n in counts.items() if any(p in v for p in PATHOLOGY))
        print(f"{name:9s} " + ", ".join(f"{v} {n}/{len(rs)}" for v, n in counts.most_common()))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
