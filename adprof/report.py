"""The report of a run, built once from the measured series: one verdict per series, the structure
evidence and the run's notes. Renderers only read it (layer 4: imports analysis and model)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adprof import model, words
from adprof.analysis.classify import decide, sweep_table
from adprof.analysis.explained import explain_series
from adprof.analysis.halving import halving_rows
from adprof.analysis.memory import decide_memory
from adprof.analysis.structure import Structure, analyze_recording
from adprof.constants import EXPONENTIAL_RATIO, LOADED_PER_CORE
from adprof.model import (
    HalvingRow,
    Report,
    Result,
    Series,
    Shard,
    StopReason,
    chain_name,
    classified_phases,
    time_value,
)
from adprof.verdicts import Source
from adprof.words import fmt_seconds


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
    phases = classified_phases(series)
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
        others = sorted({r.series.backend for r in results} - {"engine"})
        out.insert(
            0,
            "structure (before timing): a prediction for the engine's v08 profile (its grad transform walks the "
            f"graph as a tree): at risk, predicted base > {EXPONENTIAL_RATIO}: "
            + ", ".join(f"{n} ({b:.2f})" for n, b in risky)
            + (f"; not a prediction for {', '.join(others)}" if others else ""),
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
    errors: list[str] = []
    try:
        structures = analyze_structures(recordings)
    except Exception as exc:  # an analysis bug never costs the measurements
        errors.append(f"the structure probes: {type(exc).__name__}: {exc}")
        structures = {}
    results = [_decided(s, structures, trust, errors) for s in series]
    try:
        run_notes, sweeps = _run_notes(results, structures, notes), sweep_table(results)
    except Exception as exc:
        errors.append(f"the run's notes and sweep table: {type(exc).__name__}: {exc}")
        run_notes, sweeps = list(notes), []
    return Report(
        results=results,
        environment=dict(environment or {}),
        budget_seconds=budget_seconds,
        elapsed_seconds=elapsed_seconds,
        notes=run_notes,
        sweeps=sweeps,
        analysis_errors=errors,
    )


def _decided(series: Series, structures: Mapping[Any, Any], trust: str | None, errors: list[str]) -> Result:
    """One series decided (its verdict, memory verdict and halving tables); when the analysis raises, the series
    is kept with its points and an inconclusive verdict saying so, and ``errors`` gets one line."""
    try:
        verdict = decide(series, _structure_of(series, structures), trust=trust)
        verdict.memory = decide_memory(series)  # the memory verdict beside the time one, by the same machinery
        verdict.explained = explain_series(series, verdict)  # each cost against what should explain it
        return Result(series=series, verdict=verdict, halving=halving_tables(series))
    except Exception as exc:  # an analysis bug: the measurements stay in the report
        where = f"{series.chain} {series.backend}/{series.profile or '-'} {series.mode}"
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        errors.append(f"{where}: {why}")
        reason = f"adprof could not analyse this series (internal error: {why}); its points are kept"
        return Result(series=series, verdict=model.Verdict(kind=model.INCONCLUSIVE, reason=reason))


def measured_versions(series: Sequence[Series]) -> dict[str, str]:
    """The versions of the packages the series were measured with, one per package (several measured with
    different versions, e.g. on two machines: ``"2.12.0, 2.13.0"``), adprof first, then sorted by name."""
    seen: dict[str, list[str]] = {}
    for s in series:
        for name, version in s.versions.items():
            if version not in seen.setdefault(name, []):
                seen[name].append(version)
    order = sorted(seen, key=lambda n: (n != "adprof", n))
    return {n: ", ".join(seen[n]) for n in order}


class MergeError(ValueError):
    """Reports that do not merge into one (two copies of a shard, shards of different plans): one line."""


def merge_reports(reports: Sequence[Report], *, allow_missing: bool = False) -> Report:
    """One report of several: the shards of one run (``--shard K/N``) back in the plan's order, or whole
    reports one after another. Notes are kept once each, the sweep table is rebuilt over all results,
    the elapsed time is the longest one (shards run side by side). Raises :class:`MergeError`: a shard of the
    run missing (unless ``allow_missing``: a note names it), the same measurement twice (one report given
    twice, or a copy of it), shards of different runs."""
    if len(reports) == 1 and reports[0].shard is None:
        only = reports[0]
        only.sweeps = sweep_table(only.results)  # derived from the results: a saved table is not trusted
        return only
    shards = [r.shard for r in reports]
    notes: list[str] = []
    if all(sh is not None for sh in shards):
        results = _merge_shards(reports, [sh for sh in shards if sh is not None], notes, allow_missing)
    elif any(sh is not None for sh in shards):
        raise MergeError("cannot merge the report of a shard (--shard) with whole reports")
    else:
        results = [r for rep in reports for r in rep.results]
        _no_twice(reports)
    for rep in reports:
        notes.extend(n for n in rep.notes if n not in notes)
    elapsed = [r.elapsed_seconds for r in reports if r.elapsed_seconds is not None]
    return Report(
        results=results,
        environment=dict(reports[0].environment),
        budget_seconds=reports[0].budget_seconds,
        elapsed_seconds=max(elapsed) if elapsed else None,
        notes=notes,
        sweeps=sweep_table(results),
        analysis_errors=[e for rep in reports for e in rep.analysis_errors],
    )


def _no_twice(reports: Sequence[Report]) -> None:
    """Raise :class:`MergeError` when one measured series is in two of ``reports`` (a report given twice, or a
    copy of it): its results would count twice. Two measurements of one chain (two machines, two days) differ
    in their points, and merge."""
    where: dict[str, int] = {}
    for i, rep in enumerate(reports, 1):
        for r in rep.results:
            if not r.series.points:  # nothing measured (two runs may fail alike): nothing counted twice
                continue
            key = repr(r.series)
            if key in where and where[key] != i:
                raise MergeError(
                    f"reports {where[key]} and {i} hold the same measurement of {r.series.label} (one report "
                    "given twice, or a copy of it): give each report once"
                )
            where.setdefault(key, i)


def _merge_shards(
    reports: Sequence[Report], shards: Sequence[Shard], notes: list[str], allow_missing: bool = False
) -> list[Result]:
    first = shards[0]
    if any(sh.count != first.count or sh.planned != first.planned or sh.plan != first.plan for sh in shards):
        raise MergeError("these shards come from different runs (other targets, options or --shard N)")
    seen: set[int] = set()
    for sh in shards:
        _check_shard(sh)
        if sh.index in seen:
            raise MergeError(f"shard {sh.index}/{sh.count} is given twice")
        seen.add(sh.index)
    placed: dict[int, Result] = {}
    for rep, sh in zip(reports, shards, strict=True):
        if len(sh.positions) != len(rep.results):
            raise MergeError(f"shard {sh.index}/{sh.count}: {len(rep.results)} results for {len(sh.positions)} series")
        for pos, res in zip(sh.positions, rep.results, strict=True):
            if pos in placed:
                raise MergeError(f"series {pos} of the plan is in two shards")
            placed[pos] = res
    if len(seen) < first.count:
        text = (
            f"shard {_missing_text(seen, first.count)} missing "
            f"({first.planned - len(placed)} of {first.planned} series not in this report)"
        )
        if not allow_missing:
            raise MergeError(
                f"{text}: give every shard's report, or --allow-missing to merge the {len(seen)} of {first.count} given"
            )
        notes.append(f"merged {len(seen)} of {first.count} shards: {text}")
    return [placed[pos] for pos in sorted(placed)]


#: The most missing shards a message names one by one.
MISSING_NAMED = 8


def _missing_text(seen: set[int], count: int) -> str:
    """``2/4, 3/4``: the shards of 1..``count`` not in ``seen``, the first :data:`MISSING_NAMED` of them named
    (a count of 10**30 in a hand-edited record is never enumerated)."""
    named: list[str] = []
    k = 0
    while len(named) < MISSING_NAMED and k < count:
        k += 1
        if k not in seen:
            named.append(f"{k}/{count}")
    left = count - len(seen) - len(named)
    return ", ".join(named) + (f" and {left} more" if left > 0 else "")


def _check_shard(sh: Shard) -> None:
    """A shard record as ``--shard K/N`` writes it: 1 <= K <= N, and distinct positions inside the plan."""
    if not 1 <= sh.index <= sh.count:
        raise MergeError(f"shard {sh.index}/{sh.count}: not a part of {sh.count} (K must be 1..N)")
    bad = [p for p in sh.positions if not 0 <= p < sh.planned]
    if bad:
        raise MergeError(f"shard {sh.index}/{sh.count}: series {bad[0]} is not in a plan of {sh.planned} series")
    if len(set(sh.positions)) != len(sh.positions):
        raise MergeError(f"shard {sh.index}/{sh.count}: a series of the plan is in it twice")


# --------------------------------------------------------------------------- what the renderers show

#: Columns of the sweep table (measured vs predicted base per reuse count), shared by the renderers.
SWEEP_COLUMNS = ("chain", "backend/profile", "mode", "k", "measured base", "predicted base", "verdict", "agrees")


def fmt_growth(result: Result) -> str:
    """The cost's rate: the deciding model's figure (``x2.01/layer``, ``d^1.72 [1.55, 1.90]``: time with its
    interval, ``flat`` for a cost that does not grow at all, ``-`` without a model), or where a proxy decided the
    class the cost's own, with the proxy's beside (``x2.05/unroll [1.83, 2.31]; proxy inductor_loop_body_ops
    x3.69/unroll``)."""
    v = result.verdict
    proxy = f"; proxy {words.proxy_text(v)}" if words.proxy_text(v) else ""
    return (v.interval_text or "-") + proxy


def decided_by(result: Result) -> str:
    """What decided the verdict: ``counters``, the deciding metric's name (``python_calls``) or ``time`` (``-``
    without a deciding model)."""
    fit = result.verdict.fit
    if fit is None:
        return "-"
    return fit.metric if fit.source == Source.METRIC else str(fit.source)


def one_line_reason(result: Result) -> str:
    """Why a result gets one line (inconclusive, runaway, error, mild): the verdict's reason, else its
    deciding model's, else the cause (every renderer prints this)."""
    v = result.verdict
    why = v.reason or (v.fit.reason if v.fit is not None else "") or v.cause
    return why or (v.evidence[0] if v.evidence else "")


