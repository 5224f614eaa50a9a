"""The report of a run, built once from the measured series: one verdict per series, the structure
evidence and the run's notes. Renderers only read it (layer 4: imports analysis and model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adprof import model
from adprof.analysis.classify import classify, sweep_table
from adprof.analysis.structure import Structure, analyze_recording
from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import Report, Result, Series, Verdict, classified_phases, fmt_seconds, time_value


def analyze_structures(recordings: Mapping[Any, Mapping[str, Any]]) -> dict[Any, Structure]:
    """The structure of every chain whose recording finished, by the recording's key ((file, chain))."""
    return {key: analyze_recording(rec) for key, rec in recordings.items() if "chain" in rec}


def _structure_of(series: Series, structures: Mapping[Any, Structure]) -> Structure | None:
    """A series' chain structure: by (file, chain), so chains of one name in two files stay apart."""
    if (series.file, series.chain) in structures:
        return structures[(series.file, series.chain)]
    return structures.get(series.chain) if series.file is None else None


def series_verdict(series: Series, structure: Structure | None) -> Verdict:
    """The verdict of one series, with its chain's structure summary as the first evidence line."""
    pb = structure.predicted_base if structure is not None else None
    if not series.points and not series.error:
        v = Verdict(
            kind=model.INCONCLUSIVE,
            predicted_base=pb,
            evidence=[series.stopped or "no points measured"],
            cause="not measured",
            remedies=["rerun with a larger --budget or fewer chains"],
        )
    else:
        v = classify(series, predicted_base=pb, structure=structure)
    if structure is not None:
        v.evidence.insert(0, structure.summary())
    return v


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
    stopped = [r.series for r in results if r.series.stopped and "budget" in r.series.stopped]
    if stopped:
        out.append(
            f"{len(stopped)} series stopped by the budget: "
            + ", ".join(f"{s.chain} [{s.profile}, {s.mode}]" for s in stopped[:8])
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
) -> Report:
    """Classify every measured series into a Report (``recordings``: the structure recordings by (file, chain))."""
    structures = analyze_structures(recordings)
    results = [Result(series=s, verdict=series_verdict(s, _structure_of(s, structures))) for s in series]
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


def chain_label(series: Series) -> str:
    """The chain's name with its sweep values (``powers[k=2]``: a variant's name already carries them)."""
    if not series.params or series.chain.endswith("]"):
        return series.chain
    return series.chain + "[" + ",".join(f"{k}={x}" for k, x in series.params.items()) + "]"


def backend_label(series: Series) -> str:
    return f"{series.backend}/{series.profile}" if series.profile else series.backend


def depth_reached(series: Series) -> str:
    """Deepest exact depth, plus the deepest censored one as ``>=``."""
    exact = [p.depth for p in series.points if not p.extra.get("censored")]
    cens = [p.depth for p in series.points if p.extra.get("censored")]
    s = str(max(exact)) if exact else "-"
    if cens and (not exact or max(cens) > max(exact)):
        s += f" (>={max(cens)} cens.)"
    return s


def worst_time_text(series: Series) -> str:
    """The largest cost-phase time over the points (transform+drop, or steady backward), formatted, with
    ``>=`` when the worst point is a censored lower bound."""
    phases = classified_phases(series)
    best: tuple[float, bool] | None = None
    for p in series.points:
        t = time_value(p, phases)
        if t is not None and (best is None or t > best[0]):
            best = (t, bool(p.extra.get("censored")))
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
    "series_verdict",
    "worst_time_text",
]
