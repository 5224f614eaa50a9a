"""Measuring: worker subprocesses, the adaptive depth schedule, caps, timeouts and the shared budget.

Every piece of user code runs in a worker (``python -m adprof.worker``, see :mod:`adprof.worker`):
loading the chain file, the structure probe and each point. The parent owns the schedule and a
hard timeout per phase (``timeout_factor`` x ``cap``, reset whenever the worker reports that a new
phase starts); a worker that overruns it is killed (by its pid) and replaced, and the point is
recorded as censored. A worker that dies (segfault) or raises RecursionError/MemoryError is a
finding on that series, never a crash of adprof.

Depth schedule (:class:`Schedule`), unless explicit depths are given: unit steps 1..8, continued
while the per-layer marginal cost ratio stays >= 1.15 (exponential chains need consecutive depths),
then doublings down from the chain's largest declared depth (..., D/4, D/2, D: >= 8x span for a
power-law fit and a halving pair at the deepest point). A series stops when a phase exceeds the cap,
when the next point is predicted to exceed it (:func:`predict_next`), when its share of the budget
is used, or at a failure. ``Series.stopped`` says which, e.g. "stopped after depth 25: transform
1.62 s > 1.5 s cap".

Budget: the whole run shares ``budget`` seconds of wall time. A series starting with ``n`` series
left (itself included) on ``L`` lanes gets ``remaining * L / n`` (at most ``remaining``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.backends import series_fields
from adprof.classify import COUNTER_KEYS, cost_phases, counter_value, time_value
from adprof.model import Point, Series

DEFAULT_CAP = 1.5
DEFAULT_BUDGET = 60.0
DEFAULT_TIMEOUT_FACTOR = 4.0
DEFAULT_CALLS = 6
DEFAULT_COUNTER_BUDGET = 50_000_000
UNIT_UNTIL = 8
FAST_RATIO = 1.15
MIN_CALLS = 3
PREDICT_MARGIN = 1.2  # a point predicted within 20 % of the cap is not run (timing noise)
RUN_REPEATS = 3  # steady runs per traced point (plus one warm-up)
STRUCTURE_DEPTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
LOAD_TIMEOUT = 30.0  # importing a chain file
STARTUP_TIMEOUT = 60.0  # a worker importing numpy, scipy and the engine

_REPO_ROOT = str(Path(__file__).resolve().parent.parent)


@dataclass
class MeasureConfig:
    """Knobs of a measuring run (the CLI fills them)."""

    cap: float = DEFAULT_CAP  # seconds per phase; a series stops past it
    budget: float = DEFAULT_BUDGET  # seconds of wall time for the whole run
    timeout_factor: float = DEFAULT_TIMEOUT_FACTOR  # hard timeout per phase = factor x cap
    calls: int = DEFAULT_CALLS  # eager calls per point
    counter_budget: int | None = DEFAULT_COUNTER_BUDGET  # key comparisons per point
    jobs: int = 2  # parallel workers
    depths: tuple[int, ...] | None = None  # explicit depths (else adaptive)
    unit_steps: bool = False  # unit steps only (the ratio table)
    max_depth: int | None = None  # overrides the chain's largest declared depth
    structure: bool = True
    started: float | None = None  # time.monotonic() when the run began (the budget counts from it)
    reserve: float | None = None  # seconds kept for classifying and rendering (None: 0.5 + 30 ms/series)

    @property
    def timeout(self) -> float:
        return self.timeout_factor * self.cap


# --------------------------------------------------------------------------- worker handle


class WorkerTimeout(Exception):
    """No answer (nor a new phase) within the timeout; the worker was killed."""

    def __init__(self, phase: str | None, call: int | None, elapsed: float, limit: float) -> None:
        super().__init__(f"no answer within {limit:.1f} s")
        self.phase, self.call, self.elapsed, self.limit = phase, call, elapsed, limit


class WorkerCrashed(Exception):
    """The worker died (signal or exit) before answering."""

    def __init__(self, message: str, phase: str | None = None) -> None:
        super().__init__(message)
        self.message, self.phase = message, phase


def worker_env() -> dict[str, str]:
    """The worker's environment: the repo root on PYTHONPATH, single-threaded BLAS."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = _REPO_ROOT + (os.pathsep + path if path else "")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class Worker:
    """One ``python -m adprof.worker`` child; started lazily, killed (by pid) on timeout."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self._buf = b""
        self._err: Any = None

    def start(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Spawn the worker and wait for its ``ready`` line (imports done)."""
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "adprof.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=worker_env(),
        )
        self._buf = b""
        try:
            line = self._readline(time.monotonic() + timeout)
        except EOFError:
            code = self.proc.wait()
            tail = self.stderr_tail()
            self.kill()
            msg = f"worker failed to start (exit code {code})" + (f": {tail}" if tail else "")
            raise WorkerCrashed(msg) from None
        if line is None:
            self.kill()
            raise WorkerCrashed(f"worker did not start within {timeout:g} s")

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Kill this worker (SIGKILL to its own pid) and reap it."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
        self.proc = None
        if self._err is not None:
            self._err.close()
            self._err = None

    def close(self) -> None:
        """Ask the worker to exit, then make sure it did."""
        if self.alive:
            try:
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def stderr_tail(self, lines: int = 3) -> str:
        if self._err is None:
            return ""
        try:
            self._err.seek(0, os.SEEK_END)
            size = self._err.tell()
            self._err.seek(max(0, size - 4000))
            text = self._err.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip())

    def _readline(self, deadline: float) -> bytes | None:
        """One protocol line, or None at the deadline; raises EOFError if the worker died."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(left, 0.25))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def request(
        self,
        msg: dict[str, Any],
        timeout: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        hard_deadline: float | None = None,
        first_timeout: float | None = LOAD_TIMEOUT,
    ) -> dict[str, Any]:
        """Send ``msg``; return the final answer. ``timeout`` restarts at every event line.

        Until the first event (the worker loading the chain file) ``first_timeout`` applies, if
        larger. Raises :class:`WorkerTimeout` (worker killed) or :class:`WorkerCrashed`.
        """
        import json

        if not self.alive:
            self.kill()
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            self.kill()
            raise WorkerCrashed(f"worker unavailable ({exc})") from None
        phase: str | None = None
        call: int | None = None
        phase_start = time.monotonic()
        first = True
        while True:
            limit = max(timeout, first_timeout or 0.0) if first else timeout
            deadline = phase_start + limit
            if hard_deadline is not None:
                deadline = min(deadline, max(hard_deadline, phase_start + min(timeout, 1.0)))
            try:
                line = self._readline(deadline)
            except EOFError:
                code = self.proc.wait()
                tail = self.stderr_tail()
                self.kill()
                how = _signal_name(code) if code < 0 else f"exit code {code}"
                where = f" in {phase}" if phase else ""
                raise WorkerCrashed(f"worker crashed{where} ({how})" + (f": {tail}" if tail else ""), phase) from None
            if line is None:
                elapsed = time.monotonic() - phase_start
                self.kill()
                raise WorkerTimeout(phase, call, elapsed, deadline - phase_start)
            try:
                data = json.loads(line)
            except ValueError:
                continue  # not ours (cannot happen: fd 1 is redirected in the worker)
            if "event" in data:
                first = False
                if data.get("event") == "phase":
                    phase, call = data.get("phase"), data.get("call")
                phase_start = time.monotonic()
                if on_event is not None:
                    on_event(data)
                continue
            return data


# --------------------------------------------------------------------------- schedule


def point_metric(point: Point, mode: str) -> float | None:
    """The cost the schedule watches: counters over the mode's cost phases, else their time."""
    phases = cost_phases(mode)
    v = counter_value(point, phases)
    if v is None or v <= 0:
        v = time_value(point, phases)
    return v


