"""How often a verdict flips with the machine's load: the real CLI, run N times per series, with a busy loop on the
other core and on a quiet machine (as quiet as a shared machine gets).

    python benchmarks/flip_rate.py [--runs 3] [--only torch-eager,jax-compile/mlp] [--conditions busy,quiet] [--json F]

Each series is a guard (``python -m adprof guard FILE::CHAIN --backend B --mode M --json ...``; the memory series a
``check ... --memory --json``): healthy and pathological time-decided series on torch eager, JAX compile, torch
compile and tinygrad, and the memory verdicts of torch traced and eager. Per series and condition it reports how
often the verdict kind (the memory kind for the memory series) and the exit status agree with their majority, and
the distinct kinds seen. The busy loop is a ``while True`` process this script starts and ends (by its pid).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLIP = str(ROOT / "benchmarks" / "flip_chains.py")
WILD = str(ROOT / "probes" / "wild.py")


@dataclass(frozen=True)
class Case:
    """One series: its group (backend and mode), whether it is healthy, the command's arguments."""

    group: str
    name: str
    healthy: bool
    args: tuple[str, ...]
    memory: bool = False  # the memory verdict is the one read (check --memory)


CASES = [
    Case("torch-eager", "mlp", True, ("guard", f"{FLIP}::mlp", "--backend", "torch", "--mode", "eager")),
    Case("torch-eager", "gated", True, ("guard", f"{FLIP}::gated", "--backend", "torch", "--mode", "eager")),
    Case(
        "torch-eager",
        "dense_history",
        False,
        ("guard", f"{WILD}::dense_history", "--backend", "torch", "--mode", "eager"),
    ),
    Case("jax-compile", "mlp", True, ("guard", f"{FLIP}::mlp", "--backend", "jax", "--mode", "compile")),
    Case(
        "jax-compile",
        "unrolled_loop",
        False,
        ("guard", f"{WILD}::unrolled_loop", "--backend", "jax", "--mode", "compile", "--cap", "5", "--budget", "360"),
    ),
    Case(
        "torch-compile",
        "mlp",
        True,
        ("guard", f"{FLIP}::mlp", "--backend", "torch", "--mode", "compile", "--depths", "2,4,8,16"),
    ),
    Case(
        "torch-compile",
        "fibonacci_compile",
        False,
        ("guard", f"{WILD}::fibonacci_compile", "--backend", "torch", "--mode", "compile", "--budget", "300"),
    ),
    Case("tinygrad", "mlp", True, ("guard", f"{FLIP}::mlp", "--backend", "tinygrad", "--mode", "eager")),
    *(
        Case(
            "memory",
            f"{name}[torch {mode}]",
            True,
            ("check", f"{FLIP}::{name}", "--backend", "torch", "--mode", mode, "--memory", "--depths", "2,4,8,16")
            + ("--cap", "10"),
            memory=True,
        )
        for name in ("mlp", "gated", "linear_relu")
        for mode in ("traced", "eager")
    ),
]


@dataclass
class Tally:
    """The outcomes of one series under one condition."""

    kinds: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @staticmethod
    def agree(xs: list) -> int:
        return collections.Counter(xs).most_common(1)[0][1] if xs else 0


def run_case(case: Case, budget: float) -> tuple[str, int, float]:
    """One run through the real CLI: (the verdict kind, or the memory kind; the exit status; seconds)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        args = [*case.args, "--json", str(out), "--no-color"]
        if "--budget" not in args:
            args += ["--budget", str(budget)]
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "adprof", *args],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
        )
        secs = time.monotonic() - t0
        try:
            results = json.loads(out.read_text())["results"]
        except (OSError, ValueError, KeyError):
            return f"no-json({proc.stderr.strip().splitlines()[-1:] or '?'})", proc.returncode, secs
        r = results[0]
        kind = (r.get("memory") or {}).get("kind", "-") if case.memory else r["verdict"]
        return kind, proc.returncode, secs


def busy_loop() -> subprocess.Popen:
    """A process spinning on a core (this script ends it by its pid)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated groups, series names or group/name")
    ap.add_argument("--conditions", default="busy,quiet")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    cases = [c for c in CASES if not only or c.group in only or c.name in only or f"{c.group}/{c.name}" in only]
    table: dict[tuple[str, str, str], Tally] = {}
    for cond in a.conditions.split(","):
        spinner = busy_loop() if cond == "busy" else None
        try:
            for i in range(a.runs):  # interleaved: one run of every series per round
                for c in cases:
                    kind, code, secs = run_case(c, a.budget)
                    t = table.setdefault((c.group, c.name, cond), Tally())
                    t.kinds.append(kind)
                    t.codes.append(code)
                    t.seconds.append(secs)
                    load = os.getloadavg()[0]
                    print(f"{cond} run {i + 1} {c.group}/{c.name}: {kind} exit {code} ({secs:.0f} s, load {load:.1f})")
                    sys.stdout.flush()
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    print()
    print("| series | healthy | condition | runs | verdict agrees | exit agrees | kinds seen | exits |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for (group, name, cond), t in table.items():
        case = next(c for c in cases if c.group == group and c.name == name)
        kinds = ", ".join(f"{k} x{n}" for k, n in collections.Counter(t.kinds).most_common())
        exits = ", ".join(f"{k} x{n}" for k, n in collections.Counter(t.codes).most_common())
        n = len(t.kinds)
        print(
            f"| {group} {name} | {'yes' if case.healthy else 'no'} | {cond} | {n} | {Tally.agree(t.kinds)}/{n} | "
            f"{Tally.agree(t.codes)}/{n} | {kinds} | {exits} |"
        )
        rows.append({"group": group, "name": name, "condition": cond, "kinds": t.kinds, "codes": t.codes})
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
