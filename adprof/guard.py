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
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from adprof import model
from adprof.analysis.costs import assess_series, predicted_growth
from adprof.analysis.jumps import expected, unconfirmed_jumps
from adprof.backends import check_backend
from adprof.chain import as_chain
from adprof.comparison import DEFAULT_TOLERANCE, SEVERITY, Side, pair_results
from adprof.measure import MeasureConfig, SeriesSpec, measure_all
from adprof.measure.config import LOAD_TIMEOUT
from adprof.measure.plan import UsageError, load_targets, plan_series
from adprof.model import Report, Result, point_wall
from adprof.report import build_report

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
#: Depths when the chain declares none: unit steps (per-layer ratios) then doublings.
DEFAULT_DEPTHS = (1, 2, 3, 4, 5, 6, 7, 8, 16, 32)


class GuardConfigError(ValueError):
    """A bad ``[tool.adprof.guard]`` table (not valid TOML, a non-positive or non-numeric limit, an unknown key)."""


_GUARD_KEYS = {"max_base": DEFAULT_MAX_BASE, "max_exponent": DEFAULT_MAX_EXPONENT}


def _limit(table: dict[str, Any], key: str, where: str) -> float:
    value = table.get(key, _GUARD_KEYS[key])
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise GuardConfigError(f"{where} {key}: expected a positive number, got {value!r}")
    return float(value)


@dataclass
class GuardLimits:
    max_base: float = DEFAULT_MAX_BASE
    max_exponent: float = DEFAULT_MAX_EXPONENT

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
        return cls(max_base=_limit(table, "max_base", where), max_exponent=_limit(table, "max_exponent", where))


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
        data = tomllib.loads(f.read_text())
    except OSError as exc:
        raise GuardConfigError(f"{f}: cannot read it ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise GuardConfigError(f"{f} is not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("adprof", {}).get("guard", {})
    if not isinstance(table, dict):
        raise GuardConfigError(f"{f} [tool.adprof.guard]: expected a table, got {table!r}")
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

    @property
    def label(self) -> str:
        return self.result.series.label

    def evidence_lines(self) -> list[str]:
        """The evidence of this check: limit against measured, the cost per depth, the verdict's evidence, the
        cause and the remedies (what a failure shows)."""
        v = self.result.verdict
        lines = [f"{self.label}: {v.kind}" + (f" ({self.metric})" if self.metric else "")]
        if self.baseline:
            lines.append("  baseline   " + self.baseline)
        lines.append("  - limit    " + self.limit)
        lines.append("  + measured " + self.measured)
        lines.append("  depth  cost")
        for d, val in _cost_rows(self.result):
            lines.append(f"  {d:5d}  {val:.6g}")
        lines.extend(f"  evidence: {e}" for e in v.evidence[:4])
        if v.cause:
            lines.append(f"  cause: {v.cause}")
        lines.extend(f"  remedy: {r}" for r in v.remedies[:3])
        return lines


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
            mark = "ok  " if c.ok else "FAIL"
            lines.append(f"{mark} {c.label}: {c.measured} (limit: {c.limit}) - {c.reason}")
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
        return f"{head}; a cap above {need:.3g} s would measure them (--cap {math.ceil(need * 1.5):d})"
    secs = needed_seconds(result, missing)
    if secs is None or budget is None:
        return f"{head}; rerun with a larger --budget"
    more = max(1, math.ceil(1.5 * secs))
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


def _is_exponential(kind: str) -> bool:
    return kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD)


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
    if _is_exponential(v.kind):
        base = v.base if v.base is not None else float("inf")
        ok = base <= max_base
        return GuardCheck(
            result,
            limits,
            ok,
            f"base {base:.2f} per layer",
            limit,
            f"{v.kind}: cost x{base:.2f} per layer" + ("" if ok else f" > {max_base:.2f}"),
            metric,
        )
    exponent = v.exponent if v.exponent is not None else 1.0
    ok = exponent <= max_exp
    return GuardCheck(
        result,
        limits,
        ok,
        f"exponent {exponent:.2f}",
        limit,
        f"{v.kind}: cost ~ depth^{exponent:.2f}" + ("" if ok else f" > {max_exp:.2f}"),
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
) -> list[SeriesSpec]:
    """The guarded series: every chain x backend x profile x mode at fixed depths (``depths``, else the chain's
    declared ones, else :data:`DEFAULT_DEPTHS`). Profiles default to ``fixed`` on the engine."""
    if profiles is None and "engine" in backends:
        profiles = "fixed"
    specs = plan_series(metas, backends, profiles, modes, notes)
    by_key = {(m["file"], m["name"]): m for m in metas}  # one name may be in two files
    for spec in specs:
        declared = tuple(by_key[spec.file, spec.chain].get("depths") or ())
        spec.depths = spec.required_depths = tuple(depths or declared or DEFAULT_DEPTHS)
    return specs


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
        checks = [check_result(r, limits, tolerance_for(r), budget) for r in report.results]
        return GuardReport(checks, report=report)
    base_of = {id(n): b for b, n, _ in pair_results(baseline.results, report.results) if n is not None}
    checks = [
        check_against_baseline(r, base_of.get(id(r)), limits, tolerance, baseline_name, budget) for r in report.results
    ]
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
    anything but a non-empty sequence of positive integers (``"1,2,3"``, ``[0, 1]``, ``[1, 2.5]``, ``[True]``)."""
    if depths is None:
        return None
    ok = isinstance(depths, Sequence) and not isinstance(depths, str | bytes) and len(depths) > 0
    ok = ok and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in depths)
    if not ok:
        raise UsageError(f"depths: expected positive integers, e.g. [1, 2, 4, 8], got {depths!r}")
    return tuple(sorted(set(depths)))


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
    depths = guard_depths(depths)
    names = [target_of(t) for t in targets]
    metas = load_targets(names, min(LOAD_TIMEOUT, cfg.budget), cfg.deadline)
    notes: list[str] = []
    specs = guard_specs(metas, [check_backend(backend)], profile, mode, depths, notes)
    if not specs:
        raise UsageError("nothing to guard: no chain supports the selected modes" + "".join(f"; {n}" for n in notes))
    measured = measure_all(specs, cfg)
    if measured.interrupted is not None:
        raise KeyboardInterrupt(measured.interrupted)
    report = build_report(
        measured.series,
        measured.structures,
        notes=measured.notes + notes,
        budget_seconds=cfg.budget,
        elapsed_seconds=measured.elapsed,
    )
    return guard_checks(report, limits), report
