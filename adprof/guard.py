"""Scaling guards for CI: fail when a chain's cost grows faster than its limits.

A guard measures a chain at a fixed list of depths (no time-dependent schedule), classifies the
growth and compares it with two limits: ``max_base`` (per-layer ratio, for exponential growth) and
``max_exponent`` (power-law exponent). Where the backend has deterministic counters (the engine),
the verdict is decided on them, so a guard gives the same answer on a loaded CI machine; a runaway
point is stopped by the counter budget (also deterministic) and counts as a censored lower bound.
Peers decide on a deterministic work metric where the backend declares one (e.g. JAX traced: Python call
counts), exactly as the engine's counters; where time decides, the limits get a tolerance.

Limits come from, in order: explicit arguments, a ``@pytest.mark.adprof_guard(...)`` marker,
``[tool.adprof.guard]`` in ``pyproject.toml``, and the defaults below.
"""

from __future__ import annotations

import gc
import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof import model
from adprof.analysis.classify import classify
from adprof.backends import series_fields
from adprof.chain import Chain, as_chain, load_chains, parse_target
from adprof.model import Point, Result, Series

DEFAULT_MAX_BASE = 1.1
DEFAULT_MAX_EXPONENT = 1.3
#: Extra slack on the limits for backends measured on wall time only.
TIME_TOLERANCE = 0.15
#: Key comparisons allowed per point: deterministic runaway stop (a censored point).
GUARD_COUNTER_BUDGET = 5_000_000
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

    @property
    def label(self) -> str:
        s = self.result.series
        prof = f" [{s.profile}]" if s.profile else ""
        return f"{s.chain} {s.backend}{prof} {s.mode}"


@dataclass
class GuardReport:
    checks: list[GuardCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def text(self) -> str:
        """A readable diff of limit vs measured, with the evidence of failures."""
        lines = []
        for c in self.checks:
            mark = "ok  " if c.ok else "FAIL"
            lines.append(f"{mark} {c.label}: {c.measured} (limit: {c.limit}) - {c.reason}")
        failing = [c for c in self.checks if not c.ok]
        for c in failing:
            v = c.result.verdict
            lines.append("")
            lines.append(f"{c.label}: {v.kind}" + (f" ({c.metric})" if c.metric else ""))
            lines.append("  - limit    " + c.limit)
            lines.append("  + measured " + c.measured)
            lines.append("  depth  cost")
            for d, val in _cost_rows(c.result):
                lines.append(f"  {d:5d}  {val:.6g}")
            lines.extend(f"  evidence: {e}" for e in v.evidence[:4])
            if v.cause:
                lines.append(f"  cause: {v.cause}")
            lines.extend(f"  remedy: {r}" for r in v.remedies[:3])
        return "\n".join(lines)


def _cost_rows(result: Result) -> list[tuple[int, float]]:
    fit = result.verdict.fit
    if fit is None:
        return []
    return list(zip(fit.depths, fit.values, strict=False))


def tolerance_for(result: Result) -> float:
    """The slack on the limits: none when a deterministic metric or counter decided, else TIME_TOLERANCE."""
    fit = result.verdict.fit
    return 0.0 if fit is not None and fit.source in ("counters", "metric") else TIME_TOLERANCE


def check_result(result: Result, limits: GuardLimits, tolerance: float = 0.0) -> GuardCheck:
    """Compare one classified result with the limits (``tolerance`` widens them, time-only)."""
    v = result.verdict
    max_base = limits.max_base * (1 + tolerance)
    max_exp = limits.max_exponent * (1 + tolerance)
    limit = f"max base {limits.max_base:.2f}, max exponent {limits.max_exponent:.2f}"
    if tolerance:
        limit += f" (+{tolerance:.0%} for wall time)"
    metric = v.metric or ""
    if v.kind == model.ERROR:
        return GuardCheck(result, limits, False, "error", limit, result.series.error or "the chain failed", metric)
    if v.kind == model.INCONCLUSIVE:
        why = (
            v.fit.reason
            if v.fit is not None and v.fit.reason
            else "too few points to decide: give the guard more depths"
        )
        return GuardCheck(result, limits, False, "inconclusive", limit, why, metric)
    if v.kind == model.RUNAWAY:
        why = v.fit.reason if v.fit is not None else "a point ran past its cap"
        return GuardCheck(result, limits, False, "runaway", limit, why, metric)
    if v.kind in (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD):
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


def measure_series(
    chain: Chain,
    mode: str,
    profile: str | None = "fixed",
    depths: Sequence[int] | None = None,
    backend: str = "engine",
    counter_budget: int = GUARD_COUNTER_BUDGET,
) -> Series:
    """Measure ``chain`` in this process at fixed depths (the guard's deterministic schedule)."""
    from adprof.backends import get_backend

    impl = get_backend(backend)
    depths = list(depths or chain.depths or DEFAULT_DEPTHS)
    # The backend collects garbage before each phase; freezing what already exists keeps that cheap
    # inside a big process (a test session) without changing what is measured.
    gc.freeze()
    try:
        return _measure(impl, chain, mode, profile, depths, backend, counter_budget)
    finally:
        gc.unfreeze()


def _measure(
    impl, chain: Chain, mode: str, profile: str | None, depths: list[int], backend: str, counter_budget: int
) -> Series:
    series = Series(
        chain=chain.name,
        backend=backend,
        profile=profile if backend == "engine" else None,
        mode=mode,
        declared_reuse=_numeric(chain.reuse),
        params=dict(chain.params),
        **series_fields(backend, mode),
    )
    for depth in depths:
        try:
            if backend == "engine":
                point = impl.measure_point(chain, mode, depth, profile, counter_budget=counter_budget)
            else:
                point = impl.measure_point(chain, mode, depth, None)
        except Exception as exc:  # every failure of the chain is a finding
            kind = getattr(exc, "kind", None)
            if kind == "budget":
                partial = getattr(exc, "point", None) or Point(depth=depth)
                partial.extra["censored"] = True
                series.points.append(partial)
                series.stopped = f"stopped at depth {depth}: key comparison budget ({counter_budget:,}) exceeded"
            else:
                series.error = f"depth {depth}: {getattr(exc, 'message', None) or exc}"
            break
        series.points.append(point)
    return series


def _numeric(reuse) -> float | None:
    return float(reuse) if isinstance(reuse, int | float) and not isinstance(reuse, bool) else None


def guard_chain(
    chain: Chain,
    mode: str = "traced",
    *,
    profile: str | None = "fixed",
    limits: GuardLimits | None = None,
    depths: Sequence[int] | None = None,
    backend: str = "engine",
) -> GuardReport:
    """Measure, classify and check one chain (all its sweep variants)."""
    limits = limits or GuardLimits()
    report = GuardReport()
    for variant in chain.variants():
        series = measure_series(variant, mode, profile, depths, backend)
        result = Result(series=series, verdict=classify(series))
        report.checks.append(check_result(result, limits, tolerance_for(result)))
    return report


def resolve_chain(target: Any) -> list[Chain]:
    """A Chain, a plain function ``f(xp, x, depth)``, or a ``FILE[::CHAIN]`` string."""
    if isinstance(target, str | Path):
        path, name = parse_target(str(target))
        return load_chains(path, [name] if name else None)
    return [as_chain(target)]