def halving_depths(max_depth: int, above: int) -> list[int]:
    """``max_depth, max_depth/2, ...`` (rounded) down to depths > ``above``, ascending."""
    out: list[int] = []
    d = float(max_depth)
    while round(d) > above:
        out.append(int(round(d)))
        d /= 2
    return sorted(set(out))


class Schedule:
    """Decides the next depth from the points so far (adaptive, unit steps, or explicit)."""

    def __init__(
        self, max_depth: int, mode: str, explicit: Sequence[int] | None = None, unit_steps: bool = False
    ) -> None:
        self.max_depth = max(1, int(max_depth))
        self.mode = mode
        self.explicit = sorted(set(int(d) for d in explicit)) if explicit else None
        self.unit_steps = unit_steps
        self.doubling = False  # switched to doublings (never back)

    def growing_fast(self, points: Sequence[Point]) -> bool:
        """Marginal per-layer cost ratio >= 1.15 over the last consecutive depths, and not decaying."""
        pts = [p for p in points if not p.extra.get("censored")]
        if len(pts) < 3:
            return True
        d = [p.depth for p in pts[-4:]]
        v = [point_metric(p, self.mode) for p in pts[-4:]]
        if any(x is None for x in v) or any(b - a != 1 for a, b in zip(d, d[1:], strict=False)):
            return False
        m = [b - a for a, b in zip(v, v[1:], strict=False)]  # type: ignore[operator]
        if m[-1] <= 0 or m[-2] <= 0:
            return False
        r = m[-1] / m[-2]
        if r < FAST_RATIO:
            return False
        if len(m) >= 3 and m[-3] > 0:
            r_prev = m[-2] / m[-3]
            # a power law's marginal ratio decays like (d/(d-1))^(p-1): its log shrinks ~2/d per step
            # (0.87x at d = 8); an exponential's stays put (or rises when linear work fades out)
            if r_prev > 1 and math.log(r) < 0.93 * math.log(r_prev):
                return False
        return True

    def next_depth(self, points: Sequence[Point]) -> int | None:
        """The next depth to measure, or None when the schedule is exhausted."""
        done = {p.depth for p in points}
        last = max(done) if done else 0
        if self.explicit is not None:
            rest = [d for d in self.explicit if d not in done and d > last]
            return rest[0] if rest else None
        if last >= self.max_depth:
            return None
        if self.unit_steps:
            return last + 1
        if not self.doubling:
            if last < min(UNIT_UNTIL, self.max_depth):
                return last + 1
            if self.growing_fast(points):
                return last + 1
            self.doubling = True
        rest = halving_depths(self.max_depth, last)
        return rest[0] if rest else None


