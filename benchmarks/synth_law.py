"""A synthetic ``--cmd`` program with a known cost law of depth, for the end-to-end accuracy runs.

    python -S benchmarks/synth_law.py LAW DEPTH [--a A] [--c C] [--noise L] [--seed S] [--state DIR] [--hang-after T]
        [--bimodal P,LO,HI]

It prints the ``--cmd`` protocol line ``{"depth": d, "transform_seconds": 0.6*t, "drop_seconds": 0.4*t}``
with ``t = (a + c*f(d)) * noise``, and returns at once: the seconds are *reported*, not spent (adprof
charges a point the larger of its wall time and the seconds it reports, so its budget sees the cost a
real program of this law would have; see ``adprof.measure.series``). No numpy: a run costs only the
interpreter's start-up. A run whose cost passes ``--hang-after`` seconds (adprof's timeout: 4x the cap)
does spend it, sleeping until adprof kills it, as a real program that slow would be killed.

Laws ``f(d)``: ``linear`` (d), ``nlogn`` (d*ln(d+1)), ``p1.5`` (d^1.5), ``p2`` (d^2), ``p3`` (d^3),
``exp1.3`` / ``exp1.5`` / ``exp2`` / ``exp3`` (b^d), ``const`` (0), and knees: ``knee-p2-K`` (linear to K, then a
quadratic sets in) and ``knee-exp-K`` (then an exponential), K in 16, 32, 48. ``a`` is the fixed overhead, ``c`` the
scale.

Noise: right-skewed and bursty, as on a loaded machine. At level ``L`` (``--noise``) a run is slowed
by ``U(0, 0.06*L)`` three times in four and by ``U(0, 0.9*L)`` once in four (level 1: most runs
+0..6%, one in four up to +90%); interference only ever slows a run. Deterministic: the draw depends
on ``--seed``, the depth and how many times this depth already ran under ``--state DIR`` (a counter file
per depth; without ``--state`` every run of a depth draws the same), so a failing trial replays
exactly from its seed with an empty state directory. ``--bimodal P,LO,HI`` adds a second mode: one run in 1/P is
slower by ``U(LO, HI)`` (``0.2,0.3,0.6``: one in five 30-60% slower, as with a CPU frequency step).
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import time

LAWS = {
    "const": lambda d: 0.0,
    "linear": lambda d: float(d),
    "nlogn": lambda d: d * math.log(d + 1.0),
    "p1.5": lambda d: d**1.5,
    "p2": lambda d: float(d) ** 2,
    "p3": lambda d: float(d) ** 3,
    "exp1.3": lambda d: 1.3**d,
    "exp1.5": lambda d: 1.5**d,
    "exp2": lambda d: 2.0**d,
    "exp3": lambda d: 3.0**d,
}
#: Knees: linear up to depth K, then a quadratic (``knee-p2-K``: d + (d-K)^2/K) or an exponential
#: (``knee-exp-K``: d + K*(1.25^(d-K) - 1)/10) sets in.
for _k in (16, 32, 48):
    LAWS[f"knee-p2-{_k}"] = lambda d, k=_k: d + max(0.0, d - k) ** 2 / k
    LAWS[f"knee-exp-{_k}"] = lambda d, k=_k: d + k * (1.25 ** max(0.0, d - k) - 1.0) / 10.0
BURST_SHARE = 0.25  # one run in four is hit by a burst
STEADY_SPAN = 0.06  # at level 1: +0..6% for most runs
BURST_SPAN = 0.9  # at level 1: up to +90% in a burst


def cost(law: str, depth: int, a: float, c: float) -> float:
    """The noiseless cost (seconds) of ``law`` at ``depth``."""
    try:
        return a + c * LAWS[law](depth)
    except OverflowError:
        return math.inf


def noise_factor(level: float, rng: random.Random) -> float:
    """The factor (>= 1) a run is slowed by at noise ``level``."""
    span = BURST_SPAN if rng.random() < BURST_SHARE else STEADY_SPAN
    return 1.0 + level * span * rng.random()


def _run_count(state: str | None, depth: int) -> int:
    """How many times this depth ran before under ``state`` (and count this run)."""
    if not state:
        return 0
    os.makedirs(state, exist_ok=True)
    path = os.path.join(state, f"d{depth}")
    try:
        with open(path) as f:
            n = int(f.read() or 0)
    except FileNotFoundError:
        n = 0
    with open(path, "w") as f:
        f.write(str(n + 1))
    return n


def _args(argv: list[str]) -> dict[str, str]:
    opts = {
        "--a": "0",
        "--c": "1e-3",
        "--noise": "0",
        "--seed": "0",
        "--state": "",
        "--hang-after": "inf",
        "--bimodal": "",
    }
    pos: list[str] = []
    it = iter(argv)
    for x in it:
        if x in opts:
            opts[x] = next(it, "")
        else:
            pos.append(x)
    if len(pos) != 2 or pos[0] not in LAWS:
        raise SystemExit(f"usage: synth_law.py LAW DEPTH [--a A] [--c C] [--noise L] [--seed S]; LAW in {sorted(LAWS)}")
    opts["law"], opts["depth"] = pos
    return opts


def main(argv: list[str]) -> int:
    o = _args(argv)
    depth = int(o["depth"])
    n = _run_count(o["--state"] or None, depth)
    rng = random.Random(f"{o['--seed']}:{depth}:{n}")
    t = cost(o["law"], depth, float(o["--a"]), float(o["--c"])) * noise_factor(float(o["--noise"]), rng)
    if o["--bimodal"]:  # a second mode: one run in 1/P slower by U(LO, HI), as with a CPU frequency step
        share, lo, hi = (float(x) for x in o["--bimodal"].split(","))
        if rng.random() < share:
            t *= 1.0 + lo + (hi - lo) * rng.random()
    split = 0.6 + 0.02 * (rng.random() - 0.5)  # transform's share, jittered a little
    if t > float(o["--hang-after"]):  # a real program this slow is killed at adprof's timeout: so is this one
        time.sleep(min(t, 3600.0))
    if not math.isfinite(t):
        t = 1e300
    print(json.dumps({"depth": depth, "transform_seconds": split * t, "drop_seconds": (1 - split) * t}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
