"""How often a verdict flips with the machine's load: the real CLI, run N times per series, with a busy loop on the
other core and on a quiet machine (as quiet as a shared machine gets).

    python benchmarks/flip_rate.py [--runs 3] [--only torch-eager,jax-compile/mlp] [--conditions busy,quiet] [--json F]

Each series is a guard (``python -m adprof guard FILE::CHAIN --backend B --mode M --json ...``; the memory series a
``check ... --memory --json``): healthy and pathological time-decided series on torch eager, JAX compile, torch
compile and tinygrad, and the memory verdicts of torch traced and eager. Per series and condition it reports how
often the verdict kind (the memory kind for the memory series) and the exit status agree with their majority, and
the distinct kinds seen. The busy loop is a ``while True`` process this script starts and ends (by its pid). Every
run records the load average (1 min) when it ended.

Side by side in one run (issue #35: which measuring techniques resist load on this machine):

* ``--trees main=/work/main,this=.``: each run of a series is made with each source tree in turn (interleaved),
  e.g. without and with the round-robin passes over fixed depths;
* ``--reread``: each guard run's JSON is decided again offline (``build_report`` on its own points) under
  variants of the time reading, from the very same measurements: ``1 pass`` (the first pass over the depths
  only: no interleaved repeats), ``wall`` (every pass, wall clock, the lower envelope: the least run of each
  depth), ``cpu`` (the same runs' thread CPU time, ``Point.cpu_samples``), ``wall lq`` / ``cpu lq`` (the lower
  quartile of each depth's runs instead of the least one: no envelope), ``cpu 1 pass``. Each variant's verdict
  kind and guard outcome (the default limits, as the guard holds them) are tallied like the runs'.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    Case("torch-eager", "hooked", False, ("guard", f"{FLIP}::hooked", "--backend", "torch", "--mode", "eager")),
    # quadratic in its own arithmetic (every layer reads every earlier one): against its program it is linear and
    # the default guard holds it (issue #34); the raw growth is the pathology held here, and the autograd graph's
    # node count (deterministic) decides it, not time
    Case(
        "torch-eager",
        "dense_history",
        False,
        ("guard", f"{WILD}::dense_history", "--backend", "torch", "--mode", "eager", "--absolute"),
    ),
    # a compile of ~0.1-0.2 s per depth under an overhead of 0.1 s: the re-measure an open reading needs is ~50 s
    Case(
        "jax-compile",
        "mlp",
        True,
        ("guard", f"{FLIP}::mlp", "--backend", "jax", "--mode", "compile", "--budget", "300"),
    ),
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
        # every point compiles the gradient and the forward (gcc, seconds each): the guard's own budget, not 60 s
        ("guard", f"{FLIP}::mlp", "--backend", "torch", "--mode", "compile", "--depths", "2,4,8,16", "--budget", "300"),
    ),
    Case(
        "torch-compile",
        "fibonacci_compile",
        False,
        ("guard", f"{WILD}::fibonacci_compile", "--backend", "torch", "--mode", "compile", "--budget", "300"),
    ),
    # the zoo's time-decided cases as `adprof check probes/wild.py` reads them (their documented verdicts: docs/wild.md)
    Case(
        "zoo",
        "unrolled_loop",
        False,
        ("check", f"{WILD}::unrolled_loop", "--backend", "jax", "--mode", "compile", "--budget", "360"),
    ),
    # tinygrad's backward costs 40-500 ms a call at depths 2-16 under load (depth 64 alone is past a 60 s budget)
    Case(
        "tinygrad",
        "mlp",
        True,
        ("guard", f"{FLIP}::mlp", "--backend", "tinygrad", "--mode", "eager", "--depths", "2,4,8,16"),
    ),
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
    """The outcomes of one series under one condition (and one tree or re-read variant)."""

    kinds: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    @staticmethod
    def agree(xs: list) -> int:
        return collections.Counter(xs).most_common(1)[0][1] if xs else 0


@dataclass
class Outcome:
    """One run through the real CLI."""

    kind: str
    code: int
    seconds: float
    report: dict[str, Any] | None  # the --json report (None: none was written)


def run_case(case: Case, budget: float, root: Path = ROOT) -> Outcome:
    """One run through the real CLI with ``root``'s source tree (the verdict kind, or the memory kind; the exit
    status; seconds; the JSON report)."""
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
            env={**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"},
        )
        secs = time.monotonic() - t0
        try:
            data = json.loads(out.read_text())
            results = data["results"]
        except (OSError, ValueError, KeyError):
            return Outcome(f"no-json({proc.stderr.strip().splitlines()[-1:] or '?'})", proc.returncode, secs, None)
        r = results[0]
        kind = (r.get("memory") or {}).get("kind", "-") if case.memory else r["verdict"]
        return Outcome(kind, proc.returncode, secs, data)


# --------------------------------------------------------------------------- offline re-reads of one run


def _first_pass(series: Any) -> None:
    """Only the first pass over the depths (no interleaved repeats)."""
    series.points = [p for p in series.points if p.scheduled == ""]


def _cpu_clock(series: Any) -> None:
    """The runs' thread CPU seconds in place of their wall seconds (phases without CPU samples dropped)."""
    from adprof.model import lower_quartile

    for p in series.points:
        for ph in list(p.times):
            cpu = p.cpu_samples.get(ph)
            if cpu and len(cpu) == len(p.samples.get(ph, cpu)):
                p.samples[ph] = list(cpu)
                p.times[ph] = lower_quartile(cpu)
            else:
                p.times.pop(ph)
                p.samples.pop(ph, None)
        p.extra.pop("backward_calls", None)
        p.extra.pop("backward_cpu_calls", None)  # the CPU check would compare CPU with itself


