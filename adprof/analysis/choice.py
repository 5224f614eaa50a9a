"""Power law or exponential? The choice between the two model families of a noisy reading, on evidence
that can tell them apart (pure; see :mod:`adprof.analysis.noisy`).

* **grid edge**: a family whose best parameter is pinned at the end of its grid (p = 8, b = 100) cannot
  follow the data: that is a sign that the family is wrong, not a reading. When only the power law is
  pinned (or its interval is open at the top of the grid, :func:`open_to_exponential`), and the
  exponential fits with a base that grows, the exponential is chosen.
* **information criterion**: AICc of both fits on the same relative residuals; the families have the same
  number of parameters, so the difference is ``n·ln(SSE_power / SSE_exponential)``; it decides beyond
  :data:`IC_MARGIN` (a decisive difference, not a preference).
* **out-of-sample prediction**: both families are fitted without the deepest depths and predict them;
  where the exponential and the power law part (an exponential's local exponent keeps rising, a power
  law's does not) the family that predicts them within the noise, while the other misses by more than
  :data:`HOLDOUT_RATIO` times as much, has the evidence.

Agreeing (or one-sided) evidence chooses; contradicting evidence chooses nothing (the reading is then
inconclusive); no evidence leaves the power law (the simpler default: an exponential has to show itself).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from adprof.analysis.models import B_MAX, P_MAX, ModelFit, fit_family
from adprof.model import CHOICE_AGREE, CHOICE_CONFLICT, CHOICE_DEFAULT, CHOICE_EDGE, CHOICE_HOLDOUT, CHOICE_IC

IC_MARGIN = 10.0  # |ΔAICc| from which the information criterion decides
HOLDOUT_RATIO = 2.0  # the other family's error at the held-out depths must be this many times larger
HOLDOUT_MIN_DEPTHS = 7  # fewer depths: no hold-out (the rest could not be fitted with an overhead)
EXP_MIN_BASE = 1.05  # an exponential below this base does not grow: it never wins (a power law in disguise)


@dataclass
class Choice:
    """Which family decides, and the evidence (what :class:`~adprof.model.Fit` records)."""

    family: str | None  # "power" | "exponential" | None (contradicting evidence)
    evidence: str  # one of adprof.model.MODEL_CHOICES
    ic_delta: float | None = None
    holdout_depths: list[int] = field(default_factory=list)
    holdout_errors: dict[str, float] = field(default_factory=dict)
    edge: list[str] = field(default_factory=list)


def pinned(fit: ModelFit) -> bool:
    """The best parameter sits at the top of its grid."""
    if fit.family == "power":
        return fit.param >= P_MAX - 1e-9
    return fit.param >= B_MAX * (1 - 1e-9)


def ic_delta(pw: ModelFit, ex: ModelFit, n: int) -> float:
    """AICc(power) - AICc(exponential) (equal parameter counts: the SSE ratio); > 0 favours the exponential."""
    floor = 1e-8 * n  # relative residuals of 1e-4: exact data must not make the difference infinite
    return n * math.log((pw.sse + floor) / (ex.sse + floor))


def holdout(d: np.ndarray, v: np.ndarray, w: np.ndarray | None = None) -> tuple[list[int], dict[str, float]]:
    """Each family fitted without the deepest depths, and its (weighted) rms log error there."""
    n = len(d)
    if n < HOLDOUT_MIN_DEPTHS:
        return [], {}
    h = max(2, n // 5)
    train, test = slice(0, n - h), slice(n - h, n)
    overhead = n - h >= 5
    errors: dict[str, float] = {}
    for family in ("power", "exponential"):
        f = fit_family(family, d[train], v[None, train], overhead, coarse=True, w=None if w is None else w[train])[0]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            pred = f(d[test], float(d[train].max()))
            err = np.log(np.maximum(pred, 1e-300) / v[test])
        wt = np.ones(h) if w is None else w[test]
        errors[family] = float(np.sqrt(np.average(err**2, weights=wt))) if np.all(np.isfinite(err)) else math.inf
    return [int(x) for x in d[test]], errors


def _vote_ic(delta: float) -> str | None:
    if delta > IC_MARGIN:
        return "exponential"
    return "power" if delta < -IC_MARGIN else None


def _vote_holdout(errors: dict[str, float], noise: float) -> str | None:
    if not errors:
        return None
    ep, ee = errors["power"], errors["exponential"]
    if ee * HOLDOUT_RATIO < ep and ep > 2 * noise:
        return "exponential"
    if ep * HOLDOUT_RATIO < ee and ee > 2 * noise:
        return "power"
    return None


def choose_family(d: np.ndarray, v: np.ndarray, pw: ModelFit, ex: ModelFit, w: np.ndarray | None = None) -> Choice:
    """The family that decides a noisy reading (fits with weights ``w``), and why (see the module docstring)."""
    n = len(d)
    delta = ic_delta(pw, ex, n)
    depths, errors = holdout(d, v, w)
    edge = [f.family for f in (pw, ex) if pinned(f)]
    grows = ex.param >= EXP_MIN_BASE
    noise = math.sqrt(min(pw.sse, ex.sse) / max(n - 3, 1))  # rms relative residual of the better fit
    ic, ho = _vote_ic(delta), _vote_holdout(errors, noise)
    if not grows:
        ic = ho = "power" if "exponential" in (ic, ho) else (ic or ho)
    out = Choice(None, CHOICE_CONFLICT, delta, depths, errors, edge)
    if edge == ["power"] and grows and "power" not in (ic, ho):
        out.family, out.evidence = "exponential", CHOICE_EDGE
    elif len(edge) == 2 or (ic and ho and ic != ho):
        out.family = None  # both families pinned, or the criterion and the deepest depths disagree
    elif ic and ho:
        out.family, out.evidence = ic, CHOICE_AGREE
    elif ic or ho:
        out.family, out.evidence = (ic, CHOICE_IC) if ic else (ho, CHOICE_HOLDOUT)
    elif edge == ["exponential"]:
        out.family, out.evidence = "power", CHOICE_EDGE
    else:
        out.family, out.evidence = "power", CHOICE_DEFAULT
    if out.family in edge:  # a family pinned at its grid edge is the wrong family, never a reading
        out.family, out.evidence = None, CHOICE_CONFLICT
    return out


def open_to_exponential(choice: Choice, ex: ModelFit) -> bool:
    """Whether a power law whose interval is open at the top of its grid may give way to the exponential: it
    grows, is not pinned itself, and no evidence speaks for the power law."""
    ic_for_power = choice.ic_delta is not None and choice.ic_delta < -IC_MARGIN
    ho = choice.holdout_errors
    ho_for_power = bool(ho) and ho.get("power", math.inf) * HOLDOUT_RATIO < ho.get("exponential", math.inf)
    return ex.param >= EXP_MIN_BASE and not pinned(ex) and not ic_for_power and not ho_for_power


def choice_text(evidence: str, family: str, ic: float | None, errors: dict[str, float]) -> str:
    """The words for a choice, e.g. "exponential over power law: information criterion and out-of-sample
    prediction of the deepest depths (ΔAICc +41.2; deepest depths predicted within 3% vs 48%)"."""
    name = "power law" if family == "power" else "exponential"
    other = "exponential" if family == "power" else "power law"
    parts = []
    if ic is not None:
        parts.append(f"ΔAICc {ic:+.1f} (> 0 favours the exponential)")
    if errors:
        mine = errors.get(family, math.nan)
        theirs = errors.get("exponential" if family == "power" else "power", math.nan)
        parts.append(f"deepest depths predicted within {_pct(mine)} vs {_pct(theirs)}")
    return f"{name} over {other}: {evidence}" + (f" ({'; '.join(parts)})" if parts else "")


def _pct(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{100 * (math.exp(x) - 1):.0f}%"
