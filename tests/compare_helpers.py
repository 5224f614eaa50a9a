"""Results made by hand for the comparison tests: a series with a verdict and its deciding fit (no measuring)."""

from __future__ import annotations

from adprof import model
from adprof.model import Fit, Point, Report, Result, Series, Verdict

EXPONENTIAL = (model.EXPONENTIAL_TRANSFORM, model.EXPONENTIAL_BACKWARD)
NO_FIT = (model.ERROR, model.RUNAWAY)


def result(
    chain: str = "mul",
    kind: str = model.LINEAR,
    rate: float | None = 1.0,
    interval: tuple[float, float] | None = None,
    *,
    backend: str = "engine",
    profile: str | None = "fixed",
    mode: str = "traced",
    file: str | None = "/work/x/chains.py",
    source: str = "counters",
    params: dict | None = None,
    versions: dict[str, str] | None = None,
) -> Result:
    """A result whose verdict is ``kind`` with ``rate`` (a base for the exponential verdicts, else an exponent)."""
    s = Series(
        chain=chain,
        backend=backend,
        profile=profile,
        mode=mode,
        file=file,
        params=dict(params or {}),
        points=[Point(depth=d, counters={"transform": {"key_comparisons": 10.0 * d}}) for d in (1, 2, 3, 4)],
        versions=dict(versions or {}),
    )
    if kind == model.ERROR:
        s.error = "ValueError: boom"
    fit = None
    if kind not in NO_FIT and rate is not None:
        exp = kind in EXPONENTIAL
        fit_kind = {model.INCONCLUSIVE: "inconclusive"}.get(kind, "exponential" if exp else "linear")
        fit = Fit(
            metric="counters[transform+drop]: key_comparisons",
            kind=fit_kind,
            base=rate if exp else None,
            exponent=None if exp else rate,
            depths=[1, 2, 3, 4],
            values=[1.0, 2.0, 3.0, 4.0],
            source=source,
            interval=list(interval) if interval is not None else None,
        )
    v = Verdict(kind=kind, fit=fit, counter_fit=fit if source == "counters" else None)
    if kind == model.INCONCLUSIVE:
        v.reason = "add depths"
    return Result(series=s, verdict=v)


def report(*results: Result, versions: dict[str, str] | None = None) -> Report:
    return Report(results=list(results), environment={"versions": dict(versions)} if versions else {})
