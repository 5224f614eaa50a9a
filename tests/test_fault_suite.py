"""Issue 20's fault suite: detached grandchildren, signals at random moments and concurrent writers.

Each run (one seed) starts two adprof runs at once that write the same ``--json`` file, while a reader polls it,
on a workload whose chains (or ``--cmd`` program) leave detached children behind on every call (a child in its
own session, a double-forked daemon) and one of which hangs. At a random moment one run gets a random signal
plan: none, SIGINT, two SIGINTs a random few ms apart, SIGTERM, SIGHUP, SIGKILL, or SIGINT SIGINT SIGTERM.
A run passes when afterwards no process of either run is left, every read of the JSON file saw a whole report
(never an empty or partial file), the file left is whole, the inputs are unchanged, the exit codes are the
documented ones for what happened, and no traceback was printed.

``python tests/test_fault_suite.py [RUNS] [FIRST_SEED]`` runs it as a script and prints the figure
(the acceptance figure is 50 of 50); ``-m slow`` runs ``ADPROF_FAULT_RUNS`` seeds (default 10) as tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_helpers import TRACEBACK, describe, kill_tagged, leftovers, start_adprof

REPO = Path(__file__).resolve().parents[1]
MISBEHAVE = REPO / "tests" / "cmds" / "misbehave.py"
RUNS = int(os.environ.get("ADPROF_FAULT_RUNS", "10"))

CHAINS = '''"""The fault suite's workload: healthy chains, one leaving detached processes behind, one that hangs."""

import os
import subprocess
import time

import adprof


