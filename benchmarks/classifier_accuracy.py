"""End-to-end accuracy of adprof's time path: the real CLI on a synthetic program with known laws.

Every trial runs ``adprof check --cmd 'python -S benchmarks/synth_law.py LAW {depth} ...' --mode traced``
through adprof's entry point (``adprof.cli.main``, what the console script and ``python -m adprof`` run),
in two worker processes (``--subprocess``: one ``python -m adprof`` per check): the real schedule, stop
rules, predictor, model choice and classifier, on a program whose cost law, overhead and noise are known
(``benchmarks/synth_law.py``).

The grid: laws x noise levels x overhead levels x trials. Per trial (deterministic from the cell and the
trial number, so any trial replays with ``--replay LAW NOISE OVERHEAD TRIAL``):

* power laws: the noiseless cost at depth 256 is log-uniform in [3 ms, 6 s] (past the 1.5 s cap the
  series must stop before 256); exponentials: the depth where the cost reaches the cap is uniform over
  a range per base. Costs per point go from microseconds to about a second.
* overhead ``none``: 0; ``high``: 30-90% (uniform) of the cost at the deepest depth the law can reach
  under the cap (256 or the cap).
* noise level L (synth_law.py): three runs in four +U(0, 6%·L), one in four +U(0, 90%·L); level 1 is
  a loaded machine.

Each check's program reports its seconds instead of spending them; adprof charges a point the larger
of its wall time and its reported cost, so the budget column ("charged") is what the check would have
taken on a real program: the run's wall time (less the interpreter's start-up and adprof's imports,
measured once, which happen before adprof's clock starts) plus, per point, what was reported beyond the
wall time. A program whose cost passes the timeout (4x the cap) sleeps until adprof kills it.

    python benchmarks/classifier_accuracy.py [--trials 20] [--jobs 2] [--markdown docs/x.md] [--out r.json]
    python benchmarks/classifier_accuracy.py --from-json r.json --markdown -   # tables of a saved run
    python benchmarks/classifier_accuracy.py --replay p2 0.15 high 7           # one trial, verbose

Exit 1 when an acceptance rule is broken (no superlinear/exponential law called linear, no linear law
called superlinear/exponential; at noise <= 0.15: >= 90% right for exponentials (base within 10%),
power laws and linear laws; every check within its budget).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "benchmarks" / "synth_law.py"
CAP = 1.5
MAX_DEPTH = 256  # the --cmd schedule's default deepest depth
KINDS = ("linear", "mild", "superlinear", "exponential", "inconclusive", "other")
NOISE = (0.0, 0.15, 0.5, 1.0)
OVERHEAD = ("none", "high")


@dataclass(frozen=True)
class Law:
    name: str  # the benchmark's name of the law (synth_law.py's, unless ``synth`` says otherwise)
    label: str
    expected: str  # a column of KINDS
    family: str  # "linear" | "mild" | "power" | "exponential"
    base: float | None = None
    cap_depths: tuple[int, int] = (0, 0)  # exponentials: where the cost reaches the cap (uniform)
    also: tuple[str, ...] = ()  # other columns that are right (d log d: mildly superlinear or superlinear)
    synth: str = ""  # synth_law.py's law, when it differs from ``name``
    fixed: tuple[float, float] | None = None  # (a, c) of every trial (no overhead levels)
    args: str = ""  # more synth_law.py arguments (a noise of its own)

    @property
    def program_law(self) -> str:
        return self.synth or self.name


LAWS = (
    Law("linear", "d", "linear", "linear"),
    Law("const", "constant", "linear", "linear"),
    Law(
        "linear-heavy",
        "0.4 + 0.00015 d, bimodal",
        "linear",
        "linear",
        synth="linear",
        fixed=(0.4, 0.00015),
        args="--bimodal 0.2,0.3,0.6",
    ),
    Law("nlogn", "d log d", "mild", "mild", also=("superlinear",)),
    Law("p1.5", "d^1.5", "superlinear", "power"),
    Law("p2", "d^2", "superlinear", "power"),
    Law("p3", "d^3", "superlinear", "power"),
    Law("exp1.3", "1.3^d", "exponential", "exponential", 1.3, (18, 40)),
    Law("exp1.5", "1.5^d", "exponential", "exponential", 1.5, (12, 28)),
    Law("exp2", "2^d", "exponential", "exponential", 2.0, (8, 20)),
    Law("exp3", "3^d", "exponential", "exponential", 3.0, (6, 13)),
    Law("knee-p2-16", "d, then (d-16)^2", "superlinear", "power"),
    Law("knee-p2-48", "d, then (d-48)^2", "superlinear", "power"),
    Law("knee-exp-16", "d, then 1.25^(d-16)", "exponential", "exponential", 1.25, (40, 56)),
    Law("knee-exp-48", "d, then 1.25^(d-48)", "exponential", "exponential", 1.25, (72, 88)),
)
LAW_BY_NAME = {law.name: law for law in LAWS}


def _synth_laws() -> dict:
    import importlib.util

    spec = importlib.util.spec_from_file_location("synth_law", SYNTH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.LAWS


SYNTH_LAWS = _synth_laws()


def _f(law: Law, d: float) -> float:
    if law.name == "const":
        return 1.0  # the constant's value: its a + c
    return SYNTH_LAWS[law.program_law](d)


def _rng(*key: object) -> random.Random:
    return random.Random(int(hashlib.sha256(repr(key).encode()).hexdigest()[:16], 16))


def law_params(law: Law, overhead: str, trial: int) -> dict[str, float]:
    """``a`` (overhead) and ``c`` (scale) of one trial, and the deepest depth the law reaches under the cap."""
    rng = _rng(law.name, overhead, trial)
    if law.fixed is not None:
        a, c = law.fixed
        return {"a": a, "c": c, "share": a / (a + c * MAX_DEPTH), "deep": float(MAX_DEPTH), "first": a + c}
    if law.name == "const":  # a constant cost: t256 of the power laws, all of it overhead
        t = math.exp(rng.uniform(math.log(3e-3), math.log(CAP)))
        return {"a": t, "c": 0.0, "share": 1.0, "deep": float(MAX_DEPTH), "first": t}
    share = 0.0 if overhead == "none" else rng.uniform(0.3, 0.9)
    if law.family == "exponential":
        lo, hi = law.cap_depths
        deep = rng.randint(lo, hi)
        t_deep = CAP * rng.uniform(0.5, 1.0)
    else:
        t256 = math.exp(rng.uniform(math.log(3e-3), math.log(6.0)))
        if t256 <= CAP:
            deep, t_deep = MAX_DEPTH, t256
        else:  # the depth where the law scaled to t256 at depth 256 reaches the cap
            deep = max(d for d in range(2, MAX_DEPTH + 1) if t256 * _f(law, d) / _f(law, MAX_DEPTH) <= CAP or d == 2)
            t_deep = CAP * rng.uniform(0.6, 1.0)
    a = share * t_deep
    c = (1.0 - share) * t_deep / _f(law, deep)
    return {"a": a, "c": c, "share": share, "deep": float(deep), "first": a + c * _f(law, 1)}


@dataclass
class Trial:
    law: str
    noise: float
    overhead: str
    trial: int
    a: float = 0.0
    c: float = 0.0
    share: float = 0.0
    verdict: str = ""
    column: str = ""
    base: float | None = None
    exponent: float | None = None
    interval: str = ""
    elapsed: float = 0.0  # the check's own figure (report.elapsed_seconds)
    wall: float = 0.0  # the subprocess, start to exit
    charged: float = 0.0  # wall plus what the points reported beyond their wall time
    budget: float = 60.0
    points: int = 0
    depths: list[int] = field(default_factory=list)
    killed: int = 0  # points killed at the timeout (the program's cost passed 4x the cap)
    decided_by: str = ""
    error: str = ""

    @property
    def right(self) -> bool:
        law = LAW_BY_NAME[self.law]
        if self.column != law.expected and self.column not in law.also:
            return False
        return law.base is None or (self.base is not None and abs(self.base / law.base - 1) <= 0.10)


def column_of(verdict: str) -> str:
    if verdict == "linear":
        return "linear"
    if verdict.startswith("mildly-superlinear"):
        return "mild"
    if verdict.startswith("superlinear"):
        return "superlinear"
    if verdict.startswith("exponential"):
        return "exponential"
    return "inconclusive" if verdict == "inconclusive" else "other"


def command(law: Law, noise: float, overhead: str, trial: int, state: str, p: dict[str, float]) -> str:
    seed = f"{law.name}-{noise}-{overhead}-{trial}"
    extra = f" {law.args}" if law.args else ""
    return (
        f"{shlex.quote(sys.executable)} -S {shlex.quote(str(SYNTH))} {law.program_law} {{depth}} --a {p['a']:.6g} "
        f"--c {p['c']:.6g} --noise {noise:g} --seed {seed} --state {shlex.quote(state)} --hang-after {4 * CAP:g}"
        f"{extra}"
    )


def _charged(result: dict) -> tuple[float, int]:
    """Seconds the points reported beyond their wall time, and the points killed at the timeout."""
    extra, killed = 0.0, 0
    for pt in result.get("points") or []:
        if pt.get("status", "exact") != "exact":
            killed += pt.get("status") == "killed"
            continue
        reported = sum(float(v) for v in (pt.get("times") or {}).values())
        extra += max(0.0, reported - float(pt.get("wall_seconds") or 0.0))
    return extra, killed


def startup_seconds() -> float:
    """The interpreter's start-up and adprof's imports (median of three), before a check's clock starts."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    walls = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import adprof.cli"], check=True, env=env, cwd=ROOT)
        walls.append(time.monotonic() - t0)
    return sorted(walls)[1]


