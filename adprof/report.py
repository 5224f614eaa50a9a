"""The report of a run, built once from the measured series: one verdict per series, the structure
evidence and the run's notes. Renderers only read it (layer 4: imports analysis and model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adprof.analysis.classify import decide, sweep_table
from adprof.analysis.halving import halving_rows
from adprof.analysis.structure import Structure, analyze_recording
from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import (
    HalvingRow,
    Report,
    Result,
    Series,
    StopReason,
    chain_name,
    cost_phases,
    fmt_seconds,
    time_value,
)


def analyze_structures(recordings: Mapping[Any, Mapping[str, Any]]) -> dict[Any, Structure]:
    """The structure of every chain whose recording finished, by the recording's key ((file, chain))."""
    return {key: analyze_recording(rec) for key, rec in recordings.items() if "chain" in rec}


def _structure_of(series: Series, structures: Mapping[Any, Structure]) -> Structure | None:
    """A series' chain structure: by (file, chain), so chains of one name in two files stay apart."""
    if (series.file, series.chain) in structures:
        return structures[(series.file, series.chain)]
    return structures.get(series.chain) if series.file is None else None


def halving_tables(series: Series) -> dict[str, list[HalvingRow]]:
    """The depth-halving rows of a series' cost phases, and of ``forward`` in eager mode (``adprof halve``)."""
    phases = cost_phases(series.mode)
    out = {"+".join(phases): halving_rows(series.points, phases)}
    if series.mode == "eager" and any("forward" in p.times for p in series.points):
        out["forward"] = halving_rows(series.points, ("forward",))
    return out


def _run_notes(results: Sequence[Result], structures: Mapping[str, Structure], notes: Sequence[str]) -> list[str]:
    out = list(notes)
    risky = [
        (st.chain, st.predicted_base) for st in structures.values() if st.at_risk and st.predicted_base is not None
    ]
    if risky:
        out.insert(
            0,
            f"structure (before timing): at risk, predicted base > {EXPONENTIAL_RATIO}: "
            + ", ".join(f"{n} ({b:.2f})" for n, b in risky),
        )
    by_budget = (StopReason.BUDGET, StopReason.BUDGET_SHARE, StopReason.CENSORED)
    stopped = [r.series for r in results if r.series.stop is not None and r.series.stop.reason in by_budget]
    if stopped:
        out.append(
            f"{len(stopped)} series stopped by the budget: "
            + ", ".join(s.label for s in stopped[:8])
            + (" ..." if len(stopped) > 8 else "")
        )
    return out


def build_report(
    series: Sequence[Series],
    recordings: Mapping[Any, Mapping[str, Any]],
    *,
    notes: Sequence[str] = (),
    environment: dict[str, Any] | None = None,
    budget_seconds: float | None = None,
    elapsed_seconds: float | None = None,
    trust: str | None = None,
) -> Report:
    """Decide every measured series into a Report (``recordings``: the structure recordings by (file, chain);
    ``trust``: which of a deterministic metric and time decides when they contradict each other)."""
    structures = analyze_structures(recordings)
    results = [
        Result(series=s, verdict=decide(s, _structure_of(s, structures), trust=trust), halving=halving_tables(s))
        for s in series
    ]
    return Report(
        results=results,
        environment=dict(environment or {}),
        budget_seconds=budget_seconds,
        elapsed_seconds=elapsed_seconds,
        notes=_run_notes(results, structures, notes),
        sweeps=sweep_table(results),
    )


# --------------------------------------------------------------------------- what the renderers show

#: Columns of the sweep table (measured vs predicted base per reuse count), shared by the renderers.
SWEEP_COLUMNS = ("chain", "backend/profile", "mode", "k", "measured base", "predicted base", "verdict", "agrees")


def fmt_growth(result: Result) -> str:
    """The deciding model's figure: ``x2.01/layer``, ``d^1.72 [1.55, 1.90]`` (time: with its interval),
    ``flat`` for a cost that does not grow at all, ``-`` without a model."""
    return result.verdict.interval_text or "-"


def one_line_reason(result: Result) -> str:
    """Why a result gets one line (inconclusive, runaway, error, mild): the verdict's reason, else its
    deciding model's, else the cause (every renderer prints this)."""
    v = result.verdict
    why = v.reason or (v.fit.reason if v.fit is not None else "") or v.cause
    return why or (v.evidence[0] if v.evidence else "")


def chain_label(series: Series) -> str:
    """The chain's name with its sweep values (``powers[k=2]``: a variant's name already carries them)."""
    return chain_name(series.chain, series.params)


def backend_label(series: Series) -> str:
    return f"{series.backend}/{series.profile}" if series.profile else series.backend


def depth_reached(series: Series) -> str:
    """Deepest exact depth, plus the deepest censored one as ``>=``."""
    exact = [p.depth for p in series.points if not p.censored]
    cens = [p.depth for p in series.points if p.censored]
    s = str(max(exact)) if exact else "-"
    if cens and (not exact or max(cens) > max(exact)):
        s += f" (>={max(cens)} cens.)"
    return s


def worst_time_text(series: Series) -> str:
    """The largest cost-phase time over the points (transform+drop, or steady backward), formatted, with
    ``>=`` when the worst point is a censored lower bound."""
    phases = cost_phases(series.mode)
    best: tuple[float, bool] | None = None
    for p in series.points:
        t = time_value(p, phases)
        if t is not None and (best is None or t > best[0]):
            best = (t, p.censored)
    if best is None:
        return "-"
    return (">=" if best[1] else "") + fmt_seconds(best[0])


__all__ = [
    "SWEEP_COLUMNS",
    "analyze_structures",
    "backend_label",
    "build_report",
    "chain_label",
    "depth_reached",
    "fmt_growth",
    "one_line_reason",
    "worst_time_text",
]
