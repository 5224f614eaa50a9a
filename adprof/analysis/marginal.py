"""The marginal reading of exact values (deterministic counters and work metrics): the per-layer ratio and the
local power of the marginal cost per layer, read over the tail (pure; see :mod:`adprof.analysis.growth`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from adprof.analysis.bands import LINEAR_MAX, power_kind
from adprof.analysis.models import profile
from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import Fit

RISE_RATE = 0.5  # exact: d(local power)/d(ln x) above which the local power "keeps rising"
EMERGING_RATE = 0.4
TAIL = 3
#: Exact values that do not rise at every step and stay within this share of their level are a flat cost with jitter
#: (a few Python calls more or less in one run: 86,657 / 86,658 / 86,659; or a worker's earlier work changing how many
#: calls a cache saves: 4,467 / 4,483 backward calls of JAX eager, 0.36%). A cost growing by under 1% over the
#: depths measured is no pathology, and a growth that rises at every step is never read as jitter.
JITTER = 1e-2


def marginal_reading(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
    """The marginal reading of exact values (module docstring)."""
    x = (d[1:] + d[:-1]) / 2
    m = np.diff(v) / np.diff(d)
    scale = max(float(np.max(np.abs(v))), 1e-300)
    pos = m > 1e-12 * scale
    level, spread = float(np.min(v)), float(np.max(v) - np.min(v))
    if jitter(d, v):
        # a count that does not keep rising and moves by under a percent (86,657 / 86,658 / 86,659 Python calls):
        # jitter of a flat cost, not one growing step
        fit.kind, fit.exponent, fit.interval = "linear", 0.0, [0.0, 0.0]
        fit.notes.append(f"flat: the value moves by {spread:g} on {level:g} without rising steadily (jitter)")
        return
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
    gaps = np.diff(d[len(d) - len(m) - 1 :])  # the depth steps of the marginals read
    bases = np.array([exact_base(float(r[i]), gaps[i], gaps[i + 1]) for i in range(len(r))])[-n:]
    if n >= 2 and gt.min() > EXPONENTIAL_RATIO and (rise > RISE_RATE or _constant_base(bases, xt, gaps)):
        fit.kind, fit.model = "exponential", "a + c*b^d"
        gt = bases
        fit.tail_ratios = [float(a) for a in gt]
        # the deepest step's base: lower-order terms (a + c*b^d + e*d) fade with depth, so it is the least biased.
        # The second differences' base is exact under a line (a + e*d + c*b^d) but reaches one depth further back
        # (past a kink, that depth biases it): of the two readings, the one whose last two steps agree best gives
        # the base, and the interval spans both, so it holds the base whichever of them a kink biases.
        second = second_difference_bases(d, v, n)
        steady = second is not None and len(second) >= 2 and np.ptp(second[-2:]) <= np.ptp(gt[-2:])
        fit.base = float(second[-1] if steady and second is not None else gt[-1])
        both = gt[-2:] if second is None else np.concatenate([gt[-2:], second[-2:]])
        fit.interval = [float(both.min()), float(both.max())]
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
    fit.kind, fit.reason = power_kind(p, *fit.interval)


def jitter(d: np.ndarray, v: np.ndarray) -> bool:
    """Exact values that do not rise at every step and stay within :data:`JITTER` of their (positive) level: a flat
    cost with jitter."""
    if len(v) < 2:
        return False
    m = np.diff(v) / np.diff(d)
    scale = max(float(np.max(np.abs(v))), 1e-300)
    level, spread = float(np.min(v)), float(np.max(v) - np.min(v))
    return bool(not (m > 1e-12 * scale).all() and level > 0 and spread <= JITTER * level)


def second_difference_bases(d: np.ndarray, v: np.ndarray, n: int) -> np.ndarray | None:
    """The last ``n`` per-layer bases of ``a + e*d + c*b^d`` read exactly from the second divided differences of
    the tail (any depth steps): over three depths they are ``c`` times those of ``b^d``, so the ratio of two
    adjacent ones fixes ``b`` whatever the line under the exponential (a first difference keeps ``e``: a cost with
    a linear part reads ``x1.86``, or past a knee whose line is a little off ``x2.02``, for an exact ``2^d``). Each
    is solved by bisection in ``ln b``. Fewer than ``n`` over a shorter tail whose second differences are positive
    (at least two: one base; a line before the growth has none); None without them, or where a ratio no base > 1
    gives."""
    x, y = d[-(n + 3) :].astype(float), v[-(n + 3) :].astype(float)
    if len(x) < 4:
        return None
    first = np.diff(y) / np.diff(x)
    second = np.diff(first) / (x[2:] - x[:-2])
    pos = second > 1e-12 * max(float(np.max(np.abs(y))), 1e-300)
    k = len(pos) - (int(np.nonzero(~pos)[0].max()) + 1 if not pos.all() else 0)  # the positive tail (past a line)
    m = k - 1
    if m < 1:
        return None
    x, second = x[-(m + 3) :], second[-(m + 1) :]
    out = []
    for i in range(m):
        base = _second_ratio_base(float(second[i + 1] / second[i]), x[i : i + 4])
        if base is None:
            return None
        out.append(base)
    return np.array(out)


def _second_ratio_base(ratio: float, x: np.ndarray) -> float | None:
    """The base ``b > 1`` whose ``b^d`` has this ratio of second divided differences over the four depths ``x``
    (the ratio rises with ``b`` from 1); None when ``ratio <= 1``."""
    if not ratio > 1.0:
        return None

    def log_ratio(lb: float) -> float:
        p = np.exp(lb * (x - x[-1]))  # scaled by b^-x[-1]: no overflow (the ratio does not change)
        f = np.diff(p) / np.diff(x)
        s2 = np.diff(f) / (x[2:] - x[:-2])
        return math.log(s2[1] / s2[0]) if s2[0] > 0 and s2[1] > 0 else -math.inf

    return _solve_base(log_ratio, math.log(ratio), 1e-9, 1.0, 700.0 / max(float(x[-1] - x[0]), 1.0))


def _solve_base(log_ratio: Callable[[float], float], target: float, lo: float, hi: float, top: float) -> float:
    """The base ``e^lb`` at which the rising ``log_ratio(lb)`` reaches ``target``: ``hi`` doubled up to ``top``
    (past it the powers overflow), then bisection in log b."""
    while hi < top and log_ratio(hi) < target:
        hi = min(2.0 * hi, top)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if log_ratio(mid) < target else (lo, mid)
    return math.exp((lo + hi) / 2)


def _constant_base(bases: np.ndarray, xt: np.ndarray, gaps: np.ndarray) -> bool:
    """Over unequal depth steps the local power is biased (a step of 6 layers then one of 1 reads a falling power
    for an exact 2^d); the exact per-step bases are not. A power law's base decays like ``exp(p/d)``: ``ln b``
    falls as ``1/d`` (slope -1 in log-log); an exponential's stays (slope 0). Read it halfway."""
    if len(set(int(g) for g in gaps)) == 1 or len(bases) < 2 or bases.min() <= 1.0 or xt[0] <= 0:
        return False
    decay = math.log(math.log(bases[-1]) / math.log(bases[0])) / math.log(xt[-1] / xt[0])
    return decay > -0.5


