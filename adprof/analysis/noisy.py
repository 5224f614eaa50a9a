"""The model reading of noisy values (time): the better of the two models decides, with an interval that is
the wider of a bootstrap and the profile likelihood (pure; see :mod:`adprof.analysis.growth`)."""

from __future__ import annotations

import numpy as np

from adprof.analysis.bands import SUPERLINEAR_MIN, band, power_kind
from adprof.analysis.models import (
    CONFIDENCE,
    ModelFit,
    Observation,
    constant_fits,
    fit_family,
    profile_interval,
    replicates,
)
from adprof.model import Fit

EXP_MIN_BASE = 1.05  # an exponential model below this base does not decide (it is a power law in disguise)
FLAT_SHARE = 0.05  # growing part below this share of the deepest value: no measurable growth
OVERHEAD_POINTS = 5  # from this many depths the fixed overhead is fitted


def _prefers_exponential(ex: ModelFit, pw: ModelFit, eps: float) -> bool:
    return ex.sse + eps < 0.5 * (pw.sse + eps)


def _is_flat(chosen: ModelFit) -> bool:
    return chosen.scale <= FLAT_SHARE * (chosen.scale + chosen.overhead) or chosen.param < 0.15


def _interval(boot_params: list[float], best: float, plo: float, phi: float) -> list[float]:
    """The bootstrap quantiles widened to the profile interval, always holding the best estimate."""
    q = (1 - CONFIDENCE) / 2
    lo, hi = (float(x) for x in np.quantile(np.array(boot_params), [q, 1 - q]))
    lo, hi = min(lo, plo), max(hi, phi)
    return [min(lo, best), max(hi, best)]


def _point_estimate(chosen: ModelFit, exp_wins: bool, fit: Fit) -> None:
    """Evidence beside a deterministic decision: the point estimate only."""
    fit.overhead, fit.scale = chosen.overhead, chosen.scale
    if exp_wins:
        fit.model, fit.base, fit.kind = "a + c*b^d", chosen.param, "exponential"
    else:
        fit.model, fit.exponent = "a + c*d^p", chosen.param
        flat = _is_flat(chosen)
        fit.kind = "linear" if flat else band(chosen.param)
        fit.exponent = 0.0 if flat else chosen.param
    fit.interval_method = "point estimate (not deciding)"


def _exponential_reading(
    fit: Fit, chosen: ModelFit, boot_e: list[ModelFit], prefer_exp: float, plo: float, phi: float
) -> None:
    fit.model, fit.base = "a + c*b^d", chosen.param
    fit.interval = _interval([e.param for e in boot_e], chosen.param, plo, phi)
    fit.kind = "exponential"
    if prefer_exp < 0.8:
        fit.notes.append(
            f"an exponential fits better, but only {100 * prefer_exp:.0f}% of the resamples prefer it to a power law"
        )
    if fit.interval[0] < EXP_MIN_BASE:
        fit.kind = "inconclusive"
        fit.reason = (
            f"the base interval [{fit.interval[0]:.2f}, {fit.interval[1]:.2f}] reaches 1 (no growth): add "
            "depths (raise --cap) or repeats"
        )


def _power_reading(
    fit: Fit, chosen: ModelFit, boot_p: list[ModelFit], plo: float, phi: float, v: np.ndarray, overhead: bool
) -> None:
    fit.model, fit.exponent = "a + c*d^p", chosen.param
    fit.interval = _interval([p.param for p in boot_p], chosen.param, plo, phi)
    if _is_flat(chosen) and (fit.interval[1] < SUPERLINEAR_MIN or constant_fits(v, chosen.sse, overhead)):
        fit.kind, fit.exponent = "linear", 0.0
        fit.notes.append("flat: the growing part stays under 5% of the cost and no growth is measurable")
    else:
        fit.kind, fit.reason = power_kind(chosen.param, *fit.interval)
        if fit.kind == "inconclusive":
            fit.reason += ": add depths (raise --cap) or repeats"


def noisy_reading(
    obs: list[Observation], d: np.ndarray, v: np.ndarray, fit: Fit, seed: int, bootstrap: bool = True
) -> np.ndarray | None:
    """The model reading of noisy values; returns the bootstrap replicates (for the consistency check)."""
    if not (v > 0).all():
        fit.kind, fit.reason = "inconclusive", "non-positive times: the clock did not resolve the phase"
        return None
    overhead = len(d) >= OVERHEAD_POINTS
    if not overhead:
        fit.notes.append(f"{len(d)} depths: fitted without a fixed overhead (needs {OVERHEAD_POINTS})")
    pw = fit_family("power", d, v[None, :], overhead)[0]
    ex = fit_family("exponential", d, v[None, :], overhead)[0]
    eps = 1e-6 * len(d)
    exp_wins = _prefers_exponential(ex, pw, eps) and ex.param >= EXP_MIN_BASE
    chosen = ex if exp_wins else pw
    if not bootstrap:
        _point_estimate(chosen, exp_wins, fit)
        return None
    rng = np.random.default_rng(seed)
    reps, how = replicates(obs, chosen(d, float(d.max())), rng)
    boot_p = fit_family("power", d, reps, overhead, coarse=True)
    boot_e = fit_family("exponential", d, reps, overhead, coarse=True)
    prefer_exp = np.mean([_prefers_exponential(e, p, eps) for e, p in zip(boot_e, boot_p, strict=True)])
    fit.overhead, fit.scale = chosen.overhead, chosen.scale
    plo, phi = profile_interval(chosen.family, d, v, overhead)
    fit.interval_method = how + " and the profile likelihood (the wider of the two)"
    if exp_wins:
        _exponential_reading(fit, chosen, boot_e, prefer_exp, plo, phi)
    else:
        _power_reading(fit, chosen, boot_p, plo, phi, v, overhead)
    return reps
