"""One ``--cmd`` point: a timed run read through the protocol, or instruction counts under callgrind.

An instruction point is a native run first (the program's own seconds and counters, and its wall time:
what the cap, the schedule's predictions and the time evidence see), then the callgrind runs that count
(each bounded by ``count_timeout`` and the budget's end, never by the cap: valgrind's slowdown is not the
program's cost).
"""

from __future__ import annotations

import fnmatch
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adprof.backends.cmd.callgrind import profile_from_callgrind, run_callgrind
from adprof.backends.cmd.process import (
    DEFAULT_OUTPUT_LIMIT,
    METRICS,
    MODES,
    CommandFailure,
    check_exit,
    expand,
    run_process,
)
from adprof.backends.cmd.protocol import (
    PER_CALL,
    TRACED_PHASES,
    apply_protocol,
    check_within,
    last_json_object,
    phase_base,
)
from adprof.constants import NOMINAL_INSTRUCTION_RATE
from adprof.model import Point, cost_phases

#: Whole-process baseline counts, per (template, baseline depth, mode, calls): one run per template.
_BASELINES: dict[tuple[str, int, str, int | None], int] = {}

#: A callgrind run may take this many times the point's timeout (callgrind runs a program 20-100x slower
#: than natively); the budget's end bounds it too.
COUNT_TIMEOUT_FACTOR = 100.0


class CountTimeout(CommandFailure):
    """A callgrind run did not finish in time: its wall time says nothing about the program's own cost."""

    def __init__(self, message: str, seconds: float, limit: float, by_deadline: bool) -> None:
        super().__init__("count-timeout", message)
        self.seconds, self.limit, self.by_deadline = seconds, limit, by_deadline


@dataclass
class _Runs:
    """How the callgrind runs of one point are made (the same for every phase)."""

    argv_at: Callable[[int], list[str]]
    mode: str
    timeout: float
    output_limit: int
    env: Mapping[str, str] | None
    on_run: Callable[[str], None] | None = None
    deadline: float | None = None  # time.monotonic() of the budget's end
    seconds: float = 0.0  # wall time of the callgrind runs so far

    def run(self, depth: int, options: list[str], what: str) -> tuple[Any, list[int]]:
        if self.on_run is not None:
            self.on_run(what)
        limit, by_deadline = self.timeout, False
        if self.deadline is not None and self.deadline - time.monotonic() < limit:
            limit, by_deadline = max(self.deadline - time.monotonic(), 0.5), True
        t0 = time.monotonic()
        try:
            done, totals, _ = run_callgrind(
                self.argv_at(depth), options, timeout=limit, output_limit=self.output_limit, env=self.env
            )
        except CommandFailure as exc:
            if exc.kind != "timeout":
                raise
            secs = time.monotonic() - t0
            why = "the budget ran out" if by_deadline else f"its {limit:.0f} s limit"
            raise CountTimeout(
                f"counting instructions ({what}) at depth {depth} under valgrind stopped after {secs:.1f} s: {why}",
                secs,
                limit,
                by_deadline,
            ) from None
        finally:
            self.seconds += time.monotonic() - t0
        return done, totals


def _per_call_split(totals: list[int], calls: int) -> list[int]:
    """Dump segments of a phase split with --dump-before on the other per-call phase: K+1 segments,
    of which the one at one end is empty (before the first, or after the last, call of the phase)."""
    if len(totals) == calls + 1:
        return totals[1:] if totals[0] == 0 or totals[-1] != 0 else totals[:-1]
    return totals


def _count_phase(pt: Point, runs: _Runs, name: str, pattern: str, phases: Mapping[str, str]) -> str:
    """One callgrind run collecting only inside ``pattern``; its counts into ``pt.metrics``."""
    base = phase_base(name)
    options = ["--collect-atstart=no", f"--toggle-collect={pattern}"]
    other = "backward" if base == "forward" else "forward"
    split_by = next((p for n, p in phases.items() if phase_base(n) == other), None)
    per_call = runs.mode == "eager" and base in PER_CALL
    if per_call and split_by:
        options.append(f"--dump-before={split_by}")
    _, totals = runs.run(pt.depth, options, name)
    if per_call:
        listed = pt.extra.get(f"{base}_calls")  # the native run's per-call list
        n_calls = len(listed) if isinstance(listed, list) else 0
        counts = _per_call_split(totals, n_calls) if split_by and n_calls else [sum(totals)]
        if len(counts) > 1:
            pt.extra[f"{base}_call_instructions"] = counts
            pt.metrics[f"{base}0"] = {"instructions": counts[0]}
            pt.metrics[base] = {"instructions": statistics.median(counts[1:])}
            _time_if_missing(pt, f"{base}0")
            _time_if_missing(pt, base)
            return f"{base}={pattern!r} (per call, split at {split_by!r})"
        phase = base
    else:
        phase = TRACED_PHASES.get(base, base) if runs.mode == "traced" else base
    total = sum(totals)
    if total == 0:
        raise CommandFailure(
            "valgrind", f"no instructions inside functions matching {pattern!r} (phase {name}): check the pattern"
        )
    pt.metrics[phase] = {"instructions": total}
    _time_if_missing(pt, phase)
    return f"{phase}={pattern!r}"


