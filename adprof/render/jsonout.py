"""JSON form of a Report (``report_to_json``) and its inverse (``load_report``).

Schema (``schema`` 2; every number is a JSON number or null)::

    {
      "adprof_version": "0.1.0",
      "schema": 2,
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
          "base": 2.01,              # ratio per depth step (per layer, order, ...; exponential), else null
          "exponent": null,          # power-law exponent (superlinear/linear verdicts), else null
          "halving_ratio": 457.5,    # cost(d)/cost(d/2) at the deepest pair, or null
          "predicted_base": 2.0,     # from the chain's structure, or null
          "amortized": null,         # eager: do warm calls get cheaper than call 1? else null
          "reuse_agrees": true,      # |base - declared_reuse| <= 0.25, exponential verdicts only
          "warm_to_call1": null,     # eager: median cost of calls 2..5 / call 1 at the deepest point
          "metric": "counters[transform+drop]: key_comparisons+metadata_lookups+nodes_visited",
          "stop": {"reason": "predicted cap", "after": 18, "depth": 19, "phase": "transform",
                   "seconds": 2.1, "limit": 1.5, ...},              # why the schedule stopped, or null
                                     # reason: cap | predicted cap | budget share | budget | counter budget |
                                     #   censored | runaway | timeout | not measured
          "stopped": "stopped after depth 18: ...",                 # the sentence of "stop", or null
          "error": null,             # one-line error if the chain failed
          "reason": "",              # why the verdict is inconclusive, runaway or an error ("" otherwise)
          "killed": false,           # a point was killed at its own timeout (a hang): a finding
          "finding": true,           # exit 1 / a guard fails on it
          "cause": "...", "remedies": ["..."], "evidence": ["..."],
          "file": "probes/chains.py",  # the chain's source file (null for --cmd)
          "interval_text": "d^1.72 [1.55, 1.90]",  # the deciding model's figure with its interval
          "interval": [1.55, 1.90],  # of the base (exponential) or the exponent, or null
          "statistic": "lower quartile of 5 repeats", "clock": "wall (perf_counter)",  # how times were taken
          "deciding_metrics": ["python_calls"],   # the backend's metrics that may decide, in order
          "metric_notes": {"python_calls": "blind to XLA's C++ compile"},  # why one may not
          "required_metric": "",     # "instructions" with --metric instructions: it alone decides
          "lower_bound_metrics": ["autograd_nodes"],  # metrics that decide only when they grow fast
          "axis": "order",           # what a depth counts (layer | order | unroll | seq_len | ...)
          "classified_phases": [],   # the chain's classified phases ([]: the mode's)
          "growing_phase": "inductor_codegen",  # multi-phase modes: the phase that grows ("" if none)
          "phase_shares": {"inductor_codegen": 0.87, ...},  # each phase's share of the time's growth
          "phase_fits": {"inductor_codegen": {...}},        # each phase's own time fit (evidence)
          "prediction": {"depth": 400, "value": 8.1},  # the deciding model at the next depth, or null
          "machine": {"host": "node-7", "cpu_model": "...", "cpus": 40, "load_average": 3.1,
                      "load_peak": 3.4, "worker": "tcp://10.0.0.7:40123"},  # where it was measured, or null
          "loaded_machine": false,  # time decided it on a loaded machine (docs/scale-out.md)
          "fit": {...},              # THE deciding model (a Fit: source, model, kind, base/exponent,
                                     # interval, depths, values, curve_depths/curve_values, halving,
                                     # tail exponent, reason); every line above is read from it
          "decided_by": "counter_fit",  # which evidence slot the deciding model came from (it is not
                                     # repeated there): counter_fit | time_fit | call0_fit |
                                     # metric_fits.NAME | "" (a fit of its own, e.g. the tree sizes)
          "metric_fits": {"python_calls": {...}},  # deterministic work metrics, as evidence
          "counter_fit": {...} | null, "time_fit": {...} | null, "call0_fit": {...} | null,
                                     # the fits beside the deciding one (adprof.model.Fit fields:
                                     # metric, kind, base, exponent, halving_ratio, tail_ratios, depths,
                                     # values, method, tail_depths, local_powers, ...)
          "points": [
            {"depth": 1,
             "times": {"record": 0.0001, "transform": 0.002, ...},          # seconds per phase
             "counters": {"transform": {"key_comparisons": 12, ...}, ...},  # per phase
             "ops": {"value_ops": 3, "derivative_ops": 9, "program_ops": 8},
             "status": "exact",      # exact | censored (a lower bound) | killed (at its own timeout)
             "censor_reason": null,  # censored/killed: timeout | budget | counter budget
             "censored_phase": null, "calls": null, "wall_seconds": 0.12,
             "extra": {"backward_calls": [...], ...}}   # what the backend adds
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

Schema changes. 2: ``stop`` (typed) beside its sentence ``stopped``; ``reason``, ``killed``, ``finding``;
points carry ``status``, ``censor_reason``, ``censored_phase``, ``calls`` and ``wall_seconds`` (no longer
``extra["censored"]``, ``extra["killed"]``, ``extra["calls"]``, ``extra["wall_seconds"]``); the deciding
fit is stored once, in ``fit``, and ``decided_by`` names the slot it came from; ``halving`` holds the
depth-halving tables; ``machine``, ``loaded_machine`` and the report's ``shard`` say where and how it was
measured; the never-set Fit fields ``r2_exponential``, ``r2_power`` and ``log_*`` are gone.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from adprof.constants import __version__
from adprof.model import Fit, HalvingRow, Report, Result, Series, Verdict
from adprof.plain import PlainError, from_plain, to_plain

SCHEMA = 2

#: Written from the verdict (the first five are read from its deciding fit); the settable ones load back.
_VERDICT_FIELDS = (
    "base",
    "exponent",
    "halving_ratio",
    "metric",
    "interval_text",
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
        val = getattr(v, name)
        out[name] = list(val) if isinstance(val, list) else val
    out["finding"] = v.is_finding
    out["stop"] = dataclasses.asdict(s.stop) if s.stop is not None else None
    out["stopped"] = s.stopped
    out["error"] = s.error
    for name in _SERIES_FIELDS:
        val = getattr(s, name)
        out[name] = type(val)(val) if isinstance(val, list | dict) else val
    out["interval"] = list(v.fit.interval) if v.fit is not None and v.fit.interval else None
    out["fit"] = _fit_to(v.fit)  # THE deciding model, once; the slots below hold the fits beside it
    slots = _slots(v)
    out["decided_by"] = next((k for k, f in slots.items() if f is not None and f is v.fit), "")
    beside = {k: (None if f is v.fit else _fit_to(f)) for k, f in slots.items()}
    out["metric_fits"] = {k: beside[f"metric_fits.{k}"] for k in v.metric_fits}
    for k in ("counter_fit", "time_fit", "call0_fit"):
        out[k] = beside[k]
    out["points"] = [dataclasses.asdict(p) for p in s.points]
    out["halving"] = {k: [dataclasses.asdict(row) for row in rows] for k, rows in result.halving.items()}
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
    object (generic over the dataclasses' fields: a field added to either loads without editing this);
    the deciding fit is put back in the slot ``decided_by`` names."""
    series = from_plain(Series, d, "series")
    verdict = from_plain(Verdict, {**d, "kind": d.get("verdict")}, "verdict")
    slot = d.get("decided_by") or ""
    if slot.startswith("metric_fits."):
        verdict.metric_fits[slot.split(".", 1)[1]] = verdict.fit  # type: ignore[assignment]
    elif slot:
        setattr(verdict, slot, verdict.fit)
    halving = from_plain(dict[str, list[HalvingRow]], d.get("halving") or {}, "halving")
    return Result(series=series, verdict=verdict, halving=halving)


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
