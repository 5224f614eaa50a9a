"""Scaling guards for CI: fail when a chain's cost grows faster than its limits.

A guard measures a chain at a fixed list of depths (its declared ones, else :data:`DEFAULT_DEPTHS`: no
time-dependent schedule), decides the growth and compares it with two limits: ``max_base`` (per-layer ratio,
for exponential growth) and ``max_exponent`` (power-law exponent). Where the backend has deterministic
counters (the engine), the verdict is decided on them, so a guard gives the same answer on a loaded CI
machine; a runaway point is stopped by the counter budget (also deterministic) and counts as a censored
lower bound. Peers decide on a deterministic work metric where the backend declares one (e.g. JAX traced:
Python call counts), exactly as the engine's counters; where time decides, the limits get a tolerance. A
point killed at its own timeout (a hang) fails the guard whatever the growth of the depths before it.

``adprof guard`` and the pytest fixture take one path: :func:`guard_specs` plans the series, the measuring
pool runs them in supervised workers (:func:`adprof.measure.measure_all`) with :func:`guard_config`, the
report decides them, and :func:`guard_checks` compares them with the limits.

Limits come from, in order: explicit arguments, a ``@pytest.mark.adprof_guard(...)`` marker,
``[tool.adprof.guard]`` in ``pyproject.toml``, and the defaults below.
"""

from __future__ import annotations

import inspect
import math
import re
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from adprof import model, options, verdicts
from adprof.analysis.costs import assess_series, predicted_growth
from adprof.analysis.jumps import expected, unconfirmed_jumps
from adprof.backends import check_backend
from adprof.chain import as_chain
from adprof.comparison import DEFAULT_TOLERANCE, SEVERITY, Side, State, classify_memory, pair_results
from adprof.measure import MeasureConfig, SeriesSpec, measure_all
from adprof.measure.config import LOAD_TIMEOUT
from adprof.measure.plan import UsageError, load_targets, nothing_planned, plan_series
from adprof.model import Report, Result, point_wall
from adprof.report import build_report
from adprof.util.text import range_text

DEFAULT_MAX_BASE = 1.1
DEFAULT_MAX_EXPONENT = 1.3
#: Extra slack on the limits for backends measured on wall time only.
TIME_TOLERANCE = 0.15
#: Key comparisons allowed per point: deterministic runaway stop (a censored point).
GUARD_COUNTER_BUDGET = 5_000_000
#: Seconds per phase and for the whole guard run. A phase may take 15 s (fixed depths: nothing stops them
#: sooner), so a hang is killed after 4 x 15 = 60 s, which a CI job can afford; the whole run gets 10 minutes.
GUARD_CAP = 15.0
GUARD_BUDGET = 600.0
#: The largest budget the guard advises, as a multiple of the run's (past it, the missing depths are too costly to
#: guard, whatever the advice).
ADVICE_FACTOR = 10.0
#: Depths when the chain declares none: unit steps (per-layer ratios) then doublings.
DEFAULT_DEPTHS = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)


class GuardConfigError(ValueError):
    """A bad ``[tool.adprof.guard]`` table (not valid TOML, a non-positive or non-numeric limit, an unknown key)."""


_GUARD_KEYS: dict[str, float | None] = {
    "max_base": DEFAULT_MAX_BASE,
    "max_exponent": DEFAULT_MAX_EXPONENT,
    "max_memory_exponent": None,  # memory limits: unset unless asked for
    "max_leak": None,
}

#: Byte units of ``--max-leak`` (as pytest-memray's ``limit_memory``/``limit_leaks`` read them: KB and KiB alike are
#: 1024 bytes).
BYTE_UNITS = {
    "": 1,
    "B": 1,
    "K": 2**10,
    "KB": 2**10,
    "KIB": 2**10,
    "M": 2**20,
    "MB": 2**20,
    "MIB": 2**20,
    "G": 2**30,
    "GB": 2**30,
    "GIB": 2**30,
    "T": 2**40,
    "TB": 2**40,
    "TIB": 2**40,
}
_BYTES = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


def parse_bytes(value: Any) -> float:
    """Bytes from ``4096``, ``"4096"``, ``"1 MB"``, ``"512 KiB"``, ``"1.5GB"`` (units: B, K/KB/KiB, M/MB/MiB,
    G/GB/GiB, T/TB/TiB, case-insensitive, 1024-based); raises ValueError (one line) for anything else or a
    negative or non-finite number."""
    if isinstance(value, bool):
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}")
    if isinstance(value, int | float):
        if options.RULES["max_leak"].problem(value) is not None:
            raise ValueError(f"expected a non-negative number of bytes, got {options.shown(value)}")
        return float(value)
    m = _BYTES.match(value) if isinstance(value, str) and len(value) <= 64 else None
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in BYTE_UNITS:
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}")
    amount = float(m.group(1)) * BYTE_UNITS[unit]
    if options.RULES["max_leak"].problem(amount) is not None:  # '9' * 400 bytes is inf: past the rule's bound
        too_many = model.fmt_bytes(amount)
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}: {too_many}")
    return amount


