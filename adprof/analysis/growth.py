"""Growth of one cost series against depth: the deciding model, its interval, and its reading (pure).

Two readings, chosen by how trustworthy the numbers are:

* **exact** (deterministic counters and work metrics): the *marginal* cost per layer ``m = ΔC/Δd``
  removes fixed setup cost and the linear real work that hides an exponential. On the marginals: the
  per-layer ratio ``g = (m_{i+1}/m_i)^(1/Δx)`` and the local power ``ln(m_{i+1}/m_i) / ln(x_{i+1}/x_i)``
  (0 for a linear total, p-1 for d^p, rising ≈ x·ln b under b^d). The interval is the spread of those
  local readings over the tail (the data have no noise; the spread says how far they have converged).
* **noisy** (time): each depth's value is a robust statistic of its repeats (the minimum:
  interference only ever slows a run). Two models with a fixed overhead, ``a + c·d^p`` and
  ``a + c·b^d`` (a, c ≥ 0), are fitted by weighted least squares on *relative* residuals (the same
  space for both, so their errors compare), profiled over p and b on fine grids; a depth whose repeats
  scatter weighs less (inverse bootstrap variance), and one far off both models too (Huber). The family
  is chosen on evidence that tells them apart (:mod:`~adprof.analysis.choice`: a grid edge, the
  information criterion, out-of-sample prediction of the deepest depths; ``Fit.model_choice`` says
  which); the interval of its parameter is a bootstrap over the repeats of each depth (over the fit's
  residuals for a depth with fewer than three repeats), widened to the profile likelihood. With fewer
  than five depths the overhead cannot be told from the growth and the models are fitted without it.

Then the decision is checked against its own evidence: the measured depth-halving ratio and tail
exponent must be what the deciding model implies (within the noise), else the series is
``inconclusive`` with the reason and the remedy. Readings: ``exponential`` (base b), ``superlinear``
(exponent ≥ 1.3), ``mild`` (1.15-1.3, n log n-like), ``linear`` (< 1.15; exponent 0 is flat) and
``inconclusive``.

Where each part lives: :mod:`~adprof.analysis.bands` (the exponent bands), :mod:`~adprof.analysis.models`
(the two models, their fits and intervals, the model's cost at a depth), :mod:`~adprof.analysis.marginal`
(the exact reading), :mod:`~adprof.analysis.noisy` (the noisy reading), :mod:`~adprof.analysis.consistency`
(the halving ratio and tail exponent against the model). This module decides (:func:`fit_growth`) and words
the readings; every name of those modules that was public here is still importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from adprof.analysis.bands import LINEAR_MAX, SUPERLINEAR_MIN, band, power_kind
from adprof.analysis.choice import EXP_MIN_BASE
from adprof.analysis.consistency import check_consistency, halving_pair
from adprof.analysis.marginal import EMERGING_RATE, RISE_RATE, TAIL, marginal_curve, marginal_reading
from adprof.analysis.models import BOOTSTRAP, CONFIDENCE, Observation, lower_quartile, predict
from adprof.analysis.noisy import FLAT_SHARE, OVERHEAD_POINTS, noisy_reading
from adprof.model import Fit
from adprof.words import depth_symbol, fit_figure

__all__ = [
    "BOOTSTRAP",
    "CONFIDENCE",
    "EMERGING_RATE",
    "EXP_MIN_BASE",
    "FLAT_SHARE",
    "LINEAR_MAX",
    "MIN_POINTS",
    "OVERHEAD_POINTS",
    "RISE_RATE",
    "STATISTIC",
    "SUPERLINEAR_MIN",
    "TAIL",
    "Fit",
    "Observation",
    "band",
    "depth_symbol",
    "fit_growth",
    "halving_pair",
    "halving_reading",
    "interval_text",
    "lower_quartile",
    "power_kind",
    "predict",
]

MIN_POINTS = 3  # fewer exact depths: inconclusive
TAIL_SPAN = 4.0  # a misfit reading is read again over the deepest depths spanning this ratio ...
TAIL_DEPTHS = 5  # ... when they are at least this many
STATISTIC = "minimum"


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


#: A noisy pathology reading needs this many depths to stand without its deepest one.
STANDS_WITHOUT = 6


def _rests_on_the_deepest(obs: list[Observation], fit: Fit, seed: int) -> None:
    """A noisy reading of a growth that the depths without the deepest one read as no growth at all hinges on one
    depth (all its runs slowed, as a loaded machine can): inconclusive, until repeats there (or deeper depths)
    settle it. A growth that the other depths show too (a power law, an exponential's consecutive depths) stands."""
    if fit.kind not in ("superlinear", "exponential") or len(obs) < STANDS_WITHOUT + 1:
        return
    rest = obs[:-1]
    d = np.array([o.depth for o in rest], float)
    v = np.array([o.value for o in rest], float)
    without = Fit(
        metric=fit.metric, kind="inconclusive", method="total", source=fit.source, metric_name=fit.metric_name
    )
    noisy_reading(rest, d, v, without, seed, bootstrap=False)
    if without.kind != "linear":
        return
    deepest = int(obs[-1].depth)
    figure = fit_figure(without, interval=False)
    fit.notes.append(f"without depth {deepest} the depths read linear ({figure}): the growth rests on that depth")
    fit.reason = (
        f"the {fit.kind} reading rests on depth {deepest} alone (the depths below it read linear, {figure}): "
        "measure it again, or deeper (add repeats, raise --cap)"
    )
    fit.kind, fit.predicts = "inconclusive", False


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
        # the decision reads this as a runaway (adprof.analysis.classify); the reading itself stays
        fit.notes.append(f"the bound at depth {cd} is {cv / pred:.0f}x what the {fit.kind} model predicts")
        fit.runaway_bound = cd


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
    coarse: bool = False,
    family: str | None = None,
    tail: bool = True,
) -> Fit:
    """Decide the growth of ``values`` against ``depths`` (see the module docstring).

    values: one number per depth, or the list of repeats of each depth (noisy time).
    exact: deterministic values (the marginal reading); else noisy (models with an overhead, bootstrap).
    censored: per point, True for a lower bound (killed at the cap); kept apart, never fitted as a value.
    Repeated depths are merged (their repeats pooled). family (noisy values): fitted in that family only
    (``power`` or ``exponential``: the cost's rate of a class decided elsewhere). tail: a noisy reading whose
    model misfits its deepest points is read again over its deepest depths (:func:`tail_reading`).
    """
    obs = _observations(depths, values, censored)
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
    reps = _read(exact_obs, d, v, fit, exact, seed, bootstrap, coarse, family)
    if len(d) and check_consistency(d, v, reps, fit, exact):
        fit.predicts = False  # a model that misses the deepest points predicts nothing deeper
        if tail and not exact and bootstrap and not coarse and family is None:
            deepest = tail_reading(obs, fit, metric=metric, source=source, clock=clock, seed=seed)
            if deepest is not None:
                return deepest
    if not exact and bootstrap and not coarse and family is None:
        _rests_on_the_deepest(exact_obs, fit, seed)
    if fit.depths:
        _use_censored(fit)
    _curve(fit)
    _finite(fit)
    return fit


