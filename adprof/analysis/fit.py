"""Growth fits of one cost series against depth (pure functions on numbers).

Two methods, chosen by how trustworthy the numbers are:

* ``exact=True`` (deterministic counters): the *marginal* method. The marginal cost per layer
  ``m = ΔC/Δd`` removes fixed setup cost and the linear "real work" that hides an exponential.
  On the marginals: the per-layer ratio ``g = (m_{i+1}/m_i)^(1/Δx)`` and the local power
  ``lp = ln(m_{i+1}/m_i) / ln(x_{i+1}/x_i)`` (0 for a linear total, p-1 for d^p, rising ≈ x·ln b
  under b^d). Exponential ⇔ tail ratios ≥ 1.15 and the local power keeps rising; superlinear ⇔
  local power ≥ 0.4 and flat (exponent = 1 + lp); linear otherwise. Base = the tail per-layer ratio.
* ``exact=False`` (noisy times): Theil-Sen fits of ``ln C = a + b·d`` (exponential) and
  ``ln C = a + p·ln d`` (power), residuals compared in the same log space: exponential if
  SSE_exp < ½·SSE_pow and e^b > 1.2; else p ≥ 1.4 superlinear, else linear.

Both methods also report the two total-space log fits (for R² and plotting), per-layer ratios and
the depth-halving ratio C(d)/C(d/2). Censored points (lower bounds) never enter a fit as exact
values; they can only support an exponential verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import Fit

#: Thresholds of the two methods (see the module docstring); the exponential tail-ratio threshold is
#: :data:`adprof.constants.EXPONENTIAL_RATIO`.
MIN_POINTS = 4
RISE_RATE = 0.5  # d lp / d ln x above which the local power "keeps rising" (power laws: <= 0.25)
EMERGING_RATE = 0.4
SUPERLINEAR_LP = 0.4  # total exponent >= 1.4
MILD_LP = 0.15
TIME_EXP_BASE = 1.2
TIME_SUPERLINEAR = 1.4
TIME_LINEAR = 1.2
TAIL = 3


def _clean(depths: Sequence[float], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sort by depth, drop non-finite values, merge repeated depths by their median."""
    pairs: dict[float, list[float]] = {}
    for d, v in zip(depths, values, strict=False):
        if v is None or d is None:
            continue
        v = float(v)
        if not math.isfinite(v):
            continue
        pairs.setdefault(float(d), []).append(v)
    ds = sorted(pairs)
    return np.array(ds, float), np.array([float(np.median(pairs[d])) for d in ds], float)