STARTUP = [0.0]  # set by main()


def _in_process(args: list[str], budget: float) -> tuple[str, str]:
    """``adprof.cli.main(args)`` in this process (the console script's entry point, exactly what
    ``python -m adprof`` runs after start-up): (the JSON report, the console output)."""
    import contextlib
    import io

    from adprof.cli import main as adprof_main

    with tempfile.TemporaryDirectory(prefix="adprof-json-") as out:
        path = Path(out) / "report.json"
        console = io.StringIO()
        with contextlib.redirect_stdout(console), contextlib.redirect_stderr(console):
            adprof_main([*args, "--json", str(path)])
        return (path.read_text() if path.exists() else ""), console.getvalue()


def run_trial(
    law_name: str,
    noise: float,
    overhead: str,
    trial: int,
    budget: float,
    verbose: bool = False,
    save: str = "",
    in_process: bool = False,
) -> Trial:
    """One check of one law through the CLI (a subprocess, or ``in_process``: its entry point, here)."""
    law = LAW_BY_NAME[law_name]
    p = law_params(law, overhead, trial)
    t = Trial(law_name, noise, overhead, trial, a=p["a"], c=p["c"], share=p["share"], budget=budget)
    with tempfile.TemporaryDirectory(prefix="adprof-synth-") as state:
        args = ["check", "--cmd", command(law, noise, overhead, trial, state, p), "--mode", "traced"]
        args += ["--budget", f"{budget:g}", "--no-color"]
        t0 = time.monotonic()
        if in_process:
            stdout, stderr = _in_process(args, budget)
            startup = 0.0
        else:
            env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "adprof", *args, "--json", "-"],
                    capture_output=True,
                    text=True,
                    timeout=budget + 60,
                    env=env,
                    cwd=ROOT,
                )
            except subprocess.TimeoutExpired:
                t.wall, t.verdict, t.column, t.error = time.monotonic() - t0, "hang", "other", "check did not finish"
                return t
            stdout, stderr, startup = done.stdout, done.stderr, STARTUP[0]
        t.wall = time.monotonic() - t0
    if verbose:
        print(stderr, file=sys.stderr)
    if save:
        Path(save).write_text(stdout)
    try:
        report = json.loads(stdout)
        r = report["results"][0]
    except (json.JSONDecodeError, KeyError, IndexError):
        t.verdict, t.column = "error", "other"
        t.error = (stderr.strip().splitlines() or ["no output"])[-1][:200]
        return t
    t.verdict = r["verdict"]
    t.column = column_of(t.verdict)
    t.base, t.exponent, t.interval = r.get("base"), r.get("exponent"), r.get("interval_text") or ""
    t.elapsed = float(report.get("elapsed_seconds") or 0.0)
    extra, t.killed = _charged(r)
    t.charged = t.wall - startup + extra
    t.depths = [int(pt["depth"]) for pt in r.get("points") or []]
    t.points = len(t.depths)
    t.decided_by = (r.get("fit") or {}).get("model_choice") or ""
    t.error = r.get("error") or ""
    return t