def _daemon():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                time.sleep(40)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4, 5, 6))
def calm(xp, x, depth):
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4))
def detacher(xp, x, depth):
    subprocess.Popen(["sleep", "40"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _daemon()
    y = x
    for _ in range(depth):
        y = xp.cos(y)
    return xp.sum(y)


@adprof.chain(input_shape=(3,), depths=(1, 2, 3, 4))
def stuck(xp, x, depth):
    if depth >= 3:
        subprocess.Popen(["sleep", "45"], start_new_session=True)
        while True:
            pass
    return xp.sum(xp.sin(x))
'''

PLANS = {
    "none": [],
    "SIGINT": [(signal.SIGINT, 0.0)],
    "double SIGINT": [(signal.SIGINT, 0.0), (signal.SIGINT, None)],  # None: a random gap of 1-300 ms
    "SIGTERM": [(signal.SIGTERM, 0.0)],
    "SIGHUP": [(signal.SIGHUP, 0.0)],
    "SIGKILL": [(signal.SIGKILL, 0.0)],
    "SIGINT SIGINT SIGTERM": [(signal.SIGINT, 0.0), (signal.SIGINT, None), (signal.SIGTERM, None)],
}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Reader(threading.Thread):
    """Polls the JSON file: counts whole reads, keeps any empty or partial one."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.stop, self.reads, self.bad = path, threading.Event(), 0, []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                time.sleep(0.0005)
                continue
            self.reads += 1
            try:
                json.loads(text)
            except ValueError:
                self.bad.append(f"{len(text)} bytes: {text[:30]!r}")
            time.sleep(0.0005)


def _args(kind: str, out: Path) -> list[str]:
    if kind == "chains":
        common = ["check", "suite_chains.py", "--profile", "fixed", "--mode", "traced", "--no-structure"]
        common += ["--cap", "0.4", "--budget", "8", "--jobs", "2"]
    else:
        template = f"{sys.executable} {MISBEHAVE} slow {{depth}}"
        common = ["check", "--cmd", template, "--max-depth", "16", "--budget", "6"]
    return [*common, "--no-color", "--json", str(out)]


def _deliver(proc: subprocess.Popen, plan: list[tuple[int, float | None]], gaps: list[float]) -> list[str]:
    """Send the plan's signals (SIGINT to the whole group, as Ctrl-C does); the names of those sent."""
    sent: list[str] = []
    for i, (sig, gap) in enumerate(plan):
        if gap is None:
            time.sleep(gaps[i])
        if proc.poll() is not None:
            break
        try:
            (os.killpg if sig == signal.SIGINT else os.kill)(proc.pid, sig)
        except ProcessLookupError:
            break
        sent.append(signal.Signals(sig).name)
    return sent


def _finish(runs: list[tuple[subprocess.Popen, str]]) -> list[tuple[int | None, str, list[str]]]:
    """(exit code, output, processes left) of each run."""
    done = []
    for proc, tag in runs:
        try:
            o, e = proc.communicate(timeout=40)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            o, e = proc.communicate()
            code = None
        done.append((code, o + e, tag))
    return [(code, text, describe(leftovers(tag, 4.0))) for code, text, tag in done]


def _judge(
    results: list[tuple[int | None, str, list[str]]], sent: list[str], reader: _Reader, work: Path, inputs: dict
) -> list[str]:
    problems: list[str] = []
    (code_v, _, _), (code_o, _, _) = results
    for name, (_, text, left) in zip(("signalled run", "other run"), results, strict=True):
        if left:
            problems.append(f"{name} left processes: {left}")
        # a signal in the interpreter's first milliseconds (importing its site module, before any adprof code)
        # is Python's to report; everything after is adprof's
        before_adprof = "init_import_site" in text
        if not before_adprof and (TRACEBACK in text or "Exception ignored" in text or "internal error" in text):
            problems.append(f"{name} printed a traceback: {text[-600:]}")
    if reader.bad:
        problems.append(f"{len(reader.bad)} damaged reads of {reader.reads + len(reader.bad)}: {reader.bad[:3]}")
    out = work / "out.json"
    if out.exists():
        try:
            json.loads(out.read_text())
        except ValueError:
            problems.append("the JSON file left is damaged")
    elif code_o in (0, 1):
        problems.append("no JSON file although the other run finished")
    problems.extend(f"input {p.name} changed" for p, digest in inputs.items() if _digest(p) != digest)
    temps = list(work.glob(".out.json.*"))
    if temps and "SIGKILL" not in sent:
        problems.append(f"temporary files left: {[t.name for t in temps]}")
    # the first signal decides (or none: the run had just given its answer, when signals are ignored)
    expected_v = {0, 1} | ({-9 if sent[0] == "SIGKILL" else 128 + int(signal.Signals[sent[0]])} if sent else set())
    if "init_import_site" in results[0][1]:
        expected_v.add(1)  # the interpreter's own "Fatal Python error" exit
    if code_v not in expected_v:
        problems.append(f"signalled run exit {code_v}, expected {sorted(expected_v)}")
    if code_o not in (0, 1):
        problems.append(f"other run exit {code_o}, expected 0 or 1")
    return problems


def run_once(seed: int, work: Path) -> tuple[list[str], str]:
    """One run of the suite in ``work``; returns (problems, a one-line description)."""
    rng = random.Random(seed)
    kind = rng.choice(["chains", "chains", "cmd"])
    plan_name = rng.choice(sorted(PLANS))
    delay = rng.uniform(0.3, 5.0)
    gaps = [rng.uniform(0.001, 0.3) for _ in range(3)]
    (work / "suite_chains.py").write_text(CHAINS)
    inputs = {p: _digest(p) for p in (work / "suite_chains.py", MISBEHAVE)}
    args = _args(kind, work / "out.json")
    reader = _Reader(work / "out.json")
    reader.start()
    runs = [start_adprof(args, work, None) for _ in range(2)]  # concurrent writers of the same file
    try:
        time.sleep(delay)
        sent = _deliver(runs[0][0], PLANS[plan_name], gaps)
        results = _finish(runs)
    finally:
        for _, tag in runs:
            kill_tagged(tag)
        reader.stop.set()
        reader.join()
    codes = "/".join(str(c) for c, _, _ in results)
    what = f"seed {seed}: {kind}, {plan_name} after {delay:.2f} s (sent {sent or 'none'}), exits {codes}"
    return _judge(results, sent, reader, work, inputs), what


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RUNS))
def test_fault_suite(seed: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="adprof-suite-"))
    try:
        problems, what = run_once(seed, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert not problems, what + "\n" + "\n".join(problems)


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 50
    first = int(argv[2]) if len(argv) > 2 else 0
    clean = 0
    for seed in range(first, first + runs):
        work = Path(tempfile.mkdtemp(prefix="adprof-suite-"))
        t0 = time.monotonic()
        try:
            problems, what = run_once(seed, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        clean += not problems
        print(f"{'ok  ' if not problems else 'FAIL'} {what} ({time.monotonic() - t0:.1f} s)", flush=True)
        for p in problems:
            print(f"     {p}", flush=True)
    print(f"{clean} of {runs} runs left no process and no damaged file")
    return 0 if clean == runs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