def shows_memory(results: Sequence[Result]) -> bool:
    """True when a result measured memory or says why it did not (the renderers then give every row a memory
    cell); a time-only report of an older adprof has none."""
    return any(
        r.verdict.memory is not None and (r.verdict.memory.measured or r.verdict.memory.not_measured) for r in results
    )


def shows_program(results: Sequence[Result]) -> bool:
    """True when a result read its costs against the program or its forward (the renderers then give every row a
    program cell); a report of an older adprof has none."""
    return any(r.verdict.explained is not None for r in results)


def program_cell(result: Result) -> str:
    """The program cell of a result's row: the program's growth and what it measures beside the gradient's ratio
    to its forward (``seq_len^2.00: its arithmetic; gradient 3.1x its forward, flat``), ``-`` without either."""
    ex = result.verdict.explained
    if ex is None:
        return "-"
    parts = [t for t in (words.program_text(ex), words.ratio_text(ex)) if t]
    return "; ".join(parts) or "-"


def memory_text(result: Result) -> str:
    """The memory cell of a result's row: ``linear d^1.00``, ``leak-per-call +4.0 KiB/call at depth 8``,
    ``superlinear-memory d^2.00 (peak disagrees)``, ``not measured`` or ``-`` (no memory verdict)."""
    mv = result.verdict.memory
    if mv is None:
        return "-"
    disagrees = " (peak disagrees)" if mv.peak_agrees is False else ""
    return words.memory_summary(mv) + disagrees


