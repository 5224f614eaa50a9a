"""Growth of one cost series against depth: the deciding model, its interval, and its reading (pure).

Two readings, chosen by how trustworthy the numbers are:

* **exact** (deterministic counters and work metrics): the *marginal* cost per layer ``m = ΔC/Δd``
  removes fixed setup cost and the linear real work that hides an exponential. On the marginals: the
  per-layer ratio ``g = (m_{i+1}/m_i)^(1/Δx)`` and the local power ``ln(m_{i+1}/m_i) / ln(x_{i+1}/x_i)``
  (0 for a linear total, p-1 for d^p, rising ≈ x·ln b under b^d). The interval is the spread of those
  local readings over the tail (the data have no noise; the spread says how far they have converged).
* **noisy** (time): each depth's value is a robust statistic of its repeats (the lower quartile:
  interference only ever slows a run). Two models with a fixed overhead, ``a + c·d^p`` and
  ``a + c·b^d`` (a, c ≥ 0), are fitted by least squares on *relative* residuals (the same space for
  both, so their errors compare), profiled over p and b on fine grids. The better model decides; the
  interval of its parameter is a bootstrap over the repeats of each depth (or over the fit's residuals
  when a depth has fewer than three repeats). With fewer than five depths the overhead cannot be told
  from the growth and the models are fitted without it.

Then the decision is checked against its own evidence: the measured depth-halving ratio and tail
exponent must be what the deciding model implies (within the noise), else the series is
``inconclusive`` with the reason and the remedy. Readings: ``exponential`` (base b), ``superlinear``
(exponent ≥ 1.3), ``mild`` (1.15-1.3, n log n-like), ``linear`` (< 1.15; exponent 0 is flat) and
``inconclusive``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from adprof.model import Fit

#: Thresholds on the total exponent p (cost ~ d^p) and the per-layer base b.
LINEAR_MAX = 1.15  # p below: linear
SUPERLINEAR_MIN = 1.3  # p from here: superlinear (between the two: mildly superlinear)
EXP_MIN_BASE = 1.05  # an exponential model below this base does not decide (it is a power law in disguise)
EXACT_EXP_RATIO = 1.15  # exact marginals: tail per-layer ratios above this can be exponential
RISE_RATE = 0.5  # exact: d(local power)/d(ln x) above which the local power "keeps rising"
EMERGING_RATE = 0.4
FLAT_SHARE = 0.05  # growing part below this share of the deepest value: no measurable growth
MIN_POINTS = 3  # fewer exact depths: inconclusive
OVERHEAD_POINTS = 5  # from this many depths the fixed overhead is fitted
TAIL = 3
BOOTSTRAP = 200
CONFIDENCE = 0.95
STATISTIC = "lower quartile"

_P_GRID = np.linspace(0.0, 8.0, 1601)
_LOG_B_GRID = np.linspace(0.0, math.log(100.0), 1201)
# the bootstrap refits on coarser grids (interval ends to about ±0.01 in p and ±0.6% in b)
_COARSE = {"power": _P_GRID[::2], "exponential": _LOG_B_GRID[::3]}
_FINE = {"power": _P_GRID, "exponential": _LOG_B_GRID}


def lower_quartile(xs: Sequence[float]) -> float:
    """The lower quartile (25th percentile, linear interpolation) of ``xs``."""
    return float(np.percentile(np.asarray(xs, float), 25))


@dataclass
class Observation:
    """One depth of a series: the repeats of its cost, or one lower bound when ``censored``."""

    depth: float
    repeats: list[float]
    censored: bool = False

    @property
    def value(self) -> float:
        return self.repeats[0] if len(self.repeats) == 1 else lower_quartile(self.repeats)


@dataclass
class _ModelFit:
    family: str  # "power" | "exponential"
    param: float  # p or b
    overhead: float  # a
    scale: float  # c (value of the growing part at the deepest depth)
    sse: float
    boot: list[float] = field(default_factory=list)

    def __call__(self, d: np.ndarray | float, d_max: float) -> np.ndarray:
        d = np.asarray(d, float)
        if self.family == "power":
            return self.overhead + self.scale * np.power(np.maximum(d, 0.0) / d_max, self.param)
        return self.overhead + self.scale * np.exp(math.log(self.param) * (d - d_max))


# -- fitting -----------------------------------------------------------------------------------------------


def _features(family: str, d: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """(grid, n) features of the growing part, scaled to 1 at the deepest depth."""
    d_max = float(d.max())
    if family == "power":
        return np.power(d[None, :] / d_max, grid[:, None])
    return np.exp(grid[:, None] * (d[None, :] - d_max))


def _profile(y: np.ndarray, x: np.ndarray, overhead: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Least squares of ``a + c·x`` on relative residuals for every grid row and every replicate.

    y: (B, n) replicates; x: (G, n) features. Returns (best grid index, a, c, sse), each (B,).
    Minimizes Σ (a/y + c·x/y - 1)² with a, c ≥ 0 (closed form; the boundary cases by one-parameter fits).
    """
    u = 1.0 / y[:, None, :]  # (B, 1, n)
    v = x[None, :, :] * u  # (B, G, n)
    n = y.shape[1]
    suu, su = np.sum(u * u, -1), np.sum(u, -1)  # (B, 1)
    suv, svv, sv = np.sum(u * v, -1), np.sum(v * v, -1), np.sum(v, -1)  # (B, G)
    with np.errstate(divide="ignore", invalid="ignore"):
        c_only = np.where(svv > 0, sv / svv, 0.0)
        sse_c = n - c_only * sv  # a = 0
        a_only = su / suu
        sse_a = n - a_only * su  # c = 0 (constant)
        if overhead:
            det = suu * svv - suv**2
            a2 = (svv * su - suv * sv) / det
            c2 = (suu * sv - suv * su) / det
            ok = (det > 1e-12 * suu * svv) & (a2 >= 0) & (c2 >= 0)
            sse2 = a2 * a2 * suu + 2 * a2 * c2 * suv + c2 * c2 * svv - 2 * a2 * su - 2 * c2 * sv + n
            sse2 = np.where(ok, sse2, np.inf)
        else:
            a2 = c2 = sse2 = np.full_like(svv, np.inf)
    sse_a = np.broadcast_to(sse_a, svv.shape)
    stack = np.stack([np.where(np.isfinite(sse2), sse2, np.inf), np.where(c_only > 0, sse_c, np.inf), sse_a])
    which = np.argmin(stack, axis=0)  # (B, G)
    sse = np.take_along_axis(stack, which[None], 0)[0]
    _profile.last_curve = sse  # the profile over the grid (read by _profile_interval)
    best = np.argmin(sse, axis=1)  # (B,)
    rows = np.arange(y.shape[0])
    w = which[rows, best]
    a = np.select([w == 0, w == 1], [a2[rows, best], 0.0], np.broadcast_to(a_only, svv.shape)[rows, best])
    c = np.select([w == 0, w == 1], [c2[rows, best], c_only[rows, best]], 0.0)
    return best, a, c, np.maximum(sse[rows, best], 0.0)