@contextlib.contextmanager
def _statistic(percentile: float) -> Iterator[None]:
    """The per-depth statistic of the noisy fit set to ``percentile`` (0: the lower envelope, the least run), and
    adprof's own choice of the CPU clock off (a variant reads the wall clock, or swaps the CPU time in itself)."""
    from adprof.analysis import costs, models

    kept = models.STAT_PERCENTILE, getattr(costs, "CPU_CLOCK_ON", False)
    models.STAT_PERCENTILE = percentile
    costs.CPU_CLOCK_ON = False
    try:
        yield
    finally:
        models.STAT_PERCENTILE, costs.CPU_CLOCK_ON = kept


#: The re-read variants: name -> (series edits, the per-depth percentile).
VARIANTS: dict[str, tuple[tuple[Callable[[Any], None], ...], float]] = {
    "1 pass": ((_first_pass,), 0),
    "wall": ((), 0),
    "wall lq": ((), 25),
    "cpu": ((_cpu_clock,), 0),
    "cpu lq": ((_cpu_clock,), 25),
    "cpu 1 pass": ((_first_pass, _cpu_clock), 0),
}


def reread(report: dict[str, Any], variants: list[str]) -> dict[str, tuple[str, int]]:
    """Each variant's (verdict kind, guard exit: 0 held, 1 not) of a guard run's report, decided again offline."""
    from adprof.guard.checks import check_result, tolerance_for
    from adprof.guard.limits import GuardLimits
    from adprof.render.jsonout import load_report
    from adprof.report import build_report

    series = load_report(report).results[0].series
    out: dict[str, tuple[str, int]] = {}
    for name in variants:
        edits, percentile = VARIANTS[name]
        s = copy.deepcopy(series)
        for edit in edits:
            edit(s)
        if not s.points:
            out[name] = ("no-points", 2)
            continue
        with _statistic(percentile):
            result = build_report([s], {}).results[0]
        ok = check_result(result, GuardLimits(), tolerance_for(result)).ok
        out[name] = (str(result.verdict.kind), 0 if ok else 1)
    return out


