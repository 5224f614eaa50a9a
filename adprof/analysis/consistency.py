"""The measured depth-halving ratio and tail exponent, and the check that the deciding model implies them
(pure)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from adprof.analysis.bands import band
from adprof.analysis.models import model_at
from adprof.model import CHOICE_FLAT, Fit


def halving_pair(depths: Sequence[float]) -> tuple[float, float] | None:
    """The deepest (d, h) with h = d/2 when measured, else the nearest measured depth in [d/4, 3d/4]."""
    ds = sorted(set(float(x) for x in depths))
    for di in reversed(ds):
        cands = [(abs(h - di / 2), h) for h in ds if 0 < h and di / 4 <= h <= 0.75 * di]
        if di > 0 and cands:
            return di, min(cands)[1]
    return None


def _doubling(v_hi: float, v_lo: float, d: float, h: float) -> float | None:
    """v_hi/v_lo rescaled to one doubling as a power law would."""
    if v_hi <= 0 or v_lo <= 0:
        return None
    log_r = math.log(v_hi) - math.log(v_lo)  # in logs: a ratio of 1e300 over a near step must not overflow
    scaled = log_r * (math.log(2) / math.log(d / h)) if h != d / 2 else log_r
    return math.exp(scaled) if abs(scaled) < 700 else None


def _slope(v_hi: float, v_lo: float, d: float, h: float) -> float | None:
    if v_hi <= 0 or v_lo <= 0 or d <= 0 or h <= 0 or d == h:
        return None
    return (math.log(v_hi) - math.log(v_lo)) / math.log(d / h)


def _above_a_finding(d: np.ndarray, v: np.ndarray, fit: Fit, cost_at: Callable[[float], float]) -> bool:
    """A superlinear or exponential model under the deepest points: the two deepest depths, and the top of the
    halving pair, each cost at least what the model predicts, and the measured halving ratio is at least the
    model's. Whatever the tail does between them (a compile that jumps at one depth and is a little cheaper at the
    next: jax#2777's unrolled loop under XLA, 2.3 s at 75 unrolls, 17.0 s at 76, 12.9 s at 81), the cost grows at
    least as the model says: the misfit cannot lower the class."""
    if fit.kind not in ("superlinear", "exponential") or len(d) < 2:
        return False
    if any(v[i] < cost_at(d[i]) for i in (-1, -2)):
        return False
    return fit.halving_ratio is None or fit.model_halving_ratio is None or fit.halving_ratio >= fit.model_halving_ratio


def check_consistency(d: np.ndarray, v: np.ndarray, reps: np.ndarray | None, fit: Fit, exact: bool) -> bool:
    """The measured halving ratio and tail exponent must be what the deciding model implies; True when the
    model misfits the tail so that the reading changes (the fit is then inconclusive)."""
    pair = halving_pair(d.tolist())
    at = dict(zip(d.tolist(), v.tolist(), strict=True))
    if pair is not None:
        hd, hh = pair
        fit.halving_depth, fit.halving_from = int(hd), int(hh)
        fit.halving_ratio = _doubling(at[hd], at[hh], hd, hh)
    if len(d) >= 2:
        fit.tail_exponent = _slope(v[-1], v[-2], d[-1], d[-2])
    if fit.kind == "inconclusive" or fit.overhead is None or fit.scale is None:
        return False
    cost_at = model_at(fit)
    if pair is not None:
        fit.model_halving_ratio = _doubling(cost_at(hd), cost_at(hh), hd, hh)
    if len(d) >= 2:
        fit.model_tail_exponent = _slope(cost_at(d[-1]), cost_at(d[-2]), d[-1], d[-2])
    # noise allowance: the spread of the same readings over the bootstrap replicates
    tol_h, tol_t = 0.10, 0.15
    if reps is not None and not exact:
        if pair is not None:
            ih, il = list(d).index(hd), list(d).index(hh)
            lh = np.log(np.maximum(reps[:, ih], 1e-300) / np.maximum(reps[:, il], 1e-300))
            tol_h = max(tol_h, 2.5 * float(np.std(lh)))
        lt = np.log(np.maximum(reps[:, -1], 1e-300) / np.maximum(reps[:, -2], 1e-300)) / math.log(d[-1] / d[-2])
        tol_t = max(tol_t, 2.5 * float(np.std(lt)))
    fit.halving_tolerance = tol_h
    if fit.model_choice == CHOICE_FLAT:
        # the flat reading bounded each of the deepest depths (and their pooled repeats) against the shallowest:
        # a growth cannot hide there. What the halving and tail readings add is the noise of two points, down as
        # often as up (a run of fast forks at the deepest depths read 'tail exponent 1.74' on `true`)
        return False
    misfit, contradicts = [], False
    if fit.halving_ratio and fit.model_halving_ratio:
        if abs(math.log(fit.halving_ratio / fit.model_halving_ratio)) > tol_h:
            misfit.append(
                f"halving ratio {fit.halving_ratio:.2f} measured vs {fit.model_halving_ratio:.2f} by the model"
            )
            contradicts |= band(math.log2(fit.halving_ratio)) != band(math.log2(fit.model_halving_ratio))
    if fit.tail_exponent is not None and fit.model_tail_exponent is not None:
        if abs(fit.tail_exponent - fit.model_tail_exponent) > tol_t:
            misfit.append(f"tail exponent {fit.tail_exponent:.2f} measured vs {fit.model_tail_exponent:.2f}")
            contradicts |= band(fit.tail_exponent) != band(fit.model_tail_exponent)
    if not misfit or exact:
        return False
    return _misfit_reading(d, v, fit, cost_at, misfit, contradicts)


def _misfit_reading(
    d: np.ndarray, v: np.ndarray, fit: Fit, cost_at: Callable[[float], float], misfit: list[str], contradicts: bool
) -> bool:
    """What a misfit of the tail does to the reading: a note within the same band, or where the deepest points
    lie above a finding's model; else the fit is inconclusive (True)."""
    if not contradicts:
        fit.notes.append("the model deviates at the tail, within the same reading: " + "; ".join(misfit))
        return False
    if _above_a_finding(d, v, fit, cost_at):
        fit.notes.append(
            f"the deepest points cost more than the {fit.kind} model predicts there ("
            + "; ".join(misfit)
            + "): the growth is at least the model's"
        )
        return False
    fit.notes.append(f"the {fit.kind} model misfits the tail: " + "; ".join(misfit))
    fit.kind = "inconclusive"
    fit.reason = "the fitted model does not reproduce the deepest points (" + "; ".join(misfit) + "): add depths"
    return True
