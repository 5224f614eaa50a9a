"""JSON form of a Report (``report_to_json``) and its inverse (``load_report``).

The schema (:data:`SCHEMA`), field by field, and its changes: docs/json.md (the one description; keep it
in step with this module). Verdict and series fields are written by name (``_VERDICT_FIELDS``,
``_SERIES_FIELDS``), every other dataclass field under its own name; the loader reads the dataclasses
from their type hints (:func:`adprof.plain.from_plain`), so ``load_report(report_to_json(r)) == r`` and a
field added to the model needs no loader change. Unknown keys are ignored on load; a file of another
``schema`` is refused (:class:`SchemaError`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from typing import Any

from adprof import words
from adprof.comparison import STATES, Comparison
from adprof.constants import __version__
from adprof.model import MEMORY_VERDICTS, VERDICTS, Fit, HalvingRow, MemoryVerdict, Report, Result, Series, Verdict
from adprof.plain import PlainError, from_plain, to_plain

SCHEMA = 4
#: Schemas this adprof reads: 2 (no memory: ``memory`` is null, points carry no ``memory``/``retained``), 3 (no
#: ``explained``: null; points carry no ``program``) and 4.
READ_SCHEMAS = (2, 3, 4)
#: Read from a memory verdict (its properties, and its sentences), written beside its fields (the loader ignores them).
_MEMORY_DERIVED: dict[str, Callable[[MemoryVerdict], Any]] = {
    "finding": lambda mv: mv.is_finding,
    "summary": words.memory_summary,
    "interval_text": words.memory_interval_text,
    "exponent": lambda mv: mv.exponent,
    "base": lambda mv: mv.base,
    "bytes_per_call": lambda mv: mv.bytes_per_call,
}
#: The verdict's sentences written among :data:`_VERDICT_FIELDS` (the rest are its fields and properties).
_VERDICT_WORDS: dict[str, Callable[[Verdict], str]] = {"proxy_text": words.proxy_text}

#: Written from the verdict (base and exponent from its reading, :attr:`Verdict.reading`; the next three from its
#: deciding fit); the settable ones load back.
_VERDICT_FIELDS = (
    "base",
    "exponent",
    "halving_ratio",
    "metric",
    "interval_text",
    "proxy_text",
    "predicted_base",
    "amortized",
    "reuse_agrees",
    "warm_to_call1",
    "prediction",
    "reason",
    "killed",
    "key_evidence",
    "cause",
    "remedies",
    "evidence",
)
_SERIES_FIELDS = (
    "file",
    "statistic",
    "clock",
    "deciding_metrics",
    "metric_notes",
    "required_metric",
)


def _fit_to(f: Fit | None) -> dict[str, Any] | None:
    return dataclasses.asdict(f) if f is not None else None


def _memory_to(mv: MemoryVerdict | None) -> dict[str, Any] | None:
    """The memory verdict: its fields, and beside them what its properties read (``finding``, ``summary``, ...)."""
    if mv is None:
        return None
    out = to_plain(mv)
    out.update({name: read(mv) for name, read in _MEMORY_DERIVED.items()})
    return out


def _slots(v: Verdict) -> dict[str, Fit | None]:
    """The evidence slots of a verdict's fits, by their JSON name."""
    out: dict[str, Fit | None] = {"counter_fit": v.counter_fit, "time_fit": v.time_fit, "call0_fit": v.call0_fit}
    out.update({f"metric_fits.{k}": f for k, f in v.metric_fits.items()})
    return out


