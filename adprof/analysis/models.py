"""The data of one depth and the two growth models of noisy values, ``a + c·d^p`` and ``a + c·b^d``, fitted
by least squares on relative residuals over fine grids of p and b; their profile and bootstrap intervals, and
the deciding model's cost at any depth (pure)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from adprof.model import Fit, lower_quartile, model_cost  # noqa: F401  (lower_quartile: re-exported)

BOOTSTRAP = 200
CONFIDENCE = 0.95

#: The grids' upper edges: a fit pinned there is not a reading (the family is wrong, or one point drives it).
P_MAX = 8.0
B_MAX = 100.0
_P_GRID = np.linspace(0.0, P_MAX, 1601)
_LOG_B_GRID = np.linspace(0.0, math.log(B_MAX), 1201)
# the bootstrap refits on coarser grids (interval ends to about ±0.01 in p and ±0.6% in b)
_COARSE = {"power": _P_GRID[::2], "exponential": _LOG_B_GRID[::3]}
_FINE = {"power": _P_GRID, "exponential": _LOG_B_GRID}


#: The per-depth statistic of time repeats: a low percentile, since interference only ever slows a run and a
#: preempted call on a loaded machine costs several times an undisturbed one. The minimum: a depth's repeats are
#: the same work, and any run that no interference slowed is its cost; a low percentile interpolated with few
#: repeats (3-4 per depth) is pulled up by the second run, which one run in five slowed (a CPU frequency step,
#: a second mode of a program's noise) shifts by a third.
STAT_PERCENTILE = 0
HUBER_K = 1.345  # robust refits: residuals beyond this many robust scales get weight k·s/|r|


def low_statistic(xs: Sequence[float]) -> float:
    """The per-depth statistic of repeats (:data:`STAT_PERCENTILE`: the minimum)."""
    return float(np.percentile(np.asarray(xs, float), STAT_PERCENTILE))


@dataclass
class Observation:
    """One depth of a series: the repeats of its cost, or one lower bound when ``censored``."""

    depth: float
    repeats: list[float]
    censored: bool = False

    @property
    def value(self) -> float:
        return self.repeats[0] if len(self.repeats) == 1 else low_statistic(self.repeats)


@dataclass
class ModelFit:
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


def _features(family: str, d: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """(grid, n) features of the growing part, scaled to 1 at the deepest depth."""
    d_max = float(d.max())
    if family == "power":
        return np.power(d[None, :] / d_max, grid[:, None])
    return np.exp(grid[:, None] * (d[None, :] - d_max))


def _grid_fits(y: np.ndarray, x: np.ndarray, overhead: bool, w: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Weighted least squares of ``a + c·x`` on relative residuals for every grid row and every replicate.

    y: (B, n) replicates; x: (G, n) features; w: (n,) weights (mean 1; None: all 1). Minimizes
    Σ w·(a/y + c·x/y - 1)² with a, c ≥ 0 (closed form; the boundary cases by one-parameter fits). Returns
    (sse, which, a2, c2, c_only, a_only): the profile (B, G) and what :func:`profile` needs to read the best
    row's coefficients.
    """
    u = 1.0 / y  # (B, n); the growing part's column is v = x·u, never formed as (B, G, n): three products
    n = y.shape[1] if w is None else float(np.sum(w))
    u2 = u * u
    if w is not None:
        u2, uw = u2 * w, u * w
    else:
        uw = u
    suu, su = np.sum(u2, -1, keepdims=True), np.sum(uw, -1, keepdims=True)  # (B, 1)
    # einsum without optimize: its own loops, not BLAS (whose threads crawl on a loaded 2-core machine)
    suv, svv, sv = (np.einsum("bn,gn->bg", a, b) for a, b in ((u2, x), (u2, x * x), (uw, x)))  # (B, G)
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
    return sse, which, a2, c2, c_only, a_only