def _num(x: float | None) -> float | None:
    """A plain float, or None when not finite (keeps reports JSON-safe)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def per_layer_ratios(depths: Sequence[float], values: Sequence[float]) -> list[tuple[int, float]]:
    """``(d, C(d)/C(d-1))`` for every depth whose predecessor d-1 was measured (and C(d-1) > 0)."""
    d, v = _clean(depths, values)
    at = dict(zip(d.tolist(), v.tolist(), strict=True))
    out = []
    for di, vi in at.items():
        prev = at.get(di - 1)
        if prev is not None and prev > 0:
            out.append((int(di), vi / prev))
    return out


def halving_ratios(depths: Sequence[float], values: Sequence[float]) -> list[tuple[int, int, float]]:
    """``(d, h, C(d)/C(h))`` with h = d/2 when measured, else the nearest measured depth in [d/4, 3d/4].

    When h is not exactly d/2 the ratio is rescaled to a doubling as a power law would:
    ``(C(d)/C(h))^(ln 2 / ln(d/h))``. A ratio near 2 means linear, near 4 quadratic; "below 1/3 when
    halved" (ratio > 3) is a superlinear cost of graph size.
    """
    d, v = _clean(depths, values)
    out = []
    for di, vi in zip(d, v, strict=True):
        if di <= 0:
            continue
        cands = [(abs(h - di / 2), h, vh) for h, vh in zip(d, v, strict=True) if di / 4 <= h <= 0.75 * di]
        if not cands:
            continue
        _, h, vh = min(cands)
        if h <= 0 or vh <= 0 or vi <= 0:
            continue
        r = vi / vh
        if h != di / 2:
            r = r ** (math.log(2) / math.log(di / h))
        out.append((int(di), int(h), float(r)))
    return out


def marginal_costs(depths: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    """Marginal cost per layer between successive measured depths: ``(midpoints, ΔC/Δd)``."""
    d, v = _clean(depths, values)
    if len(d) < 2:
        return [], []
    x = (d[1:] + d[:-1]) / 2
    m = np.diff(v) / np.diff(d)
    return x.tolist(), m.tolist()


def log_fits(depths: Sequence[float], values: Sequence[float]) -> dict[str, float | None]:
    """Theil-Sen fits of ``ln C`` against d (exponential) and ln d (power) on the positive values.

    Returns intercepts, slopes, SSE and R² of both, in the same log space. Depths <= 0 are left out
    of the power fit.
    """
    d, v = _clean(depths, values)
    keep = v > 0
    d, v = d[keep], v[keep]
    res: dict[str, float | None] = dict.fromkeys(
        ("a_exp", "b_exp", "sse_exp", "r2_exp", "a_pow", "p_pow", "sse_pow", "r2_pow"), None
    )
    if len(d) < 2:
        return res
    ly = np.log(v)

    def _one(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float | None]:
        if len(x) < 2 or np.ptp(x) == 0:
            return (float(np.mean(y)), 0.0, float(np.sum((y - y.mean()) ** 2)), None)
        from scipy import stats  # imported on first use: it costs ~0.4 s, paid by every CLI run otherwise

        slope, icpt, _, _ = stats.theilslopes(y, x)
        sse = float(np.sum((y - icpt - slope * x) ** 2))
        sst_y = float(np.sum((y - y.mean()) ** 2))
        r2 = 1.0 - sse / sst_y if sst_y > 0 else (1.0 if sse < 1e-18 else None)
        return float(icpt), float(slope), sse, r2

    res["a_exp"], res["b_exp"], res["sse_exp"], res["r2_exp"] = _one(d, ly)
    pos = d > 0
    if pos.sum() >= 2:
        res["a_pow"], res["p_pow"], res["sse_pow"], res["r2_pow"] = _one(np.log(d[pos]), ly[pos])
    return res


def _marginal_tail(d: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Marginals of the trailing run of positive marginal cost (drops leading zeros, e.g. Fibonacci)."""
    notes = []
    x = (d[1:] + d[:-1]) / 2
    m = np.diff(v) / np.diff(d)
    scale = max(float(np.max(np.abs(v))), 1e-300)
    pos = m > 1e-12 * scale
    if not pos.all():
        # the longest trailing run of positive marginals
        last_bad = int(np.nonzero(~pos)[0].max())
        if last_bad < len(m) - 1 and pos[: last_bad + 1].any():
            notes.append(f"marginal cost not positive up to depth {d[last_bad + 1]:g}; fitted after it")
        x, m = x[last_bad + 1 :], m[last_bad + 1 :]
    return x, m, notes


