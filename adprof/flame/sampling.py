"""Running the looped probe (``python -m adprof.flame.flame_worker``) under ``py-spy record -f chrometrace``."""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adprof.chain.frames import crash_frame
from adprof.flame.timeline import PhasedProfile, phased_profile, stack_segments
from adprof.util import procs
from adprof.util.text import one_line_safe

#: Seconds allowed for importing the chain file (in a subprocess: user code never runs in adprof itself).
LOAD_TIMEOUT = 30.0
#: Longest ``--seconds`` of looping (an hour of samples is more than any flame graph needs).
MAX_SECONDS = 3600.0
#: Bytes of py-spy's (and the looped probe's) stdout and stderr kept: the last ones.
OUTPUT_KEPT = 1 << 20

INSTALL_FIX = "install it with `pip install py-spy` (it must be on PATH or next to the Python interpreter)"
PTRACE_FIX = (
    "py-spy needs ptrace rights on its child: run as root, or grant CAP_SYS_PTRACE "
    "(docker run --cap-add SYS_PTRACE), or set kernel.yama.ptrace_scope to 0 or 1"
)


class FlameError(Exception):
    """A one-line user-facing failure with its exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def find_py_spy() -> str | None:
    """The py-spy executable: next to ``sys.executable`` first, then on PATH; None if missing."""
    exe_dir = Path(sys.executable).parent
    for name in ("py-spy", "py-spy.exe"):
        cand = exe_dir / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("py-spy")


@dataclass
class FlameRun:
    """One sampling run: the measured region, py-spy's trace (JSON text) and the worker's status."""

    profile: PhasedProfile
    raw: str
    status: dict
    seconds_cap: int
    wall: float = 0.0  # seconds py-spy ran


def _repo_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_repo_root(), env.get("PYTHONPATH")) if p)
    return env


def resolve_chain(file: str, name: str | None, timeout: float = LOAD_TIMEOUT) -> tuple[str, str, dict[str, Any]]:
    """Load ``file`` in a subprocess (``flame_worker --resolve``) within ``timeout`` seconds and return
    (``abs file::chain``, chain name, its declarations: ``modes``, ``backend_modes``); raise :class:`FlameError`
    (exit 2) with the one-line reason."""
    target = f"{file}::{name}" if name else file
    argv = [sys.executable, "-P", "-m", "adprof.flame.flame_worker", target, "--resolve", "--depth", "1"]
    done = procs.run(argv, timeout=timeout, output_limit=OUTPUT_KEPT, env=_env(), keep_tail=True)
    if done.timed_out:
        raise FlameError(f"adprof flame: loading {file} did not finish within {timeout:g} s (killed)")
    answer: dict[str, Any] = {}
    for line in reversed(done.stdout.decode(errors="replace").splitlines()):
        if line.startswith("{"):
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            break
    if answer.get("ok"):
        return str(answer["target"]), str(answer["name"]), answer
    if answer.get("error"):
        raise FlameError(f"adprof flame: {answer['error']}")
    how = f"exit code {done.returncode}" if done.returncode is not None and done.returncode >= 0 else "killed"
    tail = _last_line(crash_frame(done.stderr.decode(errors="replace"), file) or done.stderr.decode(errors="replace"))
    raise FlameError(f"adprof flame: loading {file} failed ({how})" + (f": {one_line_safe(tail)}" if tail else ""))


def sample_probe(
    target: str,
    mode: str,
    depth: int,
    profile: str | None,
    seconds: float = 3.0,
    rate: int = 250,
    py_spy: str | None = None,
    timeout_margin: float = 60.0,
    *,
    backend: str = "engine",
    native: bool = False,
    calls: int = 6,
) -> FlameRun:
    """Run the worker as py-spy's child once (``record -F -i -f chrometrace``, ``--native`` when asked) and place
    its samples in the worker's phase windows; raise :class:`FlameError` if nothing was sampled.

    py-spy's ``-d`` is a cap (``4 * seconds + 120``: the warm-up point and the imports come first); the worker
    normally exits first, after ``seconds`` of measuring points.
    """
    py_spy = py_spy or find_py_spy()
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")
    cap = int(math.ceil(4 * seconds + 120))
    with procs.temporary_dir("adprof-flame-") as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        status_path = os.path.join(tmp, "status.json")
        log_path = os.path.join(tmp, "log.json")
        crash_path = os.path.join(tmp, "crash.txt")
        worker = [  # -P: modules in the cwd do not shadow the worker's imports
            *(sys.executable, "-P", "-m", "adprof.flame.flame_worker", target, "--backend", backend),
            *("--mode", mode, "--depth", str(depth), "--calls", str(calls), "--rate", str(rate)),
            *(("--profile", profile) if profile else ()),
            *("--seconds", str(seconds), "--status", status_path, "--log", log_path, "--crash-log", crash_path),
        ]
        spy = [py_spy, "record", "-F", "-i", "-r", str(rate), "-d", str(cap), "-f", "chrometrace", "-o", trace_path]
        cmd = [*spy, *(["--native"] if native else []), "--", *worker]
        t0 = time.monotonic()
        try:  # py-spy and the probe in their own session: killed with everything the chain starts
            done = procs.run(cmd, timeout=cap + timeout_margin, output_limit=OUTPUT_KEPT, env=_env(), keep_tail=True)
        except OSError:
            raise FlameError(f"adprof flame: cannot run {py_spy}; {INSTALL_FIX}") from None
        if done.timed_out:
            raise FlameError(
                f"adprof flame: py-spy did not finish within {cap + timeout_margin:.0f} s; lower --depth or --seconds"
            )
        proc = _Ran(-9 if done.returncode is None else done.returncode, done.stderr.decode(errors="replace"))
        wall = time.monotonic() - t0
        status = _read_status(status_path)
        log = _read_status(log_path)
        raw = Path(trace_path).read_text(encoding="utf-8", errors="replace") if os.path.exists(trace_path) else ""
        crash = Path(crash_path).read_text(encoding="utf-8", errors="replace") if os.path.exists(crash_path) else ""
    _check_crash(crash, status, wall if proc.returncode == 0 else float(cap), cap, target, depth)
    prof = _checked_profile(proc, raw, status, log, py_spy, target, depth, rate)
    return FlameRun(prof, raw, status, cap, wall)


def _check_crash(crash: str, status: dict, wall: float, cap: int, target: str, depth: int) -> None:
    """Raise :class:`FlameError` (exit 1) when the worker died by itself: py-spy exits 0 then (its
    child's exit status is lost), so the crash log and the status tell (``wall``: py-spy's run time,
    the cap when py-spy itself failed)."""
    if status.get("state") not in ("setup", "running"):
        return
    where = f"at depth {depth} (iteration {status.get('iterations', 0) + 1})"
    if "Fatal Python error" in crash:
        line = next((ln for ln in crash.splitlines() if ln.startswith("Fatal Python error")), "")
        kind = line.split(":", 1)[1].strip() if ":" in line else "a fatal error"
        sig = _FATAL_SIGNALS.get(kind, kind)
        frame = crash_frame(crash, target.split("::", 1)[0])
        raise FlameError(
            f"adprof flame: the chain crashed the worker ({sig}) {where}" + (f" {frame}" if frame else ""), 1
        )
    if wall < cap - 0.5:
        raise FlameError(
            f"adprof flame: the worker ended {where} without finishing (it exited or was killed; "
            "py-spy does not pass on its exit status)",
            1,
        )


_FATAL_SIGNALS = {
    "Segmentation fault": "SIGSEGV",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating-point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
}


@dataclass
class _Ran:
    """What :func:`_checked_stacks` reads of the py-spy run."""

    returncode: int
    stderr: str


def _checked_profile(
    proc: _Ran, raw: str, status: dict, log: dict, py_spy: str, target: str, depth: int, rate: float
) -> PhasedProfile:
    """The measured region of the run; raise :class:`FlameError` saying why when py-spy or the worker failed,
    or when nothing was sampled inside a phase."""
    err = _py_spy_error(proc.stderr)
    if proc.returncode != 0 and not raw.strip():
        if status.get("state") == "error":
            raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
        low = (err or "").lower()
        if "permission" in low or "ptrace" in low or "operation not permitted" in low:
            raise FlameError(f"adprof flame: py-spy cannot read its child ({err}); {PTRACE_FIX}")
        raise FlameError(f"adprof flame: py-spy failed (exit {proc.returncode}): {err or 'no message'}")
    if status.get("state") == "error":
        raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
    if not status:
        tail = _last_line(proc.stderr) or "no output"
        raise FlameError(
            f"adprof flame: the worker did not start ({tail}); "
            f"try: {sys.executable} -m adprof.flame.flame_worker {target} --depth {depth}"
        )
    if status.get("state") != "done" or not log:
        raise FlameError(
            f"adprof flame: py-spy's cap stopped the worker during point {status.get('iterations', 0) + 1} "
            "(no phase log); lower --depth or --seconds"
        )
    try:
        events = json.loads(raw) if raw.strip() else []
    except ValueError:
        raise FlameError("adprof flame: py-spy's trace is not JSON (cut short?)") from None
    segments = stack_segments(events if isinstance(events, list) else [], log.get("tid"))
    try:
        prof = phased_profile(segments, log, float(rate))
    except ValueError:
        prof = PhasedProfile(rate=float(rate), iterations=int(log.get("iterations", 0)))
    if not prof.slices:
        raise FlameError(
            f"adprof flame: py-spy recorded no samples inside the measured phases ({len(segments)} stack changes, "
            f"{status.get('iterations', 0)} points); sample longer (--seconds) or faster (--rate), check that "
            f"`{py_spy} record -- {sys.executable} -c 'while 1: pass'` samples here, or {PTRACE_FIX}"
        )
    return prof


def _read_status(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _py_spy_error(stderr: str) -> str:
    """py-spy's error line (``Error: ...``), else its last non-status line."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("Error:") or "Permission" in ln:
            return ln
    rest = [ln for ln in lines if not ln.startswith("py-spy>")]
    return rest[-1] if rest else ""