def result_to_json(result: Result) -> dict[str, Any]:
    """One result, flattened (see the module docstring)."""
    s, v = result.series, result.verdict
    out: dict[str, Any] = {
        "chain": s.chain,
        "backend": s.backend,
        "profile": s.profile,
        "mode": s.mode,
        "params": dict(s.params),
        "declared_reuse": s.declared_reuse,
        "verdict": v.kind,
    }
    for name in _VERDICT_FIELDS:
        val = _VERDICT_WORDS[name](v) if name in _VERDICT_WORDS else getattr(v, name)
        out[name] = list(val) if isinstance(val, list) else val
    out["finding"] = v.is_finding
    out["stop"] = dataclasses.asdict(s.stop) if s.stop is not None else None
    out["stopped"] = words.stopped_text(s)
    out["error"] = s.error
    for name in _SERIES_FIELDS:
        val = getattr(s, name)
        out[name] = type(val)(val) if isinstance(val, list | dict) else val
    reading = v.reading  # the fit the rate is read from (past a knee where the verdict reads it)
    out["interval"] = list(reading.interval) if reading is not None and reading.interval else None
    out["fit"] = _fit_to(v.fit)  # THE deciding model, once; the slots below hold the fits beside it
    slots = _slots(v)
    out["decided_by"] = next((k for k, f in slots.items() if f is not None and f is v.fit), "")
    beside = {k: (None if f is v.fit else _fit_to(f)) for k, f in slots.items()}
    out["metric_fits"] = {k: beside[f"metric_fits.{k}"] for k in v.metric_fits}
    for k in ("counter_fit", "time_fit", "call0_fit"):
        out[k] = beside[k]
    out["memory"] = _memory_to(v.memory)
    out["points"] = [dataclasses.asdict(p) for p in s.points]
    out["halving"] = {k: [dataclasses.asdict(row) for row in rows] for k, rows in result.halving.items()}
    for obj in (s, v):  # every other field (added later to the model), by its own name
        for f in dataclasses.fields(obj):
            if f.name not in out and f.name not in ("kind", "backend_info"):  # backend_info: the backend's own
                out[f.name] = to_plain(getattr(obj, f.name))
    return out