def _fit_family(family: str, d: np.ndarray, ys: np.ndarray, overhead: bool, coarse: bool = False) -> list[_ModelFit]:
    grid = (_COARSE if coarse else _FINE)[family]
    best, a, c, sse = _profile(ys, _features(family, d, grid), overhead)
    params = grid if family == "power" else np.exp(grid)
    return [
        _ModelFit(family, float(params[b]), float(ai), float(ci), float(si))
        for b, ai, ci, si in zip(best, a, c, sse, strict=True)
    ]


def _profile_interval(family: str, d: np.ndarray, v: np.ndarray, overhead: bool) -> tuple[float, float]:
    """Profile-likelihood interval of p (or b): the grid values whose SSE is within F(1, n-k; 95%)·s² of
    the best, with s² the residual variance of the best fit on its n-k degrees of freedom (the F quantile,
    not χ², because s² is itself estimated from few depths: 18.5 for 5 depths, 6.0 for 9). Unlike a
    bootstrap over a handful of repeats it does not shrink when the repeats of each depth happen to agree
    while whole depths are off (a load burst during one point)."""
    from scipy.stats import f as f_dist  # imported on first use (scipy.stats costs ~0.4 s to import)

    grid = _FINE[family]
    _profile(v[None, :], _features(family, d, grid), overhead)
    curve = _profile.last_curve[0]
    k = 3 if overhead else 2
    dof = max(len(d) - k, 1)
    s2 = max(float(curve.min()), 1e-12) / dof
    inside = grid[curve <= curve.min() + float(f_dist.ppf(CONFIDENCE, 1, dof)) * s2]
    params = inside if family == "power" else np.exp(inside)
    return float(params.min()), float(params.max())