def profile(
    y: np.ndarray, x: np.ndarray, overhead: bool, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The best grid row of :func:`_grid_fits` per replicate: (best grid index, a, c, sse), each (B,)."""
    sse, which, a2, c2, c_only, a_only = _grid_fits(y, x, overhead, w)
    best = np.argmin(sse, axis=1)  # (B,)
    rows = np.arange(y.shape[0])
    w = which[rows, best]
    a = np.select([w == 0, w == 1], [a2[rows, best], 0.0], np.broadcast_to(a_only, sse.shape)[rows, best])
    c = np.select([w == 0, w == 1], [c2[rows, best], c_only[rows, best]], 0.0)
    return best, a, c, np.maximum(sse[rows, best], 0.0)


def fit_family(
    family: str, d: np.ndarray, ys: np.ndarray, overhead: bool, coarse: bool = False, w: np.ndarray | None = None
) -> list[ModelFit]:
    """The best fit of ``family`` to each replicate row of ``ys`` (weights ``w`` per depth, None: equal)."""
    grid = (_COARSE if coarse else _FINE)[family]
    best, a, c, sse = profile(ys, _features(family, d, grid), overhead, w)
    params = grid if family == "power" else np.exp(grid)
    return [
        ModelFit(family, float(params[b]), float(ai), float(ci), float(si))
        for b, ai, ci, si in zip(best, a, c, sse, strict=True)
    ]


#: The 95% quantile of F(d1, d2) for d1 = 1, 2 and d2 = 1..64 (scipy.special.fdtri, rounded to 1e-10; a test
#: compares them): a series has at most a few dozen depths, and scipy's import (0.3-0.5 s, with numpy.f2py and the
#: array API layer) would be paid by every report that reads a time series. Past the table, scipy computes it.
# fmt: off
F95 = {
    1: (
        161.4476387976, 18.5128205128, 10.127964486, 7.7086474222, 6.6078909737, 5.9873776073, 5.5914478512,
        5.3176550716, 5.1173550292, 4.9646027437, 4.8443356749, 4.7472253467, 4.6671927318, 4.6001099367,
        4.5430771653, 4.4939984777, 4.4513217725, 4.4138734192, 4.3807496923, 4.3512435033, 4.3247937432,
        4.3009495018, 4.2793443091, 4.2596772727, 4.2416990503, 4.2252012731, 4.2100084684, 4.1959718186,
        4.1829642891, 4.1708767858, 4.159615098, 4.1490974457, 4.1392524956, 4.1300177457, 4.1213382003,
        4.1131652768, 4.1054558972, 4.0981717309, 4.091278558, 4.0847457333, 4.0785457313, 4.0726537593,
        4.0670474264, 4.0617064601, 4.0566124611, 4.0517486921, 4.0470998946, 4.0426521286, 4.0383926337,
        4.0343097068, 4.0303925948, 4.0266314003, 4.0230169977, 4.0195409602, 4.0161954934, 4.0129733777,
        4.0098679157, 4.0068728863, 4.0039825031, 4.0011913768, 3.9984944817, 3.9958871259, 3.9933649239,
        3.9909237717,
    ),
    2: (
        199.5, 19.0, 9.5520944959, 6.94427191, 5.7861350433, 5.1432528498, 4.7374141278, 4.4589701075, 4.2564947291,
        4.1028210151, 3.9822979571, 3.8852938347, 3.805565253, 3.7388918324, 3.6823203437, 3.6337234676,
        3.5915305685, 3.5545571457, 3.5218932606, 3.4928284767, 3.4668001115, 3.4433567794, 3.4221322079,
        3.4028261054, 3.3851899614, 3.3690163595, 3.3541308285, 3.3403855582, 3.3276544986, 3.315829501,
        3.3048172522, 3.2945368165, 3.284917651, 3.2758979907, 3.2674235247, 3.2594463061, 3.2519238464,
        3.2448183607, 3.2380961352, 3.2317269928, 3.2256838423, 3.2199422932, 3.2144803279, 3.20927802, 3.2043172921,
        3.1995817059, 3.1950562807, 3.1907273359, 3.1865823524, 3.182609852, 3.1787992921, 3.1751409713, 3.171625948,
        3.1682459673, 3.1649933958, 3.1618611649, 3.1588427193, 3.1559319709, 3.1531232585, 3.1504113106,
        3.1477912126, 3.1452583771, 3.1428085171, 3.1404376219,
    ),
}
# fmt: on


def f95(d1: int, d2: int) -> float:
    """The 95% quantile of the F distribution with (d1, d2) degrees of freedom (:data:`CONFIDENCE`)."""
    table = F95.get(d1)
    if table is not None and 1 <= d2 <= len(table) and CONFIDENCE == 0.95:
        return table[d2 - 1]
    from scipy.special import fdtri

    return float(fdtri(d1, d2, CONFIDENCE))


def profile_interval(
    family: str, d: np.ndarray, v: np.ndarray, overhead: bool, w: np.ndarray | None = None, coarse: bool = False
) -> tuple[float, float]:
    """Profile-likelihood interval of p (or b): the grid values whose SSE is within F(1, n-k; 95%)·s² of
    the best, with s² the residual variance of the best fit on its n-k degrees of freedom (the F quantile,
    not χ², because s² is itself estimated from few depths: 18.5 for 5 depths, 6.0 for 9). Unlike a
    bootstrap over a handful of repeats it does not shrink when the repeats of each depth happen to agree
    while whole depths are off (a load burst during one point)."""

    grid = (_COARSE if coarse else _FINE)[family]
    curve = _grid_fits(v[None, :], _features(family, d, grid), overhead, w)[0][0]
    k = 3 if overhead else 2
    dof = max(len(d) - k, 1)
    s2 = max(float(curve.min()), 1e-12) / dof
    inside = grid[curve <= curve.min() + f95(1, dof) * s2]
    if len(inside) == 0:  # no finite fit on the grid (values or depths past float range): the whole grid
        inside = grid
    params = inside if family == "power" else np.exp(inside)
    return float(params.min()), float(params.max())


def constant_fits(v: np.ndarray, sse_model: float, overhead: bool) -> bool:
    """Whether a constant explains the values as well as the growth model (an F test of the nested models at
    95%): then the exponent of a tiny growing part is not identified, and the cost is flat."""
    u = float(np.min(v)) / v  # relative (the test is scale-free): 1/v squared underflows for costs of 1e300
    a = float(np.sum(u)) / float(np.sum(u * u))
    sse_const = float(np.sum((a * u - 1.0) ** 2))
    extra, dof = (2 if overhead else 1), max(len(v) - (3 if overhead else 2), 1)
    if sse_model <= 1e-15:
        return sse_const <= 1e-12
    stat = ((sse_const - sse_model) / extra) / (sse_model / dof)
    return stat < f95(extra, dof)


def _resampled(o: Observation, rng: np.random.Generator, b: int = BOOTSTRAP) -> np.ndarray:
    """(b,) bootstrap replicates of one depth's statistic, resampling its repeats."""
    r = np.asarray(o.repeats, float)
    return np.percentile(r[rng.integers(0, len(r), size=(b, len(r)))], STAT_PERCENTILE, axis=1)


def replicates(
    obs: list[Observation], fitted: np.ndarray, rng: np.random.Generator, w: np.ndarray | None = None
) -> tuple[np.ndarray, str]:
    """(B, n) bootstrap replicates of the per-depth statistic, and how they were drawn: a depth with three
    repeats or more resamples its repeats; the others the fit's (weighted) residuals."""
    y = np.array([o.value for o in obs])
    k = len(obs)
    own = [len(o.repeats) >= 3 for o in obs]
    reps = np.empty((BOOTSTRAP, k))
    if not all(own):
        resid = np.log(y / fitted)
        ww = np.ones(k) if w is None else w
        resid = (resid - np.average(resid, weights=ww)) * np.sqrt(np.minimum(ww, 1.0))
        infl = math.sqrt(k / max(k - 3, 1))
        draw = resid[rng.integers(0, k, size=(BOOTSTRAP, k))] * infl
        reps[:] = fitted[None, :] * np.exp(draw)
    for j, o in enumerate(obs):
        if own[j]:
            reps[:, j] = _resampled(o, rng)
    if all(own):
        return reps, f"bootstrap over the repeats of each depth, {BOOTSTRAP} resamples"
    if any(own):
        return reps, f"bootstrap over the repeats (depths with 3 or more) and the residuals, {BOOTSTRAP} resamples"
    return reps, f"bootstrap over the fit's residuals, {BOOTSTRAP} resamples"


def depth_weights(obs: list[Observation], rng: np.random.Generator) -> np.ndarray:
    """Inverse-variance weights of the depths (mean 1): the bootstrap variance of each depth's log statistic
    over its repeats (three or more), shrunk towards the median variance (depths with fewer repeats get it),
    so that a depth whose repeats scatter (calls preempted on a loaded machine) counts less than one whose
    repeats agree. All 1 when no depth has three repeats."""
    var = np.full(len(obs), np.nan)
    for j, o in enumerate(obs):
        if len(o.repeats) >= 3 and min(o.repeats) > 0:
            var[j] = float(np.var(np.log(_resampled(o, rng, 100))))
    if np.all(np.isnan(var)):
        return np.ones(len(obs))
    med = float(np.nanmedian(var))
    var = np.where(np.isnan(var), med, var)
    w = 1.0 / (var + max(med, 1e-6))
    return w / w.mean()


def robust_weights(y: np.ndarray, fitted: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Huber weights of the log residuals (robust scale: 1.4826 x their median absolute value): a depth far off
    the model (an allocator or cache step that every repeat shows) pulls the fit less."""
    r = np.log(np.maximum(y, 1e-300) / np.maximum(fitted, 1e-300))
    s = 1.4826 * float(np.median(np.abs(r - np.average(r, weights=w))))
    if s <= 1e-9:
        return np.ones_like(y)
    a = np.abs(r) / (HUBER_K * s)
    return np.where(a <= 1.0, 1.0, 1.0 / np.maximum(a, 1e-12))


def model_at(fit: Fit):
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
    return model_cost(fit, float(depth))
