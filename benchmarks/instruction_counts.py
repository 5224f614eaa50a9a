"""Instructions per call of the engine's hot paths, counted by callgrind: deterministic, so a change can
be judged on a loaded machine where wall-time ratios swing by several percent.

    python benchmarks/instruction_counts.py [--runs 3] [WORKLOAD ...]

Each workload runs in a fresh ``valgrind --tool=callgrind`` process twice, once with one warm-up call
and once with the warm-up plus ``--runs`` calls; the difference divided by ``--runs`` is the count per
call (imports and set-up cancel out). ``PYTHONHASHSEED=0`` and one BLAS thread make the counts
repeatable. The ``off:`` workloads run the engine copy without counter updates
(``counter_overhead.py``), so ``on / off`` is the counting's own cost. Needs valgrind on PATH; takes
about a minute per workload.

Workloads: ``eager_fwd`` (the 400-layer sin chain's forward in a session, n = 10), ``eager_bwd`` (its
backward, a cache hit), ``first_grad`` (record + grad + compile + prepare + run of that chain, traced),
``record_grad`` (record + grad transform of the mul chain at depth 200), ``prepared_run`` (the
prepared gradient program of the sin chain), each also as ``off:NAME``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("eager_fwd", "eager_bwd", "first_grad", "record_grad", "prepared_run")
DEFAULT = ("eager_fwd", "eager_bwd", "first_grad", "record_grad", "off:record_grad", "prepared_run")


def _child(name: str, calls: int) -> None:
    """Run inside callgrind: set up ``name``, call it once to warm up, then ``calls`` more times."""
    import gc

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import engine

    if name.startswith("off:"):
        import counter_overhead

        engine, _ = counter_overhead.uncounted_engine()
        name = name[4:]
    from probes.chains import mul, sin

    xp = engine.numpy
    xs = sin.make_input()
    rt = engine.EagerRuntime()
    held: dict = {}

    def eager_forward() -> None:
        x = rt.variable(xs)
        with rt.session():
            held["loss"] = sin(xp, x, 400)

    def eager_backward() -> None:
        eager_forward()
        held["loss"].backward()

    def first_grad() -> None:
        x = engine.input(xs.shape)
        engine.compile(engine.grad(sin(xp, x, 400), x), inputs=[x]).prepare()(xs)

    def record_grad() -> None:
        x = engine.input((3, 3))
        engine.grad(mul(xp, x, 200), x)

    x = engine.input(xs.shape)
    prepared = engine.compile(engine.grad(sin(xp, x, 400), x), inputs=[x]).prepare()
    work = {
        "eager_fwd": eager_forward,
        "eager_bwd": eager_backward,  # counted as fwd + bwd; the report subtracts eager_fwd
        "first_grad": first_grad,
        "record_grad": record_grad,
        "prepared_run": lambda: prepared(xs),
    }[name]
    gc.collect()
    gc.freeze()
    gc.disable()  # no collection inside the counted calls (peers.py times with gc disabled too)
    with engine.profile("fixed"):
        for _ in range(calls + 1):
            work()


def _instructions(name: str, calls: int) -> int:
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__]
    done = subprocess.run([*cmd, "--child", name, str(calls)], env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{name}: callgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=list(DEFAULT), help=f"of {', '.join(WORKLOADS)} (or off:NAME)")
    ap.add_argument("--runs", type=int, default=3, help="calls counted per workload (after one warm-up)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    for name in args.workloads:
        if name.removeprefix("off:") not in WORKLOADS:
            print(f"unknown workload {name!r}; expected one of {', '.join(WORKLOADS)} (or off:NAME)", file=sys.stderr)
            return 2
    counts = {}
    for name in args.workloads:
        counts[name] = (_instructions(name, args.runs) - _instructions(name, 0)) // args.runs
        note = ""
        if name.removeprefix("off:") == "eager_bwd" and name.replace("eager_bwd", "eager_fwd") in counts:
            note = f"  (backward alone {counts[name] - counts[name.replace('eager_bwd', 'eager_fwd')]:,})"
        print(f"{name:18s} {counts[name]:>14,} instructions per call{note}", flush=True)
    for name in args.workloads:
        if name.startswith("off:") and name[4:] in counts:
            print(f"counters on / off, {name[4:]}: {counts[name[4:]] / counts[name]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
