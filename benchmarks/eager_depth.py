"""Seed-000/002-style eager timings: every backward equally slow (v08) or not (fixed).

    python benchmarks/eager_depth.py [--calls 50] [--depths 100,200,400]

Part 1: the deep sin chain (n = 10), each call on a fresh variable: call 0 forward/backward,
calls 1-4, and the median of all calls, per depth and profile; then the prepared traced grad
program at the same depth for comparison. Part 2: f(x) = sum(sin(x) x^2) for n = 10 .. 10^6:
eager forward + backward vs one run of the prepared traced gradient program (seed 002's table).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import engine
import engine.numpy as xnp


def eager_call(rt, xs, depth):
    x = rt.variable(xs)
    t0 = time.perf_counter()
    with rt.session():
        h = xnp.sin(x)
        for _ in range(depth - 1):
            h = xnp.sin(h)
        loss = xnp.sum(h)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def traced_program(depth, n):
    x = engine.input((n,))
    h = xnp.sin(x)
    for _ in range(depth - 1):
        h = xnp.sin(h)
    t0 = time.perf_counter()
    run = engine.compile(engine.grad(xnp.sum(h), x), inputs=[x]).prepare()
    return run, time.perf_counter() - t0


def deep_chain(depths, calls):
    xs = np.linspace(0.1, 1.0, 10)
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            for depth in depths:
                rt = engine.EagerRuntime()
                results = [eager_call(rt, xs, depth) for _ in range(calls)]
                print(f"[{profile}] depth {depth}, n 10")
                for i in range(5):
                    print(
                        f"  eager call {i}: forward {results[i][0] * 1e3:.3f} ms, backward {results[i][1] * 1e3:.3f} ms"
                    )
                fwd = statistics.median(r[0] for r in results)
                bwd = statistics.median(r[1] for r in results)
                print(f"  eager median of {calls}: forward {fwd * 1e3:.3f} ms, backward {bwd * 1e3:.3f} ms")
                run, build = traced_program(depth, 10)
                times = []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    run(xs)
                    times.append(time.perf_counter() - t0)
                print(
                    f"  traced: build + grad + compile + prepare {build * 1e3:.3f} ms, "
                    f"median of {calls} runs {statistics.median(times) * 1e3:.3f} ms"
                )


def vector_function(calls):
    print("f(x) = sum(sin(x) x^2), steady medians in us (eager fwd, eager bwd, eager sum, traced run)")
    for profile in ("v08", "fixed"):
        with engine.profile(profile):
            print(f"[{profile}]        n  eager fwd  eager bwd  eager sum     traced")
            for n in (10, 1000, 100_000, 1_000_000):
                xs = np.linspace(-2.0, 2.0, n)
                rt = engine.EagerRuntime()
                reps = calls if n <= 1000 else max(5, calls // 10)
                fwd, bwd = [], []
                for _ in range(reps):
                    x = rt.variable(xs)
                    t0 = time.perf_counter()
                    with rt.session():
                        loss = xnp.sum(xnp.sin(x) * x * x)
                    t1 = time.perf_counter()
                    loss.backward()
                    fwd.append(t1 - t0)
                    bwd.append(time.perf_counter() - t1)
                xt = engine.input((n,))
                run = engine.compile(engine.grad(xnp.sum(xnp.sin(xt) * xt * xt), xt), inputs=[xt]).prepare()
                tr = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    run(xs)
                    tr.append(time.perf_counter() - t0)
                f, b, t = (statistics.median(v) * 1e6 for v in (fwd[1:], bwd[1:], tr[1:]))
                print(f"[{profile}] {n:8d} {f:10.1f} {b:10.1f} {f + b:10.1f} {t:10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--depths", default="100,200,400")
    args = ap.parse_args()
    deep_chain([int(d) for d in args.depths.split(",")], args.calls)
    vector_function(args.calls)


if __name__ == "__main__":
    main()
