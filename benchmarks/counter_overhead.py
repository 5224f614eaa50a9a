"""Counters on vs off: what the engine's instrumentation costs, measured side by side.

    python benchmarks/counter_overhead.py [--repeats 30]

"Off" is a copy of the engine package with every counter update removed (each
``COUNTERS.<name> += ...`` line and the local ``visits`` tally become no-ops), "on" an unchanged copy,
each imported fresh under another name; both run the same workloads interleaved in this process, on
the fixed profile:
record + grad transform of the mul chain at depth 200, eager forward + backward of the 400-layer sin
chain, and the prepared traced grad program of that chain. Ratios are medians on / off.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def engine_copy(counted: bool):
    """A fresh copy of the engine package imported under another name, with its counter updates
    (``counted``) or without them; returns the module and the number of updates removed.

    Comparing two fresh copies leaves counting as the only difference: the engine used by earlier
    workloads in the same process carries their state (grown intern and metadata tables, and CPython's
    per-instruction specializations tuned to other op mixes), which a fresh copy does not.
    """
    name = "engine_counted" if counted else "engine_nocount"
    tmp = Path(tempfile.mkdtemp(prefix=f"adprof-{name}-"))
    dst = tmp / name
    shutil.copytree(ROOT / "engine", dst, ignore=shutil.ignore_patterns("__pycache__"))
    removed = 0
    for path in [] if counted else dst.rglob("*.py"):
        text = path.read_text()
        new, n = re.subn(r"^(\s*)COUNTERS\.\w+ \+= .*$", r"\1pass", text, flags=re.M)
        new, m = re.subn(r"^(\s*)visits \+= 1$", r"\1pass", new, flags=re.M)
        removed += n + m
        path.write_text(new)
    sys.path.insert(0, str(tmp))
    return importlib.import_module(name), removed


def uncounted_engine():
    """The engine copy without counter updates (see :func:`engine_copy`)."""
    return engine_copy(counted=False)


def mul_transform(eng):
    xp = eng.numpy
    x = eng.input((3, 3))
    y = x
    for _ in range(200):
        y = (y * y) * 0.5
    eng.grad(xp.sum(y), x)


def sin_eager(eng, rt, xs):
    xp = eng.numpy
    x = rt.variable(xs)
    with rt.session():
        h = xp.sin(x)
        for _ in range(399):
            h = xp.sin(h)
        loss = xp.sum(h)
    loss.backward()


def sin_program(eng):
    xp = eng.numpy
    x = eng.input((10,))
    h = xp.sin(x)
    for _ in range(399):
        h = xp.sin(h)
    return eng.compile(eng.grad(xp.sum(h), x), inputs=[x]).prepare()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    on, _ = engine_copy(counted=True)
    off, removed = engine_copy(counted=False)
    print(f"uncounted copy: {removed} counter updates removed")
    xs = np.linspace(0.1, 1.0, 10)
    rts = {id(on): on.EagerRuntime(), id(off): off.EagerRuntime()}
    progs = {id(on): sin_program(on), id(off): sin_program(off)}
    work = {
        "record + grad, mul depth 200": lambda e: mul_transform(e),
        "eager fwd + bwd, sin depth 400": lambda e: sin_eager(e, rts[id(e)], xs),
        "prepared grad run, sin depth 400": lambda e: progs[id(e)](xs),
    }
    for name, fn in work.items():
        times = {id(on): [], id(off): []}
        for _ in range(args.repeats):
            for eng in (on, off):  # interleaved
                gc.collect()
                t0 = time.perf_counter()
                fn(eng)
                times[id(eng)].append(time.perf_counter() - t0)
        t_on, t_off = statistics.median(times[id(on)]), statistics.median(times[id(off)])
        print(f"{name:34s} on {t_on * 1e3:8.3f} ms  off {t_off * 1e3:8.3f} ms  ratio {t_on / t_off:5.3f}")


if __name__ == "__main__":
    main()
