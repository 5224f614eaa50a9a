"""JSON form of a Report (``report_to_json``) and its inverse (``load_report``).

Schema (``schema`` 1; every number is a JSON number or null)::

    {
      "adprof_version": "0.1.0",
      "schema": 1,
      "environment": {...},            # python, platform, backend versions, ...
      "budget_seconds": 120.0,         # or null
      "elapsed_seconds": 95.3,         # or null
      "notes": ["..."],
      "shard": null,                    # --shard K/N: {"index", "count", "planned", "positions", "plan"}
      "results": [
        {
          "chain": "mul", "backend": "engine", "profile": "v08",   # profile null for jax/torch
          "mode": "traced",                                         # traced | eager | compile
          "params": {"k": 2},                                       # sweep values, {} if none
          "declared_reuse": 2.0,                                    # or null
          "verdict": "exponential-transform",  # exponential-transform | superlinear-transform |
                                               # exponential-backward | superlinear-backward |
                                               # mildly-superlinear-transform | -backward |
                                               # linear | inconclusive | runaway | error
          "base": 2.01,              # per-layer ratio (exponential verdicts), else null
          "exponent": null,          # power-law exponent (superlinear/linear verdicts), else null
          "halving_ratio": 457.5,    # cost(d)/cost(d/2) at the deepest pair, or null
          "predicted_base": 2.0,     # from the chain's structure, or null
          "amortized": null,         # eager: do warm calls get cheaper than call 1? else null
          "reuse_agrees": true,      # |base - declared_reuse| <= 0.25, exponential verdicts only
          "warm_to_call1": null,     # eager: median cost of calls 2..5 / call 1 at the deepest point
          "metric": "counters[transform+drop]: key_comparisons+metadata_lookups+nodes_visited",
          "stopped": "stopped after depth 18: ...",                 # or null
          "error": null,             # one-line error if the chain failed
          "cause": "...", "remedies": ["..."], "evidence": ["..."],
          "file": "probes/chains.py",  # the chain's source file (null for --cmd)
          "interval_text": "d^1.72 [1.55, 1.90]",  # the deciding model's figure with its interval
          "interval": [1.55, 1.90],  # of the base (exponential) or the exponent, or null
          "statistic": "lower quartile of 5 repeats", "clock": "wall (perf_counter)",  # how times were taken
          "deciding_metrics": ["python_calls"],   # the backend's metrics that may decide, in order
          "metric_notes": {"python_calls": "blind to XLA's C++ compile"},  # why one may not
          "prediction": {"depth": 400, "value": 8.1},  # the deciding model at the next depth, or null
          "machine": {"host": "node-7", "cpu_model": "...", "cpus": 40, "load_average": 3.1,
                      "load_peak": 3.4, "worker": "tcp://10.0.0.7:40123"},  # where it was measured, or null
          "loaded_machine": false,  # time decided it on a loaded machine (docs/scale-out.md)
          "fit": {...},              # THE deciding model (a Fit: source, model, kind, base/exponent,
                                     # interval, depths, values, curve_depths/curve_values, halving,
                                     # tail exponent, reason); every line above is read from it
          "metric_fits": {"python_calls": {...}},  # deterministic work metrics, as evidence
          "counter_fit": {...} | null, "time_fit": {...} | null, "call0_fit": {...} | null,
                                     # the adprof.model.Fit fields: metric, kind, base, exponent,
                                     # halving_ratio, tail_ratios, r2_exponential, r2_power, depths,
                                     # values, method, tail_depths, local_powers, ...
          "points": [
            {"depth": 1,
             "times": {"record": 0.0001, "transform": 0.002, ...},          # seconds per phase
             "counters": {"transform": {"key_comparisons": 12, ...}, ...},  # per phase
             "ops": {"value_ops": 3, "derivative_ops": 9, "program_ops": 8},
             "extra": {"censored": false, "backward_calls": [...], ...}}
          ]
        }
      ]
    }

Every other field of Series, Verdict and Report is written under its own name too (``machine``: where
the series was measured, ``loaded_machine``, the report's ``shard``), and the loader reads the dataclasses
field by field from their type hints (:func:`adprof.plain.from_plain`), so a field added to the model
needs no loader change. ``load_report(report_to_json(r)) == r`` (also through ``json.dumps``/
``json.loads``). Unknown keys are ignored on load; a file of another ``schema`` is refused
(:class:`SchemaError`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from adprof.constants import __version__
from adprof.model import Fit, Report, Result, Series, Verdict
from adprof.plain import PlainError, from_plain, to_plain

SCHEMA = 1

_VERDICT_FIELDS = (
    "base",
    "exponent",
    "halving_ratio",
    "predicted_base",
    "amortized",
    "reuse_agrees",
    "warm_to_call1",
    "metric",
    "interval_text",
    "prediction",
    "key_evidence",
    "cause",
    "remedies",
    "evidence",
)
_SERIES_FIELDS = ("file", "statistic", "clock", "deciding_metrics", "metric_notes")


def _fit_to(f: Fit | None) -> dict[str, Any] | None:
    return dataclasses.asdict(f) if f is not None else None


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
        val = getattr(v, name)
        out[name] = list(val) if isinstance(val, list) else val
    out["stopped"] = s.stopped
    out["error"] = s.error
    for name in _SERIES_FIELDS:
        val = getattr(s, name)
        out[name] = type(val)(val) if isinstance(val, list | dict) else val
    out["interval"] = list(v.fit.interval) if v.fit is not None and v.fit.interval else None
    out["fit"] = _fit_to(v.fit)  # THE deciding model; the fits below are evidence beside it
    out["metric_fits"] = {k: _fit_to(f) for k, f in v.metric_fits.items()}
    out["counter_fit"] = _fit_to(v.counter_fit)
    out["time_fit"] = _fit_to(v.time_fit)
    out["call0_fit"] = _fit_to(v.call0_fit)
    out["points"] = [dataclasses.asdict(p) for p in s.points]
    for obj in (s, v):  # every other field (added later to the model), by its own name
        for f in dataclasses.fields(obj):
            if f.name not in out and f.name != "kind":
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


class SchemaError(ValueError):
    """A JSON report this adprof cannot read (another schema version, or not a report at all)."""


def result_from_json(d: dict[str, Any]) -> Result:
    """Inverse of ``result_to_json``: the Series and Verdict fields are read by name from the flat
    object (generic over the dataclasses' fields: a field added to either loads without editing this)."""
    series = from_plain(Series, d, "series")
    verdict = from_plain(Verdict, {**d, "kind": d.get("verdict")}, "verdict")
    return Result(series=series, verdict=verdict)


def load_report(data: dict[str, Any]) -> Report:
    """Inverse of ``report_to_json``: a Report from its JSON dict. Raises :class:`SchemaError` for a
    JSON of another schema version or one that does not fit the model."""
    if not isinstance(data, dict) or "results" not in data:
        raise SchemaError("not an adprof JSON report (no 'results')")
    if data.get("schema") != SCHEMA:
        raise SchemaError(
            f"written with JSON schema {data.get('schema')!r} (adprof {data.get('adprof_version', '?')}); "
            f"this adprof {__version__} reads schema {SCHEMA}"
        )
    try:
        results = [result_from_json(r) if isinstance(r, dict) else from_plain(Result, r) for r in data["results"]]
        report = from_plain(Report, {**data, "results": []})
    except PlainError as exc:
        raise SchemaError(f"does not fit schema {SCHEMA}: {exc}") from None
    report.results = results
    return report
