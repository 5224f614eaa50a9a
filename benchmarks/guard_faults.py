"""The guard's fault suite: chains and programs healthy up to a depth, then broken, under the real CLI.

    python benchmarks/guard_faults.py [--quick] [--jobs N] [--only KIND[,KIND]] [--json out.json]

Each variant is healthy at depths 1..k-1 and from depth k (2, 5 or 8 of the declared 1..8):

* ``hang``: spins forever (``while True: pass``); ``sleep``: sleeps an hour;
* ``jumpF`` (F = 10, 100, 1000, 10000): its own work costs F times more (the chain busy-waits F-1 times what its
  healthy forward took: a cost no engine counter sees);

on two backends: an engine chain file in the ``fixed`` profile (the engine's counters decide: the fault is in
the chain's own forward, which they do not see), and a ``--cmd`` program that reports its cost (time decides:
``transform_seconds`` of 1 ms per depth, multiplied by F from depth k, spent by sleeping). Each variant and its
healthy twin (the same without the fault) run under ``adprof guard`` with three budget/cap settings
(:data:`SETTINGS`). The suite passes when no variant passes the guard (exit 0) and every healthy twin does.

``--quick``: the faults at depth 5 only, one setting (the slow test's subset).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("hang", "sleep", "jump10", "jump100", "jump1000", "jump10000")
FAULT_DEPTHS = (2, 5, 8)
BACKENDS = ("engine", "cmd")
DEPTHS = tuple(range(1, 9))
#: (name, guard options): a tight budget, a budget with a cap that lets a hang run to its timeout, a roomy one.
SETTINGS = (
    ("budget 8", ("--budget", "8")),
    ("budget 15 cap 2", ("--budget", "15", "--cap", "2")),
    ("budget 40 cap 5", ("--budget", "40", "--cap", "5")),
)

CHAIN = '''
"""A guard fault: healthy below depth {k}, then {kind}."""

import time

import adprof

KIND, K = {kind!r}, {k}


def _fault(depth, spent):
    if KIND == "none" or depth < K:
        return
    if KIND == "hang":
        while True:
            pass
    if KIND == "sleep":
        time.sleep(3600)
    factor = float(KIND[4:])
    end = time.perf_counter() + (factor - 1.0) * spent
    while time.perf_counter() < end:
        pass


@adprof.chain(input_shape=(3, 3), depths={depths!r})
def fault(xp, x, depth):
    t0 = time.perf_counter()
    y = x
    for _ in range(depth):
        y = xp.sin(y) * 0.5 + y * 0.5
    _fault(depth, time.perf_counter() - t0)
    return xp.sum(y)
'''

PROGRAM = '''
"""A guard fault for --cmd: 1 ms per depth, healthy below depth {k}, then {kind}."""

import json
import sys
import time

KIND, K = {kind!r}, {k}
depth = int(sys.argv[1])
cost = 0.001 * depth
if KIND != "none" and depth >= K:
    if KIND == "hang":
        while True:
            pass
    if KIND == "sleep":
        time.sleep(3600)
    cost *= float(KIND[4:])
time.sleep(cost)
print(json.dumps({{"transform_seconds": cost}}))
'''


@dataclass
class Run:
    backend: str
    kind: str  # a fault kind, or "none" (the healthy twin)
    depth: int  # the fault's first depth
    setting: str
    exit: int
    seconds: float
    line: str  # the guard's first line

    @property
    def ok(self) -> bool:
        """A fault fails the guard (exit 1); a healthy twin passes it (exit 0)."""
        return self.exit == (0 if self.kind == "none" else 1)


def _write(tmp: Path, backend: str, kind: str, k: int) -> list[str]:
    """The variant's file, and the guard's target arguments for it."""
    name = f"{backend}_{kind}_{k}"
    if backend == "engine":
        path = tmp / f"{name}.py"
        path.write_text(textwrap.dedent(CHAIN.format(kind=kind, k=k, depths=DEPTHS)))
        return [f"{path}::fault", "--mode", "traced"]
    path = tmp / f"{name}_prog.py"
    path.write_text(textwrap.dedent(PROGRAM.format(kind=kind, k=k)))
    depths = ",".join(map(str, DEPTHS))
    return ["--cmd", f"{sys.executable} -S {path} {{depth}}", "--name", name, "--depths", depths]


def run_one(tmp: Path, backend: str, kind: str, k: int, setting: tuple[str, tuple[str, ...]]) -> Run:
    target = _write(tmp, backend, kind, k)
    cmd = [sys.executable, "-m", "adprof", "guard", *target, *setting[1], "--no-color", "--jobs", "1"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env={**os.environ, "COLUMNS": "200"})
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return Run(backend, kind, k, setting[0], proc.returncode, time.monotonic() - t0, lines[0] if lines else "")


def plan(quick: bool, only: list[str] | None) -> list[tuple[str, str, int, tuple[str, tuple[str, ...]]]]:
    kinds = [k for k in KINDS if not only or k in only]
    depths, settings = ((5,), SETTINGS[1:2]) if quick else (FAULT_DEPTHS, SETTINGS)
    runs = [(b, kind, k, s) for b in BACKENDS for kind in kinds for k in depths for s in settings]
    runs += [(b, "none", 1, s) for b in BACKENDS for _ in depths for s in settings]  # a twin per fault depth
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="variants run at once (each guard uses one worker)")
    ap.add_argument("--only", default="", help="fault kinds, comma-separated")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    only = [x for x in args.only.split(",") if x] or None
    todo = plan(args.quick, only)
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        runs = list(pool.map(lambda r: run_one(Path(d), *r), todo))
    faults = [r for r in runs if r.kind != "none"]
    twins = [r for r in runs if r.kind == "none"]
    for r in runs:
        mark = "ok  " if r.ok else "BAD "
        head = f"{mark} {r.backend:6} {r.kind:9} k={r.depth} [{r.setting}] exit {r.exit} {r.seconds:5.1f} s"
        print(f"{head}  {r.line[:110]}")
    passed = [r for r in faults if r.exit == 0]
    failed_twins = [r for r in twins if r.exit != 0]
    print(
        f"\n{len(faults)} fault runs ({len({(r.backend, r.kind, r.depth) for r in faults})} variants x "
        f"{len({r.setting for r in faults})} settings): {len(passed)} passed the guard (false passes); "
        f"{len(twins)} healthy-twin runs: {len(failed_twins)} failed it (false fails)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in runs], indent=1))
    return 0 if not passed and not failed_twins else 1


if __name__ == "__main__":
    sys.exit(main())
