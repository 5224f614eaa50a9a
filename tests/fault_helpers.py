"""Running adprof as a user does, for the fault-injection suite and the CLI fuzz.

``run_adprof`` starts ``python -P -m adprof ...`` in a subprocess with a controlled cwd and environment and a
hard timeout, and returns what a user sees (exit code, stdout, stderr, wall time) plus every process the run
left behind. Processes are recognised by a unique marker in their environment (``ADPROF_FAULT_TAG``), which
adprof's workers and everything the chains start inherit; only those are ever killed.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FAULTS = Path(__file__).resolve().parent / "faults"
TAG_VAR = "ADPROF_FAULT_TAG"
DIR_VAR = "ADPROF_FAULT_DIR"
#: Seconds allowed on top of "budget + one cap" (interpreter and worker start-up, rendering, a loaded machine).
SLACK = 6.0
#: Exit codes adprof documents: ok, finding, bad input, undecided (a guard that noise kept from deciding), SIGINT,
#: SIGTERM (3 is an internal error: never right).
DOCUMENTED_EXITS = {0, 1, 2, 4, 130, 143}

TRACEBACK = "Traceback (most recent call last)"


def tagged_pids(tag: str) -> set[int]:
    """Live (non-zombie) processes whose environment carries ``ADPROF_FAULT_TAG=tag``."""
    needle = f"{TAG_VAR}={tag}".encode()
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state == b"Z":
            continue
        if needle in env.split(b"\0"):
            found.add(pid)
    return found


def describe(pids: set[int]) -> list[str]:
    out = []
    for pid in sorted(pids):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        out.append(f"pid {pid} ppid {ppid}: {cmd.strip()[:120]}")
    return out


def kill_tagged(tag: str) -> None:
    """SIGKILL every process of this tag (only the ones the test started)."""
    for pid in tagged_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def leftovers(tag: str, grace: float = 3.0) -> set[int]:
    """Tagged processes still alive after ``grace`` seconds (polled: workers may take a moment to die)."""
    end = time.monotonic() + grace
    while True:
        pids = tagged_pids(tag)
        if not pids or time.monotonic() >= end:
            return pids
        time.sleep(0.1)


@dataclass
class Run:
    """What one adprof run showed the user."""

    args: list[str]
    code: int | None  # None: our timeout killed it
    out: str
    err: str
    wall: float
    left: list[str] = field(default_factory=list)  # processes left behind (described)
    mark_dir: Path | None = None

    @property
    def text(self) -> str:
        return self.out + self.err

    def marked(self, name: str) -> bool:
        return self.mark_dir is not None and (self.mark_dir / name).exists()

    def adprof_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.startswith("adprof")]

    def summary(self) -> str:
        tail = "\n".join(self.err.splitlines()[-12:])
        head = f"adprof {' '.join(self.args)}\n  exit {self.code}, {self.wall:.1f} s, left {self.left}"
        return f"{head}\n  stderr tail:\n{tail}"


def base_env(tag: str, mark_dir: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADPROF_", "PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(REPO)
    env[TAG_VAR] = tag
    env["COLUMNS"] = "200"
    env.pop("PYTHONSTARTUP", None)
    if mark_dir is not None:
        env[DIR_VAR] = str(mark_dir)
    return env


def command(args: list[str]) -> list[str]:
    # -P: the cwd is not put on sys.path of adprof itself (as with the `adprof` console script), so item 9
    # tests adprof's workers, not Python's `-m` behaviour.
    return [sys.executable, "-P", "-m", "adprof", *args]


def start_adprof(
    args: list[str], cwd: Path, mark_dir: Path | None, tag: str | None = None
) -> tuple[subprocess.Popen, str]:
    """Start adprof in its own session (as a shell job would be); returns (process, tag)."""
    tag = tag or uuid.uuid4().hex
    proc = subprocess.Popen(
        command(args),
        cwd=cwd,
        env=base_env(tag, mark_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
    )
    return proc, tag


def run_adprof(args: list[str], cwd: Path, timeout: float, mark_dir: Path | None = None, grace: float = 3.0) -> Run:
    """Run adprof to completion (killed after ``timeout``); collect output and leftovers, then clean up."""
    tag = uuid.uuid4().hex
    before = tagged_pids(tag)
    assert not before  # a fresh tag: nothing can carry it yet
    t0 = time.monotonic()
    proc, _ = start_adprof(args, cwd, mark_dir, tag)
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tagged(tag)
        out, err = proc.communicate()
        code = None
    wall = time.monotonic() - t0
    left = leftovers(tag, grace) - before
    desc = describe(left)
    kill_tagged(tag)
    return Run(args=args, code=code, out=out, err=err, wall=wall, left=desc, mark_dir=mark_dir)


def load_json(path: Path) -> dict[str, Any]:
    """The ``--json`` report (asserting that it exists and parses)."""
    assert path.is_file(), f"no JSON report at {path}"
    return json.loads(path.read_text())


def rows(report: dict[str, Any], chain: str | None = None) -> list[dict[str, Any]]:
    return [r for r in report["results"] if chain is None or r["chain"] == chain]


def assert_clean(run: Run) -> None:
    """No traceback, no internal error, nothing left running, an exit code from the documented set."""
    assert run.code is not None, f"adprof did not finish in time\n{run.summary()}"
    assert TRACEBACK not in run.text, f"a traceback reached the user\n{run.summary()}"
    assert "internal error" not in run.text, f"internal error\n{run.summary()}"
    assert not run.left, f"processes left behind: {run.left}\n{run.summary()}"
    assert run.code in DOCUMENTED_EXITS, f"undocumented exit code\n{run.summary()}"


def assert_cause(run: Run, pattern: str, stdout_too: bool = False) -> str:
    """The line a user needs: an ``adprof...`` line on stderr (or, for ``guard``/``halve``, any line of the
    output) matching ``pattern``."""
    lines = run.adprof_lines() + (run.out.splitlines() if stdout_too else [])
    hits = [ln for ln in lines if re.search(pattern, ln, re.I)]
    where = "output" if stdout_too else "'adprof' line on stderr"
    assert hits, f"no {where} matching {pattern!r}\n{run.summary()}"
    return hits[0]


#: Seconds a worker's imports (numpy, scipy, adprof's worker) take on this machine when it is quiet.
QUIET_START_SECONDS = 0.6


#: Seconds a measured slowdown stays current (the load on a shared machine changes within minutes).
SLOWDOWN_FRESH = 20.0
_slowdown: tuple[float, float] | None = None  # (when measured, the slowdown)


def machine_slowdown() -> float:
    """How many times slower than quiet this machine starts a worker now (at least 1): a test whose budget must
    cover a worker's start scales it by this, so that a loaded machine tests the same property (the budget bounds
    the run), not whether a worker starts in one second. Measured again once :data:`SLOWDOWN_FRESH` seconds old:
    the load of a shared machine changes during a suite."""
    global _slowdown
    now = time.monotonic()
    if _slowdown is not None and now - _slowdown[0] < SLOWDOWN_FRESH:
        return _slowdown[1]
    code = "import numpy, scipy, adprof.measure.worker"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=120, check=False)
    _slowdown = (time.monotonic(), max(1.0, (time.monotonic() - t0) / QUIET_START_SECONDS))
    return _slowdown[1]


def scaled_budget(budget: float, most: float = math.inf) -> float:
    """``budget`` scaled by :func:`machine_slowdown`, at most ``most``."""
    return min(most, budget * machine_slowdown())


def slack() -> float:
    """:data:`SLACK` scaled by :func:`machine_slowdown`: what the slack covers (interpreter and worker start-up,
    imports, rendering) is CPU work outside adprof's budget, slower on a loaded machine; quiet, it is SLACK."""
    return scaled_budget(SLACK)


def assert_within(run: Run, budget: float, cap: float) -> None:
    """The budget bounds the run: wall <= budget + one cap + the slack (:func:`slack`, measured after the run: the
    load it saw)."""
    extra = slack()
    bound = budget + cap + extra
    assert run.wall <= bound, (
        f"wall {run.wall:.1f} s > budget {budget:g} + cap {cap:g} + {extra:.1f} s (slack {SLACK:g} s x machine "
        f"slowdown {machine_slowdown():.1f})\n{run.summary()}"
    )


def stated_seconds(line: str) -> list[float]:
    """Every ``N s`` duration a message states."""
    return [float(m) for m in re.findall(r"(\d+(?:\.\d+)?)\s*s\b", line)]
