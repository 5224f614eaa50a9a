"""The model reading of noisy values (time): the better of the two models decides, with an interval that is
the wider of a bootstrap and the profile likelihood (pure; see :mod:`adprof.analysis.growth`)."""

from __future__ import annotations

import math

import numpy as np

from adprof.analysis.bands import LINEAR_MAX, SUPERLINEAR_MIN, band, power_kind
from adprof.analysis.choice import EXP_MIN_BASE, Choice, choose_family, open_to_exponential
from adprof.analysis.models import (
    B_MAX,
    CONFIDENCE,
    P_MAX,
    ModelFit,
    Observation,
    _resampled,
    constant_fits,
    depth_weights,
    fit_family,
    profile_interval,
    replicates,
    robust_weights,
)
from adprof.model import CHOICE_CLASS, CHOICE_EDGE, CHOICE_FLAT, Fit

FLAT_SHARE = 0.05  # growing part below this share of the deepest value: no measurable growth
FLAT_SPAN = 16.0  # a constant reads flat only over depths spanning this ratio (the time schedule's 8..128)
#: A cost whose deepest depths (each of the FLAT_DEEPEST deepest) cost at most this much more than its shallowest
#: (the bottom quarter of the depth range, in log: the median of their statistics), over FLAT_SPAN or more, is
#: flat: whatever grows (a drift of the machine, a growth under the overhead) is too small to read there.
FLAT_GROWTH = FLAT_SHARE
FLAT_DEEPEST = 3
OVERHEAD_POINTS = 5  # from this many depths the fixed overhead is fitted
#: The deepest halving bounds a reading over depths spanning at least this ratio (three doublings): the growth it
#: bounds is measured over a range where a superlinear law shows.
HALVING_SPAN = 8.0


def _prefers_exponential(ex: ModelFit, pw: ModelFit, eps: float) -> bool:
    return ex.sse + eps < pw.sse + eps


def _is_flat(chosen: ModelFit) -> bool:
    return chosen.scale <= FLAT_SHARE * (chosen.scale + chosen.overhead) or chosen.param < 0.15


def flat_over_span(obs: list[Observation], rng: np.random.Generator) -> float | None:
    """How much more the deepest depths cost than the shallowest, at most: over the median of the statistics of
    the shallowest quarter of the depth range (log), the larger of the deepest :data:`FLAT_DEEPEST` depths' own
    statistics (an exponential shows only there) and the upper end of a bootstrap of their pooled repeats (a
    flat cost is one distribution there: pooled, a few repeats each bound it). None unless the depths span
    :data:`FLAT_SPAN` or more and each of the deepest has three repeats (one run says nothing of its noise)."""
    d = np.array([o.depth for o in obs], float)
    span = float(d.max() / d.min()) if len(d) and d.min() > 0 else 0.0
    deep = sorted(obs, key=lambda o: o.depth)[-FLAT_DEEPEST:]
    if span < FLAT_SPAN or any(len(o.repeats) < 3 for o in deep):
        return None
    shallow = [o for o in obs if o.depth <= d.min() * span**0.25]
    low = float(np.median([o.value for o in shallow]))
    pooled = _resampled(Observation(0.0, [r for o in deep for r in o.repeats]), rng)
    top = max(max(o.value for o in deep), float(np.quantile(pooled, CONFIDENCE)))
    return top / low if low > 0 else None


def _flat_reading(fit: Fit, d: np.ndarray, v: np.ndarray, ratio: float, overhead: bool, w: np.ndarray) -> None:
    fit.kind, fit.exponent, fit.model = "linear", 0.0, "constant"
    fit.overhead, fit.scale = float(np.median(v)), 0.0
    fit.interval = list(profile_interval("power", d, v, overhead, w))
    fit.interval_method = "profile likelihood of the power law (the cost is flat: its exponent is not identified)"
    fit.notes.append(
        f"flat: the deepest depths of {int(d.min())}..{int(d.max())} cost at most {ratio:.2f}x the shallowest "
        f"({CONFIDENCE:.0%} bound; flat up to {1 + FLAT_GROWTH:.2f}x over a {d.max() / d.min():.0f}x span)"
    )
    fit.model_choice = CHOICE_FLAT
    fit.predicts = True


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