def memory_reason(result: Result) -> str:
    """Why the memory verdict is what it is, in one line: an inconclusive or unmeasured memory's reason, else its
    cause (empty without a memory verdict)."""
    mv = result.verdict.memory
    if mv is None:
        return ""
    return mv.reason if mv.kind == model.INCONCLUSIVE else mv.cause


def chain_label(series: Series) -> str:
    """The chain's name with its sweep values (``powers[k=2]``: a variant's name already carries them)."""
    return chain_name(series.chain, series.params)


def backend_label(series: Series) -> str:
    return f"{series.backend}/{series.profile}" if series.profile else series.backend


#: How the renderers mark a time-decided verdict measured on a loaded machine (``Verdict.loaded_machine``).
LOADED_MARK = "loaded"
LOADED_NOTE = (
    f"{LOADED_MARK}: time decided it and the machine was loaded while the series ran (load average per CPU "
    f"above {LOADED_PER_CORE:g}): other work may have inflated the times; rerun on a quiet machine"
)


def machine_host(series: Series) -> str:
    """The host that measured the series (``-`` when unknown)."""
    return series.machine.host if series.machine is not None and series.machine.host else "-"


def several_machines(results: Sequence[Result]) -> bool:
    """True when the results were measured on more than one host (the summary then shows which)."""
    return len({r.series.machine.host for r in results if r.series.machine is not None}) > 1


def machine_text(series: Series) -> str:
    """Where and under what load a series was measured, in one line (empty when unknown)."""
    m = series.machine
    if m is None:
        return ""
    cpus = f", {m.cpus} CPUs" if m.cpus else ""
    text = f"measured on {m.host or '?'} ({m.cpu_model or 'CPU unknown'}{cpus})"
    if m.load_average is not None:
        per_core = f", {m.load_per_core:.2f} per CPU" if m.load_per_core is not None else ""
        text += f", load average {m.load_average:.2f} (peak {m.load_peak or m.load_average:.2f}){per_core}"
    return text + (f", by {m.worker}" if m.worker else "")


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
    phases = classified_phases(series)
    best: tuple[float, bool] | None = None
    for p in series.points:
        t = time_value(p, phases)
        if t is not None and (best is None or t > best[0]):
            best = (t, p.censored)
    if best is None:
        return "-"
    return (">=" if best[1] else "") + fmt_seconds(best[0])


__all__ = [
    "LOADED_MARK",
    "LOADED_NOTE",
    "SWEEP_COLUMNS",
    "MergeError",
    "analyze_structures",
    "backend_label",
    "build_report",
    "chain_label",
    "decided_by",
    "depth_reached",
    "fmt_growth",
    "one_line_reason",
    "machine_host",
    "machine_text",
    "measured_versions",
    "memory_reason",
    "memory_text",
    "shows_memory",
    "merge_reports",
    "several_machines",
    "worst_time_text",
]
