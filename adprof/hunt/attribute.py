"""Cross-engine attribution: one program, the class of its growth on every engine and mode, and whose growth
it is.

* **engine-specific**: some engine grows on the program while another stays linear on the same program: the
  cost is that engine's (its mechanism), not the program's arithmetic;
* **in the program**: every engine that decided grows (two backends at least), none stays linear: the
  program itself asks for that much work (nested derivatives multiply their terms);
* **undetermined**: too few engines decided (inconclusive, failed, or not applicable).

Engines that cannot express the program (no nested gradient, an op they lack) are *not applicable* and do not
count either way. Pure over results (:func:`table`, :func:`attribute`); :func:`compare` groups a check
report's results by chain (``adprof check --backend all --compare``).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from adprof import verdicts, words
from adprof.hunt.checks import verdict_kind
from adprof.hunt.model import ENGINE_SPECIFIC, IN_THE_PROGRAM, UNDETERMINED, Row
from adprof.hunt.targets import Target
from adprof.model import (
    INCONCLUSIVE,
    LINEAR,
    Report,
    Result,
)
from adprof.report import fmt_growth, one_line_reason

#: Verdicts that grow (pathologies and the mildly superlinear ones, of time and of memory), and those that do not
#: (linear, flat): live views of the table (:data:`adprof.verdicts.TABLE`).
GROWING = verdicts.GROWING
NOT_GROWING = verdicts.NOT_GROWING
NOT_APPLICABLE = "n/a"
NOT_MEASURED = "not measured"


def decided_by(result: Result) -> str:
    """What decided a result (``counters``, ``python_calls: transform``, ``time``), as the summary table says."""
    fit = result.verdict.fit
    if fit is None:
        return "-"
    return fit.metric if fit.source == verdicts.Source.METRIC else str(fit.source)


def row_of(target: Target, result: Result | None, note: str = "", memory: bool = False) -> Row:
    """The table's entry of one target (``result`` None: not applicable, or not measured when ``note`` says);
    ``memory``: the class of its memory in depth (saved bytes) rather than of its time."""
    base = {"target": target.label, "backend": target.backend, "profile": target.profile, "mode": target.mode}
    if result is None:
        return Row(**base, verdict=NOT_APPLICABLE if note else NOT_MEASURED, note=note)
    series, verdict = result.series, result.verdict
    if not series.points and not series.error:
        return Row(**base, verdict=NOT_MEASURED, note=words.stopped_text(series) or "")
    if memory:
        return _memory_row(base, result)
    note = series.error or (one_line_reason(result) if verdict.kind not in (*GROWING, LINEAR) else "")
    figure = fmt_growth(result)
    return Row(
        **base, verdict=verdict.kind, figure="" if figure == "-" else figure, decided_by=decided_by(result), note=note
    )


def _memory_row(base: dict, result: Result) -> Row:
    mv = result.verdict.memory
    kind = verdict_kind(result, memory=True)
    if result.series.error:
        return Row(**base, verdict=kind, note=result.series.error)
    if mv is None or not mv.measured:
        why = "; ".join(mv.not_measured.values()) if mv is not None else ""
        return Row(**base, verdict=NOT_MEASURED, note=(mv.reason if mv is not None else "") or why)
    note = mv.reason if kind == INCONCLUSIVE else ""
    return Row(**base, verdict=kind, figure=words.memory_interval_text(mv), decided_by=mv.decided_by, note=note)


def table(
    targets: Sequence[Target],
    results: Mapping[Target, Result],
    not_applicable: Mapping[Target, str],
    memory: bool = False,
) -> list[Row]:
    """One row per target, in the targets' order (``memory``: the class of its memory, see :func:`row_of`)."""
    return [row_of(t, results.get(t), not_applicable.get(t, ""), memory) for t in targets]


def _engines(rows: Sequence[Row], kinds: Container[str]) -> list[str]:
    """``v08 (traced, eager), jax (traced)``: the engines of the rows whose verdict is in ``kinds``."""
    by: dict[str, list[str]] = {}
    for r in rows:
        if r.verdict in kinds:
            by.setdefault(Target(r.backend, r.profile, r.mode).engine, []).append(r.mode)
    return [f"{e} ({', '.join(modes)})" for e, modes in by.items()]


def _backend_of(r: Row) -> str:
    """``jax``, ``engine/v08``: a backend, with its profile where the backend is named by it."""
    named = Target(r.backend, r.profile, r.mode).engine != r.backend
    return f"{r.backend}/{r.profile}" if named else r.backend


def attribute(rows: Sequence[Row]) -> tuple[str, str]:
    """The attribution label and its sentence (see the module docstring)."""
    grows = _engines(rows, GROWING)
    linear = _engines(rows, NOT_GROWING)
    backends = {_backend_of(r) for r in rows if r.verdict in GROWING}
    na = [r for r in rows if r.verdict == NOT_APPLICABLE]
    tail = f"; not applicable on {len(na)}" if na else ""
    if grows and linear:
        return ENGINE_SPECIFIC, f"grows on {', '.join(grows)}; linear on {', '.join(linear)}{tail}"
    if len(backends) >= 2 and not linear:
        return IN_THE_PROGRAM, f"every engine that decided grows: {', '.join(grows)}{tail}"
    if grows:
        return UNDETERMINED, f"grows on {', '.join(grows)}; no other engine decided{tail}"
    return UNDETERMINED, f"no engine grows{tail}"


@dataclass
class Comparison:
    """One chain of a check report across its engines: ``adprof check --backend all --compare``."""

    chain: str
    file: str | None
    rows: list[Row] = field(default_factory=list)
    attribution: str = ""
    text: str = ""


def compare(report: Report) -> list[Comparison]:
    """The check report's results grouped by chain (file and name, in report order), each attributed."""
    groups: dict[tuple[str | None, str], Comparison] = {}
    for r in report.results:
        s = r.series
        key = (s.file, s.chain)
        if key not in groups:
            groups[key] = Comparison(chain=s.chain, file=s.file)
        groups[key].rows.append(row_of(Target(s.backend, s.profile, s.mode), r))
    out = list(groups.values())
    for c in out:
        c.attribution, c.text = attribute(c.rows)
    return out


__all__ = ["GROWING", "NOT_APPLICABLE", "NOT_MEASURED", "Comparison", "attribute", "compare", "row_of", "table"]