def _steep_where_measured(fit: Fit, chosen: ModelFit, top: float) -> None:
    """An exponential whose base interval is above 1 (the growth is certain) but reaches under EXP_MIN_BASE (there, a
    power law in disguise) is superlinear where its local exponent at the deepest depth, ``top * ln(b)`` times the
    growing part's share of the cost there, is at least SUPERLINEAR_MIN for every base of the interval: the cost grows
    faster than d^1.3 at the depths measured, whichever law it follows past them (jax#2777's unrolled loop under
    XLA: x1.05/unroll [1.04, 1.08] over 8..79, a local exponent of 2.6 or more at 79). Else it stays inconclusive."""
    share = chosen.scale / (chosen.overhead + chosen.scale) if chosen.overhead + chosen.scale > 0 else 0.0
    lo, hi = (top * math.log(b) * share for b in fit.interval)
    if lo < SUPERLINEAR_MIN:
        return
    base = f"x{chosen.param:.2f} [{fit.interval[0]:.2f}, {fit.interval[1]:.2f}]"
    fit.kind, fit.reason = "superlinear", ""
    fit.exponent, fit.interval = top * math.log(chosen.param) * share, [lo, hi]
    fit.notes.append(
        f"an exponential {base} reaches under x{EXP_MIN_BASE} (a power law in disguise there), but its local exponent "
        f"at depth {top:.0f} is {lo:.2f} or more: superlinear where measured"
    )


def _power_reading(
    fit: Fit,
    chosen: ModelFit,
    boot_p: list[ModelFit],
    plo: float,
    phi: float,
    v: np.ndarray,
    overhead: bool,
    span: float,
) -> None:
    fit.model, fit.exponent = "a + c*d^p", chosen.param
    fit.interval = _interval([p.param for p in boot_p], chosen.param, plo, phi)
    if _is_flat(chosen):
        # a constant that fits is evidence of no growth only over a wide range: over a narrow one a growing part
        # (an exponential under a 90% overhead) can hide under the noise and show one doubling further
        constant = constant_fits(v, chosen.sse, overhead)
        if fit.interval[1] < SUPERLINEAR_MIN or (constant and span >= FLAT_SPAN):
            fit.kind, fit.exponent = "linear", 0.0
            fit.notes.append("flat: the growing part stays under 5% of the cost and no growth is measurable")
            return
        if constant:  # flat, but over too narrow a range to rule a hidden growth out (never a finding)
            fit.kind = "inconclusive"
            fit.reason = (
                f"the cost is flat over depths spanning only {span:.0f}x (a growth under the overhead would show "
                f"deeper; {FLAT_SPAN:.0f}x rules it out): add depths (raise --cap)"
            )
            return
    fit.kind, fit.reason = power_kind(chosen.param, *fit.interval)
    if fit.kind == "inconclusive":
        fit.reason += ": add depths (raise --cap) or repeats"


def deepest_halving_bound(obs: list[Observation], reps: np.ndarray) -> float | None:
    """The most a power law ``a + c*d^p`` grows between the deepest depth ``D`` and ``D/2``: the upper
    :data:`CONFIDENCE` quantile over the bootstrap replicates ``reps`` (B, n) of ``log2((v(D) - m) / (v(D/2) - m))``
    with ``m`` the least value at any depth. Under that law the ratio is at least ``2^p`` whatever the overhead
    ``a <= m``, so the figure bounds ``p`` from above. None without both depths, with a censored point or a depth
    of fewer than three repeats, over depths spanning less than :data:`HALVING_SPAN`, or where ``v(D/2)`` or
    ``v(D)`` is not above the least value in the replicates' lower :data:`CONFIDENCE` quantile (no growth
    measured there: the ratio would be one of noise)."""
    depths = [o.depth for o in obs]
    if len(obs) < 3 or any(o.censored or len(o.repeats) < 3 for o in obs):  # the replicates must be the repeats'
        return None
    top = max(depths)
    if top / 2 not in depths:
        return None
    j_top, j_half = depths.index(top), depths.index(top / 2)
    floor = reps.min(axis=1)
    grown_top, grown_half = reps[:, j_top] - floor, reps[:, j_half] - floor
    if top / min(depths) < HALVING_SPAN or min(np.quantile(g, 1 - CONFIDENCE) for g in (grown_top, grown_half)) <= 0:
        return None  # too narrow a span, or no growth measured at D/2 or D: the ratio would be one of noise
    upper = float(np.quantile(grown_top / grown_half, CONFIDENCE))
    return math.log2(upper) if math.isfinite(upper) and upper > 0 else None