def _growth(v1: float, v2: float, d1: int, d2: int, d3: int, exponential: bool) -> float:
    """Extrapolated factor v(d3)/v(d2) from two points (exponential or power law, >= linear)."""
    if v1 <= 0 or v2 <= 0 or d2 <= d1:
        return d3 / d2 if d2 > 0 else 1.0
    if exponential:
        r = min(max((v2 / v1) ** (1.0 / (d2 - d1)), 1.0), 50.0)
        return r ** (d3 - d2)
    p = math.log(v2 / v1) / math.log(d2 / d1) if d1 > 0 else 1.0
    p = min(max(p, 1.0), 6.0)
    return (d3 / d2) ** p


def _phase_counters(point: Point, phase: str) -> float | None:
    c = point.counters.get(phase)
    if not isinstance(c, dict):
        return None
    s = float(sum(float(c.get(k, 0) or 0) for k in COUNTER_KEYS))
    return s if s > 0 else None


def predict_next(points: Sequence[Point], next_depth: int, exponential: bool) -> dict[str, float]:
    """Predicted seconds per phase at ``next_depth`` from the last two exact points.

    The growth factor comes from the phase's counters when it has some (exact), else from its
    times; exponential extrapolation on unit steps, power law (at least linear) on doublings.
    """
    pts = [p for p in points if not p.extra.get("censored")]
    if len(pts) < 2:
        return {}
    p1, p2 = pts[-2], pts[-1]
    out: dict[str, float] = {}
    for phase, t2 in p2.times.items():
        t1 = p1.times.get(phase)
        if t1 is None or t2 is None:
            continue
        c1, c2 = _phase_counters(p1, phase), _phase_counters(p2, phase)
        if c1 and c2:
            g = _growth(c1, c2, p1.depth, p2.depth, next_depth, exponential)
        else:
            g = _growth(t1, t2, p1.depth, p2.depth, next_depth, exponential)
        out[phase] = t2 * g
    return out


