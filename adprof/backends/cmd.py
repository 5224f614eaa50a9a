"""The ``--cmd`` backend: one point = one run of an external program, in any language.

``run_command_point('PROG ARGS {depth}', depth, mode, ...)`` replaces ``{depth}`` (and ``{calls}``, if
present), splits the template with :func:`shlex.split` and runs it as its own process: its own session
and process group, stdin closed, stdout and stderr captured up to ``output_limit`` bytes each, on Linux
``PR_SET_PDEATHSIG`` so that it dies with adprof. When the program exits, anything left in its process
group is killed; past the timeout or the output limit the whole group is killed and the point fails.

The protocol: the program prints JSON objects, one per line; the last line of stdout that starts with
``{`` is read (it must parse). Keys, all optional: ``transform_seconds``, ``drop_seconds``,
``compile_seconds``, ``lower_seconds``, ``forward_seconds``, ``backward_seconds`` (a number, or a list
with one entry per call) and ``counters``. Mapping onto :class:`adprof.model.Point` phases (the
engine's names):

=====================  ===============================  =========================================
protocol key           traced mode                      eager mode
=====================  ===============================  =========================================
``transform_seconds``  ``transform``                    ``transform``
``drop_seconds``       ``drop``                         ``drop``
``compile_seconds``    ``compile``                      ``compile``
``lower_seconds``      ``lower`` (the classifier's      ``lower``
                       compile-mode phase)
``forward_seconds``    ``record`` (the engine's name    list: ``forward0`` = call 0, ``forward`` =
                       for building the chain)          median of calls 1..; ``extra["forward_calls"]``
``backward_seconds``   ``run`` (a list: its median;     list: ``backward0`` = call 0, ``backward`` =
                       ``extra["run_calls"]``)          median of calls 1..; ``extra["backward_calls"]``
                                                        (a single number: ``backward``)
=====================  ===============================  =========================================

``counters`` is either a flat object of numbers, which goes to the phase that decides (traced:
``transform``, standing for transform+drop; eager: ``backward``, per steady call), or an object of
phases (the protocol's base names above or adprof's own), each an object of numbers or, in eager mode,
a list with one object per call (then ``<phase>0`` = call 0, ``<phase>`` = the median call by counter
sum, and ``extra["backward_call_counters"]`` / ``extra["forward_call_counters"]`` the lists). With none
of the known keys, the process's wall time is the cost: phase ``process``. The wall time of the run is
always in ``extra["process_seconds"]``.

``metric="instructions"`` runs the command under ``valgrind --tool=callgrind`` (with
``ADPROF_METRIC=instructions`` in its environment, so that a program may print constant times and keep
its output, and thus its count, identical run to run) and puts counts in
``Point.metrics[phase]["instructions"]``:

* with ``phases`` (phase -> callgrind function pattern, from ``--phase transform='*phase_transform*'``):
  one run per phase with ``--collect-atstart=no --toggle-collect=PATTERN``, so only the instructions
  executed inside that phase's functions are counted (not start-up, setup or output). In eager mode a
  ``backward`` (``forward``) phase is split per call by ``--dump-before`` on the other phase's pattern
  (callgrind takes one option per function, so the split needs both patterns); call 0 goes to
  ``backward0`` and the median of calls 1.. to ``backward``, the list to
  ``extra["backward_call_instructions"]`` (without the other pattern, or without a per-call list in the
  protocol, ``backward`` holds the phase's total over all calls). Protocol times and counters are read
  from the first of these runs (times taken under valgrind: do not compare them with native ones).
* without ``phases``: the whole process is counted and a baseline run of the same template at
  ``baseline_depth`` (default 0; cached per template) is subtracted, phase ``process``: start-up,
  argument parsing and fixed setup cancel.

Each valgrind run gets the full ``timeout``. ``Point.extra["counted"]`` says in words what was counted.
Failures raise :class:`CommandFailure` with a ``kind`` and a one-line message.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import selectors
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adprof.model import Point

MODES: tuple[str, ...] = ("traced", "eager")
METRICS: tuple[str, ...] = ("time", "instructions")
DEFAULT_OUTPUT_LIMIT = 1 << 20
DEFAULT_CALLS = 6
#: Protocol key -> phase base name.
PROTOCOL_KEYS: dict[str, str] = {
    "transform_seconds": "transform",
    "drop_seconds": "drop",
    "compile_seconds": "compile",
    "lower_seconds": "lower",
    "forward_seconds": "forward",
    "backward_seconds": "backward",
}
#: Traced mode: protocol base name -> Point phase (eager keeps the base names, split per call).
TRACED_PHASES: dict[str, str] = {
    "transform": "transform",
    "drop": "drop",
    "compile": "compile",
    "lower": "lower",
    "forward": "record",
    "backward": "run",
}
PER_CALL = ("forward", "backward")
#: The environment variable set for runs under callgrind.
METRIC_ENV = "ADPROF_METRIC"
STDERR_TAIL = 300


class CommandFailure(Exception):
    """A point of a ``--cmd`` series could not be measured; ``message`` is one line.

    Kinds: ``template``, ``missing``, ``not-executable``, ``exit``, ``no-json``, ``malformed``,
    ``negative``, ``timeout``, ``flood``, ``valgrind``, ``baseline``.
    """

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------------------------------------------
# Running one process


@dataclass
class Completed:
    argv: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float


def _prctl() -> Any:
    """libc's ``prctl``, loaded in the parent (the child between fork and exec must not import)."""
    global _PRCTL
    if _PRCTL is None:
        try:
            import ctypes

            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            _PRCTL = False
    return _PRCTL