def _time_if_missing(pt: Point, phase: str) -> None:
    """A phase the native run did not time (or timed 0) gets its instructions at the nominal native speed:
    deterministic, so that the cap and the schedule's predictions stop a series at the same depth on every
    run."""
    if not pt.times.get(phase) and phase in pt.metrics:
        pt.times[phase] = pt.metrics[phase]["instructions"] / NOMINAL_INSTRUCTION_RATE
        pt.extra["times"] = (
            f"instructions / {NOMINAL_INSTRUCTION_RATE:.3g} per s (nominal native speed) where the program timed 0"
        )


def _phase_point(pt: Point, runs: _Runs, phases: Mapping[str, str]) -> Point:
    counted = [_count_phase(pt, runs, name, pattern, phases) for name, pattern in phases.items()]
    pt.extra["counted"] = (
        "instructions (callgrind Ir) executed inside the functions matching "
        + ", ".join(counted)
        + " (--toggle-collect, one run per phase; start-up, setup and output not counted)"
    )
    return pt


def baseline_count(runs: _Runs, template: str, baseline_depth: int, calls: int | None) -> int:
    """The whole-process count of ``template`` at ``baseline_depth`` (one callgrind run, cached)."""
    key = (template, baseline_depth, runs.mode, calls)
    if key not in _BASELINES:
        _, base_totals = runs.run(baseline_depth, [], "baseline")
        _BASELINES[key] = sum(base_totals)
    return _BASELINES[key]


def _whole_phase(pt: Point, mode: str) -> tuple[str, int]:
    """Where a whole-process count goes: the mode's first cost phase (standing for all of them; eager: per
    backward call the program reported), or ``process`` when the program reported no phases."""
    if set(pt.times) <= {"process"}:
        return "process", 1
    phase = cost_phases(mode)[0]
    listed = pt.extra.get("backward_calls") if mode == "eager" else None
    return phase, len(listed) if isinstance(listed, list) and listed else 1


def _baseline_point(pt: Point, runs: _Runs, template: str, baseline_depth: int, calls: int | None) -> Point:
    depth = pt.depth
    _, totals = runs.run(depth, [], "process")
    baseline, total = baseline_count(runs, template, baseline_depth, calls), sum(totals)
    if total < baseline:
        raise CommandFailure(
            "baseline",
            f"depth {depth} ran fewer instructions ({total:,}) than the baseline at depth {baseline_depth} "
            f"({baseline:,}); name the measured phases with --phase instead",
        )
    phase, per = _whole_phase(pt, runs.mode)
    pt.metrics[phase] = {"instructions": (total - baseline) / per if per > 1 else total - baseline}
    _time_if_missing(pt, phase)
    stands_for = "+".join(cost_phases(runs.mode)) if phase != "process" else "the process"
    each = f", per backward call ({per} calls)" if per > 1 else ""
    pt.extra["counted"] = (
        f"instructions (callgrind Ir) of the whole process at depth {depth} ({total:,}) minus the same command "
        f"at depth {baseline_depth} ({baseline:,}), as {stands_for}{each}: start-up and fixed setup cancel, "
        "depth-dependent setup does not"
    )
    return pt


