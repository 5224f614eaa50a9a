"""Seed-001-style table: the grad transform of six chains, per layer, in both engine profiles.

    python benchmarks/transform_scaling.py [--cap 1.5] [--profiles v08,fixed] [--chains mul,cube,...]

Each chain runs at depth 1, 2, 3, ... until one transform takes longer than the cap. Columns:
depth, value ops, transform ms, per-layer ratio (this transform time / the previous one),
derivative ops (reachable from the gradient / rebuilt and registered: v08 keeps every replayed
forward equation), drop ms (deleting the derivative graph), key comparisons during the transform.
Then the fixed profile's transform cost per derivative op at depth 200.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine
import engine.numpy as xnp
from probes import chains

SIX = ("mul", "cube", "svd1", "svd2", "svd3", "qr2")


def measure(chain, depth):
    gc.collect()
    x = engine.input(chain.input_shape or (3, 3))
    y = chain(xnp, x, depth)
    value_ops = engine.value_op_count([y])
    gc.disable()
    try:
        with engine.counters.measure() as m:
            t0 = time.perf_counter()
            g = engine.grad(y, x)
            transform = time.perf_counter() - t0
        derivative_ops = engine.value_op_count([g])
        t0 = time.perf_counter()
        del g
        drop = time.perf_counter() - t0
    finally:
        gc.enable()
    return value_ops, transform, (derivative_ops, m.derivative_ops_rebuilt), drop, m.key_comparisons


def table(name, profile, cap, max_depth):
    chain = getattr(chains, name)
    prev = None
    prev_ops = None
    with engine.profile(profile):
        for depth in range(1, max_depth + 1):
            vops, tr, (dops, rebuilt), drop, kc = measure(chain, depth)
            ratio = f"{tr / prev:5.2f}" if prev else "    -"
            per_layer = f"(+{dops - prev_ops[0]}/+{rebuilt - prev_ops[1]})" if prev_ops else ""
            print(
                f"{profile:5s} {name:5s} grad n={depth:<3d} value ops {vops:5d}  grad {tr * 1e3:9.2f} ms  "
                f"ratio {ratio}  derivative ops {dops:5d}/{rebuilt:5d} {per_layer:11s} drop {drop * 1e3:9.2f} ms  "
                f"key comparisons {kc}"
            )
            prev = tr
            prev_ops = (dops, rebuilt)
            if tr > cap:
                print(f"{profile:5s} {name:5s}: stopped after n={depth} (transform > {cap * 1e3:.0f} ms cap)")
                return
        print(f"{profile:5s} {name:5s}: reached n={max_depth} without hitting the cap")


def per_op_cost(depth=200, repeats=5):
    with engine.profile("fixed"):
        for name in SIX:
            chain = getattr(chains, name)
            times = []
            for _ in range(repeats):
                _, tr, (dops, _), _, _ = measure(chain, depth)
                times.append(tr)
            best = sorted(times)[len(times) // 2]
            print(
                f"fixed {name:5s} depth {depth}: transform {best * 1e3:7.2f} ms for {dops} derivative ops "
                f"= {best / dops * 1e6:6.2f} us per op"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cap", type=float, default=1.5)
    ap.add_argument("--profiles", default="v08,fixed")
    ap.add_argument("--chains", default=",".join(SIX))
    ap.add_argument("--max-depth", type=int, default=25, help="the fixed profile stops here (no cap hit)")
    args = ap.parse_args()
    for profile in args.profiles.split(","):
        for name in args.chains.split(","):
            table(name, profile, args.cap, args.max_depth if profile == "fixed" else 200)
    per_op_cost()


if __name__ == "__main__":
    main()
