"""Confusion matrix of adprof's time classifier over a grid of synthetic laws and noise levels.

Each trial draws a series as adprof's schedule measures a cheap time series (2^(1/3) depth steps from 8,
at least to 128 and on until the cost is 30x the first point's or depth 2048, for power laws; unit steps
from 1 until the cost reaches the cap for exponentials; 5 repeats per depth, lognormal noise, one repeat
in ten hit by a x2-x5 load burst) and classifies it with
``adprof.analysis.growth.fit_growth``, the function that decides verdicts on wall time.

    python benchmarks/classifier_accuracy.py [--trials 30] [--markdown]

The script checks the acceptance rules and exits 1 when one is broken: no exponential or superlinear law
called linear, no linear law called superlinear or exponential.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter

import numpy as np

from adprof.analysis.growth import fit_growth

DOUBLING = [8, 11, 16, 23, 32, 45, 64, 91, 128]
KINDS = ("linear", "mild", "superlinear", "exponential", "inconclusive")
NOISE = (0.0, 0.05, 0.15, 0.3)


def _power(p: float, overhead: float, log: bool = False):
    c = 1.0 / (128**p * (math.log(128) if log else 1.0))
    return lambda d: overhead + c * d**p * (math.log(d) if log else 1.0)


LAWS: dict[str, tuple[str, object, str]] = {
    # name: (expected class, law, schedule)
    "linear": ("linear", _power(1.0, 0.0), "doubling"),
    "linear + overhead": ("linear", _power(1.0, 2.0), "doubling"),
    "n log n": ("mild", _power(1.0, 0.0, log=True), "doubling"),
    "n log n + overhead": ("mild", _power(1.0, 2.0, log=True), "doubling"),
    "d^1.5": ("superlinear", _power(1.5, 0.0), "doubling"),
    "d^1.5 + overhead": ("superlinear", _power(1.5, 1.0), "doubling"),
    "d^2": ("superlinear", _power(2.0, 0.0), "doubling"),
    "d^2 + overhead": ("superlinear", _power(2.0, 1.0), "doubling"),
    "1.3^d": ("exponential", lambda d: 1.3**d, "unit"),
    "2^d": ("exponential", lambda d: 2.0**d, "unit"),
    "3^d": ("exponential", lambda d: 3.0**d, "unit"),
    "2^d + overhead": ("exponential", lambda d: 50.0 + 2.0**d, "unit"),
}


def _depths(law, schedule: str) -> list[int]:
    """Depths as the schedule would measure them: 2^(1/3) steps from 8 until the cost is 30x the first
    point's (the cap) or depth 2048; unit steps from 1 for exponentials until 3000x."""
    if schedule == "doubling":
        depths = sorted({round(8 * 2 ** (k / 3)) for k in range(0, 25)})
        return [d for d in depths if d <= 128 or law(d) <= 30 * law(8)]
    start = law(1)
    return [d for d in range(1, 41) if law(d) <= 3000 * start][:24]


def trial(law, schedule: str, sigma: float, rng: np.random.Generator, seed: int) -> str:
    depths = _depths(law, schedule)
    values = []
    for d in depths:
        reps = [law(d) * math.exp(rng.normal(0.0, sigma)) for _ in range(5)]
        if rng.random() < 0.1:
            reps[int(rng.integers(0, 5))] *= float(rng.uniform(2, 5))
        values.append(reps)
    return fit_growth(depths, values, source="time", seed=seed).kind


def violations(expected: str, counts: Counter) -> list[str]:
    bad = []
    if expected in ("superlinear", "exponential") and counts["linear"]:
        bad.append(f"{counts['linear']} called linear")
    if expected == "linear" and (counts["superlinear"] or counts["exponential"]):
        bad.append(f"{counts['superlinear'] + counts['exponential']} called superlinear/exponential")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown (for README)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(20261201)
    t0 = time.perf_counter()
    rows, broken = [], []
    for name, (expected, law, schedule) in LAWS.items():
        for sigma in NOISE:
            counts = Counter(trial(law, schedule, sigma, rng, seed) for seed in range(args.trials))
            rows.append((name, expected, sigma, counts))
            broken += [f"{name} at noise {sigma}: {v}" for v in violations(expected, counts)]
    sep = " | " if args.markdown else "  "
    head = ["law", "expected", "noise", *KINDS]
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print(f"{'law':20s}{'expected':13s}{'noise':>6s}  " + "  ".join(f"{k:>12s}" for k in KINDS))
    for name, expected, sigma, counts in rows:
        cells = [str(counts[k]) for k in KINDS]
        if args.markdown:
            print("| " + sep.join([name, expected, f"{sigma:g}", *cells]) + " |")
        else:
            print(f"{name:20s}{expected:13s}{sigma:6g}  " + "  ".join(f"{c:>12s}" for c in cells))
    n = len(rows) * args.trials
    print(f"\n{n} trials in {time.perf_counter() - t0:.1f} s; {args.trials} per cell, 5 repeats per depth")
    for b in broken:
        print("BROKEN:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