def _check_args(template: str, depth: int, mode: str, metric: str, phases: Any, calls: int | None) -> None:
    if mode not in MODES:
        raise CommandFailure("template", f"unknown mode {mode!r} for --cmd; known: {', '.join(MODES)}")
    if metric not in METRICS:
        raise CommandFailure("template", f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if phases and metric != "instructions":
        raise CommandFailure("template", "--phase patterns apply to --metric instructions only")
    expand(template, depth, calls)  # template errors first


def _timed_point(argv: list[str], depth: int, mode: str, require_json: bool, **run: Any) -> Point:
    done = run_process(argv, **run)
    check_exit(done)
    pt = Point(depth=depth)
    pt.extra["process_seconds"] = done.seconds
    pt.extra["metric"] = "time"
    obj = last_json_object(done.stdout.decode("utf-8", "replace"))
    if obj is None and require_json:
        raise CommandFailure("no-json", f"{done.argv[0]} printed no JSON object on stdout (phases were expected)")
    if obj is not None:
        check_within(obj, done.seconds)
    if obj is None or not apply_protocol(pt, obj, mode):
        pt.times["process"] = done.seconds
        pt.extra["counted"] = "wall time of the whole process (it reported no phases)"
    else:
        pt.extra["counted"] = "seconds and counters reported by the command (JSON protocol)"
    return pt


def run_command_point(
    template: str,
    depth: int,
    mode: str,
    *,
    metric: str = "time",
    phases: dict[str, str] | None = None,
    timeout: float,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    calls: int | None = None,
    env: Mapping[str, str] | None = None,
    baseline_depth: int = 0,
    require_json: bool = False,
    on_run: Callable[[str], None] | None = None,
    count_timeout: float | None = None,
    deadline: float | None = None,
) -> Point:
    """Measure one point of ``template`` (``'PROG ARGS {depth}'``) at ``depth`` (see the package docstring).

    ``mode``: ``traced`` or ``eager`` (how protocol keys map to phases); ``metric``: ``time`` or
    ``instructions``; ``phases``: phase -> callgrind function pattern (instructions only); ``calls``
    replaces ``{calls}`` in the template; ``env``: extra environment variables; ``require_json``: fail
    when the program prints no JSON (implied by ``phases``); ``on_run(what)`` is called before each run.
    ``timeout`` bounds the native run; each callgrind run gets ``count_timeout`` (default
    :data:`COUNT_TIMEOUT_FACTOR` x ``timeout``) and ends by ``deadline`` (``time.monotonic()``) at the
    latest (:class:`CountTimeout`). Raises :class:`CommandFailure`.
    """
    _check_args(template, depth, mode, metric, phases, calls)

    def argv_at(d: int) -> list[str]:
        return expand(template, d, calls)

    run = {"timeout": timeout, "output_limit": output_limit, "env": env}
    if metric == "time":
        return _timed_point(argv_at(depth), depth, mode, require_json, **run)
    if on_run is not None:
        on_run("native run")
    pt = _timed_point(argv_at(depth), depth, mode, require_json or bool(phases), **run)
    pt.extra["metric"] = "instructions"
    runs = _Runs(argv_at, mode, count_timeout or timeout * COUNT_TIMEOUT_FACTOR, output_limit, env, on_run, deadline)
    if phases:
        _phase_point(pt, runs, phases)
    else:
        _baseline_point(pt, runs, template, baseline_depth, calls)
    pt.extra["count_seconds"] = runs.seconds
    return pt


def check_counting(
    template: str,
    mode: str,
    phases: Mapping[str, str] | None,
    *,
    timeout: float,
    calls: int | None = None,
    env: Mapping[str, str] | None = None,
    baseline_depth: int = 0,
) -> None:
    """Raise :class:`CommandFailure` (one line) unless instructions of ``template`` can be counted: valgrind
    runs it, each ``--phase`` pattern matches a function that executes at depth 1 (a stripped binary has
    none), or, without phases, the baseline run at ``baseline_depth`` works (it is then cached)."""
    depth = 1 if phases else baseline_depth
    argv = expand(template, depth, calls)
    native = run_process(argv, timeout=timeout, env=env)
    try:
        check_exit(native)
    except CommandFailure as exc:
        if phases:
            raise
        raise CommandFailure(
            "baseline",
            f"--metric instructions without --phase subtracts a run at depth {depth}, and it fails: {exc.message}; "
            "name the measured phases with --phase",
        ) from None
    runs = _Runs(lambda d: expand(template, d, calls), mode, timeout, DEFAULT_OUTPUT_LIMIT, env)
    try:
        if not phases:
            baseline_count(runs, template, baseline_depth, calls)
            return
        patterns = list(dict.fromkeys(phases.values()))
        options = ["--collect-atstart=no", *(f"--toggle-collect={p}" for p in patterns)]
        _, _, text = run_callgrind(argv, options, timeout=timeout, output_limit=DEFAULT_OUTPUT_LIMIT, env=env)
    except CountTimeout as exc:
        raise CommandFailure("valgrind", f"--metric instructions: {exc.message}") from None
    except CommandFailure as exc:
        if exc.kind == "timeout":
            raise CommandFailure(
                "valgrind", f"--metric instructions: valgrind did not run {argv[0]}: {exc.message}"
            ) from None
        raise CommandFailure(
            "valgrind", f"--metric instructions: valgrind cannot run {argv[0]} ({exc.message})"
        ) from None
    names = [name for name, inclusive, _ in profile_from_callgrind(text) if inclusive > 0]
    for phase, pattern in phases.items():
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            raise CommandFailure(
                "valgrind",
                f"--phase {phase}={pattern!r}: no function matching it ran at depth {depth} under callgrind "
                "(a stripped binary has no names; build with symbols, or drop --phase to count the whole process)",
            )