def _classify_marginal(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
    x, m, notes = _marginal_tail(d, v)
    fit.notes.extend(notes)
    if len(m) == 0:
        fit.kind = "linear"
        fit.exponent = 0.0
        fit.notes.append("no growth: cost does not increase with depth")
        return
    if len(m) < 2:
        fit.kind = "inconclusive"
        fit.notes.append("too few points of growing marginal cost")
        return
    r = m[1:] / m[:-1]
    g = r ** (1.0 / np.diff(x))  # per-layer marginal ratio
    lp = np.log(r) / np.log(x[1:] / x[:-1]) if (x > 0).all() else np.zeros_like(r)
    xl = np.sqrt(x[1:] * x[:-1]) if (x > 0).all() else x[1:]
    n = min(TAIL, len(g))
    gt, lpt, xt = g[-n:], lp[-n:], xl[-n:]
    fit.local_powers = [float(a) for a in lp]
    fit.tail_ratios = [float(a) for a in gt]
    # depth at which each per-layer ratio is read: the upper end of the second marginal interval
    ends = d[len(d) - len(g) :]
    fit.tail_depths = [int(e) for e in ends[-n:]]
    rise = (lpt[-1] - lpt[0]) / math.log(xt[-1] / xt[0]) if n >= 2 and xt[0] > 0 else 0.0
    if n >= 2 and gt.min() > EXPONENTIAL_RATIO and rise > RISE_RATE:
        fit.kind = "exponential"
        fit.base = float(np.exp(np.mean(np.log(gt[-2:]))))
        return
    if n >= 2 and rise > EMERGING_RATE:
        fit.kind = "inconclusive"
        fit.notes.append(
            f"emerging: local power of the marginal cost rising {lpt[0]:.2f} -> {lpt[-1]:.2f} but "
            f"per-layer ratios still {gt[-1]:.2f} < {EXPONENTIAL_RATIO}; extend the depth range"
        )
        return
    mean_lp = float(np.mean(lpt[-2:]))
    fit.exponent = 1.0 + mean_lp
    if n < 2 and (mean_lp >= MILD_LP or gt[-1] > EXPONENTIAL_RATIO):
        fit.kind = "inconclusive"
        fit.notes.append("too few points to tell an exponential from a power law")
    elif mean_lp >= SUPERLINEAR_LP:
        fit.kind = "superlinear"
    else:
        fit.kind = "linear"
        if mean_lp >= MILD_LP:
            fit.notes.append(f"mild superlinearity (exponent {fit.exponent:.2f}, n log n-like)")


def _classify_total(d: np.ndarray, v: np.ndarray, lf: dict[str, float | None], fit: Fit) -> None:
    b, p = lf["b_exp"], lf["p_pow"]
    sse_e, sse_p = lf["sse_exp"], lf["sse_pow"]
    if b is None or p is None or sse_e is None or sse_p is None:
        fit.kind = "inconclusive"
        fit.notes.append("too few positive values to fit")
        return
    ratios = per_layer_ratios(d, v)
    if ratios:
        tail = ratios[-TAIL:]
        fit.tail_ratios = [float(r) for _, r in tail]
        fit.tail_depths = [int(dd) for dd, _ in tail]
    if sse_e < 0.5 * sse_p and math.exp(b) > TIME_EXP_BASE:
        fit.kind = "exponential"
        # base from the tail (fixed overhead flattens the head)
        k = max(len(d) // 2, min(len(d), 3))
        vt, dt = v[-k:], d[-k:]
        keep = vt > 0
        if keep.sum() >= 2:
            from scipy import stats

            fit.base = float(math.exp(stats.theilslopes(np.log(vt[keep]), dt[keep])[0]))
        else:
            fit.base = float(math.exp(b))
        return
    off = offset_fits(d, v)
    if off is not None:
        if off["sse_exp"] < 0.5 * off["sse_pow"] and off["base"] > TIME_EXP_BASE and off["visible_exp"]:
            fit.kind = "exponential"
            fit.base = float(off["base"])
            fit.notes.append(
                f"exponential x{fit.base:.2f} per layer under a fixed overhead (a + c*b^d fitted in log space)"
            )
            return
        q = float(off["exponent"])
        better = off["sse_pow"] < 0.5 * min(sse_p, off["sse_lin"])
        if p < TIME_SUPERLINEAR <= q < 7.9 and off["visible_pow"] and better:
            fit.kind = "superlinear"
            fit.exponent = q
            fit.notes.append(
                f"depth^{q:.2f} under a fixed overhead (a + c*d^p fitted in log space; plain log-log slope {p:.2f})"
            )
            return
    fit.exponent = float(p)
    if p >= TIME_SUPERLINEAR:
        fit.kind = "superlinear"
    else:
        fit.kind = "linear"
        if p > TIME_LINEAR:
            fit.notes.append(f"mild superlinearity (exponent {p:.2f}, n log n-like)")


def offset_fits(d: np.ndarray, v: np.ndarray) -> dict[str, float | bool] | None:
    """Noisy times: fits of ``a + c*b^d`` and ``a + c*d^p`` (fixed overhead a >= 0) in log space.

    Fixed setup cost flattens log fits of the totals; these 3-parameter models see through it and are
    compared in the same log space. Needs >= 5 positive points. Returns base, sse_exp, visible_exp,
    exponent, sse_pow, visible_pow ("visible": the growing part is at least the overhead at the
    deepest point).
    """
    keep = (v > 0) & (d > 0)
    d, v = d[keep], v[keep]
    if len(d) < 5:
        return None
    from scipy.optimize import least_squares

    ly = np.log(v)
    lo = float(ly.min())

    def solve(feature: np.ndarray, hi: float, lo_g: float = 0.0) -> tuple[float, np.ndarray] | None:
        def resid(q: np.ndarray) -> np.ndarray:
            return np.logaddexp(q[0], q[1] + q[2] * feature) - ly

        best = None
        for g0 in (0.1, 0.5, 1.0):
            x0 = np.array([lo - 0.7, lo - 3.0, min(max(g0, lo_g), hi)])
            try:
                r = least_squares(resid, x0, bounds=([lo - 30, -200, lo_g], [lo + 1e-9, 200, hi]))
            except (ValueError, np.linalg.LinAlgError):
                continue
            sse = float(np.sum(r.fun**2))
            if best is None or sse < best[0]:
                best = (sse, r.x)
        return best

    e = solve(d, 5.0)
    p = solve(np.log(d), 8.0)
    lin = solve(np.log(d), 1.0 + 1e-9, 1.0)
    if e is None or p is None or lin is None:
        return None
    (sse_e, (la_e, al_e, be)), (sse_p, (la_p, al_p, pp)) = e, p
    return {
        "base": math.exp(be),
        "sse_exp": sse_e,
        "visible_exp": bool(al_e + be * d[-1] >= la_e),
        "exponent": float(pp),
        "sse_pow": sse_p,
        "visible_pow": bool(al_p + pp * math.log(d[-1]) >= la_p),
        "sse_lin": lin[0],  # a + c*d
    }


def fit_growth(
    depths: Sequence[float],
    values: Sequence[float],
    *,
    metric: str = "",
    exact: bool = False,
    censored: Sequence[bool] | None = None,
) -> Fit:
    """Classify the growth of ``values`` against ``depths`` as exponential, superlinear or linear.

    exact: the values are deterministic counters (marginal method); else noisy times (log fits).
    censored: per point, True for a lower bound (cap/timeout). Those are kept apart and only
      support an exponential verdict (they never enter a fit as exact values).
    Fewer than MIN_POINTS exact points (or too little growing signal) gives kind "inconclusive".
    """
    cens = list(censored) if censored is not None else [False] * len(depths)
    ex_d = [dd for dd, c in zip(depths, cens, strict=False) if not c]
    ex_v = [vv for vv, c in zip(values, cens, strict=False) if not c]
    d, v = _clean(ex_d, ex_v)
    fit = Fit(metric=metric, kind="inconclusive", method="marginal" if exact else "total")
    fit.depths = [int(x) for x in d]
    fit.values = [float(x) for x in v]
    cd, cv = _clean(
        [dd for dd, c in zip(depths, cens, strict=False) if c],
        [vv for vv, c in zip(values, cens, strict=False) if c],
    )
    fit.censored_depths, fit.censored_values = [int(x) for x in cd], [float(x) for x in cv]

    lf = log_fits(d, v)
    fit.log_intercept_exponential, fit.log_slope_exponential = _num(lf["a_exp"]), _num(lf["b_exp"])
    fit.log_intercept_power, fit.log_slope_power = _num(lf["a_pow"]), _num(lf["p_pow"])
    fit.r2_exponential, fit.r2_power = _num(lf["r2_exp"]), _num(lf["r2_pow"])
    hr = halving_ratios(d, v)
    if hr:
        fit.halving_depth, fit.halving_from, fit.halving_ratio = hr[-1]

    if len(d) >= 3 and np.ptp(v) <= 1e-12 * max(float(np.max(np.abs(v))), 1e-300):
        fit.kind = "linear"
        fit.exponent = 0.0
        fit.notes.append("constant: no growth with depth")
    elif len(d) < MIN_POINTS:
        fit.kind = "inconclusive"
        fit.notes.append(f"too few points ({len(d)} exact, need {MIN_POINTS})")
    elif exact:
        _classify_marginal(d, v, fit)
    else:
        _classify_total(d, v, lf, fit)

    _use_censored(fit)
    fit.base = _num(fit.base)
    fit.exponent = _num(fit.exponent)
    fit.halving_ratio = _num(fit.halving_ratio)
    fit.tail_ratios = [float(x) if math.isfinite(x) else 0.0 for x in fit.tail_ratios]
    fit.local_powers = [float(x) if math.isfinite(x) else 0.0 for x in fit.local_powers]
    return fit


def _use_censored(fit: Fit) -> None:
    """Censored lower bounds can support (never refute) an exponential reading."""
    if not fit.censored_depths or not fit.depths:
        return
    last_d, last_v = fit.depths[-1], fit.values[-1]
    beyond = [(cd, cv) for cd, cv in zip(fit.censored_depths, fit.censored_values, strict=True) if cd > last_d]
    if not beyond:
        return
    fit.notes.append("censored (lower bounds): " + ", ".join(f">= {cv:.4g} at depth {cd}" for cd, cv in beyond))
    if fit.kind == "exponential":
        return
    rates = fit.tail_ratios[-2:]
    if len(fit.depths) >= MIN_POINTS and len(beyond) >= 2 and rates and min(rates) > 1.5 and fit.kind == "inconclusive":
        fit.kind = "exponential"
        fit.base = float(np.exp(np.mean(np.log(rates))))
        fit.notes.append(f"{len(beyond)} censored points after per-layer ratios > 1.5: read as exponential")
    elif fit.kind != "exponential" and fit.exponent and last_v > 0:
        cd, cv = beyond[0]
        pred = last_v * (cd / last_d) ** fit.exponent
        if cv > 2 * pred:
            fit.notes.append(f"censored bound at depth {cd} is {cv / pred:.1f}x above the power-law prediction")


def predict(fit: Fit, depth: float) -> float | None:
    """The fitted total-cost curve at ``depth`` (exponential model if kind is exponential, else power)."""
    if fit.kind == "exponential" and fit.log_slope_exponential is not None:
        return math.exp(fit.log_intercept_exponential + fit.log_slope_exponential * depth)
    if fit.log_slope_power is not None and depth > 0:
        return math.exp(fit.log_intercept_power + fit.log_slope_power * math.log(depth))
    return None