def _limit(table: dict[str, Any], key: str, where: str) -> float | None:
    value = table.get(key, _GUARD_KEYS[key])
    if value is None:
        return None
    if key == "max_leak":
        try:
            return parse_bytes(value)
        except ValueError as exc:
            raise GuardConfigError(f"{where} {key}: {exc}") from None
    try:
        return float(options.check(key, value))
    except options.OptionError as exc:
        raise GuardConfigError(f"{where} {exc}") from None


@dataclass
class GuardLimits:
    max_base: float = DEFAULT_MAX_BASE
    max_exponent: float = DEFAULT_MAX_EXPONENT
    #: The largest power-law exponent of the memory verdict in depth (saved-for-backward bytes; an exponential
    #: exceeds any): None, not checked.
    max_memory_exponent: float | None = None
    #: The most bytes a call may leave held after ``gc.collect()`` (the memory verdict's bytes per call, at any
    #: depth): None, not checked.
    max_leak: float | None = None

    @property
    def checks_memory(self) -> bool:
        """A memory limit is set: the guard measures memory (``--memory``) and checks it."""
        return self.max_memory_exponent is not None or self.max_leak is not None

    def memory_text(self) -> str:
        """``max memory exponent 1.2, max leak 1.0 MiB per call`` ("" without memory limits)."""
        parts = []
        if self.max_memory_exponent is not None:
            parts.append(f"max memory exponent {self.max_memory_exponent:g}")
        if self.max_leak is not None:
            parts.append(f"max leak {model.fmt_bytes(self.max_leak)} per call")
        return ", ".join(parts)

    @classmethod
    def from_pyproject(cls, start: Path | None = None) -> GuardLimits:
        """Limits from the nearest ``pyproject.toml``'s ``[tool.adprof.guard]`` (defaults if none).

        Raises :class:`GuardConfigError` (one line naming the file and the key) on a bad table."""
        path = pyproject_path(start)
        table = pyproject_guard_table(start)
        where = f"{path} [tool.adprof.guard]"
        unknown = sorted(set(table) - set(_GUARD_KEYS))
        if unknown:
            raise GuardConfigError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(_GUARD_KEYS)})")
        return cls(
            max_base=_limit(table, "max_base", where),  # type: ignore[arg-type]
            max_exponent=_limit(table, "max_exponent", where),  # type: ignore[arg-type]
            max_memory_exponent=_limit(table, "max_memory_exponent", where),
            max_leak=_limit(table, "max_leak", where),
        )