def _constant_fits(v: np.ndarray, sse_model: float, overhead: bool) -> bool:
    """Whether a constant explains the values as well as the growth model (an F test of the nested models at
    95%): then the exponent of a tiny growing part is not identified, and the cost is flat."""
    from scipy.stats import f as f_dist

    u = 1.0 / v
    a = float(np.sum(u)) / float(np.sum(u * u))
    sse_const = float(np.sum((a * u - 1.0) ** 2))
    extra, dof = (2 if overhead else 1), max(len(v) - (3 if overhead else 2), 1)
    if sse_model <= 1e-15:
        return sse_const <= 1e-12
    stat = ((sse_const - sse_model) / extra) / (sse_model / dof)
    return stat < float(f_dist.ppf(CONFIDENCE, extra, dof))


def _replicates(obs: list[Observation], fitted: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """(B, n) bootstrap replicates of the per-depth statistic, and how they were drawn."""
    y = np.array([o.value for o in obs])
    if all(len(o.repeats) >= 3 for o in obs):
        reps = np.empty((BOOTSTRAP, len(obs)))
        for j, o in enumerate(obs):
            r = np.asarray(o.repeats, float)
            draw = r[rng.integers(0, len(r), size=(BOOTSTRAP, len(r)))]
            reps[:, j] = np.percentile(draw, 25, axis=1)
        return reps, f"bootstrap over the repeats of each depth, {BOOTSTRAP} resamples"
    resid = np.log(y / fitted)
    resid = resid - resid.mean()
    k = len(obs)
    infl = math.sqrt(k / max(k - 3, 1))
    draw = resid[rng.integers(0, k, size=(BOOTSTRAP, k))] * infl
    return fitted[None, :] * np.exp(draw), f"bootstrap over the fit's residuals, {BOOTSTRAP} resamples"


# -- measured readings ---------------------------------------------------------------------------------------


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
    r = v_hi / v_lo
    return r ** (math.log(2) / math.log(d / h)) if h != d / 2 else r


def _slope(v_hi: float, v_lo: float, d: float, h: float) -> float | None:
    if v_hi <= 0 or v_lo <= 0 or d <= 0 or h <= 0 or d == h:
        return None
    return math.log(v_hi / v_lo) / math.log(d / h)


def halving_reading(fit: Fit) -> str:
    """The words for a halving ratio, from the deciding model's kind (so they never contradict it)."""
    h = fit.halving_ratio or 0.0
    if fit.kind == "exponential":
        return "grows with depth as b^(d/2): exponential, not a power of graph size"
    if fit.kind == "superlinear":
        below = "below 1/3 when halved: " if h > 3 else ""
        return f"{below}a superlinear cost of graph size, not arithmetic"
    if fit.kind == "mild":
        return "between 1/3 and 1/2 when halved: mildly superlinear"
    if fit.kind == "linear":
        return "about 1/2 when halved: linear" if (fit.exponent or 0) > 0.15 else "flat: no growth"
    return ""


# -- the two readings ----------------------------------------------------------------------------------------


def _power_kind(p: float, lo: float, hi: float) -> tuple[str, str]:
    """Kind from an exponent and its interval; ("inconclusive", why) when the interval straddles the bands."""
    if hi < LINEAR_MAX:
        return "linear", ""
    if lo >= SUPERLINEAR_MIN:
        return "superlinear", ""
    if lo < LINEAR_MAX and hi >= SUPERLINEAR_MIN:
        return "inconclusive", (
            f"the exponent interval [{lo:.2f}, {hi:.2f}] spans linear (< {LINEAR_MAX}) and superlinear "
            f"(>= {SUPERLINEAR_MIN})"
        )
    # the interval reaches one neighbouring band only: the point estimate decides between them
    if p >= SUPERLINEAR_MIN:
        return "superlinear", ""
    return ("mild", "") if p >= LINEAR_MAX else ("linear", "")


def _exact(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
    """The marginal reading of exact values (module docstring)."""
    x = (d[1:] + d[:-1]) / 2
    m = np.diff(v) / np.diff(d)
    scale = max(float(np.max(np.abs(v))), 1e-300)
    pos = m > 1e-12 * scale
    if not pos.all():
        last_bad = int(np.nonzero(~pos)[0].max())
        if last_bad < len(m) - 1 and pos[: last_bad + 1].any():
            fit.notes.append(f"marginal cost not positive up to depth {d[last_bad + 1]:g}; read after it")
        x, m = x[last_bad + 1 :], m[last_bad + 1 :]
    if len(m) == 0:
        fit.kind, fit.exponent, fit.interval = "linear", 0.0, [0.0, 0.0]
        fit.notes.append("flat: the cost does not grow with depth")
        return
    if len(m) < 2:
        fit.kind = "inconclusive"
        fit.reason = "only one growing step: add depths"
        return
    r = m[1:] / m[:-1]
    g = r ** (1.0 / np.diff(x))
    lp = np.log(r) / np.log(x[1:] / x[:-1]) if (x > 0).all() else np.zeros_like(r)
    xl = np.sqrt(x[1:] * x[:-1]) if (x > 0).all() else x[1:]
    n = min(TAIL, len(g))
    gt, lpt, xt = g[-n:], lp[-n:], xl[-n:]
    fit.local_powers = [float(a) for a in lp]
    fit.tail_ratios = [float(a) for a in gt]
    fit.tail_depths = [int(e) for e in d[len(d) - len(g) :][-n:]]
    rise = (lpt[-1] - lpt[0]) / math.log(xt[-1] / xt[0]) if n >= 2 and xt[0] > 0 else 0.0
    if n >= 2 and gt.min() > EXACT_EXP_RATIO and rise > RISE_RATE:
        fit.kind, fit.model = "exponential", "a + c*b^d"
        fit.base = float(np.exp(np.mean(np.log(gt[-2:]))))
        fit.interval = [min(float(gt[-2:].min()), fit.base), max(float(gt[-2:].max()), fit.base)]
        return
    if n >= 2 and rise > EMERGING_RATE:
        fit.kind = "inconclusive"
        fit.reason = (
            f"emerging: the local power of the marginal cost rises {lpt[0]:.2f} -> {lpt[-1]:.2f} while the "
            f"per-layer ratio is still {gt[-1]:.2f}: add depths (raise --cap)"
        )
        return
    p = 1.0 + float(np.mean(lpt[-2:]))
    fit.model, fit.exponent = "a + c*d^p", p
    fit.interval = [min(1.0 + float(lpt[-2:].min()), p), max(1.0 + float(lpt[-2:].max()), p)]
    if n < 2 and p >= LINEAR_MAX:
        fit.kind, fit.reason = "inconclusive", "too few growing steps to tell an exponential from a power law"
        return
    fit.kind, fit.reason = _power_kind(p, *fit.interval)


def _exact_curve(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
    """Overhead and scale of the exact reading's model (its parameter fixed), for the curve and predictions."""
    if fit.kind == "exponential" and fit.base:
        family, param = "exponential", fit.base
    elif fit.exponent is not None and fit.exponent > 0:
        family, param = "power", fit.exponent
    else:
        fit.model, fit.overhead, fit.scale = "constant", float(np.median(v)), 0.0
        return
    d_max = float(d.max())
    x = np.power(d / d_max, param) if family == "power" else np.exp(math.log(param) * (d - d_max))
    pos = v > 0
    if pos.sum() >= 2:
        _, a, c, _ = _profile(v[pos][None, :], x[pos][None, :], overhead=True)
        fit.overhead, fit.scale = float(a[0]), float(c[0])
    fit.model = "a + c*b^d" if family == "exponential" else "a + c*d^p"


def _noisy(
    obs: list[Observation], d: np.ndarray, v: np.ndarray, fit: Fit, seed: int, bootstrap: bool = True
) -> np.ndarray | None:
    """The model reading of noisy values; returns the bootstrap replicates (for the consistency check)."""
    pos = v > 0
    if not pos.all():
        fit.kind, fit.reason = "inconclusive", "non-positive times: the clock did not resolve the phase"
        return None
    overhead = len(d) >= OVERHEAD_POINTS
    if not overhead:
        fit.notes.append(f"{len(d)} depths: fitted without a fixed overhead (needs {OVERHEAD_POINTS})")
    pw = _fit_family("power", d, v[None, :], overhead)[0]
    ex = _fit_family("exponential", d, v[None, :], overhead)[0]
    eps = 1e-6 * len(d)
    exp_wins = ex.sse + eps < 0.5 * (pw.sse + eps) and ex.param >= EXP_MIN_BASE
    chosen = ex if exp_wins else pw
    d_max = float(d.max())
    if not bootstrap:  # evidence beside a deterministic decision: the point estimate only
        fit.overhead, fit.scale = chosen.overhead, chosen.scale
        if exp_wins:
            fit.model, fit.base, fit.kind = "a + c*b^d", chosen.param, "exponential"
        else:
            fit.model, fit.exponent = "a + c*d^p", chosen.param
            flat = chosen.scale <= FLAT_SHARE * (chosen.scale + chosen.overhead) or chosen.param < 0.15
            fit.kind = "linear" if flat else band(chosen.param)
            fit.exponent = 0.0 if flat else chosen.param
        fit.interval_method = "point estimate (not deciding)"
        return None
    rng = np.random.default_rng(seed)
    reps, how = _replicates(obs, chosen(d, d_max), rng)
    boot_p = _fit_family("power", d, reps, overhead, coarse=True)
    boot_e = _fit_family("exponential", d, reps, overhead, coarse=True)
    prefer_exp = np.mean([e.sse + eps < 0.5 * (p.sse + eps) for e, p in zip(boot_e, boot_p, strict=True)])
    q = (1 - CONFIDENCE) / 2
    fit.overhead, fit.scale = chosen.overhead, chosen.scale
    plo, phi = _profile_interval(chosen.family, d, v, overhead)
    fit.interval_method = how + " and the profile likelihood (the wider of the two)"
    if exp_wins:
        bs = np.array([e.param for e in boot_e])
        lo, hi = (float(x) for x in np.quantile(bs, [q, 1 - q]))
        lo, hi = min(lo, plo), max(hi, phi)
        fit.model, fit.base, fit.interval = "a + c*b^d", chosen.param, [min(lo, chosen.param), max(hi, chosen.param)]
        fit.kind = "exponential"
        if prefer_exp < 0.8:
            fit.notes.append(
                f"an exponential fits better, but only {100 * prefer_exp:.0f}% of the resamples prefer it "
                "to a power law"
            )
        if fit.interval[0] < EXP_MIN_BASE:
            fit.kind = "inconclusive"
            fit.reason = (
                f"the base interval [{fit.interval[0]:.2f}, {fit.interval[1]:.2f}] reaches 1 (no growth): add "
                "depths (raise --cap) or repeats"
            )
    else:
        ps = np.array([p.param for p in boot_p])
        lo, hi = (float(x) for x in np.quantile(ps, [q, 1 - q]))
        lo, hi = min(lo, plo), max(hi, phi)
        fit.model, fit.exponent = "a + c*d^p", chosen.param
        fit.interval = [min(lo, chosen.param), max(hi, chosen.param)]
        flat = chosen.scale <= FLAT_SHARE * (chosen.scale + chosen.overhead) or chosen.param < 0.15
        if flat and (fit.interval[1] < SUPERLINEAR_MIN or _constant_fits(v, chosen.sse, overhead)):
            fit.kind, fit.exponent = "linear", 0.0
            fit.notes.append("flat: the growing part stays under 5% of the cost and no growth is measurable")
        else:
            fit.kind, fit.reason = _power_kind(chosen.param, *fit.interval)
            if fit.kind == "inconclusive":
                fit.reason += ": add depths (raise --cap) or repeats"
    return reps


def _check_consistency(d: np.ndarray, v: np.ndarray, reps: np.ndarray | None, fit: Fit, exact: bool) -> None:
    """The measured halving ratio and tail exponent must be what the deciding model implies."""
    pair = halving_pair(d.tolist())
    at = dict(zip(d.tolist(), v.tolist(), strict=True))
    if pair is not None:
        hd, hh = pair
        fit.halving_depth, fit.halving_from = int(hd), int(hh)
        fit.halving_ratio = _doubling(at[hd], at[hh], hd, hh)
    if len(d) >= 2:
        fit.tail_exponent = _slope(v[-1], v[-2], d[-1], d[-2])
    if fit.kind == "inconclusive" or fit.overhead is None or fit.scale is None:
        return
    model_at = _model_fn(fit)
    if pair is not None:
        fit.model_halving_ratio = _doubling(model_at(hd), model_at(hh), hd, hh)
    if len(d) >= 2:
        fit.model_tail_exponent = _slope(model_at(d[-1]), model_at(d[-2]), d[-1], d[-2])
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
        return
    if not contradicts:
        fit.notes.append("the model deviates at the tail, within the same reading: " + "; ".join(misfit))
        return
    fit.notes.append(f"the {fit.kind} model misfits the tail: " + "; ".join(misfit))
    fit.kind = "inconclusive"
    fit.reason = "the fitted model does not reproduce the deepest points (" + "; ".join(misfit) + "): add depths"


def band(exponent: float) -> str:
    """The reading of a total exponent: linear, mild or superlinear."""
    if exponent < LINEAR_MAX:
        return "linear"
    return "mild" if exponent < SUPERLINEAR_MIN else "superlinear"


def _model_fn(fit: Fit):
    a, c, d_max = fit.overhead or 0.0, fit.scale or 0.0, float(max(fit.depths))
    if fit.model == "a + c*b^d" and fit.base:
        lb = math.log(fit.base)
        return lambda x: a + c * math.exp(lb * (x - d_max))
    if fit.model == "a + c*d^p" and fit.exponent is not None:
        p = fit.exponent
        return lambda x: a + c * (max(x, 0.0) / d_max) ** p
    return lambda x: a + c


def predict(fit: Fit, depth: float) -> float | None:
    """The deciding model's total cost at ``depth`` (None without a fitted model)."""
    if not fit.depths or fit.overhead is None or fit.scale is None:
        return None
    try:
        return float(_model_fn(fit)(float(depth)))
    except OverflowError:
        return math.inf


def _use_censored(fit: Fit) -> None:
    """Lower bounds past the last exact depth: evidence for, never against, fast growth."""
    last = fit.depths[-1] if fit.depths else None
    beyond = [
        (cd, cv) for cd, cv in zip(fit.censored_depths, fit.censored_values, strict=True) if last is None or cd > last
    ]
    if not beyond:
        return
    fit.notes.append(
        "lower bounds (killed at the cap): " + ", ".join(f">= {cv:.4g} at depth {cd}" for cd, cv in beyond)
    )
    cd, cv = beyond[0]
    pred = predict(fit, cd)
    if pred is not None and pred > 0 and cv > 2 * pred and fit.kind in ("linear", "mild"):
        fit.notes.append(f"the bound at depth {cd} is {cv / pred:.0f}x what the {fit.kind} model predicts")
        fit.kind = "runaway"
        fit.reason = (
            f"depth {cd} ran past its cap ({cv:.3g}) where the measured depths predict {pred:.3g}: a hang or a "
            "sudden blowup at that depth"
        )


def fit_growth(
    depths: Sequence[float],
    values: Sequence[float] | Sequence[Sequence[float]],
    *,
    metric: str = "",
    exact: bool = False,
    censored: Sequence[bool] | None = None,
    source: str = "",
    clock: str = "",
    seed: int = 0,
    bootstrap: bool = True,
) -> Fit:
    """Decide the growth of ``values`` against ``depths`` (see the module docstring).

    values: one number per depth, or the list of repeats of each depth (noisy time).
    exact: deterministic values (the marginal reading); else noisy (models with an overhead, bootstrap).
    censored: per point, True for a lower bound (killed at the cap); kept apart, never fitted as a value.
    Repeated depths are merged (their repeats pooled).
    """
    cens = list(censored) if censored is not None else [False] * len(depths)
    pooled: dict[tuple[float, bool], list[float]] = {}
    for dd, vv, cc in zip(depths, values, cens, strict=False):
        reps = [float(x) for x in (vv if isinstance(vv, list | tuple | np.ndarray) else [vv]) if x is not None]
        reps = [x for x in reps if math.isfinite(x)]
        if dd is not None and reps:
            pooled.setdefault((float(dd), bool(cc)), []).extend(reps)
    obs = sorted((Observation(k[0], r, k[1]) for k, r in pooled.items()), key=lambda o: o.depth)
    exact_obs = [o for o in obs if not o.censored]
    bounds = [o for o in obs if o.censored]
    fit = Fit(metric=metric, kind="inconclusive", method="marginal" if exact else "total", source=source)
    fit.statistic = "exact" if exact else f"{STATISTIC} of repeats"
    fit.clock = clock
    d = np.array([o.depth for o in exact_obs], float)
    v = np.array([o.value if not exact else float(np.median(o.repeats)) for o in exact_obs], float)
    fit.depths, fit.values = [int(x) for x in d], [float(x) for x in v]
    fit.censored_depths = [int(o.depth) for o in bounds]
    fit.censored_values = [max(o.repeats) for o in bounds]
    reps = None
    if len(d) >= 3 and np.ptp(v) <= (1e-12 if exact else 0.0) * max(float(np.max(np.abs(v))), 1e-300):
        fit.kind, fit.exponent, fit.model = "linear", 0.0, "constant"
        fit.overhead, fit.scale, fit.interval = float(v[0]), 0.0, [0.0, 0.0]
        fit.notes.append("flat: the cost does not change with depth")
    elif len(d) < MIN_POINTS:
        fit.reason = f"too few depths ({len(d)} measured, need {MIN_POINTS}): add depths or raise --cap"
    elif exact:
        _exact(d, v, fit)
        if fit.kind != "inconclusive":
            _exact_curve(d, v, fit)
        fit.interval_method = "spread of the tail's local readings (exact values)"
    else:
        reps = _noisy(exact_obs, d, v, fit, seed, bootstrap)
    if len(d):
        _check_consistency(d, v, reps, fit, exact)
    if fit.depths:
        _use_censored(fit)
    _curve(fit)
    fit.base, fit.exponent = _num(fit.base), _num(fit.exponent)
    fit.halving_ratio = _num(fit.halving_ratio)
    fit.tail_ratios = [float(x) if math.isfinite(x) else 0.0 for x in fit.tail_ratios]
    fit.local_powers = [float(x) if math.isfinite(x) else 0.0 for x in fit.local_powers]
    return fit


def _curve(fit: Fit) -> None:
    if not fit.depths or fit.overhead is None:
        return
    lo, hi = min(fit.depths), max(fit.depths + fit.censored_depths)
    xs = np.unique(np.concatenate([np.linspace(lo, hi, 48), np.asarray(fit.depths, float)]))
    vals = [predict(fit, float(x)) for x in xs]
    keep = [(float(x), float(y)) for x, y in zip(xs, vals, strict=True) if y is not None and math.isfinite(y) and y > 0]
    fit.curve_depths = [x for x, _ in keep]
    fit.curve_values = [y for _, y in keep]


def _num(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def interval_text(fit: Fit) -> str:
    """``d^1.72 [1.55, 1.90]``, ``x2.00/layer [1.99, 2.00]``, ``flat`` or ``""``."""
    iv = fit.interval
    if fit.kind == "exponential" and fit.base is not None:
        s = f"x{fit.base:.2f}/layer"
        return s + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv and fit.source == "time" else "")
    if fit.exponent is not None and fit.kind in ("linear", "mild", "superlinear", "inconclusive"):
        if fit.exponent == 0.0:
            return "flat"
        s = f"d^{fit.exponent:.2f}"
        return s + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv and fit.source == "time" else "")
    return ""
