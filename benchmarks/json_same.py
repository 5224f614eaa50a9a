"""Are two trees' JSON reports the same, times masked? (issue #37: the verdict table and state in fields change no
report of a counter-decided series.)

Runs ``python -m adprof check TARGET --depths ... --json OUT`` with each tree on its own ``PYTHONPATH``, masks what
differs run to run (times, durations, paths, dates, machine readings), and prints the differences: a changed or
removed value is a difference; a key only the new tree writes is listed apart (allowed: e.g. ``metric_name``).

    python benchmarks/json_same.py --base /work/wt/base --new . [--target probes/chains.py] [--depths 1,2,3]
    python benchmarks/json_same.py --base-json A.json --new-json B.json   # compare two reports already written

Exit 0: identical (added keys allowed); 1: a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_DEPTHS = "1,2,3,4,5,6,8,10"
#: Room enough that neither the budget nor the cap stops a series of these depths on a loaded machine (what the
#: clock stops differs run to run, and is not compared).
DEFAULT_EXTRA = ("--budget", "900", "--cap", "20")
#: Keys whose values are read off a clock, the machine or the file system: masked whatever they hold.
MASKED_KEYS = frozenset(
    {
        "times",
        "seconds",
        "wall",
        "wall_time",
        "wall_seconds",
        "elapsed",
        "duration",
        "durations",
        "started",
        "finished",
        "date",
        "timestamp",
        "created",
        "path",
        "file",
        "target",
        "origin",
        "cwd",
        "python",
        "machine",
        "environment",
        "env",
        "host",
        "load",
        "cpu",
        "budget_used",
        "spent",
        # read off the clock or the noisy peak, per point and per series
        "samples",
        "extra",
        "cpu_times",
        "cpu_samples",
        "confirm_walls",
        "phase_fits",
        "phase_shares",
        "growing_phase",
        "halving",
        "peak_fit",
        "peak_bytes",
        "peak_agrees",
        "call0_fit",
        "jumps",
        "stop",  # the stop rule reads predicted seconds against the cap
        "stopped",
        "amortized",  # read on the warm calls' times where no counter is measured
        "warm_to_call1",
        "unconfirmed_depths",  # jumps in time not re-measured
        "ratios",  # the explained cost's backward/forward ratios: times where no counter is read
        "gradient_grows",  # read off those ratios' gradient times (Sen's slope): the clock, where no counter is read
        "ratio_slope",
        "ratio_flat",
        "forward_fit",  # the explained cost's forward reading: time where no counter is read
        "forward_phase",
    }
)
#: A sentence that reads time or the peak (an evidence line of the time fit, the phases' shares...): masked.
TIMED_TEXT = re.compile(
    r"time|wall|peak|share of|second|\bms\b|\bload|warm calls|\d s > |\bcap\b|budget|grows the same way", re.IGNORECASE
)
#: Key fragments whose values are time readings (a time fit, its intervals, its jumps...).
MASKED_FRAGMENTS = ("time", "second", "duration", "elapsed", "wall", "clock", "load")


def masked(key: str) -> bool:
    """A key whose value differs run to run."""
    k = key.lower()
    return k in MASKED_KEYS or any(f in k for f in MASKED_FRAGMENTS)


def mask(data: Any, key: str = "") -> Any:
    """``data`` with every run-dependent value replaced by ``"<masked>"``."""
    if key and masked(key):
        return "<masked>"
    if isinstance(data, dict):
        return {k: mask(v, str(k)) for k, v in data.items()}
    if isinstance(data, list):  # a timed sentence is there in one run and not in another: left out
        return [mask(v) for v in data if not (isinstance(v, str) and TIMED_TEXT.search(v))]
    if isinstance(data, str) and TIMED_TEXT.search(data):
        return "<masked: timed text>"
    return data


def measured(result: dict) -> list[tuple[Any, Any]]:
    """A series' measured depths, their status and call counts (where the clock stopped a series or set its number of
    calls, two runs measure different things: their readings are not comparable)."""
    return [(p.get("depth"), p.get("status"), p.get("calls")) for p in result.get("points", [])]


def diff(a: Any, b: Any, where: str = "$") -> tuple[list[str], list[str]]:
    """(differences, keys only ``b`` has) between two masked reports."""
    changed: list[str] = []
    added: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                changed.append(f"{where}.{k}: removed")
            else:
                c, d = diff(a[k], b[k], f"{where}.{k}")
                changed += c
                added += d
        added += [f"{where}.{k}" for k in b if k not in a]
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            changed.append(f"{where}: {len(a)} items -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            c, d = diff(x, y, f"{where}[{i}]")
            changed += c
            added += d
    elif a != b:
        changed.append(f"{where}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}")
    return changed, added


def run(tree: Path, target: str, depths: str, out: Path, extra: list[str]) -> None:
    """One ``check`` run of ``target`` with the code of ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    given = ["--depths", depths] if depths else []  # "": the chain's own depths
    cmd = [sys.executable, "-m", "adprof", "check", target, *given, "--json", str(out), "--no-color"]
    proc = subprocess.run([*cmd, *extra], cwd=tree, env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in (0, 1) or not out.exists():
        sys.exit(f"{tree}: check exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, default=Path("/work/wt/base"), help="the tree before")
    ap.add_argument("--new", type=Path, default=Path("."), help="the tree after")
    ap.add_argument("--target", default="probes/chains.py")
    ap.add_argument("--depths", default=DEFAULT_DEPTHS, help='"" for the chain\'s own depths')
    ap.add_argument("--base-json", type=Path, help="a report already written by the base tree")
    ap.add_argument("--new-json", type=Path, help="a report already written by the new tree")
    ap.add_argument("--keep", type=Path, help="a folder to keep both reports in")
    ap.add_argument("extra", nargs="*", help=f"check options (after --; default: {' '.join(DEFAULT_EXTRA)})")
    args = ap.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="json_same_"))
    folder.mkdir(parents=True, exist_ok=True)
    reports = []
    for given, tree, name in ((args.base_json, args.base, "base"), (args.new_json, args.new, "new")):
        if given is None:
            given = folder / f"{name}.json"
            run(tree, args.target, args.depths, given, args.extra or list(DEFAULT_EXTRA))
        reports.append(json.loads(given.read_text()))
    before, after = reports
    skipped = []
    pairs = list(zip(before.get("results", []), after.get("results", []), strict=False))
    for i, (x, y) in enumerate(pairs):
        if measured(x) != measured(y):  # the clock (cap, budget) stopped one run at another depth
            skipped.append(f"{x.get('chain')}/{x.get('profile') or x.get('backend')}/{x.get('mode')}")
            before["results"][i] = after["results"][i] = "<not compared: measured different depths or calls>"
    if skipped:  # a sweep reads its series: those measured at other depths make it differ
        before["sweeps"] = after["sweeps"] = "<not compared: a series measured different depths or calls>"
    changed, added = diff(mask(before), mask(after))
    n = len(pairs)
    print(
        f"{args.target} depths {args.depths}: {n} series, {n - len(skipped)} compared ({len(skipped)} measured "
        f"different depths: {', '.join(skipped) or '-'}); {len(changed)} differences, {len(added)} added keys"
    )
    for line in changed:
        print("  changed:", line)
    for line in sorted({re.sub(r"\[\d+\]", "[]", a) for a in added}):
        print("  added:", line)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