def pyproject_path(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (the cwd), or None."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        f = d / "pyproject.toml"
        if f.is_file():
            return f
    return None


def pyproject_guard_table(start: Path | None = None) -> dict[str, Any]:
    """``[tool.adprof.guard]`` of the nearest pyproject.toml at or above ``start`` (or {}).

    Raises :class:`GuardConfigError` when that file cannot be read or is not valid TOML, or the
    table is not a table."""
    f = pyproject_path(start)
    if f is None:
        return {}
    try:
        data = tomllib.loads(f.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise GuardConfigError(f"{f}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise GuardConfigError(f"{f} is not valid TOML (not UTF-8: byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise GuardConfigError(f"{f} is not valid TOML ({exc})") from None
    table: Any = data
    for i, key in enumerate(("tool", "adprof", "guard")):  # each level must be a table, or be absent
        table = table.get(key, {})
        if not isinstance(table, dict):
            where = ".".join(("tool", "adprof", "guard")[: i + 1])
            raise GuardConfigError(f"{f} [{where}]: expected a table, got {table!r}")
    return dict(table)


@dataclass
class GuardCheck:
    """One guarded (chain, backend, profile, mode): the verdict against the limits."""

    result: Result
    limits: GuardLimits
    ok: bool
    measured: str  # e.g. "base 2.00 per layer" or "exponent 1.02"
    limit: str  # e.g. "max base 1.10"
    reason: str  # one line
    metric: str = ""
    #: Where the limits came from with ``--baseline``: the baseline's reading of this series, or why the normal
    #: limits apply ("not in the baseline"); "" without a baseline.
    baseline: str = ""
    #: The memory limits' check (None: no memory limit set); :attr:`ok` already counts it.
    memory: MemoryCheck | None = None
    #: The time limits held (:attr:`ok` before the memory limits were applied).
    time_ok: bool = True

    @property
    def label(self) -> str:
        return self.result.series.label

    def evidence_lines(self) -> list[str]:
        """The evidence of this check: limit against measured, the cost per depth, the verdict's evidence, the
        cause and the remedies (what a failure shows)."""
        v = self.result.verdict
        lines = [f"{self.label}: {v.kind}" + (f" ({self.metric})" if self.metric else "")]
        if self.memory is not None and v.memory is not None:
            lines[0] += f"; memory {v.memory.summary}" + (f" ({v.memory.decided_by})" if v.memory.decided_by else "")
        if self.baseline:
            lines.append("  baseline   " + self.baseline)
        lines.append("  - limit    " + self.limit)
        lines.append("  + measured " + self.measured)
        mem = self.memory
        if mem is not None:
            lines.append("  - memory limit    " + mem.limit)
            lines.append("  + memory measured " + mem.measured)
            lines.append(f"  memory: {mem.reason}")
        lines.append("  depth  cost")
        for d, val in _cost_rows(self.result):
            lines.append(f"  {d:5d}  {val:.6g}")
        mv = v.memory
        if mem is not None and mv is not None and mv.fit is not None and mv.fit.depths:
            lines.append(f"  depth  {mv.decided_by or 'bytes'}")
            lines.extend(f"  {d:5d}  {val:.6g}" for d, val in zip(mv.fit.depths, mv.fit.values, strict=False))
        lines.extend(f"  evidence: {e}" for e in v.evidence[:4])
        if v.cause:
            lines.append(f"  cause: {v.cause}")
        lines.extend(f"  remedy: {r}" for r in v.remedies[:3])
        if mem is not None and not mem.ok and mv is not None:
            lines.extend(f"  memory evidence: {e}" for e in mv.evidence[:3])
            if mv.cause:
                lines.append(f"  memory cause: {mv.cause}")
            lines.extend(f"  memory remedy: {r}" for r in mv.remedies[:3])
        return lines


@dataclass
class MemoryCheck:
    """The memory limits (``max_memory_exponent``, ``max_leak``) against one series' memory verdict: whether they
    hold, what was measured and the limit (for the diff), why (in pytest-memray's words: "limited to ... but ..."),
    and whether it could be checked at all (a figure not measured fails, never passes silently)."""

    ok: bool
    measured: str  # "saved bytes d^2.00 over depths 1-32 (1.1 KiB -> 81.0 KiB)", "+4.0 KiB per call at depth 8"
    limit: str  # "max memory exponent 1.2, max leak 1.0 KiB per call"
    reason: str
    checked: bool = True  # False: a limit could not be checked (its figure not measured: a failure)


@dataclass
class GuardReport:
    """The guard's outcome: one check per series (and the report that decided them, for the API)."""

    checks: list[GuardCheck] = field(default_factory=list)
    report: Report | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[GuardCheck]:
        return [c for c in self.checks if not c.ok]

    def text(self) -> str:
        """A readable diff of limit vs measured, with the evidence of failures."""
        lines = []
        for c in self.checks:
            mark = "ok  " if c.time_ok else "FAIL"  # the time limits' mark; the memory limits' below it
            lines.append(f"{mark} {c.label}: {c.measured} (limit: {c.limit}) - {c.reason}")
            if c.memory is not None:
                mark = "ok  " if c.memory.ok else "FAIL"
                lines.append(f"  {mark} memory: {c.memory.measured} (limit: {c.memory.limit}) - {c.memory.reason}")
        for c in self.failures:
            lines.append("")
            lines.extend(c.evidence_lines())
        return "\n".join(lines)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """In a notebook: the diff as text (the report's HTML with it when there is one)."""
        bundle = {"text/plain": self.text()}
        if self.report is not None:
            from adprof.render.html import render_html_fragment

            bundle["text/html"] = f"<pre>{escape(self.text())}</pre>" + render_html_fragment(self.report)
        return bundle


def _cost_rows(result: Result) -> list[tuple[int, float]]:
    fit = result.verdict.fit
    if fit is None:
        return []
    return list(zip(fit.depths, fit.values, strict=False))


def missing_depths(result: Result) -> list[int]:
    """The planned depths of a guarded series that were not measured (cut by the budget, stopped, killed)."""
    s = result.series
    measured = {p.depth for p in s.points if not p.censored}
    return [d for d in s.planned_depths if d not in measured]


def depth_ranges(depths: Sequence[int]) -> str:
    """``9-12, 16, 32``: a sorted list of depths with consecutive runs joined."""
    runs: list[list[int]] = []
    for d in sorted(depths):
        if runs and d == runs[-1][-1] + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def needed_seconds(result: Result, depths: Sequence[int]) -> float | None:
    """About how many seconds the deciding model predicts the ``depths`` would take (None when it cannot say)."""
    fit, s = result.verdict.fit, result.series
    calls = next((p.calls for p in reversed(s.points) if not p.censored and p.calls), 1) or 1
    total = 0.0
    for d in depths:
        got = expected(s, d, fit, point_wall, largest=True)
        if got is None or not math.isfinite(got[0]):
            return None
        total += got[0] * calls
    stop = s.stop
    predicted = stop.seconds if stop is not None and stop.reason is model.StopReason.BUDGET_SHARE else None
    return max(total, predicted or 0.0)


def missing_text(result: Result, missing: Sequence[int], budget: float | None) -> str:
    """One line: which planned depths are missing, why, and what would measure them."""
    s = result.series
    stop = s.stop
    why = f" ({stop.text()})" if stop is not None else ""
    head = f"depth{'s' if len(missing) > 1 else ''} {depth_ranges(missing)} not measured{why}"
    if stop is not None and stop.reason in (model.StopReason.CAP, model.StopReason.PREDICTED_CAP):
        need = max(stop.seconds or 0.0, stop.limit or 0.0)
        if not math.isfinite(need) or (budget is not None and need * 1.5 > budget):
            # no cap within the run's budget measures it: advise none (never a cap of 10^20 seconds)
            took = f"{need:.3g} s" if math.isfinite(need) else "longer than any cap"
            within = f"the {budget:g} s budget" if budget is not None else "any budget"
            at = stop.depth if stop.depth is not None else stop.after
            return f"{head}; depth {at} would take about {took}, past {within}: a cost this steep fails"
        return f"{head}; a cap above {need:.3g} s would measure them (--cap {math.ceil(need * 1.5):d})"
    secs = needed_seconds(result, missing)
    if secs is None or budget is None:
        return f"{head}; rerun with a larger --budget"
    more = max(1, math.ceil(1.5 * secs))
    if more > ADVICE_FACTOR * budget:  # no advice of a budget the run could never have (a model far past its data)
        return f"{head}; they would take about {secs:.3g} s, over {ADVICE_FACTOR:g}x the {budget:g} s budget"
    return f"{head}; they need about {secs:.3g} s more: rerun with --budget {math.ceil(budget + more):d}"


def tolerance_for(result: Result) -> float:
    """The slack on the limits: none when a deterministic metric or counter decided, else TIME_TOLERANCE."""
    fit = result.verdict.fit
    return 0.0 if fit is not None and fit.source in ("counters", "metric") else TIME_TOLERANCE


def _undecided(result: Result, limits: GuardLimits, limit: str, budget: float | None = None) -> GuardCheck | None:
    """The failing check of a result without a growth to compare (a hang, an error, a planned depth not
    measured, inconclusive, a runaway), else None (``budget``: the run's, for the advice on how much more would
    measure a missing depth)."""
    v = result.verdict
    metric = v.metric or ""
    if v.killed and v.kind != model.ERROR:  # a hang fails the guard whatever the depths before it read
        stop = result.series.killed
        why = v.reason if v.kind == model.RUNAWAY else model.killed_text(stop) if stop is not None else ""
        why = why or "a point was stopped far past its prediction"
        return GuardCheck(result, limits, False, "hang", limit, why, metric)
    if v.kind == model.ERROR:
        return GuardCheck(result, limits, False, "error", limit, result.series.error or "the chain failed", metric)
    if v.kind != model.RUNAWAY and (missing := missing_depths(result)):  # never pass on the depths before them
        why = missing_text(result, missing, budget)
        return GuardCheck(result, limits, False, "missing depths", limit, why, metric)
    if v.kind == model.INCONCLUSIVE:
        why = v.reason or (v.fit.reason if v.fit is not None else "") or "too few points to decide: give it more depths"
        return GuardCheck(result, limits, False, "inconclusive", limit, why, metric)
    if v.kind == model.RUNAWAY:
        why = v.reason or "a point ran past its cap"
        return GuardCheck(result, limits, False, "runaway", limit, why, metric)
    return None


def check_result(
    result: Result, limits: GuardLimits, tolerance: float = 0.0, budget: float | None = None
) -> GuardCheck:
    """Compare one classified result with the limits (``tolerance`` widens them, time-only). A planned depth that
    was not measured fails (``budget``: the run's, for the advice on how much more would measure it)."""
    v = result.verdict
    max_base = limits.max_base * (1 + tolerance)
    max_exp = limits.max_exponent * (1 + tolerance)
    limit = f"max base {limits.max_base:.2f}, max exponent {limits.max_exponent:.2f}"
    if tolerance:
        limit += f" (+{tolerance:.0%} for wall time)"
    metric = v.metric or ""
    failed = _undecided(result, limits, limit, budget)
    if failed is not None:
        return failed
    # a verdict read past a knee: its rate is the law of the cost over the line past that depth
    past = f" past depth {v.knee.depth}" if v.knee is not None and v.reading is not v.fit else ""
    if verdicts.is_exponential(v.kind):
        base = v.base if v.base is not None else float("inf")
        ok = base <= max_base
        return GuardCheck(
            result,
            limits,
            ok,
            f"base {base:.2f} per layer{past}",
            limit,
            f"{v.kind}: cost x{base:.2f} per layer{past}" + ("" if ok else f" > {max_base:.2f}"),
            metric,
        )
    exponent = v.exponent if v.exponent is not None else 1.0
    ok = exponent <= max_exp
    what = f"(depth - {v.knee.depth})" if past and v.knee is not None else "depth"
    return GuardCheck(
        result,
        limits,
        ok,
        f"exponent {exponent:.2f}{past}",
        limit,
        f"{v.kind}: cost ~ {what}^{exponent:.2f}" + ("" if ok else f" > {max_exp:.2f}"),
        metric,
    )


def check_against_baseline(
    result: Result,
    base: Result | None,
    limits: GuardLimits,
    tolerance: float = DEFAULT_TOLERANCE,
    where: str = "the baseline",
    budget: float | None = None,
) -> GuardCheck:
    """Compare one result with its baseline's own figures: its verdict may not be worse (:data:`SEVERITY`), and
    its base or exponent may not exceed the baseline's interval top + ``tolerance``. A series absent from the
    baseline, or whose baseline reading has no figures (inconclusive, an error, a runaway), gets ``limits``
    (the normal ones), and its check says so."""
    if base is None:
        normal = check_result(result, limits, tolerance_for(result), budget)
        normal.baseline = f"not in {where}: the normal limits"
        return normal
    before, after = Side.of(base), Side.of(result)
    rank_before = SEVERITY.get(before.verdict)
    if rank_before is None or before.span() is None:
        normal = check_result(result, limits, tolerance_for(result), budget)
        normal.baseline = f"{where} reads {before.verdict}, without figures: the normal limits"
        return normal
    _, hi = before.span()  # type: ignore[misc]
    what = "base" if before.rate_kind == "base" else "exponent"
    top = hi + tolerance
    limit = f"{where}'s {before.verdict} {before.growth}: {what} at most {top:.2f} (top {hi:.2f} + {tolerance:g})"
    reading = f"{where}: {before.verdict} {before.growth}".rstrip()
    failed = _undecided(result, limits, limit, budget)
    if failed is not None:
        failed.baseline = reading
        return failed
    v, metric = result.verdict, result.verdict.metric or ""
    measured = f"base {after.rate:.2f} per layer" if after.rate_kind == "base" and after.rate is not None else ""
    if not measured:
        measured = f"exponent {after.rate if after.rate is not None else 1.0:.2f}"
    rank_after = SEVERITY[v.kind]
    if rank_after != rank_before:
        ok = rank_after < rank_before
        why = f"{v.kind}: {'better' if ok else 'worse'} than the baseline's {before.verdict}"
        return GuardCheck(result, limits, ok, measured, limit, why, metric, reading)
    if after.rate is None or after.rate_kind != before.rate_kind:
        return GuardCheck(result, limits, True, measured, limit, f"{v.kind}: as in the baseline", metric, reading)
    ok = after.rate <= top
    why = f"{v.kind}: {what} {after.rate:.2f}" + (f" <= {top:.2f}" if ok else f" > {top:.2f}")
    return GuardCheck(result, limits, ok, measured, limit, why, metric, reading)


def _bytes_span(fit: model.Fit) -> str:
    """``1.1 KiB at depth 1 -> 81.0 KiB at depth 32`` of a memory fit."""
    if not fit.depths:
        return ""
    return (
        f"{model.fmt_bytes(fit.values[0])} at depth {fit.depths[0]} -> "
        f"{model.fmt_bytes(fit.values[-1])} at depth {fit.depths[-1]}"
    )


def _memory_exponent(mv: model.MemoryVerdict, limit: float, tolerance: float) -> tuple[bool, str, str, bool]:
    """(ok, measured, reason, checked) of the memory exponent limit (checked False: why it could not be)."""
    what = "saved-for-backward bytes" if mv.decided_by == model.SAVED_BYTES else "peak bytes"
    fit = mv.fit
    if not mv.measured or fit is None or not fit.depths:
        why = mv.not_measured.get(model.SAVED_BYTES) or mv.reason or "no bytes against depth were measured"
        return (
            False,
            "not measured",
            f"could not check max memory exponent {limit:g}: memory not measured ({why})",
            False,
        )
    depths = depth_ranges(fit.depths)
    span = _bytes_span(fit)
    if mv.growth in ("", model.INCONCLUSIVE):
        return False, f"{what} inconclusive", f"could not check max memory exponent {limit:g}: {mv.reason}", False
    top = limit * (1 + tolerance)
    slack = f" (+{tolerance:.0%}: peak bytes are noisy)" if tolerance else ""
    if mv.base is not None:  # exponential in depth: over any exponent
        measured = f"{what} x{mv.base:.2f} per layer over depths {depths}"
        return (
            False,
            measured,
            (
                f"{what} limited to depth^{limit:g}{slack} but grow x{mv.base:.2f} per layer (exponential) over depths "
                f"{depths}: {span}"
            ),
            True,
        )
    exponent = mv.exponent if mv.exponent is not None else 1.0
    measured = f"{what} depth^{exponent:.2f} over depths {depths}"
    if exponent <= top:
        return True, measured, f"{mv.growth}: {what} grow as depth^{exponent:.2f} <= {top:.2f} ({span})", True
    return (
        False,
        measured,
        (f"{what} limited to depth^{limit:g}{slack} but grow as depth^{exponent:.2f} over depths {depths}: {span}"),
        True,
    )


def _max_leak(mv: model.MemoryVerdict, limit: float, mode: str) -> tuple[bool, str, str, bool]:
    """(ok, measured, reason, checked) of the leak limit. Retained bytes are per eager call: a traced or compiled
    series has none to check (it says so and holds); an eager series without them fails."""
    shown = model.fmt_bytes(limit)
    if mode != "eager" and not mv.leaks:
        return True, "no calls", f"max leak {shown} per call not checked: retained bytes are per eager call", False
    if not mv.leaks:
        why = mv.not_measured.get(model.RETAINED) or "no retained bytes were measured"
        why = f"could not check max leak {shown} per call: retained bytes not measured ({why})"
        return False, "not measured", why, False
    worst = max(mv.leaks, key=lambda r: r.bytes_per_call if r.leaking else -1.0)
    if mv.leaking is None:
        undecided = next(r for r in mv.leaks if r.leaking is None)
        why = undecided.fit.reason if undecided.fit is not None else "undecided"
        why = f"could not check max leak {shown} per call at depth {undecided.depth}: {why}"
        return False, "undecided", why, False
    if not worst.leaking:
        deepest = mv.leaks[-1]
        held = model.fmt_bytes(deepest.retained[-1]) if deepest.retained else "-"
        why = f"no leak: retained bytes flat over the calls at every depth ({held} at depth {deepest.depth})"
        return True, "no leak", why, True
    bpc = worst.bytes_per_call
    calls = range_text("call", "calls", worst.calls[0], worst.calls[-1]) if worst.calls else "the calls"
    grew = f"{model.fmt_bytes(worst.retained[0])} -> {model.fmt_bytes(worst.retained[-1])}" if worst.retained else ""
    leaking_depths = depth_ranges([r.depth for r in mv.leaks if r.leaking])
    measured = f"+{model.fmt_bytes(bpc)} per call at depth {worst.depth}"
    if bpc <= limit:
        return True, measured, f"leaks {model.fmt_bytes(bpc)} per call <= {shown} (depths {leaking_depths})", True
    return (
        False,
        measured,
        (
            f"limited to {shown} leaked per call but leaked {model.fmt_bytes(bpc)} per call at depth {worst.depth} "
            f"(retained {grew} over {calls}; leaking at depths {leaking_depths})"
        ),
        True,
    )


def memory_check(result: Result, limits: GuardLimits) -> MemoryCheck | None:
    """The memory limits against a result's memory verdict (None when no memory limit is set). Peak bytes (noisy)
    get :data:`TIME_TOLERANCE` on the exponent; saved bytes (deterministic) none."""
    if not limits.checks_memory:
        return None
    mv = result.verdict.memory or model.MemoryVerdict(reason="no memory verdict (a report without memory)")
    parts: list[tuple[bool, str, str, bool]] = []  # (ok, measured, reason, checked) per limit
    if limits.max_memory_exponent is not None:
        tolerance = TIME_TOLERANCE if mv.decided_by == model.PEAK_BYTES else 0.0
        parts.append(_memory_exponent(mv, limits.max_memory_exponent, tolerance))
    if limits.max_leak is not None:
        parts.append(_max_leak(mv, limits.max_leak, result.series.mode))
    return MemoryCheck(
        ok=all(p[0] for p in parts),
        measured="; ".join(p[1] for p in parts),
        limit=limits.memory_text(),
        reason="; ".join(p[2] for p in parts),
        checked=all(p[3] for p in parts),
    )


def with_memory(check: GuardCheck, limits: GuardLimits) -> GuardCheck:
    """``check`` with the memory limits applied: a failing memory limit fails the check."""
    check.memory, check.time_ok = memory_check(check.result, limits), check.ok
    if check.memory is not None and not check.memory.ok:
        check.ok = False
    return check


def with_baseline_memory(
    check: GuardCheck, base: Result | None, tolerance: float, where: str = "the baseline"
) -> GuardCheck:
    """``check`` with its memory verdict compared to the baseline's, as ``adprof compare`` compares them: a worse
    memory class, a faster growth than the baseline's interval + ``tolerance`` or more bytes leaked per call fails
    it. Nothing is added where either report did not measure memory."""
    if base is None:
        return check
    before, after = Side.of(base), Side.of(check.result)
    compared = classify_memory(before, after, tolerance)
    if compared is None:
        return check
    state, reason = compared
    ok = state != State.REGRESSED
    limit = f"{where}'s memory {before.memory_text}".rstrip()
    if check.memory is None:
        check.memory = MemoryCheck(ok=ok, measured=after.memory_text, limit=limit, reason=reason)
    else:
        mc = check.memory
        mc.ok, mc.limit, mc.reason = mc.ok and ok, f"{mc.limit}; {limit}", f"{mc.reason}; {where}: {reason}"
    if not ok:
        check.ok = False
    return check


def guard_config(**overrides: Any) -> MeasureConfig:
    """The measuring config of a guard (the CLI's defaults; ``overrides``: e.g. ``cap``, ``budget``, ``jobs``)."""
    kw: dict[str, Any] = {
        "cap": GUARD_CAP,
        "budget": GUARD_BUDGET,
        "counter_budget": GUARD_COUNTER_BUDGET,
        "structure": False,
        "predictor": predicted_growth,
        "assess": assess_series,
        "jumps": unconfirmed_jumps,
    }
    kw.update(overrides)
    return MeasureConfig(**kw)


def guard_specs(
    metas: list[dict[str, Any]],
    backends: list[str],
    profiles: str | None,
    modes: str | None,
    depths: Sequence[int] | None,
    notes: list[str],
    skipped: dict[tuple[str, str], list[str]] | None = None,
) -> list[SeriesSpec]:
    """The guarded series: every chain x backend x profile x mode at fixed depths (``depths``, else the chain's
    declared ones, else :data:`DEFAULT_DEPTHS`, which reach past the schedule's unit steps: a chain that explodes
    past depth 8 fails). Profiles default to ``fixed`` on the engine. ``skipped``: why each chain was skipped on a
    backend (:func:`unguarded_series`)."""
    if profiles is None and "engine" in backends:
        profiles = "fixed"
    specs = plan_series(metas, backends, profiles, modes, notes, skipped)
    by_key = {(m["file"], m["name"]): m for m in metas}  # one name may be in two files
    for spec in specs:
        meta = by_key[spec.file, spec.chain]
        declared = tuple(meta.get("depths") or ()) if meta.get("declared_depths", True) else ()
        spec.depths = spec.required_depths = tuple(depths or declared or DEFAULT_DEPTHS)
    return specs


def unguarded_series(
    metas: list[dict[str, Any]], specs: Sequence[SeriesSpec], skipped: dict[tuple[str, str], list[str]]
) -> list[model.Series]:
    """A failed series for each chain of ``metas`` that no spec measures (restricted to another backend, or to
    modes not selected): a guard cannot pass a chain it does not measure, so each one fails it with one line."""
    seen = {(s.file, s.chain) for s in specs}  # measured, or already failed (a target given twice)
    out = []
    for m in metas:
        key = (m["file"], m["name"])
        if key in seen:
            continue
        seen.add(key)
        why = "; ".join(skipped.get(key) or ["no series to measure"])
        per_backend = m.get("backend_modes") or {}
        backend = next(iter(per_backend), "engine") if per_backend else "engine"
        modes = list(per_backend.get(backend) or m.get("modes") or ["traced"])
        error = (
            f"not guarded: {why}; a guard fails a chain it cannot measure (select the chains to guard with "
            "FILE::CHAIN, or guard it with its --backend/--mode)"
        )
        out.append(model.Series(m["name"], backend, None, modes[0], file=m["file"], error=error))
    return out


def guard_checks(
    report: Report,
    limits: GuardLimits,
    baseline: Report | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    baseline_name: str = "the baseline",
) -> GuardReport:
    """Every decided result of ``report`` against the limits, or, with a ``baseline`` report, against the
    baseline's own figures of the same series (paired as ``adprof compare`` pairs them; ``limits`` for the
    series it does not have)."""
    budget = report.budget_seconds
    if baseline is None:
        checks = [with_memory(check_result(r, limits, tolerance_for(r), budget), limits) for r in report.results]
        return GuardReport(checks, report=report)
    base_of = {id(n): b for b, n, _ in pair_results(baseline.results, report.results) if n is not None}
    checks = []
    for r in report.results:
        base = base_of.get(id(r))
        check = with_memory(check_against_baseline(r, base, limits, tolerance, baseline_name, budget), limits)
        checks.append(with_baseline_memory(check, base, tolerance, baseline_name))
    return GuardReport(checks, report=report)


def target_of(chain: Any) -> str:
    """``FILE::CHAIN`` of a chain object or a plain function defined at module level (the guard measures
    it in a worker process, which loads it from its file); raises :class:`UsageError` otherwise."""
    if isinstance(chain, str | Path):
        return str(chain)
    ch = as_chain(chain)
    fn = inspect.unwrap(ch.fn if ch is not None else chain)
    name = ch.name if ch is not None else getattr(fn, "__name__", repr(fn))
    qual = getattr(fn, "__qualname__", "")
    try:
        source = (ch.source if ch is not None else None) or inspect.getsourcefile(fn)
    except TypeError:  # a builtin or a callable object
        source = None
    if source is None or "<" in qual or "." in qual:
        raise UsageError(
            f"the guard measures {name!r} in a worker process, which loads it from its file: define it at "
            "module level in a .py file (or pass 'FILE::CHAIN')"
        )
    return f"{source}::{name}"


def guard_depths(depths: Any) -> tuple[int, ...] | None:
    """The depths a guard is asked to measure (None: the chains' own), sorted, each once; :class:`UsageError` for
    anything but a non-empty sequence of depths under their rule (``"1,2,3"``, ``[0, 1]``, ``[1, 2.5]``,
    ``[True]``, ``[10**9]``)."""
    if depths is None:
        return None
    ok = isinstance(depths, Sequence) and not isinstance(depths, str | bytes) and len(depths) <= options.MAX_DEPTH_COUNT
    if ok and options.depths_problem(depths) is None:
        return tuple(options.check_depths(depths))
    raise UsageError(
        f"depths: expected positive integers, e.g. [1, 2, 4, 8], got {options.shown(depths)} "
        f"(each at most {options.MAX_DEPTH}, at most {options.MAX_DEPTH_COUNT} of them)"
    )


def guard_targets(
    targets: Sequence[Any],
    limits: GuardLimits,
    *,
    mode: str | None = None,
    profile: str | None = None,
    depths: Sequence[int] | None = None,
    backend: str = "engine",
    cfg: MeasureConfig | None = None,
) -> tuple[GuardReport, Report]:
    """Load, measure (in supervised workers), decide and check ``targets`` (``FILE[::CHAIN]`` strings, chain
    objects or module-level functions): the path of ``adprof guard``, without its console."""
    cfg = cfg or guard_config()
    if cfg.started is None:
        cfg.started = time.monotonic()
    if limits.checks_memory and cfg.memory is None:  # a memory limit measures memory
        cfg.memory = True
    depths = guard_depths(depths)
    names = [target_of(t) for t in targets]
    metas = load_targets(names, min(LOAD_TIMEOUT, cfg.budget), cfg.deadline)
    notes: list[str] = []
    skipped: dict[tuple[str, str], list[str]] = {}
    backends = [check_backend(backend)]
    specs = guard_specs(metas, backends, profile, mode, depths, notes, skipped)
    if not specs:
        raise UsageError(f"nothing to guard: {nothing_planned(metas, backends, mode)}")
    measured = measure_all(specs, cfg)
    if measured.interrupted is not None:
        raise KeyboardInterrupt(measured.interrupted)
    report = build_report(
        [*measured.series, *unguarded_series(metas, specs, skipped)],
        measured.structures,
        notes=measured.notes + notes,
        budget_seconds=cfg.budget,
        elapsed_seconds=measured.elapsed,
    )
    return guard_checks(report, limits), report
