"""The marginal reading of exact values (deterministic counters and work metrics): the per-layer ratio and the
local power of the marginal cost per layer, read over the tail (pure; see :mod:`adprof.analysis.growth`)."""

from __future__ import annotations

import math

import numpy as np

from adprof.analysis.bands import LINEAR_MAX, power_kind
from adprof.analysis.models import profile
from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import Fit

RISE_RATE = 0.5  # exact: d(local power)/d(ln x) above which the local power "keeps rising"
EMERGING_RATE = 0.4
TAIL = 3


def marginal_reading(d: np.ndarray, v: np.ndarray, fit: Fit) -> None:
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
    if n >= 2 and gt.min() > EXPONENTIAL_RATIO and rise > RISE_RATE:
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
    fit.kind, fit.reason = power_kind(p, *fit.interval)


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
