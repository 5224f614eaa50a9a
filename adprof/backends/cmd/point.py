"""One ``--cmd`` point: a timed run read through the protocol, or instruction counts under callgrind."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from adprof.backends.cmd.callgrind import run_callgrind
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
from adprof.model import Point

#: Whole-process baseline counts, per (template, baseline depth, mode, calls): one run per template.
_BASELINES: dict[tuple[str, int, str, int | None], int] = {}


@dataclass
class _Runs:
    """How the callgrind runs of one point are made (the same for every phase)."""

    argv_at: Callable[[int], list[str]]
    mode: str
    timeout: float
    output_limit: int
    env: Mapping[str, str] | None
    on_run: Callable[[str], None] | None = None

    def run(self, depth: int, options: list[str], what: str) -> tuple[Any, list[int]]:
        if self.on_run is not None:
            self.on_run(what)
        done, totals, _ = run_callgrind(
            self.argv_at(depth), options, timeout=self.timeout, output_limit=self.output_limit, env=self.env
        )
        return done, totals


def _per_call_split(totals: list[int], calls: int) -> list[int]:
    """Dump segments of a phase split with --dump-before on the other per-call phase: K+1 segments,
    of which the one at one end is empty (before the first, or after the last, call of the phase)."""
    if len(totals) == calls + 1:
        return totals[1:] if totals[0] == 0 or totals[-1] != 0 else totals[:-1]
    return totals


def _read_protocol(pt: Point, done: Any, mode: str, phases: Mapping[str, str]) -> dict[str, Any]:
    obj = last_json_object(done.stdout.decode("utf-8", "replace"))
    if obj is None:
        raise CommandFailure(
            "no-json", f"{done.argv[0]} printed no JSON object on stdout (phases {', '.join(phases)} expected)"
        )
    apply_protocol(pt, obj, mode)
    return obj


def _count_phase(pt: Point, runs: _Runs, name: str, pattern: str, phases: Mapping[str, str]) -> tuple[str, Any]:
    """One callgrind run collecting only inside ``pattern``; its counts into ``pt.metrics``."""
    base = phase_base(name)
    options = ["--collect-atstart=no", f"--toggle-collect={pattern}"]
    other = "backward" if base == "forward" else "forward"
    split_by = next((p for n, p in phases.items() if phase_base(n) == other), None)
    per_call = runs.mode == "eager" and base in PER_CALL
    if per_call and split_by:
        options.append(f"--dump-before={split_by}")
    done, totals = runs.run(pt.depth, options, name)
    obj = pt.extra.get("_protocol") or _read_protocol(pt, done, runs.mode, phases)
    pt.extra["_protocol"] = obj
    if per_call:
        listed = obj.get(f"{base}_seconds")
        n_calls = len(listed) if isinstance(listed, list) else 0
        counts = _per_call_split(totals, n_calls) if split_by and n_calls else [sum(totals)]
        if len(counts) > 1:
            pt.extra[f"{base}_call_instructions"] = counts
            pt.metrics[f"{base}0"] = {"instructions": counts[0]}
            pt.metrics[base] = {"instructions": statistics.median(counts[1:])}
            _time_if_missing(pt, f"{base}0")
            _time_if_missing(pt, base)
            return f"{base}={pattern!r} (per call, split at {split_by!r})", done
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
    return f"{phase}={pattern!r}", done


#: Nominal speed of a program under callgrind (instructions per second; ~50x below native). A phase the
#: command timed as 0 (``ADPROF_METRIC=instructions``) gets ``instructions / CALLGRIND_RATE`` as its time:
#: deterministic, so that the cap and the schedule's predictions stop a series at the same depth on
#: every run, loaded or not (the callgrind runs' wall times are mostly valgrind's start-up).
CALLGRIND_RATE = 25e6


def _time_if_missing(pt: Point, phase: str) -> None:
    if not pt.times.get(phase) and phase in pt.metrics:
        pt.times[phase] = pt.metrics[phase]["instructions"] / CALLGRIND_RATE
        pt.extra["times"] = f"instructions / {CALLGRIND_RATE:.3g} (nominal callgrind speed) where the command timed 0"


def _phase_point(pt: Point, runs: _Runs, phases: Mapping[str, str]) -> Point:
    counted = [_count_phase(pt, runs, name, pattern, phases)[0] for name, pattern in phases.items()]
    pt.extra.pop("_protocol", None)
    pt.extra["counted"] = (
        "instructions (callgrind Ir) executed inside the functions matching "
        + ", ".join(counted)
        + " (--toggle-collect, one run per phase; start-up, setup and output not counted)"
    )
    return pt


def _baseline_point(pt: Point, runs: _Runs, template: str, baseline_depth: int, calls: int | None) -> Point:
    depth = pt.depth
    done, totals = runs.run(depth, [], "process")
    key = (template, baseline_depth, runs.mode, calls)
    if key not in _BASELINES:
        _, base_totals = runs.run(baseline_depth, [], "baseline")
        _BASELINES[key] = sum(base_totals)
    baseline, total = _BASELINES[key], sum(totals)
    if total < baseline:
        raise CommandFailure(
            "baseline",
            f"depth {depth} ran fewer instructions ({total:,}) than the baseline at depth {baseline_depth} "
            f"({baseline:,}); name the measured phases with --phase instead",
        )
    obj = last_json_object(done.stdout.decode("utf-8", "replace"))
    if obj is not None:
        apply_protocol(pt, obj, runs.mode)
    pt.metrics["process"] = {"instructions": total - baseline}
    _time_if_missing(pt, "process")
    pt.extra["counted"] = (
        f"instructions (callgrind Ir) of the whole process at depth {depth} ({total:,}) minus the same command "
        f"at depth {baseline_depth} ({baseline:,}): start-up and fixed setup cancel, depth-dependent setup does not"
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
) -> Point:
    """Measure one point of ``template`` (``'PROG ARGS {depth}'``) at ``depth`` (see the package docstring).

    ``mode``: ``traced`` or ``eager`` (how protocol keys map to phases); ``metric``: ``time`` or
    ``instructions``; ``phases``: phase -> callgrind function pattern (instructions only); ``calls``
    replaces ``{calls}`` in the template; ``env``: extra environment variables; ``require_json``: fail
    when the program prints no JSON (implied by ``phases``); ``on_run(what)`` is called before each
    callgrind run (each gets the full ``timeout``). Raises :class:`CommandFailure`.
    """
    _check_args(template, depth, mode, metric, phases, calls)

    def argv_at(d: int) -> list[str]:
        return expand(template, d, calls)

    if metric == "time":
        return _timed_point(
            argv_at(depth), depth, mode, require_json, timeout=timeout, output_limit=output_limit, env=env
        )
    runs = _Runs(argv_at, mode, timeout, output_limit, env, on_run)
    pt = Point(depth=depth)
    pt.extra["metric"] = "instructions"
    if phases:
        return _phase_point(pt, runs, phases)
    return _baseline_point(pt, runs, template, baseline_depth, calls)
