"""The ``--cmd`` protocol: the last JSON object line of stdout, checked and mapped onto Point phases."""

from __future__ import annotations

import difflib
import json
import math
import statistics
from typing import Any

from adprof.backends.cmd.process import CommandFailure
from adprof.backends.program import PROGRAM_KEYS, checked
from adprof.model import Point

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
#: Memory keys (bytes, numbers >= 0) -> ``Point.memory``: ``saved_bytes`` (what the gradient keeps alive between
#: forward and backward, counted by the program: exact), ``peak_bytes`` (its high-water mark over the point:
#: measured). ``retained`` (eager: a list, the bytes still held after each call, call 0 first) -> ``Point.retained``.
MEMORY_KEYS: tuple[str, ...] = ("saved_bytes", "peak_bytes")
#: Every key the protocol reads; any other key of the JSON line is warned about by name (a misspelt
#: ``transfrom_seconds`` must not silently leave the series to the process's wall time).
KNOWN_KEYS: tuple[str, ...] = (
    *PROTOCOL_KEYS,
    "counters",
    "value_ops",
    "derivative_ops",
    "program_ops",
    "value",
    "gradient",
    *MEMORY_KEYS,
    "retained",
    "program",
)
#: "A phase cannot last longer than the process that timed it", with room for a program that sums the
#: seconds of its threads or reports a model of its costs: only numbers that cannot be a time of this run
#: (100 times the process's wall time, plus 10 s) are refused.
WITHIN_FACTOR, WITHIN_SLACK = 100.0, 10.0


def unknown_keys(obj: dict[str, Any]) -> list[str]:
    """The keys of a protocol object that the protocol does not read, in their order."""
    return [str(k) for k in obj if k not in KNOWN_KEYS]


def did_you_mean(key: str) -> str | None:
    """The known key closest to a misspelt one, if any is close."""
    close = difflib.get_close_matches(key, KNOWN_KEYS, n=1, cutoff=0.75)
    return close[0] if close else None


def as_float(value: Any) -> float | None:
    """A JSON number as a float (an integer too large for one is ``inf``: JSON integers have no limit), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_within(obj: dict[str, Any], process_seconds: float) -> None:
    """Raise ``CommandFailure("malformed")`` when a reported phase lasted longer than the whole process
    that reported it (e.g. ``transform_seconds: 1e300`` from a 50 ms run): the number cannot be a time."""
    bound = process_seconds * WITHIN_FACTOR + WITHIN_SLACK
    for key in PROTOCOL_KEYS:
        value = obj.get(key)
        values = value if isinstance(value, list) else [value]
        nums = [f for v in values if (f := as_float(v)) is not None and math.isfinite(f)]
        total = sum(nums)
        if total > bound:
            raise CommandFailure(
                "malformed",
                f"{key} is {total:.3g} s, but the whole process ran {process_seconds:.3f} s: not a time it measured",
            )


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
    v = as_float(value)
    if v is None:
        raise CommandFailure("malformed", f"{what} is {json.dumps(value)[:40]}, not a number")
    if not math.isfinite(v):
        shown = v if isinstance(value, float) else f"an integer of {len(str(abs(value)))} digits"
        raise CommandFailure("malformed", f"{what} is {shown} (not finite)")
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


def phase_base(name: str) -> str:
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
        if (v := as_float(obj.get(key))) is not None:
            pt.extra[key] = v
    _apply_memory(pt, obj)
    _apply_program(pt, obj)
    unknown = unknown_keys(obj)
    if unknown:
        pt.extra["unknown_keys"] = unknown
    return known


def _apply_program(pt: Point, obj: dict[str, Any]) -> None:
    """``program`` -> ``pt.program``: the forward's program as the program counts it (an object of the keys of
    :data:`~adprof.backends.program.PROGRAM_KEYS`, each a count >= 0; anything else is a malformed line)."""
    if "program" not in obj:
        return
    counts = checked(obj["program"])
    if counts is None:
        keys = ", ".join(PROGRAM_KEYS)
        raise CommandFailure("malformed", f"program is not an object of counts >= 0 with the keys {keys}")
    pt.program = counts


def _apply_memory(pt: Point, obj: dict[str, Any]) -> None:
    """The memory keys: :data:`MEMORY_KEYS` -> ``pt.memory``, ``retained`` (a list) -> ``pt.retained``."""
    for key in MEMORY_KEYS:
        if key in obj:
            pt.memory[key] = _number(obj[key], key)
    if "retained" in obj:
        if not isinstance(obj["retained"], list):
            raise CommandFailure("malformed", "retained is not a list of numbers (bytes held after each call)")
        pt.retained = _numbers(obj["retained"], "retained")


def _apply_counters(pt: Point, counters: Any, mode: str) -> None:
    if not isinstance(counters, dict):
        raise CommandFailure("malformed", f"counters is {json.dumps(counters)[:40]}, not an object")
    if all(not isinstance(v, dict | list) for v in counters.values()):
        pt.counters["backward" if mode == "eager" else "transform"] = _counter_dict(counters, "counters")
        return
    for name, value in counters.items():
        base = phase_base(str(name))
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