def exact_base(ratio: float, gap1: float, gap2: float) -> float:
    """The base b of ``a + c*b^d`` whose marginals over two adjacent steps of ``gap1`` and ``gap2`` layers have
    ``ratio`` (the second's over the first's): ``b^gap1 * h(gap2) / h(gap1)`` with ``h(g) = (b^g - 1) / g``. With
    equal steps it is ``ratio ** (1 / gap)``; over unequal ones (a schedule's 16, 22, 32) the midpoints' spacing
    would bias it (x2.15 for an exact 2^d). Solved by bisection in log b (the ratio rises with b)."""
    if ratio <= 1.0 or gap1 <= 0 or gap2 <= 0:
        return ratio ** (2.0 / (gap1 + gap2)) if ratio > 0 and gap1 + gap2 > 0 else ratio
    if gap1 == gap2:
        return ratio ** (1.0 / gap1)

    def log_ratio(lb: float) -> float:  # log of the marginals' ratio for base e^lb
        return lb * gap1 + math.log(math.expm1(lb * gap2) / gap2) - math.log(math.expm1(lb * gap1) / gap1)

    top = 700.0 / max(gap1, gap2)  # expm1 overflows past e^709: never evaluated past it (steps of 1000 layers)
    return _solve_base(log_ratio, math.log(ratio), min(1e-12, top / 2), min(1.0, top), top)


def marginal_curve(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
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
        _, a, c, _ = profile(v[pos][None, :], x[pos][None, :], overhead=True)
        fit.overhead, fit.scale = float(a[0]), float(c[0])
    fit.model = "a + c*b^d" if family == "exponential" else "a + c*d^p"