_PRCTL: Any = None


def _die_with_parent(prctl: Any, parent: int) -> None:  # runs in the child between fork and exec
    if prctl:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def expand(template: str, depth: int, calls: int | None = None) -> list[str]:
    """The argv of ``template`` at ``depth``: ``{depth}`` (required) and ``{calls}`` replaced."""
    if "{depth}" not in template:
        raise CommandFailure("template", f"the command {template!r} has no {{depth}} placeholder")
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise CommandFailure("template", f"the command {template!r} does not parse: {exc}") from None
    if not parts:
        raise CommandFailure("template", "the command is empty")
    n = DEFAULT_CALLS if calls is None else int(calls)
    return [p.replace("{depth}", str(int(depth))).replace("{calls}", str(n)) for p in parts]


def _check_program(prog: str) -> None:
    if os.sep in prog:
        path = Path(prog)
        if not path.exists():
            raise CommandFailure("missing", f"command not found: {prog}")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise CommandFailure("not-executable", f"command is not executable: {prog}")
    elif shutil.which(prog) is None:
        raise CommandFailure("missing", f"command not found on PATH: {prog}")


def run_process(
    argv: list[str], *, timeout: float, output_limit: int = DEFAULT_OUTPUT_LIMIT, env: Mapping[str, str] | None = None
) -> Completed:
    """Run ``argv`` in its own process group with stdin closed and both outputs captured (each up to
    ``output_limit`` bytes); kill the group on timeout, on a flood, and when the program exits.

    ``env``: extra environment variables on top of adprof's own. Linux delivers the parent-death
    signal when the *thread* that started the child ends: call this from a thread that outlives it.
    """
    _check_program(argv[0])
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    preexec = None
    if sys.platform.startswith("linux"):
        parent, prctl = os.getpid(), _prctl()

        def preexec() -> None:
            _die_with_parent(prctl, parent)

    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=preexec,
            env=full_env,
        )
    except FileNotFoundError:
        raise CommandFailure("missing", f"command not found: {argv[0]}") from None
    except PermissionError:
        raise CommandFailure("not-executable", f"command is not executable: {argv[0]}") from None
    except OSError as exc:  # e.g. ENOEXEC: a script without a #! line
        raise CommandFailure("not-executable", f"command cannot be executed: {argv[0]} ({exc.strerror})") from None
    pgid = proc.pid  # start_new_session: the child leads its own group
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    failure: CommandFailure | None = None
    try:
        while sel.get_map():
            elapsed = time.perf_counter() - t0
            if elapsed > timeout:
                failure = CommandFailure(
                    "timeout",
                    f"{argv[0]} did not finish within {timeout:g} s (killed with its process group "
                    f"after {elapsed:.1f} s)",
                )
                break
            if proc.poll() is not None:
                # the program is done: whatever it left in its group must not outlive the point (and
                # must not hold our pipes open)
                _kill_group(pgid)
            for sk, _ in sel.select(timeout=min(0.05, max(0.0, timeout - elapsed))):
                chunk = os.read(sk.fd, 65536)
                if not chunk:
                    sel.unregister(sk.fileobj)
                    continue
                buf = buffers[sk.data]
                buf.extend(chunk)
                if len(buf) > output_limit:
                    failure = CommandFailure(
                        "flood",
                        f"{argv[0]} wrote more than {output_limit:,} bytes to {sk.data} (output limit); "
                        "stopped reading and killed it",
                    )
                    break
            if failure:
                break
    finally:
        sel.close()
        _kill_group(pgid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    seconds = time.perf_counter() - t0
    if failure:
        raise failure
    return Completed(argv, proc.returncode, bytes(buffers["stdout"]), bytes(buffers["stderr"]), seconds)


def _one_line(text: str, limit: int = STDERR_TAIL) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = " | ".join(lines[-3:])
    return tail if len(tail) <= limit else "..." + tail[-limit:]


def _check_exit(done: Completed) -> None:
    if done.returncode == 0:
        return
    rc = done.returncode
    how = f"was killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
    tail = _one_line(done.stderr.decode("utf-8", "replace"))
    raise CommandFailure("exit", f"{done.argv[0]} {how}" + (f": {tail}" if tail else " (no stderr)"))


# ---------------------------------------------------------------------------------------------------
# The protocol


def last_json_object(stdout: str) -> dict[str, Any] | None:
    """The last line of ``stdout`` that starts with ``{``, parsed (None when there is none)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandFailure(
                "malformed", f"the last JSON line of stdout does not parse ({exc.msg}): {line[:80]}"
            ) from None
        if not isinstance(obj, dict):
            raise CommandFailure("malformed", f"the last JSON line of stdout is not an object: {line[:80]}")
        return obj
    return None


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CommandFailure("malformed", f"{what} is {json.dumps(value)[:40]}, not a number")
    v = float(value)
    if not math.isfinite(v):
        raise CommandFailure("malformed", f"{what} is {v} (not finite)")
    if v < 0:
        raise CommandFailure("negative", f"{what} is negative ({value})")
    return v


def _numbers(value: Any, what: str) -> list[float]:
    """A number or a non-empty list of numbers."""
    if isinstance(value, list):
        if not value:
            raise CommandFailure("malformed", f"{what} is an empty list")
        return [_number(v, f"{what}[{i}]") for i, v in enumerate(value)]
    return [_number(value, what)]


def _counter_dict(value: Any, what: str) -> dict[str, float]:
    if not isinstance(value, dict):
        raise CommandFailure("malformed", f"{what} is {json.dumps(value)[:40]}, not an object of numbers")
    return {str(k): _number(v, f"{what}.{k}") for k, v in value.items()}


def _median_index(values: list[float]) -> int:
    med = statistics.median(values)
    return min(range(len(values)), key=lambda j: abs(values[j] - med))


def _base(name: str) -> str:
    """A phase name (protocol base or adprof's) -> protocol base name."""
    for base, traced in TRACED_PHASES.items():
        if name in (base, traced):
            return base
    return name.rstrip("0") if name.rstrip("0") in PER_CALL else name


def _put_per_call(pt: Point, base: str, values: list[float], store: dict[str, Any], list_key: str) -> None:
    """Eager: call 0 -> ``<base>0``, the median of calls 1.. -> ``<base>``; the list in extra."""
    pt.extra[list_key] = values
    store[f"{base}0"] = values[0]
    if len(values) > 1:
        store[base] = statistics.median(values[1:])
    elif base == "backward":
        store[base] = values[0]


def apply_protocol(pt: Point, obj: dict[str, Any], mode: str) -> bool:
    """Fill ``pt`` (times, counters, ops) from a protocol object; False when it has no known key."""
    known = False
    for key, base in PROTOCOL_KEYS.items():
        if key not in obj:
            continue
        known = True
        values = _numbers(obj[key], key)
        if mode == "eager" and base in PER_CALL:
            if isinstance(obj[key], list):
                _put_per_call(pt, base, values, pt.times, f"{base}_calls")
            else:
                pt.times[base] = values[0]
        else:
            phase = TRACED_PHASES[base] if mode == "traced" else base
            pt.times[phase] = statistics.median(values)
            if len(values) > 1:
                pt.extra[f"{phase}_calls"] = values
    if "counters" in obj:
        known = True
        _apply_counters(pt, obj["counters"], mode)
    for key in ("value_ops", "derivative_ops", "program_ops"):
        if isinstance(obj.get(key), int) and not isinstance(obj.get(key), bool):
            pt.ops[key] = int(obj[key])
    for key in ("value", "gradient"):
        if isinstance(obj.get(key), int | float) and not isinstance(obj.get(key), bool):
            pt.extra[key] = float(obj[key])
    return known


def _apply_counters(pt: Point, counters: Any, mode: str) -> None:
    if not isinstance(counters, dict):
        raise CommandFailure("malformed", f"counters is {json.dumps(counters)[:40]}, not an object")
    if all(not isinstance(v, dict | list) for v in counters.values()):
        pt.counters["backward" if mode == "eager" else "transform"] = _counter_dict(counters, "counters")
        return
    for name, value in counters.items():
        base = _base(str(name))
        what = f"counters.{name}"
        if isinstance(value, list):
            calls = [_counter_dict(c, f"{what}[{i}]") for i, c in enumerate(value)]
            if not calls:
                raise CommandFailure("malformed", f"{what} is an empty list")
            if mode == "eager" and base in PER_CALL:
                pt.extra[f"{base}_call_counters"] = calls
                pt.counters[f"{base}0"] = calls[0]
                rest = calls[1:] or calls
                pt.counters[base] = rest[_median_index([sum(c.values()) for c in rest])]
            else:
                phase = TRACED_PHASES.get(base, base) if mode == "traced" else base
                pt.counters[phase] = calls[_median_index([sum(c.values()) for c in calls])]
        else:
            phase = TRACED_PHASES.get(base, base) if mode == "traced" else base
            pt.counters[phase] = _counter_dict(value, what)


# ---------------------------------------------------------------------------------------------------
# Instruction counts (callgrind)


def _valgrind() -> str:
    exe = shutil.which("valgrind")
    if exe is None:
        raise CommandFailure("valgrind", "--metric instructions needs valgrind (not found on PATH)")
    return exe


def _callgrind_argv(argv: list[str], out_dir: str, options: list[str]) -> list[str]:
    return [
        _valgrind(),
        "--tool=callgrind",
        f"--callgrind-out-file={out_dir}/callgrind.out",
        f"--log-file={out_dir}/valgrind.log",
        *options,
        *argv,
    ]


def callgrind_totals(path: Path) -> int:
    """The ``totals:`` (or ``summary:``) instruction count of one callgrind output file."""
    summary = None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
        if line.startswith("summary:"):
            summary = int(line.split()[1])
    if summary is None:
        raise CommandFailure("valgrind", f"no totals in callgrind output {path.name}")
    return summary


def _dump_files(out_dir: str) -> list[Path]:
    """Callgrind's output files in order: ``callgrind.out.1``, ``.2``, ... then the final one."""
    d = Path(out_dir)
    parts = sorted(d.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    final = d / "callgrind.out"
    return [*parts, final] if final.exists() else parts


def _run_callgrind(
    argv: list[str], options: list[str], *, timeout: float, output_limit: int, env: Mapping[str, str] | None
) -> tuple[Completed, list[int], str]:
    with tempfile.TemporaryDirectory(prefix="adprof-callgrind-") as out_dir:
        run_env = {**(env or {}), METRIC_ENV: "instructions"}
        done = run_process(
            _callgrind_argv(argv, out_dir, options), timeout=timeout, output_limit=output_limit, env=run_env
        )
        if done.returncode != 0:
            log = Path(out_dir, "valgrind.log")
            if not done.stderr.strip() and log.exists():
                done.stderr = log.read_bytes()
            done.argv = argv
            _check_exit(done)
        files = _dump_files(out_dir)
        if not files:
            raise CommandFailure("valgrind", f"callgrind wrote no output for {argv[0]}")
        totals = [callgrind_totals(f) for f in files]
        text = files[-1].read_text(errors="replace")
    done.argv = argv
    return done, totals, text


_BASELINES: dict[tuple[str, int, str, int | None], int] = {}


def _per_call_split(totals: list[int], calls: int) -> list[int]:
    """Dump segments of a phase split with --dump-before on the other per-call phase: K+1 segments,
    of which the one at one end is empty (before the first, or after the last, call of the phase)."""
    if len(totals) == calls + 1:
        return totals[1:] if totals[0] == 0 or totals[-1] != 0 else totals[:-1]
    return totals


def _instructions_point(
    argv_at: Any,
    depth: int,
    mode: str,
    phases: dict[str, str] | None,
    *,
    timeout: float,
    output_limit: int,
    env: Mapping[str, str] | None,
    baseline_depth: int,
    template: str,
    calls: int | None,
) -> Point:
    pt = Point(depth=depth)
    pt.extra["metric"] = "instructions"
    argv = argv_at(depth)
    if phases:
        runs: list[str] = []
        obj = None
        for name, pattern in phases.items():
            base = _base(name)
            options = ["--collect-atstart=no", f"--toggle-collect={pattern}"]
            other = "backward" if base == "forward" else "forward"
            split_by = next((p for n, p in phases.items() if _base(n) == other), None)
            per_call = mode == "eager" and base in PER_CALL
            if per_call and split_by:
                options.append(f"--dump-before={split_by}")
            done, totals, _ = _run_callgrind(argv, options, timeout=timeout, output_limit=output_limit, env=env)
            if obj is None:
                obj = last_json_object(done.stdout.decode("utf-8", "replace"))
                if obj is None:
                    raise CommandFailure(
                        "no-json", f"{argv[0]} printed no JSON object on stdout (phases {', '.join(phases)} expected)"
                    )
                apply_protocol(pt, obj, mode)
            if per_call:
                n_calls = len(obj.get(f"{base}_seconds") or []) if isinstance(obj.get(f"{base}_seconds"), list) else 0
                counts = _per_call_split(totals, n_calls) if split_by and n_calls else [sum(totals)]
                if len(counts) > 1:
                    pt.extra[f"{base}_call_instructions"] = counts
                    pt.metrics[f"{base}0"] = {"instructions": counts[0]}
                    pt.metrics[base] = {"instructions": statistics.median(counts[1:])}
                    runs.append(f"{base}={pattern!r} (per call, split at {split_by!r})")
                    continue
                phase = base
            else:
                phase = TRACED_PHASES.get(base, base) if mode == "traced" else base
            total = sum(totals)
            if total == 0:
                raise CommandFailure(
                    "valgrind",
                    f"no instructions inside functions matching {pattern!r} (phase {name}): check the pattern",
                )
            pt.metrics[phase] = {"instructions": total}
            runs.append(f"{phase}={pattern!r}")
        pt.extra["counted"] = (
            "instructions (callgrind Ir) executed inside the functions matching "
            + ", ".join(runs)
            + " (--toggle-collect, one run per phase; start-up, setup and output not counted)"
        )
        return pt
    done, totals, _ = _run_callgrind(argv, [], timeout=timeout, output_limit=output_limit, env=env)
    key = (template, baseline_depth, mode, calls)
    if key not in _BASELINES:
        _, base_totals, _ = _run_callgrind(
            argv_at(baseline_depth), [], timeout=timeout, output_limit=output_limit, env=env
        )
        _BASELINES[key] = sum(base_totals)
    baseline = _BASELINES[key]
    total = sum(totals)
    if total < baseline:
        raise CommandFailure(
            "baseline",
            f"depth {depth} ran fewer instructions ({total:,}) than the baseline at depth {baseline_depth} "
            f"({baseline:,}); name the measured phases with --phase instead",
        )
    obj = last_json_object(done.stdout.decode("utf-8", "replace"))
    if obj is not None:
        apply_protocol(pt, obj, mode)
    pt.metrics["process"] = {"instructions": total - baseline}
    pt.extra["counted"] = (
        f"instructions (callgrind Ir) of the whole process at depth {depth} ({total:,}) minus the same command "
        f"at depth {baseline_depth} ({baseline:,}): start-up and fixed setup cancel, depth-dependent setup does not"
    )
    return pt


# ---------------------------------------------------------------------------------------------------
# The point


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
) -> Point:
    """Measure one point of ``template`` (``'PROG ARGS {depth}'``) at ``depth`` (see the module docstring).

    ``mode``: ``traced`` or ``eager`` (how protocol keys map to phases); ``metric``: ``time`` or
    ``instructions``; ``phases``: phase -> callgrind function pattern (instructions only); ``calls``
    replaces ``{calls}`` in the template; ``env``: extra environment variables; ``require_json``: fail
    when the program prints no JSON (implied by ``phases``). Raises :class:`CommandFailure`.
    """
    if mode not in MODES:
        raise CommandFailure("template", f"unknown mode {mode!r} for --cmd; known: {', '.join(MODES)}")
    if metric not in METRICS:
        raise CommandFailure("template", f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if phases and metric != "instructions":
        raise CommandFailure("template", "--phase patterns apply to --metric instructions only")
    expand(template, depth, calls)  # template errors first

    def argv_at(d: int) -> list[str]:
        return expand(template, d, calls)

    if metric == "instructions":
        return _instructions_point(
            argv_at,
            depth,
            mode,
            phases,
            timeout=timeout,
            output_limit=output_limit,
            env=env,
            baseline_depth=baseline_depth,
            template=template,
            calls=calls,
        )
    done = run_process(argv_at(depth), timeout=timeout, output_limit=output_limit, env=env)
    _check_exit(done)
    pt = Point(depth=depth)
    pt.extra["process_seconds"] = done.seconds
    pt.extra["metric"] = "time"
    obj = last_json_object(done.stdout.decode("utf-8", "replace"))
    if obj is None and require_json:
        raise CommandFailure("no-json", f"{done.argv[0]} printed no JSON object on stdout (phases were expected)")
    if obj is None or not apply_protocol(pt, obj, mode):
        pt.times["process"] = done.seconds
        pt.extra["counted"] = "wall time of the whole process (it reported no phases)"
    else:
        pt.extra["counted"] = "seconds and counters reported by the command (JSON protocol)"
    return pt


# ---------------------------------------------------------------------------------------------------
# Flame-style profile


class Profile(list):
    """``[(function, inclusive, self), ...]`` by inclusive cost, with ``total`` (instructions counted)."""

    total: int = 0

    def share(self, pattern: str) -> float:
        """Largest inclusive share of the functions whose name matches the regular expression ``pattern``
        (recursive functions are one row, so their inclusive cost is counted once)."""
        rx = re.compile(pattern)
        best = max((inc for name, inc, _ in self if rx.search(name)), default=0)
        return best / self.total if self.total else 0.0


#: The function behind seed 001's blowup: upstream computegraph's structural key comparison.
VALUE_KEY_EQ = r"ValueKey<.*> as core::cmp::PartialEq>::eq"

_NAME_REF = re.compile(r"^\((\d+)\)(?: (.*))?$")


def parse_callgrind(text: str) -> tuple[dict[str, int], dict[tuple[str, str], int], int]:
    """Self cost per function, inclusive cost per call arc (caller, callee) and the total, from a
    callgrind output file (first event; recursion-level suffixes like ``'2`` merged)."""
    names: dict[str, str] = {}
    self_cost: dict[str, int] = {}
    arcs: dict[tuple[str, str], int] = {}
    total = 0
    fn = "?"
    callee: str | None = None
    expect_call_cost = False

    def name_of(spec: str) -> str:
        m = _NAME_REF.match(spec.strip())
        if m:
            if m.group(2) is not None:
                names[m.group(1)] = m.group(2)
            spec = names.get(m.group(1), spec)
        return re.sub(r"'\d+$", "", spec.strip())

    for line in text.splitlines():
        if not line:
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            fields = line.split()
            cost = int(fields[1]) if len(fields) > 1 and fields[1].lstrip("-").isdigit() else 0
            if expect_call_cost:
                if callee is not None:
                    arcs[(fn, callee)] = arcs.get((fn, callee), 0) + cost
                expect_call_cost = False
            else:
                self_cost[fn] = self_cost.get(fn, 0) + cost
            continue
        if line.startswith("fn="):
            fn = name_of(line[3:])
            self_cost.setdefault(fn, 0)
        elif line.startswith("cfn="):
            callee = name_of(line[4:])
        elif line.startswith("calls="):
            expect_call_cost = True
        elif line.startswith("totals:") or line.startswith("summary:"):
            total = max(total, int(line.split()[1]))
    return self_cost, arcs, total


def _sccs(nodes: list[str], edges: dict[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (iterative Tarjan): node -> component id."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                cid = len(set(comp.values()))
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp[w] = cid
                    if w == v:
                        break
    return comp


def profile_from_callgrind(text: str) -> Profile:
    """Per-function (name, inclusive, self) from a callgrind output file.

    Inclusive cost of a function = the cost of the calls entering it from outside its recursion
    (its strongly connected component in the call graph), so a recursive comparison such as
    ``ValueKey::eq`` is counted once, not once per level. A function never entered from outside
    (a root) gets its self cost plus its calls leaving the component.
    """
    self_cost, arcs, total = parse_callgrind(text)
    nodes = sorted(set(self_cost) | {a for a, _ in arcs} | {b for _, b in arcs})
    edges: dict[str, set[str]] = {}
    for a, b in arcs:
        edges.setdefault(a, set()).add(b)
    comp = _sccs(nodes, edges)
    entering: dict[str, int] = {}
    leaving: dict[str, int] = {}
    for (a, b), cost in arcs.items():
        if comp[a] != comp[b]:
            entering[b] = entering.get(b, 0) + cost
            leaving[a] = leaving.get(a, 0) + cost
    rows = []
    for name in nodes:
        inclusive = entering.get(name)
        if inclusive is None:
            inclusive = self_cost.get(name, 0) + leaving.get(name, 0)
        rows.append((name, int(inclusive), int(self_cost.get(name, 0))))
    rows.sort(key=lambda r: (-r[1], -r[2], r[0]))
    prof = Profile(rows)
    prof.total = total or (rows[0][1] if rows else 0)
    return prof


def callgrind_profile(
    template: str,
    depth: int,
    *,
    pattern: str | None = None,
    timeout: float,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    calls: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Profile:
    """Run ``template`` at ``depth`` under callgrind (only inside functions matching ``pattern``, e.g.
    ``'*phase_transform*'``, when given) and return ``[(function, inclusive, self), ...]`` by inclusive
    instructions; ``.total`` is the count and ``.share(VALUE_KEY_EQ)`` the share in ``ValueKey::eq``."""
    argv = expand(template, depth, calls)
    options = ["--collect-atstart=no", f"--toggle-collect={pattern}"] if pattern else []
    _, totals, text = _run_callgrind(argv, options, timeout=timeout, output_limit=output_limit, env=env)
    prof = profile_from_callgrind(text)
    prof.total = totals[-1] or prof.total
    return prof


__all__ = [
    "METRICS",
    "MODES",
    "PROTOCOL_KEYS",
    "TRACED_PHASES",
    "VALUE_KEY_EQ",
    "CommandFailure",
    "Completed",
    "Profile",
    "apply_protocol",
    "callgrind_profile",
    "callgrind_totals",
    "expand",
    "last_json_object",
    "parse_callgrind",
    "profile_from_callgrind",
    "run_command_point",
    "run_process",
]