# --------------------------------------------------------------------------- tables


def _cells(trials: list[Trial]) -> dict[tuple[str, str, float], list[Trial]]:
    cells: dict[tuple[str, str, float], list[Trial]] = defaultdict(list)
    for t in trials:
        cells[(t.law, t.overhead, t.noise)].append(t)
    return cells


def confusion_markdown(trials: list[Trial]) -> str:
    """One row per (law, overhead, noise): the verdict counts, the share right (base within 10% for
    exponentials) and the largest charged time of a check."""
    head = ["law", "overhead", "noise", *KINDS, "right", "max charged s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = {law.name: i for i, law in enumerate(LAWS)}
    for (law, ovh, noise), ts in sorted(_cells(trials).items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2])):
        counts = Counter(t.column for t in ts)
        right = sum(t.right for t in ts)
        cells = [LAW_BY_NAME[law].label, ovh, f"{noise:g}", *(str(counts[k]) for k in KINDS)]
        cells += [f"{right}/{len(ts)}", f"{max(t.charged for t in ts):.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compact_markdown(trials: list[Trial]) -> str:
    """Two short tables: the share right per law and noise level (both overheads), and the confusion of the
    expected class against the verdict at noise <= 0.15."""
    noises = sorted({t.noise for t in trials})
    head = ["law", *(f"noise {n:g}" for n in noises)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for law in LAWS:
        cells = [law.label]
        for n in noises:
            ts = [t for t in trials if t.law == law.name and t.noise == n]
            cells.append(f"{sum(t.right for t in ts)}/{len(ts)}" if ts else "-")
        lines.append("| " + " | ".join(cells) + " |")
    quiet = [t for t in trials if t.noise <= 0.15]
    lines += [
        "",
        "| expected \\ verdict (noise <= 0.15) | " + " | ".join(KINDS) + " |",
        "|" + "---|" * (len(KINDS) + 1),
    ]
    for expected in ("linear", "mild", "superlinear", "exponential"):
        ts = [t for t in quiet if LAW_BY_NAME[t.law].expected == expected]
        counts = Counter(t.column for t in ts)
        lines.append(f"| {expected} | " + " | ".join(str(counts[k]) for k in KINDS) + " |")
    return "\n".join(lines)


def summary(trials: list[Trial]) -> tuple[list[str], list[str]]:
    """(summary lines, broken acceptance rules)."""
    lines, broken = [], []
    fams: dict[str, list[Trial]] = defaultdict(list)
    for t in trials:
        fams[LAW_BY_NAME[t.law].family].append(t)
        law = LAW_BY_NAME[t.law]
        if law.family in ("power", "exponential") and t.column == "linear":
            broken.append(f"{t.law} noise {t.noise:g} {t.overhead} trial {t.trial}: called linear")
        if law.family == "linear" and t.column in ("superlinear", "exponential"):
            broken.append(f"{t.law} noise {t.noise:g} {t.overhead} trial {t.trial}: called {t.column}")
        if t.charged > t.budget:
            broken.append(f"{t.law} noise {t.noise:g} {t.overhead} trial {t.trial}: charged {t.charged:.1f} s > budget")
    for fam in ("linear", "mild", "power", "exponential"):
        for quiet in (True, False):
            ts = [t for t in fams.get(fam, []) if (t.noise <= 0.15) == quiet]
            if not ts:
                continue
            rate = sum(t.right for t in ts) / len(ts)
            what = "noise <= 0.15" if quiet else "noise > 0.15"
            lines.append(f"{fam:12s} {what}: {100 * rate:5.1f}% right ({sum(t.right for t in ts)}/{len(ts)})")
            if quiet and fam in ("linear", "power", "exponential") and rate < 0.9:
                broken.append(f"{fam} at noise <= 0.15: {100 * rate:.1f}% right (< 90%)")
    exps = [t for t in trials if LAW_BY_NAME[t.law].family == "exponential" and t.column == "exponential"]
    if exps:
        within = sum(t.right for t in exps)
        lines.append(f"exponential verdicts with the base within 10%: {within}/{len(exps)}")
    charged = sorted(t.charged / t.budget for t in trials)
    if charged:
        lines.append(
            f"charged time / budget: median {charged[len(charged) // 2]:.2f}, max {charged[-1]:.2f}; "
            f"points killed at the timeout: {sum(t.killed for t in trials)}"
        )
        walls = sorted(t.wall for t in trials)
        lines.append(f"real wall per check: median {walls[len(walls) // 2]:.1f} s, max {walls[-1]:.1f} s")
    return lines, broken


def _init_worker() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")


def _run_cell(cell: tuple) -> Trial:
    return run_trial(*cell)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2, help="checks at once (at most 2 on this machine)")
    ap.add_argument("--budget", type=float, default=60.0, help="--budget of each check")
    ap.add_argument(
        "--subprocess",
        action="store_true",
        help="one `python -m adprof` per check (default: the entry point in 2 workers)",
    )
    ap.add_argument("--laws", default=",".join(law.name for law in LAWS))
    ap.add_argument("--noise", default=",".join(f"{n:g}" for n in NOISE))
    ap.add_argument("--overhead", default=",".join(OVERHEAD))
    ap.add_argument("--markdown", metavar="PATH", help="write the confusion matrix as Markdown ('-': stdout)")
    ap.add_argument("--out", metavar="PATH", help="save every trial as JSON (and PATH.partial, line by line)")
    ap.add_argument("--from-json", metavar="PATH", help="tables of a saved run (no checks); PATH.partial too")
    ap.add_argument("--replay", nargs=4, metavar=("LAW", "NOISE", "OVERHEAD", "TRIAL"), help="one trial, verbose")
    ap.add_argument("--save-report", metavar="PATH", default="", help="--replay: write the check's JSON report")
    return ap


def load_trials(path: str) -> list[Trial]:
    text = Path(path).read_text()
    if path.endswith(".partial"):
        return [Trial(**json.loads(line)) for line in text.splitlines() if line.strip()]
    return [Trial(**d) for d in json.loads(text)["trials"]]


def run_grid(args: argparse.Namespace, t0: float) -> list[Trial]:
    """Every check of the grid, on at most two processes (trial-major: a partial run covers every cell)."""
    grid = [
        (law, float(n), ovh, k)
        for k in range(args.trials)
        for law in args.laws.split(",")
        for n in args.noise.split(",")
        for ovh in args.overhead.split(",")
    ]
    done = 0
    progress = Path(args.out + ".partial") if args.out else None
    if progress is not None:
        progress.write_text("")

    def report(t: Trial) -> Trial:
        nonlocal done
        done += 1
        if progress is not None:  # one JSON line per finished check (--from-json reads it)
            with progress.open("a") as f:
                f.write(json.dumps(asdict(t)) + "\n")
        if done % 20 == 0 or done == len(grid):
            print(f"  {done}/{len(grid)} checks, {time.monotonic() - t0:.0f} s", file=sys.stderr)
        return t

    jobs = max(1, min(args.jobs, 2))
    if args.subprocess:
        STARTUP[0] = startup_seconds()
        print(f"start-up and imports: {STARTUP[0]:.2f} s (not charged)", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return [report(t) for t in pool.map(lambda cell: run_trial(*cell, args.budget), grid)]
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker) as procs:
        cells = [(*cell, args.budget, False, "", True) for cell in grid]
        return [report(t) for t in procs.map(_run_cell, cells)]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.replay:
        STARTUP[0] = startup_seconds()
        law, noise, ovh, k = args.replay
        t = run_trial(law, float(noise), ovh, int(k), args.budget, verbose=True, save=args.save_report)
        print(json.dumps(asdict(t), indent=1))
        return 0
    t0 = time.monotonic()
    if args.from_json:
        trials = load_trials(args.from_json)
    else:
        trials = run_grid(args, t0)
        if args.out:
            saved = {"argv": sys.argv, "startup_seconds": STARTUP[0], "trials": [asdict(t) for t in trials]}
            Path(args.out).write_text(json.dumps(saved, indent=0))
    table = compact_markdown(trials) + "\n\n" + confusion_markdown(trials)
    lines, broken = summary(trials)
    if args.markdown and args.markdown != "-":
        Path(args.markdown).write_text(table + "\n")
    else:
        print(table)
    print()
    for line in lines:
        print(line)
    print(f"{len(trials)} checks in {time.monotonic() - t0:.0f} s")
    for b in broken[:40]:
        print("BROKEN:", b)
    if len(broken) > 40:
        print(f"BROKEN: ... {len(broken) - 40} more")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