def point_cost(times: dict[str, float], mode: str, calls: int) -> float:
    """Seconds a point with these phase times takes (eager: call 0 plus ``calls - 1`` warm calls)."""
    if mode == "eager":
        warm = times.get("forward", 0.0) + times.get("backward", 0.0)
        return times.get("forward0", 0.0) + times.get("backward0", 0.0) + max(calls - 1, 0) * warm
    return sum(t for k, t in times.items() if k != "run") + (1 + RUN_REPEATS) * times.get("run", 0.0)


def over_cap(point: Point, cap: float) -> tuple[str, float] | None:
    """The slowest phase of ``point`` if it exceeds ``cap``."""
    if not point.times:
        return None
    phase, t = max(point.times.items(), key=lambda kv: kv[1])
    return (phase, t) if t > cap else None


def fmt_s(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


# --------------------------------------------------------------------------- budget


class Budget:
    """Wall-clock budget shared by all series (thread-safe)."""

    def __init__(self, seconds: float, lanes: int, start: float | None = None, reserve: float = 0.0) -> None:
        self.seconds = max(seconds - reserve, 0.1 * seconds)
        self.start = time.monotonic() if start is None else start
        self.lanes = max(1, lanes)
        self._lock = threading.Lock()
        self.pending = 0  # series not yet started
        self.running = 0

    @property
    def deadline(self) -> float:
        return self.start + self.seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def add(self, n: int) -> None:
        with self._lock:
            self.pending += n

    def claim(self) -> float:
        """A starting series' share of the remaining budget (seconds)."""
        with self._lock:
            n = self.pending + self.running
            self.pending = max(0, self.pending - 1)
            self.running += 1
        rem = self.remaining()
        if rem <= 0:
            return 0.0
        return min(rem, rem * self.lanes / max(n, 1))

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)


# --------------------------------------------------------------------------- series


@dataclass
class SeriesSpec:
    """What to measure: one chain variant on one backend, profile and mode."""

    file: str
    chain: str
    backend: str
    profile: str | None
    mode: str
    max_depth: int
    declared_reuse: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    depths: tuple[int, ...] | None = None  # this series' explicit depths (guards), else cfg.depths

    @property
    def label(self) -> str:
        prof = f"/{self.profile}" if self.profile else ""
        return f"{self.chain} [{self.backend}{prof}, {self.mode}]"


StatusCallback = Callable[[str], None]


def _censored_point(
    depth: int,
    phase: str | None,
    call: int | None,
    seconds: float,
    mode: str,
    reason: str,
    partial: dict[str, Any] | None = None,
) -> Point:
    pt = point_from_dict(partial) if partial else Point(depth=depth)
    if phase:
        pt.times[phase] = max(seconds, pt.times.get(phase, 0.0))
    pt.extra["censored"] = True
    pt.extra["censor_reason"] = reason
    pt.extra["censored_phase"] = phase
    return pt


def budget_stopped(series: Series) -> bool:
    """True if the series stopped only because its share of the budget ran out."""
    return bool(series.stopped) and not series.error and "budget share" in (series.stopped or "")