def busy_loop() -> subprocess.Popen:
    """A process spinning on a core (this script ends it by its pid)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def parse_trees(text: str) -> dict[str, Path]:
    """``label=path,label=path`` (empty: this tree as ``this``)."""
    trees: dict[str, Path] = {}
    for item in filter(None, text.split(",")):
        label, _, path = item.partition("=")
        trees[label] = Path(path or label).resolve()
    return trees or {"this": ROOT}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated groups, series names or group/name")
    ap.add_argument("--conditions", default="busy,quiet")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--trees", default="", help="label=path,... source trees run side by side (default: this one)")
    ap.add_argument("--reread", default="", help=f"comma-separated offline re-read variants: {', '.join(VARIANTS)}")
    ap.add_argument("--json", default="")
    ap.add_argument("--keep", default="", help="a directory: every run's JSON report is kept there")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    cases = [c for c in CASES if not only or c.group in only or c.name in only or f"{c.group}/{c.name}" in only]
    trees = parse_trees(a.trees)
    variants = [v for v in a.reread.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown re-read variant(s) {', '.join(unknown)} (known: {', '.join(VARIANTS)})")
    table: dict[tuple[str, str, str, str], Tally] = {}
    rows: list[dict[str, Any]] = []

    def tally(c: Case, cond: str, how: str, kind: str, code: int, secs: float, load: float) -> None:
        t = table.setdefault((c.group, c.name, cond, how), Tally())
        t.kinds.append(kind)
        t.codes.append(code)
        t.seconds.append(secs)
        t.loads.append(load)

    for cond in a.conditions.split(","):
        spinner = busy_loop() if cond == "busy" else None
        try:
            for i in range(a.runs):  # interleaved: one run of every series (and tree) per round
                for c in cases:
                    for label, root in trees.items():
                        o = run_case(c, a.budget, root)
                        load = os.getloadavg()[0]
                        how = label if len(trees) > 1 else "run"
                        tally(c, cond, how, o.kind, o.code, o.seconds, load)
                        row = {"group": c.group, "name": c.name, "condition": cond, "tree": label, "run": i + 1}
                        row.update(kind=o.kind, code=o.code, seconds=round(o.seconds, 1), load=load)
                        line = f"{cond} run {i + 1} {c.group}/{c.name} [{label}]: {o.kind} exit {o.code}"
                        line += f" ({o.seconds:.0f} s, load {load:.1f})"
                        if variants and o.report is not None and not c.memory:
                            try:
                                again = reread(o.report, variants)
                            except Exception as exc:  # a re-read that fails is reported, never fatal
                                again = {v: (f"error({type(exc).__name__})", 2) for v in variants}
                            for v, (k, code) in again.items():
                                tally(
                                    c,
                                    cond,
                                    f"{label} re-read {v}" if len(trees) > 1 else f"re-read {v}",
                                    k,
                                    code,
                                    0.0,
                                    load,
                                )
                            row["reread"] = {v: list(kc) for v, kc in again.items()}
                            line += "; " + ", ".join(f"{v}: {k} {code}" for v, (k, code) in again.items())
                        if a.keep and o.report is not None:
                            keep = Path(a.keep) / f"{cond}-{c.group}-{c.name}-{label}-{i + 1}.json"
                            keep.parent.mkdir(parents=True, exist_ok=True)
                            keep.write_text(json.dumps(o.report))
                            row["report"] = str(keep)
                        rows.append(row)
                        print(line)
                        sys.stdout.flush()
                        if a.json:  # written as it goes: a long run stopped early keeps what it measured
                            Path(a.json).write_text(json.dumps(rows, indent=1))
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    print()
    print(
        "| series | healthy | condition | reading | runs | verdict agrees | exit agrees | kinds seen | exits | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (group, name, cond, how), t in table.items():
        case = next(c for c in cases if c.group == group and c.name == name)
        kinds = ", ".join(f"{k} x{n}" for k, n in collections.Counter(t.kinds).most_common())
        exits = ", ".join(f"{k} x{n}" for k, n in collections.Counter(t.codes).most_common())
        n = len(t.kinds)
        loads = f"{min(t.loads):.1f}-{max(t.loads):.1f}" if t.loads else "-"
        print(
            f"| {group} {name} | {'yes' if case.healthy else 'no'} | {cond} | {how} | {n} | {Tally.agree(t.kinds)}/{n} "
            f"| {Tally.agree(t.codes)}/{n} | {kinds} | {exits} | {loads} |"
        )


if __name__ == "__main__":
    main()
