"""Guard verdicts under CPU load: the same guard, 10 times, with a busy loop in another process.

    python benchmarks/guard_under_load.py [--runs 10]

Guards decide on deterministic metrics, so the verdict (and the measured base or exponent) must not
change when the machine is loaded. Each run guards the fixed and v08 engines on mul (traced) and sin
(eager), where the engine's counters decide, and JAX ``make_jaxpr(grad)`` of the sin chain (traced),
where Python call counts decide (``--no-jax`` leaves it out); the busy loop spins on one core for the
whole study (this machine has two). Prints the verdicts per run, the distinct outcomes, and the
wall-time spread.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adprof.guard import GuardLimits, guard_targets
from probes import chains

CASES = [
    ("mul", "traced", "fixed", tuple(range(1, 13)), "engine"),
    ("mul", "traced", "v08", tuple(range(1, 13)), "engine"),
    ("sin", "eager", "fixed", (25, 50, 100, 200), "engine"),
    ("sin", "eager", "v08", (25, 50, 100, 200), "engine"),
    ("sin", "traced", None, (25, 50, 100, 200, 400), "jax"),
]


def busy(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x += 1


def one_run(cases: list[tuple]) -> tuple[list[str], float]:
    t0 = time.perf_counter()
    outcomes = []
    for name, mode, profile, depths, backend in cases:
        report, _ = guard_targets(
            [getattr(chains, name)], GuardLimits(), mode=mode, profile=profile, depths=depths, backend=backend
        )
        (check,) = report.checks
        v = check.result.verdict
        src = v.fit.metric if v.fit is not None else "-"
        outcomes.append(
            f"{name}/{backend}/{mode}/{profile}: {'ok' if check.ok else 'FAIL'} {v.kind} {check.measured} [{src}]"
        )
    return outcomes, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-jax", action="store_true", help="leave out the JAX case")
    args = ap.parse_args()
    cases = [c for c in CASES if not (args.no_jax and c[4] == "jax")]
    quiet, quiet_time = one_run(cases)
    print(f"quiet machine: {quiet_time:.2f} s")
    for line in quiet:
        print("  " + line)
    # spawn, not fork: the parent has imported JAX (multithreaded)
    loader = mp.get_context("spawn").Process(target=busy, args=(time.time() + 3600,), daemon=True)
    loader.start()
    try:
        seen = {}
        times = []
        for i in range(args.runs):
            outcomes, seconds = one_run(cases)
            times.append(seconds)
            seen.setdefault(tuple(outcomes), []).append(i)
            print(f"loaded run {i}: {seconds:.2f} s, {'same as quiet' if outcomes == quiet else 'DIFFERENT'}")
    finally:
        loader.terminate()
    print(
        f"distinct outcomes under load: {len(seen)} (quiet outcome reproduced in "
        f"{len(seen.get(tuple(quiet), []))} of {args.runs} runs)"
    )
    print(f"wall time per run under load: min {min(times):.2f} s, max {max(times):.2f} s (quiet {quiet_time:.2f} s)")


if __name__ == "__main__":
    main()