def point_from_dict(d: dict[str, Any]) -> Point:
    names = {f.name for f in dataclasses.fields(Point)}
    return Point(**{k: v for k, v in d.items() if k in names})


def run_series(
    spec: SeriesSpec,
    worker: Worker,
    cfg: MeasureConfig,
    allowance: float,
    hard_deadline: float | None = None,
    status: StatusCallback | None = None,
    resume: Series | None = None,
) -> Series:
    """Measure one series point by point in ``worker`` (see the module docstring for the rules).

    ``resume``: a series stopped by its budget share, continued where it stopped.
    """
    if resume is not None:
        series = resume
        series.stopped = None
    else:
        series = Series(
            chain=spec.chain,
            backend=spec.backend,
            profile=spec.profile,
            mode=spec.mode,
            declared_reuse=spec.declared_reuse,
            params=dict(spec.params),
            **series_fields(spec.backend, spec.mode),
        )
    sched = Schedule(cfg.max_depth or spec.max_depth, spec.mode, spec.depths or cfg.depths, cfg.unit_steps)
    if resume is not None and len(series.points) > UNIT_UNTIL and not sched.growing_fast(series.points):
        sched.doubling = True
    start = time.monotonic()
    walls: list[float] = [p.extra["wall_seconds"] for p in series.points if "wall_seconds" in p.extra]
    calls = cfg.calls
    cap_s = f"{cfg.cap:g} s cap"

    def say(text: str) -> None:
        if status is not None:
            status(text)

    while True:
        depth = sched.next_depth(series.points)
        if depth is None:
            break
        last = series.points[-1].depth if series.points else None
        left = allowance - (time.monotonic() - start)
        exponential = not sched.doubling
        if series.points:
            pred = predict_next(series.points, depth, exponential)
            big = {k: v for k, v in pred.items() if v * PREDICT_MARGIN > cfg.cap}
            if big:
                ph, t = max(big.items(), key=lambda kv: kv[1])
                rel = ">" if t > cfg.cap else f"within {PREDICT_MARGIN - 1:.0%} of the"
                series.stopped = (
                    f"stopped after depth {last}: next point (depth {depth}) predicted {ph} {fmt_s(t)} {rel} {cap_s}"
                )
                break
            if hard_deadline is not None and time.monotonic() >= hard_deadline:
                series.stopped = f"stopped after depth {last}: the {cfg.budget:g} s budget is used up"
                break
            if left <= 0:
                series.stopped = f"stopped after depth {last}: this series' budget share ({allowance:.1f} s) is used up"
                break
            if walls and len(series.points) >= 2 and pred:
                prev = series.points[-1]
                ratio = depth / max(prev.depth, 1)
                done_cost = point_cost(prev.times, spec.mode, prev.extra.get("calls", calls))
                overhead = max(0.0, walls[-1] - done_cost)
                wall_pred = overhead * ratio + point_cost(pred, spec.mode, calls)
                if spec.mode == "eager" and wall_pred > left:
                    for k in range(calls - 1, MIN_CALLS - 1, -1):
                        calls = k
                        wall_pred = overhead * ratio + point_cost(pred, spec.mode, calls)
                        if wall_pred <= left:
                            break
                if wall_pred > left:
                    series.stopped = (
                        f"stopped after depth {last}: next point (depth {depth}) predicted "
                        f"{fmt_s(wall_pred)} > {fmt_s(max(left, 0))} left of this series' "
                        f"budget share"
                    )
                    break
        say(f"depth {depth}")
        req = {
            "op": "point",
            "file": spec.file,
            "chain": spec.chain,
            "backend": spec.backend,
            "profile": spec.profile,
            "mode": spec.mode,
            "depth": depth,
            "calls": calls,
            "counter_budget": cfg.counter_budget,
        }

        def on_event(ev: dict[str, Any], depth: int = depth) -> None:
            if ev.get("event") == "phase":
                call = ev.get("call")
                say(f"depth {depth} {ev.get('phase')}" + (f" (call {call})" if call is not None else ""))

        t0 = time.monotonic()
        try:
            ans = worker.request(req, cfg.timeout, on_event, hard_deadline)
        except WorkerTimeout as to:
            where = ""
            if to.phase:
                where = f" in {to.phase}" + (f" (call {to.call})" if to.call is not None else "")
            budget_end = hard_deadline is not None and time.monotonic() >= hard_deadline - 0.05
            if budget_end and to.limit < cfg.timeout:
                why = f"depth {depth} killed{where} after {to.elapsed:.1f} s: the budget ran out"
            else:
                why = f"depth {depth} killed{where} after the {to.limit:.1f} s timeout"
            exact = [p for p in series.points if not p.extra.get("censored")]
            if not exact:
                series.error = f"{why}; no depth finished (the chain hangs or is far too slow)"
            else:
                cp = _censored_point(depth, to.phase, to.call, to.elapsed, spec.mode, "timeout")
                series.points.append(cp)
                series.stopped = f"stopped after depth {last}: {why} (censored)"
            break
        except WorkerCrashed as cr:
            series.error = f"depth {depth}: {cr.message}"
            break
        walls.append(time.monotonic() - t0)
        if not ans.get("ok"):
            kind = ans.get("kind")
            msg = ans.get("error") or "failed"
            if kind == "budget":
                partial = ans.get("point")
                pt = _censored_point(depth, ans.get("phase"), None, 0.0, spec.mode, "counter budget", partial)
                series.points.append(pt)
                series.stopped = (
                    f"stopped after depth {last}: depth {depth} exceeded the key-comparison "
                    f"budget ({cfg.counter_budget:,}) in {ans.get('phase')} (censored)"
                )
                if not any(not p.extra.get("censored") for p in series.points):
                    series.error = f"depth {depth}: key-comparison budget exceeded in {ans.get('phase')}"
            elif kind == "resource":
                series.error = f"depth {depth}: worker ran out of a resource: {msg}"
            else:
                series.error = msg if msg.startswith("depth") else f"depth {depth}: {msg}"
            break
        pt = point_from_dict(ans["point"])
        pt.extra["wall_seconds"] = walls[-1]
        series.points.append(pt)
        oc = over_cap(pt, cfg.cap)
        if oc is not None:
            series.stopped = f"stopped after depth {depth}: {oc[0]} {fmt_s(oc[1])} > {cap_s}"
            break
    return series