def json_safe(x: Any) -> Any:
    """``x`` with every non-finite float as None (JSON has no inf or nan)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    return x


def report_text(report: Report) -> str:
    """The report as the text of a ``--json`` file (indented, non-finite numbers as null)."""
    return json.dumps(json_safe(report_to_json(report)), indent=2) + "\n"


def report_to_json(report: Report) -> dict[str, Any]:
    """The whole report as a JSON-ready dict (see the module docstring for the schema)."""
    out = {
        "adprof_version": __version__,
        "schema": SCHEMA,
        "environment": dict(report.environment),
        "budget_seconds": report.budget_seconds,
        "elapsed_seconds": report.elapsed_seconds,
        "notes": list(report.notes),
        "results": [result_to_json(r) for r in report.results],
        "sweeps": [dict(row) for row in report.sweeps],
    }
    for f in dataclasses.fields(report):  # every other field, by its own name
        out.setdefault(f.name, to_plain(getattr(report, f.name)))
    return out


#: The version of a comparison's JSON (``adprof compare --json``; docs/compare.md).
COMPARISON_SCHEMA = 1


def comparison_to_json(comparison: Comparison) -> dict[str, Any]:
    """A comparison of two reports as a JSON-ready dict (docs/compare.md)."""
    return {
        "adprof_version": __version__,
        "comparison_schema": COMPARISON_SCHEMA,
        "base": comparison.base,
        "new": comparison.new,
        "tolerance": comparison.tolerance,
        "regressed": comparison.regressed,
        "counts": {s.value: comparison.count(s) for s in STATES},
        "versions": {"before": dict(comparison.versions_before), "after": dict(comparison.versions_after)},
        "notes": list(comparison.notes),
        "series": [
            {
                "state": c.state.value,
                "label": c.label,
                "key": to_plain(c.key),
                "reason": c.reason,
                "matched_without": list(c.matched_without),
                "before": to_plain(c.before),
                "after": to_plain(c.after),
            }
            for c in comparison.changes
        ],
    }


def comparison_text(comparison: Comparison) -> str:
    """The comparison as the text of a ``--json`` file."""
    return json.dumps(json_safe(comparison_to_json(comparison)), indent=2) + "\n"


class SchemaError(ValueError):
    """A JSON report this adprof cannot read (another schema version, or not a report at all)."""


def result_from_json(d: dict[str, Any]) -> Result:
    """Inverse of ``result_to_json``: the Series and Verdict fields are read by name from the flat
    object (generic over the dataclasses' fields: a field added to either loads without editing this);
    the deciding fit is put back in the slot ``decided_by`` names."""
    series = from_plain(Series, d, "series")
    verdict = from_plain(Verdict, {**d, "kind": d.get("verdict")}, "verdict")
    if verdict.kind not in VERDICTS:
        raise PlainError(f"verdict: {verdict.kind!r} is not one of {', '.join(VERDICTS)}")
    slot = d.get("decided_by") or ""
    if slot and slot not in _slots(verdict) and not (isinstance(slot, str) and slot.startswith("metric_fits.")):
        raise PlainError(f"decided_by: {slot!r} is not one of {', '.join(_slots(verdict))} or metric_fits.NAME")
    _check_fits(verdict)
    if verdict.memory is not None:
        _check_memory(verdict.memory)
    if slot.startswith("metric_fits."):
        verdict.metric_fits[slot.split(".", 1)[1]] = verdict.fit  # type: ignore[assignment]
    elif slot:
        setattr(verdict, slot, verdict.fit)
    for name, fit in verdict.metric_fits.items():  # verdicts (issue 37): a report written before Fit.metric_name
        fit.metric_name = fit.metric_name or name
    halving = from_plain(dict[str, list[HalvingRow]], d.get("halving") or {}, "halving")
    return Result(series=series, verdict=verdict, halving=halving)


def _check_fit(fit: Fit, where: str) -> None:
    """A fit's paired lists have one entry per depth, its interval two ends (the renderers rely on it)."""
    pairs = (("depths", "values"), ("censored_depths", "censored_values"), ("curve_depths", "curve_values"))
    for a, b in pairs:
        if len(getattr(fit, a)) != len(getattr(fit, b)):
            raise PlainError(f"{where}: {len(getattr(fit, a))} {a} but {len(getattr(fit, b))} {b}")
    if fit.interval is not None and len(fit.interval) not in (0, 2):
        raise PlainError(f"{where}.interval: expected [low, high], got {len(fit.interval)} numbers")


def _check_memory(mv: MemoryVerdict) -> None:
    """A memory verdict's kind is one of the memory verdicts, and its fits pair their lists (the renderers rely on
    it)."""
    if mv.kind not in MEMORY_VERDICTS:
        raise PlainError(f"memory.kind: {mv.kind!r} is not one of {', '.join(MEMORY_VERDICTS)}")
    fits = {"memory.fit": mv.fit, "memory.peak_fit": mv.peak_fit}
    fits.update({f"memory.leaks[{i}].fit": r.fit for i, r in enumerate(mv.leaks)})
    for where, fit in fits.items():
        if fit is not None:
            _check_fit(fit, where)


def _check_fits(v: Verdict) -> None:
    fits = {"fit": v.fit, **_slots(v), **{f"phase_fits.{k}": f for k, f in v.phase_fits.items()}}
    for where, fit in fits.items():
        if fit is not None:
            _check_fit(fit, where)


#: Deepest nesting of lists and objects in a report this adprof reads (its own reports nest a dozen levels; deeper
#: data would only exhaust the recursion of the loader and of the writers).
MAX_NESTING = 64


def nesting(data: Any) -> int:
    """How deeply lists and objects nest in ``data`` (0 for a scalar), walked without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        if level <= MAX_NESTING:
            stack.extend((c, level + 1) for c in children)
    return deepest


def load_report(data: dict[str, Any]) -> Report:
    """Inverse of ``report_to_json``: a Report from its JSON dict. Raises :class:`SchemaError` for a
    JSON of another schema version or one that does not fit the model."""
    if not isinstance(data, dict) or "results" not in data:
        raise SchemaError("not an adprof JSON report (no 'results')")
    if nesting(data) > MAX_NESTING:
        raise SchemaError(f"not an adprof JSON report (nested more than {MAX_NESTING} levels deep)")
    if data.get("schema") not in READ_SCHEMAS:
        raise SchemaError(
            f"written with JSON schema {data.get('schema')!r} (adprof {data.get('adprof_version', '?')}); "
            f"this adprof {__version__} reads schemas {', '.join(map(str, READ_SCHEMAS))}"
        )
    try:
        if not isinstance(data["results"], list):
            raise PlainError(f"results: expected a list, got {type(data['results']).__name__}")
        results = [result_from_json(r) if isinstance(r, dict) else from_plain(Result, r) for r in data["results"]]
        report = from_plain(Report, {**data, "results": []})
    except PlainError as exc:
        raise SchemaError(f"does not fit schema {data.get('schema')}: {exc}") from None
    report.results = results
    return report
