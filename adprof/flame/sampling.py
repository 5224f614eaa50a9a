"""Running the looped probe (``python -m adprof.flame.flame_worker``) under ``py-spy record -F -f raw``."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from adprof.flame.collapse import Stack, parse_collapsed

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
    """One sampling run: the parsed stacks, the raw text and the worker's status."""

    stacks: list[tuple[Stack, int]]
    raw: str
    status: dict
    seconds_cap: int


def _repo_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def sample_probe(
    target: str,
    mode: str,
    depth: int,
    profile: str,
    seconds: float = 3.0,
    rate: int = 250,
    py_spy: str | None = None,
    timeout_margin: float = 30.0,
) -> FlameRun:
    """Run the looped probe as py-spy's child once; raise :class:`FlameError` if nothing was sampled.

    py-spy's ``-d`` is a cap (``2 * seconds + 5``): the worker normally exits first, after
    ``seconds`` of looping; at the cap py-spy kills it mid-iteration (the status says so).
    """
    py_spy = py_spy or find_py_spy()
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")
    cap = int(math.ceil(2 * seconds + 5))
    with tempfile.TemporaryDirectory(prefix="adprof-flame-") as tmp:
        raw_path = os.path.join(tmp, "stacks.txt")
        status_path = os.path.join(tmp, "status.json")
        worker = [
            *(sys.executable, "-m", "adprof.flame.flame_worker", target),
            *("--mode", mode, "--depth", str(depth), "--profile", profile),
            *("--seconds", str(seconds), "--status", status_path),
        ]
        cmd = [py_spy, "record", "-F", "-r", str(rate), "-d", str(cap), "-f", "raw", "-o", raw_path, "--", *worker]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_repo_root(), env.get("PYTHONPATH")) if p)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=cap + timeout_margin)
        except FileNotFoundError:
            raise FlameError(f"adprof flame: cannot run {py_spy}; {INSTALL_FIX}") from None
        except subprocess.TimeoutExpired:
            raise FlameError(
                f"adprof flame: py-spy did not finish within {cap + timeout_margin:.0f} s; lower --depth or --seconds"
            ) from None
        status = _read_status(status_path)
        raw = Path(raw_path).read_text(encoding="utf-8", errors="replace") if os.path.exists(raw_path) else ""
    stacks = _checked_stacks(proc, raw, status, py_spy, target, depth)
    return FlameRun(stacks, raw, status, cap)


def _checked_stacks(
    proc: subprocess.CompletedProcess[str], raw: str, status: dict, py_spy: str, target: str, depth: int
) -> list[tuple[Stack, int]]:
    """The sampled stacks; raise :class:`FlameError` saying why when py-spy or the worker failed, or
    when nothing was sampled."""
    err = _py_spy_error(proc.stderr)
    if proc.returncode != 0 and not raw.strip():
        if status.get("state") == "error":
            raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
        low = (err or "").lower()
        if "permission" in low or "ptrace" in low or "operation not permitted" in low:
            raise FlameError(f"adprof flame: py-spy cannot read its child ({err}); {PTRACE_FIX}")
        raise FlameError(f"adprof flame: py-spy failed (exit {proc.returncode}): {err or 'no message'}")
    stacks = parse_collapsed(raw)
    if status.get("state") == "error":
        raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
    if not status:
        tail = _last_line(proc.stderr) or "no output"
        raise FlameError(
            f"adprof flame: the worker did not start ({tail}); "
            f"try: {sys.executable} -m adprof.flame.flame_worker {target} --depth {depth}"
        )
    if sum(c for _, c in stacks) == 0:
        raise FlameError(
            f"adprof flame: py-spy recorded no samples (worker state {status.get('state')}, "
            f"{status.get('iterations', 0)} iterations); check that `{py_spy} record -- "
            f"{sys.executable} -c 'while 1: pass'` samples here, or {PTRACE_FIX}"
        )
    return stacks


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