# --------------------------------------------------------------------------- loading chains


class LoadError(Exception):
    """The target itself is unusable (missing file, syntax error, no chains, ...): one line, exit 2."""

    def __init__(self, message: str, error_type: str = "ChainError") -> None:
        super().__init__(message)
        self.message, self.error_type = message, error_type


def list_chains(
    file: str, names: Sequence[str] | None, worker: Worker, timeout: float = LOAD_TIMEOUT
) -> list[dict[str, Any]]:
    """Chain metadata (sweeps expanded) of ``file``, loaded in ``worker``; raises :class:`LoadError`."""
    try:
        ans = worker.request({"op": "list", "file": file, "names": list(names) if names else None}, timeout)
    except WorkerTimeout:
        raise LoadError(f"loading {file} did not finish within {timeout:g} s (killed)") from None
    except WorkerCrashed as cr:
        raise LoadError(f"loading {file}: {cr.message}") from None
    if not ans.get("ok"):
        kind = ans.get("error_type") or ans.get("kind", "")
        raise LoadError(ans.get("error") or f"cannot load {file}", kind)
    return list(ans["chains"])


# --------------------------------------------------------------------------- pool of lanes


class LanePool:
    """``jobs`` lanes, each a thread with its own worker; runs callables ``job(worker, lane)``."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.workers = [Worker() for _ in range(self.jobs)]

    def map(
        self,
        jobs: Sequence[Callable[[Worker, int], Any]],
        on_done: Callable[[int, Any], None] | None = None,
        poll: Callable[[], None] | None = None,
    ) -> list[Any]:
        """Run all jobs (at most ``self.jobs`` at once); results in job order."""
        results: list[Any] = [None] * len(jobs)
        q: queue.Queue[int] = queue.Queue()
        for i in range(len(jobs)):
            q.put(i)
        done: queue.Queue[tuple[int, Any]] = queue.Queue()
        stop = threading.Event()

        def lane(k: int) -> None:
            while not stop.is_set():
                try:
                    i = q.get_nowait()
                except queue.Empty:
                    return
                try:
                    res = jobs[i](self.workers[k], k)
                except BaseException as exc:  # noqa: BLE001 - reported to the caller
                    res = exc
                done.put((i, res))

        threads = [threading.Thread(target=lane, args=(k,), daemon=True) for k in range(min(self.jobs, len(jobs)))]
        for t in threads:
            t.start()
        remaining = len(jobs)
        try:
            while remaining:
                try:
                    i, res = done.get(timeout=0.1)
                except queue.Empty:
                    if poll is not None:
                        poll()
                    continue
                results[i] = res
                remaining -= 1
                if on_done is not None:
                    on_done(i, res)
        except BaseException:
            stop.set()  # interrupted: lanes take no new job; the caller closes the workers
            raise
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, Exception):
                raise r
        return results

    def close(self) -> None:
        for w in self.workers:
            w.close()


__all__ = [
    "Budget",
    "LanePool",
    "LoadError",
    "MeasureConfig",
    "Schedule",
    "SeriesSpec",
    "Worker",
    "WorkerCrashed",
    "WorkerTimeout",
    "halving_depths",
    "list_chains",
    "measure_all",
    "over_cap",
    "predict_next",
    "run_series",
]


# --------------------------------------------------------------------------- a whole run


@dataclass
class Measured:
    """Output of :func:`measure_all`: series in spec order, structures by chain name, notes."""

    series: list[Series]
    structures: dict[str, dict[str, Any]]
    notes: list[str]
    elapsed: float


def _structure_job(
    file: str, chain: str, cfg: MeasureConfig, budget: Budget, max_depth: int, status: Callable[[int, str], None]
) -> Callable[[Worker, int], dict[str, Any]]:
    depths = [d for d in STRUCTURE_DEPTHS if d <= max(max_depth, 3)]

    def job(worker: Worker, lane: int) -> dict[str, Any]:
        status(lane, f"{chain}: structure")
        req = {"op": "structure", "file": file, "chain": chain, "depths": depths}
        try:
            ans = worker.request(req, cfg.timeout, None, budget.deadline + cfg.timeout)
        except WorkerTimeout as to:
            return {
                "hang": f"recording the chain did not finish within {to.limit:.1f} s (killed): "
                "the chain hangs or is far too slow"
            }
        except WorkerCrashed as cr:
            return {"crash": f"recording the chain: {cr.message}"}
        if not ans.get("ok"):
            return {"error": ans.get("error") or "structure analysis failed"}
        return dict(ans["structure"])

    return job


def measure_all(
    specs: Sequence[SeriesSpec],
    cfg: MeasureConfig,
    status: Callable[[int, str], None] | None = None,
    on_series: Callable[[Series], None] | None = None,
    poll: Callable[[], None] | None = None,
    on_structures: Callable[[dict[str, dict[str, Any]]], None] | None = None,
) -> Measured:
    """Structure probes (one per chain), then every series, on ``cfg.jobs`` lanes within the budget."""
    lanes = max(1, min(cfg.jobs, len(specs) or 1))
    reserve = cfg.reserve if cfg.reserve is not None else 0.5 + 0.03 * len(specs)
    budget = Budget(cfg.budget, lanes, cfg.started, reserve)
    pool = LanePool(lanes)
    notes: list[str] = []

    def st(lane: int, text: str) -> None:
        if status is not None:
            status(lane, text)

    try:
        structures: dict[str, dict[str, Any]] = {}
        if cfg.structure and specs:
            chains: dict[str, SeriesSpec] = {}
            for s in specs:
                chains.setdefault(s.chain, s)
            names = list(chains)
            jobs = [_structure_job(chains[n].file, n, cfg, budget, chains[n].max_depth, st) for n in names]
            for n, res in zip(names, pool.map(jobs, poll=poll), strict=True):
                structures[n] = res if isinstance(res, dict) else {"error": f"internal: {res}"}
            if on_structures is not None:
                on_structures(structures)
        budget.add(len(specs))

        def series_job(spec: SeriesSpec) -> Callable[[Worker, int], Series]:
            def job(worker: Worker, lane: int) -> Series:
                stc = structures.get(spec.chain, {})
                blocked = stc.get("hang") or stc.get("crash")
                if blocked:
                    budget.claim()
                    budget.release()
                    return Series(
                        chain=spec.chain,
                        backend=spec.backend,
                        profile=spec.profile,
                        mode=spec.mode,
                        declared_reuse=spec.declared_reuse,
                        params=dict(spec.params),
                        error=blocked,
                    )
                allowance = budget.claim()
                try:
                    if allowance <= 0:
                        return Series(
                            chain=spec.chain,
                            backend=spec.backend,
                            profile=spec.profile,
                            mode=spec.mode,
                            declared_reuse=spec.declared_reuse,
                            params=dict(spec.params),
                            stopped=f"not measured: the {cfg.budget:g} s budget was used up",
                        )
                    return run_series(
                        spec, worker, cfg, allowance, budget.deadline, lambda text: st(lane, f"{spec.label} {text}")
                    )
                finally:
                    budget.release()

            return job

        def done(i: int, res: Any) -> None:
            if on_series is not None and isinstance(res, Series):
                on_series(res)

        results = pool.map([series_job(s) for s in specs], on_done=done, poll=poll)
        # second pass: series stopped by their share continue with what the others left over
        again = [i for i, r in enumerate(results) if isinstance(r, Series) and budget_stopped(r)]
        if again and budget.remaining() > 1.0:
            budget.add(len(again))

            def resume_job(i: int) -> Callable[[Worker, int], Series]:
                spec, prev = specs[i], results[i]

                def job(worker: Worker, lane: int) -> Series:
                    allowance = budget.claim()
                    try:
                        if allowance <= 0.5:
                            return prev
                        return run_series(
                            spec,
                            worker,
                            cfg,
                            allowance,
                            budget.deadline,
                            lambda text: st(lane, f"{spec.label} (more) {text}"),
                            resume=prev,
                        )
                    finally:
                        budget.release()

                return job

            for i, res in zip(again, pool.map([resume_job(i) for i in again], poll=poll), strict=True):
                if isinstance(res, Series):
                    results[i] = res
    finally:
        pool.close()
    series: list[Series] = []
    for spec, res in zip(specs, results, strict=True):
        if isinstance(res, Series):
            series.append(res)
        else:  # a bug of ours: keep the run going, report it on the series
            series.append(
                Series(
                    chain=spec.chain,
                    backend=spec.backend,
                    profile=spec.profile,
                    mode=spec.mode,
                    declared_reuse=spec.declared_reuse,
                    params=dict(spec.params),
                    error=f"internal error: {type(res).__name__}: {res}",
                )
            )
    unmeasured = [s for s in series if not s.points and not s.error]
    if unmeasured:
        notes.append(f"{len(unmeasured)} series not measured: the {cfg.budget:g} s budget was used up")
    return Measured(series=series, structures=structures, notes=notes, elapsed=budget.elapsed())