def tail_reading(obs: list[Observation], misfit: Fit, **kw: object) -> Fit | None:
    """The reading of the deepest :data:`TAIL_SPAN`-fold of depths (at least :data:`TAIL_DEPTHS` of them), when
    the model of all the depths misfits the deepest points and that reading fits them: a local exponent that
    falls with depth (``d log d``: 1 + 1/ln d) or rises is no single power law, and the verdict is that of the
    deepest well-measured segment. None when the tail has too few depths or misfits too."""
    exact_depths = sorted({o.depth for o in obs if not o.censored})
    if not exact_depths:
        return None
    start = exact_depths[-1] / TAIL_SPAN
    kept = [o for o in obs if o.depth >= start]
    if len({o.depth for o in kept if not o.censored}) < TAIL_DEPTHS or len(kept) == len(obs):
        return None
    t = fit_growth(
        [o.depth for o in kept],
        [list(o.repeats) for o in kept],
        censored=[o.censored for o in kept],
        tail=False,
        **kw,  # type: ignore[arg-type]
    )
    if t.kind == "inconclusive":
        return None
    lo, hi = int(min(t.depths)), int(max(t.depths))
    t.notes = [
        *misfit.notes,
        f"read over the deepest depths {lo}..{hi}: the model of all the depths misfits them "
        f"({fit_figure(misfit) or misfit.kind} over {int(min(misfit.depths))}..{int(max(misfit.depths))}; "
        "the local exponent changes with depth)",
        *t.notes,
    ]
    t.tail_from = lo
    return t


def _observations(
    depths: Sequence[float], values: Sequence[float] | Sequence[Sequence[float]], censored: Sequence[bool] | None
) -> list[Observation]:
    """The finite repeats of each (depth, censored), pooled, sorted by depth."""
    cens = list(censored) if censored is not None else [False] * len(depths)
    pooled: dict[tuple[float, bool], list[float]] = {}
    for dd, vv, cc in zip(depths, values, cens, strict=False):
        reps = [float(x) for x in (vv if isinstance(vv, list | tuple | np.ndarray) else [vv]) if x is not None]
        reps = [x for x in reps if math.isfinite(x)]
        if dd is not None and reps:
            pooled.setdefault((float(dd), bool(cc)), []).extend(reps)
    return sorted((Observation(k[0], r, k[1]) for k, r in pooled.items()), key=lambda o: o.depth)


def _read(
    obs: list[Observation],
    d: np.ndarray,
    v: np.ndarray,
    fit: Fit,
    exact: bool,
    seed: int,
    bootstrap: bool,
    coarse: bool = False,
    family: str | None = None,
) -> np.ndarray | None:
    """The deciding reading of the exact (not censored) points; returns the bootstrap replicates, if any."""
    if len(d) >= 3 and np.ptp(v) <= (1e-12 if exact else 0.0) * max(float(np.max(np.abs(v))), 1e-300):
        fit.kind, fit.exponent, fit.model = "linear", 0.0, "constant"
        fit.overhead, fit.scale, fit.interval = float(v[0]), 0.0, [0.0, 0.0]
        fit.notes.append("flat: the cost does not change with depth")
    elif len(d) < MIN_POINTS:
        fit.reason = f"too few depths ({len(d)} measured, need {MIN_POINTS}): add depths or raise --cap"
    elif exact:
        marginal_reading(d, v, fit)
        if fit.kind != "inconclusive":
            marginal_curve(d, v, fit)
        fit.interval_method = "spread of the tail's local readings (exact values)"
    else:
        return noisy_reading(obs, d, v, fit, seed, bootstrap, coarse, family)
    return None


def _finite(fit: Fit) -> None:
    """Non-finite readings become None (0 in the lists)."""
    fit.base, fit.exponent = _num(fit.base), _num(fit.exponent)
    fit.halving_ratio = _num(fit.halving_ratio)
    fit.tail_ratios = [float(x) if math.isfinite(x) else 0.0 for x in fit.tail_ratios]
    fit.local_powers = [float(x) if math.isfinite(x) else 0.0 for x in fit.local_powers]


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
    """``d^1.72 [1.55, 1.90]``, ``x2.00/layer [1.99, 2.00]``, ``flat`` or ``""`` (:func:`adprof.words.fit_figure`)."""
    return fit_figure(fit)