def _bounded_by_halving(fit: Fit, obs: list[Observation], reps: np.ndarray) -> None:
    """A power law whose interval straddles linear and superlinear is linear where its deepest halving bounds the
    growth under :data:`~adprof.analysis.bands.LINEAR_MAX`: the fit's interval is wide because the overhead and
    the exponent trade off over the shallow depths (XLA compiles a 4-layer program slower than an 8-layer one), but
    the growth between the deepest depths is what a superlinear law would show, and it is not there (JAX compile
    of a tanh MLP layer: d^0.83 [0.28, 1.47] from 105-229 ms over 2..64, whose deepest halving grows at most
    d^0.9). Only where the fit's own estimate is linear too; the interval's top is the bound. Never makes a
    finding."""
    if fit.censored_depths:  # a point cut short is evidence past the top that the halving cannot see
        return
    if fit.interval is None or fit.exponent is None or fit.exponent >= LINEAR_MAX:  # the model itself reads growth
        return
    bound = deepest_halving_bound(obs, reps)
    if bound is None or bound >= LINEAR_MAX:
        return
    lo, hi = fit.interval
    d = sorted(o.depth for o in obs)
    fit.kind, fit.reason, fit.halving_bound = "linear", "", bound
    fit.interval = [min(lo, bound), max(bound, fit.exponent)]
    fit.notes.append(
        f"the power law's interval [{lo:.2f}, {hi:.2f}] straddles linear and superlinear, but the deepest halving "
        f"({d[-1] / 2:.0f} to {d[-1]:.0f}) grows at most depth^{bound:.2f} ({CONFIDENCE:.0%} bound over the "
        "repeats): linear where measured"
    )


def _record_choice(fit: Fit, choice: Choice) -> None:
    fit.model_choice, fit.ic_delta = choice.evidence, choice.ic_delta
    fit.holdout_depths, fit.holdout_errors, fit.grid_edge = choice.holdout_depths, choice.holdout_errors, choice.edge


def _undecided_family(fit: Fit, chosen: ModelFit, choice: Choice) -> None:
    """Neither family: both pinned at their grid edges, or the criterion and the deepest depths disagree."""
    fit.overhead, fit.scale = chosen.overhead, chosen.scale
    if chosen.family == "exponential":
        fit.model, fit.base = "a + c*b^d", chosen.param
    else:
        fit.model, fit.exponent = "a + c*d^p", chosen.param
    fit.kind = "inconclusive"
    if len(choice.edge) == 2:
        fit.reason = "the cost grows faster than both model families' grids (d^8, x100/layer): add depths between"
    elif chosen.family in choice.edge or len(choice.edge) == 1:
        pinned = choice.edge[0]
        fit.reason = (
            f"the {'power law' if pinned == 'power' else 'exponential'} is pinned at its grid edge (the family "
            "is wrong) and the evidence does not choose the other: add depths (raise --cap) or repeats"
        )
    else:
        ic = "the exponential" if (choice.ic_delta or 0) > 0 else "the power law"
        ho = "the power law" if ic == "the exponential" else "the exponential"
        fit.reason = (
            f"the information criterion prefers {ic} but {ho} predicts the deepest depths better: add depths "
            "(raise --cap) or repeats"
        )
    fit.interval_method = "no interval (no family decides)"


ROBUST_ROUNDS = 2


def _weighted_fits(
    obs: list[Observation],
    d: np.ndarray,
    v: np.ndarray,
    overhead: bool,
    rng: np.random.Generator,
    fit: Fit,
    coarse: bool = False,
) -> tuple[np.ndarray, ModelFit, ModelFit]:
    """Both families fitted with the depths' weights: inverse variance of each depth's statistic (repeats that
    scatter count less), then Huber reweighting of depths far off the model; a depth is discounted only when
    it is far off both families (a depth that one family misses is evidence between them)."""
    w = depth_weights(obs, rng)
    dmax = float(d.max())
    wc = w
    for k in range(ROBUST_ROUNDS + 1):  # the reweighting rounds on the coarse grids, the last fits on the fine
        last = k == ROBUST_ROUNDS
        pw = fit_family("power", d, v[None, :], overhead, coarse=coarse or not last, w=wc)[0]
        ex = fit_family("exponential", d, v[None, :], overhead, coarse=coarse or not last, w=wc)[0]
        if last:
            break
        rw = np.maximum(robust_weights(v, pw(d, dmax), w), robust_weights(v, ex(d, dmax), w))
        if k == 0 and rw.min() >= 1.0:  # no depth far off both models: the plain weights stand
            wc = w
            pw = fit_family("power", d, v[None, :], overhead, coarse=coarse, w=wc)[0]
            ex = fit_family("exponential", d, v[None, :], overhead, coarse=coarse, w=wc)[0]
            break
        wc = w * rw
        wc = wc / wc.mean()
    low = [int(x) for x, r in zip(d, wc / np.maximum(w, 1e-12), strict=True) if r < 0.5]
    if low:
        fit.notes.append(f"depths {', '.join(map(str, low))} are far off the model: robust fit, weighted down")
    fit.depth_weights = [float(x) for x in wc]
    return wc, pw, ex


def noisy_reading(
    obs: list[Observation],
    d: np.ndarray,
    v: np.ndarray,
    fit: Fit,
    seed: int,
    bootstrap: bool = True,
    coarse: bool = False,
    family: str | None = None,
) -> np.ndarray | None:
    """The model reading of noisy values; returns the bootstrap replicates (for the consistency check).
    ``coarse``: the coarse grids throughout (the schedule's quick view; implies no bootstrap). ``family``
    (``power``, ``exponential``): fitted in that family (a class decided elsewhere), no flat reading, no choice."""
    if not (v > 0).all():
        fit.kind, fit.reason = "inconclusive", "non-positive times: the clock did not resolve the phase"
        return None
    overhead = len(d) >= OVERHEAD_POINTS
    if not overhead:
        fit.notes.append(f"{len(d)} depths: fitted without a fixed overhead (needs {OVERHEAD_POINTS})")
    rng = np.random.default_rng(seed)
    w, pw, ex = _weighted_fits(obs, d, v, overhead, rng, fit, coarse)
    ratio = flat_over_span(obs, rng) if not coarse and family is None else None
    if ratio is not None and ratio <= 1 + FLAT_GROWTH:  # no growth to read over a wide range: flat
        _flat_reading(fit, d, v, ratio, overhead, w)
        return None
    choice = choose_family(d, v, pw, ex, w)
    if family is not None:  # the class is decided: its family's rate
        choice.family, choice.evidence = family, CHOICE_CLASS
    _record_choice(fit, choice)
    if choice.family is None:
        _undecided_family(fit, pw if pw.sse <= ex.sse else ex, choice)
        return None
    exp_wins = choice.family == "exponential"
    chosen = ex if exp_wins else pw
    plo, phi = profile_interval(chosen.family, d, v, overhead, w, coarse)
    if family is None and not exp_wins and phi >= P_MAX - 1e-9 and open_to_exponential(choice, ex):
        # the power law's interval is open at the top of its grid: the power family cannot bound the growth
        # (the d^7.71 [7.03, 8.00] for a 2^d law); the exponential, which fits too, reads it
        choice.family, choice.evidence, choice.edge = "exponential", CHOICE_EDGE, sorted({*choice.edge, "power"})
        _record_choice(fit, choice)
        exp_wins, chosen = True, ex
        plo, phi = profile_interval("exponential", d, v, overhead, w, coarse)
    if not bootstrap or coarse:
        _point_estimate(chosen, exp_wins, fit)
        fit.interval_method += "; profile interval [" + f"{plo:.3g}, {phi:.3g}]"
        fit.interval = [min(plo, chosen.param), max(phi, chosen.param)]  # the schedule's view of how open it is
        fit.predicts = phi < (B_MAX * (1 - 1e-9) if exp_wins else P_MAX - 1e-9)
        return None
    eps = 1e-6 * len(d)
    reps, how = replicates(obs, chosen(d, float(d.max())), rng, w)
    boot_p = fit_family("power", d, reps, overhead, coarse=True, w=w)
    boot_e = fit_family("exponential", d, reps, overhead, coarse=True, w=w)
    prefer_exp = np.mean([_prefers_exponential(e, p, eps) for e, p in zip(boot_e, boot_p, strict=True)])
    fit.overhead, fit.scale = chosen.overhead, chosen.scale
    fit.interval_method = how + " and the profile likelihood (the wider of the two)"
    if exp_wins:
        _exponential_reading(fit, chosen, boot_e, prefer_exp, plo, phi)
        if family is None and fit.kind == "inconclusive" and fit.interval and 1.0 < fit.interval[0] < EXP_MIN_BASE:
            _steep_where_measured(fit, chosen, float(d.max()))
    else:
        _power_reading(fit, chosen, boot_p, plo, phi, v, overhead, float(d.max() / d.min()))
        if family is None and fit.kind == "inconclusive" and fit.model == "a + c*d^p":
            _bounded_by_halving(fit, obs, reps)
    fit.predicts = fit.interval is not None and fit.interval[1] < (B_MAX * (1 - 1e-9) if exp_wins else P_MAX - 1e-9)
    return reps
