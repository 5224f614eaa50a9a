"""Each cost read against what should explain it (pure; layer: analysis).

Three layers, each read against the one beneath it:

1. **the program**, deterministic, from the forward alone (``Point.program``): its size (``ops``), its
   arithmetic (``flops``, ``bytes``) and its intermediates (``intermediate_bytes``);
2. **the forward's cost** as measured (``record``, ``forward``);
3. **the gradient's cost** (the classified phases: transform, compile, backward; the saved-for-backward bytes).

What explains what: a transform or a compile the program's size; a run (eager backward) its arithmetic; the
saved bytes the intermediates; the gradient its forward (the gradient/forward ratio per depth, which the
cheap-gradient principle bounds by a small constant).

The **excess** of a cost over its explanation is what the thresholds hold. For power laws (cost ``d^p``,
explanation ``d^q``) it is ``p' = p - q + 1``: a linear program keeps exactly today's exponent, so every chain
whose program grows linearly reads as it always did. For an exponential cost (base ``b``) it is ``b / b_e``
over an exponential explanation, ``b`` over a power law. A program that grows superlinearly is reported as
such (the program's growth, not a finding); a cost that outgrows it by the thresholds stays a finding. Where
the forward's own cost outgrows the program the same way, the report says whose cost it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from adprof import model, words
from adprof.analysis.bands import LINEAR_MAX, SUPERLINEAR_MIN, power_kind
from adprof.analysis.growth import fit_growth
from adprof.analysis.span import visible_shortfall
from adprof.constants import EXPONENTIAL_RATIO
from adprof.model import PROGRAM_FIGURES, Explained, Fit, MemoryVerdict, Point, Series, Verdict, classified_phases
from adprof.words import fit_figure

#: A gradient/forward ratio stays flat when its log-log slope against depth (Theil-Sen, over every depth) stays
#: under this: the margin of the linear band (1.15 - 1), so a flat ratio can never turn a linear forward into a
#: mildly superlinear gradient. A falling ratio (the forward's own setup grows, the gradient's does not) is
#: bounded too, and counts as flat; only a growing one does not.
RATIO_FLAT = LINEAR_MAX - 1.0
#: Fewest depths a program figure (or a ratio) is read over.
MIN_DEPTHS = 3
#: The forward's phases, the first one timed is the forward's cost (eager: the forward call; traced: recording;
#: compile: the forward's own compile, measured beside the gradient's).
FORWARD_PHASES = ("forward", "record", "forward_compile")
#: The basis of each kind of cost, in order of preference (the first figure measured decides).
RUN_BASIS = ("flops", "bytes", "ops")
PROGRAM_BASIS = ("ops", "flops", "bytes")
#: Saved bytes: the forward's intermediates, or the bytes it touches where those grow faster (a tape may save an
#: array the forward reads, such as a dense layer's weights, which no op computes).
MEMORY_BASIS = ("intermediate_bytes", "bytes")
#: Axes along which the forward at each step is itself the previous step's derivative (nested ``grad``): its
#: program's growth is autodiff's own (jax-ml/jax#520), so it explains nothing; the raw growth is read, as before.
NESTED_AXES = ("order",)
#: A forward "grows the same way" as its gradient when its excess exponent is within this of the gradient's.
SAME_WAY = 0.35

_BACKWARD_KINDS = {model.SUPERLINEAR_BACKWARD, model.EXPONENTIAL_BACKWARD, model.MILD_BACKWARD}
#: The verdict kinds whose reading the excess may change (never an error, a runaway or a killed series).
_READ_KINDS = {*model.PATHOLOGIES, model.MILD_TRANSFORM, model.MILD_BACKWARD, model.INCONCLUSIVE}
_MEMORY_READ = {model.SUPERLINEAR_MEMORY, model.EXPONENTIAL_MEMORY, model.MILD_MEMORY, model.INCONCLUSIVE}


def program_of(point: Point) -> dict[str, float] | None:
    """The program figures of a point (None: unknown)."""
    prog = getattr(point, "program", None)
    return prog if isinstance(prog, dict) else None


def program_fits(series: Series) -> dict[str, Fit]:
    """Each program figure measured (positive) at :data:`MIN_DEPTHS` depths or more, read exactly against depth."""
    out: dict[str, Fit] = {}
    for name in PROGRAM_FIGURES:
        by_depth: dict[int, float] = {}
        for p in series.points:
            prog = program_of(p)
            value = prog.get(name) if prog else None
            if isinstance(value, int | float) and math.isfinite(value) and value > 0:
                by_depth[p.depth] = float(value)
        if len(by_depth) < MIN_DEPTHS:
            continue
        depths = sorted(by_depth)
        fit = fit_growth(depths, [by_depth[d] for d in depths], metric=f"program: {name}", exact=True, source="metric")
        fit.axis = series.axis
        out[name] = fit
    return out


def grows(fit: Fit | None) -> bool:
    """A program figure that grows faster than linear (mild, superlinear or exponential)."""
    if fit is None:
        return False
    if fit.kind == "exponential":
        return fit.base is not None and fit.base >= EXPONENTIAL_RATIO
    return fit.exponent is not None and fit.exponent >= LINEAR_MAX and fit.kind in ("mild", "superlinear")


def excess(cost: Fit, basis: Fit) -> tuple[str, float | None, list[float] | None, float | None]:
    """The reading of ``cost`` over ``basis``: (kind, excess exponent, its interval, excess base); kind is one of
    ``linear``, ``mild``, ``superlinear``, ``exponential``, ``inconclusive``."""
    if cost.kind == "exponential" and cost.base is not None:
        if basis.kind == "exponential" and basis.base is not None:
            ratio = cost.base / basis.base
            return ("exponential", None, None, ratio) if ratio >= EXPONENTIAL_RATIO else ("linear", 1.0, None, None)
        return "exponential", None, None, cost.base
    if cost.exponent is None:
        return cost.kind, None, None, None
    if basis.kind == "exponential":  # a power law grows slower than an exponential program
        return "linear", None, None, None
    q = basis.exponent if basis.exponent is not None else 1.0
    p = cost.exponent - q + 1.0
    lo, hi = cost.interval if cost.interval else (cost.exponent, cost.exponent)
    iv = [lo - q + 1.0, hi - q + 1.0]
    kind, _ = power_kind(p, iv[0], iv[1])
    return kind, p, iv, None


def _pick(fits: dict[str, Fit], order: Sequence[str]) -> str:
    return next((name for name in order if name in fits), "")


def basis_for(series: Series, verdict: Verdict | None = None) -> str:
    """The program figure that explains the deciding cost of a series: its arithmetic for a run (eager
    backward), its size for a transform or a compile, and for an eager call 0 that decides (the cache miss:
    recording and transforming the program, then its first backward)."""
    if verdict is not None and call0_decides(verdict):
        return "program"
    return "run" if series.mode == "eager" or classified_phases(series) == ("backward",) else "program"


def call0_decides(verdict: Verdict) -> bool:
    """The eager call 0 (its cache miss) decided the verdict: its steady calls are linear."""
    return verdict.call0_fit is not None and verdict.fit is verdict.call0_fit


def gradient_ratio(series: Series) -> tuple[list[int], list[float], str]:
    """The gradient's cost over its forward's, per depth: (depths, ratios, which phases)."""
    depths, grads, fwds, of = gradient_and_forward(series)
    return depths, [g / f for g, f in zip(grads, fwds, strict=True)], of


def gradient_and_forward(series: Series) -> tuple[list[int], list[float], list[float], str]:
    """The gradient's cost and its forward's, per depth (each the least inflated run of its depth): (depths,
    gradient seconds, forward seconds, which phases)."""
    grad = classified_phases(series)
    fwd = next((ph for ph in FORWARD_PHASES if any(p.times.get(ph) for p in series.points)), "")
    if not fwd or fwd in grad:
        return [], [], [], ""
    grads: dict[int, float] = {}
    fwds: dict[int, float] = {}
    for p in series.points:
        if p.status != model.PointStatus.EXACT:
            continue
        g, f = fastest(p, grad), fastest(p, (fwd,))
        if g is not None and f is not None and f > 0 and g > 0:  # each the least inflated run of its depth
            grads[p.depth], fwds[p.depth] = min(g, grads.get(p.depth, g)), min(f, fwds.get(p.depth, f))
    depths = sorted(grads)
    return depths, [grads[d] for d in depths], [fwds[d] for d in depths], f"{'+'.join(grad)}/{fwd}"


def fastest(point: Point, phases: Sequence[str]) -> float | None:
    """The seconds of ``phases`` of a point: the sum of each phase's fastest repeat (its time where it has none),
    or its CPU time where the point carries it and it is less (a preempted run's wall time is inflated by load)."""
    present = []
    for ph in phases:
        if point.times.get(ph) is None:
            continue
        wall = min(point.samples[ph]) if point.samples.get(ph) else point.times[ph]
        cpu = point.cpu_times.get(ph)
        present.append(min(wall, cpu) if cpu is not None and cpu > 0 else wall)
    return float(sum(present)) if present else None


def _pairwise_slopes(depths: Sequence[int], ratios: Sequence[float]) -> list[float]:
    """The sorted log-log slopes of the ratio between every two depths ([] with fewer than :data:`MIN_DEPTHS`
    positive ones, or depths that do not grow)."""
    pairs = [(d, r) for d, r in zip(depths, ratios, strict=True) if d > 0 and r > 0]
    if len(pairs) < MIN_DEPTHS or pairs[-1][0] <= pairs[0][0]:
        return []
    pts = [(math.log(d), math.log(r)) for d, r in pairs]
    return sorted((y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(pts) for x2, y2 in pts[i + 1 :] if x2 > x1)


def ratio_slope(depths: Sequence[int], ratios: Sequence[float]) -> float | None:
    """Theil-Sen log-log slope of the ratio over every depth (at least three): the median of the pairwise slopes,
    which the widest pairs steady and one slow run moves little."""
    slopes = _pairwise_slopes(depths, ratios)
    if not slopes:
        return None
    mid = len(slopes) // 2  # Theil-Sen: the median of the pairwise slopes (one slow run moves it little)
    return slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2


#: Two-sided normal quantile of Sen's interval on the ratio's slope (95%).
RATIO_Z = 1.96


def ratio_slope_low(depths: Sequence[int], ratios: Sequence[float]) -> float | None:
    """The lower end of Sen's 95% interval on the Theil-Sen slope (:func:`ratio_slope`): the pairwise slope of rank
    ``(N - z sqrt(var S)) / 2`` of the ``N`` sorted ones, ``var S`` Kendall's ``n(n-1)(2n+5)/18``. Exact ratios give
    the slope itself; a timed ratio is called growing only where its slope is confidently over :data:`RATIO_FLAT`
    (one slow run of a few milliseconds moves it, not the reading)."""
    slopes = _pairwise_slopes(depths, ratios)
    if not slopes:
        return None
    n = sum(1 for d, r in zip(depths, ratios, strict=True) if d > 0 and r > 0)
    c = RATIO_Z * math.sqrt(n * (n - 1) * (2 * n + 5) / 18.0)
    rank = int((len(slopes) - c) / 2.0)
    return slopes[min(max(rank, 0), len(slopes) - 1)]


def _growth_key(fit: Fit) -> tuple[int, float]:
    """Order program figures by growth: exponentials first (by base), then power laws (by exponent)."""
    if fit.kind == "exponential" and fit.base is not None:
        return 1, fit.base
    return 0, fit.exponent if fit.exponent is not None else 0.0


def _verdict_kind(kind: str, backward: bool) -> str:
    return {
        "linear": model.LINEAR,
        "inconclusive": model.INCONCLUSIVE,
        "mild": model.MILD_BACKWARD if backward else model.MILD_TRANSFORM,
        "superlinear": model.SUPERLINEAR_BACKWARD if backward else model.SUPERLINEAR_TRANSFORM,
        "exponential": model.EXPONENTIAL_BACKWARD if backward else model.EXPONENTIAL_TRANSFORM,
    }.get(kind, model.INCONCLUSIVE)


def _memory_kind(kind: str) -> str:
    return {
        "linear": model.MEMORY_LINEAR,
        "inconclusive": model.INCONCLUSIVE,
        "mild": model.MILD_MEMORY,
        "superlinear": model.SUPERLINEAR_MEMORY,
        "exponential": model.EXPONENTIAL_MEMORY,
    }.get(kind, model.INCONCLUSIVE)


def _forward_fit(series: Series) -> tuple[str, Fit | None]:
    """The forward's own time against depth (its first timed phase of :data:`FORWARD_PHASES`)."""
    grad = classified_phases(series)
    fwd = next((ph for ph in FORWARD_PHASES if ph not in grad and any(p.times.get(ph) for p in series.points)), "")
    if not fwd:
        return "", None
    pts = [p for p in series.points if p.status == model.PointStatus.EXACT and p.times.get(fwd)]
    if len({p.depth for p in pts}) < MIN_DEPTHS:
        return fwd, None
    values = [list(p.samples.get(fwd) or [p.times[fwd]]) for p in pts]
    fit = fit_growth([p.depth for p in pts], values, metric=f"time: {fwd}", source="time", bootstrap=False, tail=False)
    fit.axis = series.axis
    return fwd, fit


def _growth_class(kind: str) -> str:
    return "exponential" if kind == "exponential" else "power" if kind in ("mild", "superlinear") else ""


def _whose(ex: Explained, series: Series, cost: Fit, cost_kind: str) -> None:
    """A finding the forward's own cost shares: name the forward's phase (it stays a finding)."""
    phase, fwd = _forward_fit(series)
    if fwd is None or _growth_class(fwd.kind) == "":
        return
    basis = ex.program_fit
    if basis is not None and ex.superlinear:
        fkind, fp, _, fbase = excess(fwd, basis)
    else:
        fkind, fp, fbase = fwd.kind, fwd.exponent, fwd.base
    if _growth_class(fkind) != _growth_class(cost_kind) or fkind == "mild":
        return
    if fkind == "exponential":
        same = fbase is not None and (ex.excess_base or cost.base or 0) > 0
    else:
        cp = ex.excess_exponent if ex.superlinear else cost.exponent
        same = fp is not None and cp is not None and abs(fp - cp) <= SAME_WAY
    if same:
        ex.forward_phase, ex.forward_fit = phase, fwd


def explain_series(series: Series, verdict: Verdict) -> Explained | None:
    """Read the verdict's cost (and its memory) against what should explain them, and apply the reading: where the
    program grows superlinearly the verdict (and the memory verdict) take the excess' reading. None when the
    series carries no program figures and no forward to read the gradient against."""
    fits = program_fits(series)
    depths, grads, fwds, of = gradient_and_forward(series)
    ratios = [g / f for g, f in zip(grads, fwds, strict=True)]
    if not fits and not ratios:
        return None
    slope = ratio_slope(depths, ratios)
    low = ratio_slope_low(depths, ratios)
    grad_low = ratio_slope_low(depths, grads)  # Sen's bound works on any positive series against depth
    grad_grows = None if grad_low is None else grad_low >= RATIO_FLAT
    ex = Explained(
        program_fits=fits,
        ratio_depths=depths,
        ratios=ratios,
        ratio_of=of,
        ratio_slope=slope,
        # a ratio that rises while the gradient's own cost does not grow is its forward falling: bounded
        ratio_flat=None if slope is None or low is None else low < RATIO_FLAT or grad_grows is False,
        gradient_grows=grad_grows,
        raw_kind=verdict.kind,
    )
    ex.basis = _pick(fits, RUN_BASIS if basis_for(series, verdict) == "run" else PROGRAM_BASIS)
    cost = verdict.rate_fit or verdict.reading
    nested = series.axis in NESTED_AXES  # the program is the previous order's gradient: it explains nothing
    ex.superlinear = grows(ex.program_fit) and not nested
    if cost is not None and ex.superlinear and verdict.kind in _READ_KINDS and not verdict.killed:
        _apply(ex, series, verdict, cost)
    if not nested:
        _time_explained(ex, series, verdict)
    if cost is not None and verdict.kind in model.PATHOLOGIES and not verdict.killed:
        _whose(ex, series, cost, cost.kind)
        if words.whose_text(ex):
            verdict.evidence.append(words.whose_text(ex))
    if verdict.memory is not None and not nested:
        _apply_memory(ex, verdict.memory, series)
    return ex


def _apply(ex: Explained, series: Series, verdict: Verdict, cost: Fit) -> None:
    """The verdict reads the excess of its cost over a superlinear program."""
    basis = ex.program_fit
    assert basis is not None
    if verdict.kind == model.INCONCLUSIVE and (cost.kind != "inconclusive" or cost.exponent is None):
        return  # inconclusive for another reason (a jump, a contradiction): the excess does not settle it
    kind, p, iv, base = excess(cost, basis)
    ex.excess_kind, ex.excess_exponent, ex.excess_interval, ex.excess_base = kind, p, iv, base
    backward = verdict.kind in _BACKWARD_KINDS or (series.mode == "eager" and not call0_decides(verdict))
    head = f"the program grows {words.program_text(ex)}"
    line = f"{head}; read against it the cost grows {words.excess_text(ex) or kind} ({kind})"
    flat = ex.ratio_slope is not None and ex.ratio_slope < RATIO_FLAT  # the estimate itself, not its interval
    short = visible_shortfall(cost) if kind in ("superlinear", "mild") else ""
    if short:
        # a healthy dense layer's backward is a constant until its matmuls show at the widest sizes: one slow
        # point there reads width^4 against width^2, a rate the data cannot carry
        kind = ex.excess_kind = "inconclusive"
        line = f"{head}; read against it the cost grows {words.excess_text(ex)}, but {short} (inconclusive)"
    if kind == "inconclusive" and flat and iv is not None and (iv[0] < SUPERLINEAR_MIN or short):
        # noisy time, undecided against the arithmetic: the gradient against its forward decides (it does not
        # outgrow it: the ratio stays flat), where it does not confidently outgrow the arithmetic either
        kind = ex.excess_kind = "linear"
        line += f"; against its forward it stays flat ({words.ratio_text(ex)}, slope {ex.ratio_slope:.2f}): linear"
        # what a guard holds is then the gradient's growth against its forward, not the undecided excess
        assert ex.ratio_slope is not None
        ex.excess_exponent, ex.excess_interval = 1.0 + max(ex.ratio_slope, 0.0), None
    new = _verdict_kind(kind, backward)
    verdict.evidence.insert(0, line)
    verdict.key_evidence.insert(0, line)
    if new == verdict.kind:
        return
    verdict.kind = new
    if new not in model.FINDINGS:
        verdict.cause = f"{head}: the gradient's cost grows with it, not faster ({kind} against it)"
        if words.ratio_text(ex):
            verdict.cause += f"; {words.ratio_text(ex)}"
        verdict.remedies = []
        verdict.reason = "" if new != model.INCONCLUSIVE else verdict.reason


def memory_bound(series: Series, basis: str) -> float | None:
    """The largest ratio of saved-for-backward bytes to the program's ``basis`` figure over the depths that carry
    both (None: fewer than :data:`MIN_DEPTHS` such depths)."""
    ratios = {
        p.depth: p.memory[model.SAVED_BYTES] / p.program[basis]
        for p in series.points
        if p.memory and p.memory.get(model.SAVED_BYTES) is not None and p.program and (p.program.get(basis) or 0) > 0
    }
    return max(ratios.values()) if len(ratios) >= MIN_DEPTHS else None


def _apply_memory(ex: Explained, mv: MemoryVerdict, series: Series) -> None:
    """Saved bytes read against the forward's intermediates. Where that reading is undecided (an exact figure
    whose steps are uneven: XLA's fusion changes what is saved from one size to the next), saved bytes that never
    exceed the intermediates at any depth are the program's own memory: the gradient saves no more than a tape
    that keeps each intermediate once."""
    ex.memory_basis = max(
        (name for name in MEMORY_BASIS if name in ex.program_fits),
        key=lambda name: _growth_key(ex.program_fits[name]),
        default="",
    )
    basis = ex.program_fits.get(ex.memory_basis)
    fit = mv.knee.after if mv.knee is not None and mv.knee.after is not None else mv.fit
    ex.memory_raw_kind = mv.kind
    ex.memory_superlinear = grows(basis)
    if basis is None or fit is None or not ex.memory_superlinear or mv.kind not in _MEMORY_READ or mv.leaking:
        return
    kind, p, _, _ = excess(fit, basis)
    line = f"the program grows {words.memory_program_text(ex)}; the saved bytes read against it: {kind}"
    if kind == "inconclusive":
        ex.memory_bound = memory_bound(series, "intermediate_bytes")  # whichever basis grows faster
        if ex.memory_bound is not None and ex.memory_bound <= 1.0:
            kind, p = "linear", 1.0
            line += (
                f"; at most {ex.memory_bound:.2f}x the forward's intermediates at every depth: no more than a tape "
                "that keeps each intermediate once (linear)"
            )
    ex.memory_excess_kind, ex.memory_excess_exponent = kind, p
    new = _memory_kind(kind)
    mv.evidence.insert(0, line)
    if new == mv.kind:
        return
    mv.kind = new
    if new not in model.MEMORY_FINDINGS:
        mv.cause = (
            f"the program's own memory: it grows {words.memory_program_text(ex)}, and the gradient saves no more than "
            "the forward holds"
        )
        mv.reason = ""  # the remedies stay, as advice


#: The phases whose time the whole point's reading sums (the gradient's, the forward's, the prepared run's).
WHOLE_PHASES = ("record", "transform", "lower", "compile", "drop", "run", "forward", "backward")


def _whole_fit(series: Series, phases: tuple[str, ...] = ()) -> Fit | None:
    """The time of ``phases`` (default: the whole point's; each phase's fastest repeat, summed) against depth, or
    None under three depths."""
    phases = phases or tuple(dict.fromkeys((*classified_phases(series), *WHOLE_PHASES)))
    by_depth: dict[int, float] = {}
    for p in series.points:
        t = fastest(p, phases) if p.status == model.PointStatus.EXACT else None
        if t is not None and t > 0:
            by_depth[p.depth] = min(t, by_depth.get(p.depth, t))
    if len(by_depth) < MIN_DEPTHS:
        return None
    depths = sorted(by_depth)
    fit = fit_growth(
        depths, [by_depth[d] for d in depths], metric=f"time: {'+'.join(phases)}", source="time", tail=False
    )
    fit.axis = series.axis
    return fit


def _time_explained(ex: Explained, series: Series, verdict: Verdict) -> None:
    """A deterministic metric that reads healthy, made inconclusive by time (a measured jump, or the whole point's
    time growing while the metric does not): where the program's arithmetic grows superlinearly and the time grows
    no faster than it (its excess linear or mild), the arithmetic explains the time, and the metric's reading
    stands. A stopped point's bound, a knee or a metric that reads no law is left inconclusive."""
    fit = verdict.fit
    if verdict.kind != model.INCONCLUSIVE or fit is None or fit.source == "time" or fit.kind not in ("linear", "mild"):
        return
    if verdict.knee is not None or any(j.bound for j in verdict.jumps) or verdict.killed:
        return
    arith_name = _pick(ex.program_fits, RUN_BASIS)
    arith = ex.program_fits.get(arith_name)
    if arith is None or not grows(arith):
        return
    jump = next((j for j in verdict.jumps if j.phase), None)  # a jump: the phase that grew; else the whole point
    timed = _whole_fit(series, (jump.phase,) if jump is not None and jump.phase else ())
    if timed is None or timed.kind == "inconclusive" and timed.exponent is None:
        return
    kind, p, iv, _ = excess(timed, arith)
    # the metric decided; time only casts a doubt, which stands where time confidently outgrows the arithmetic
    confident = kind == "exponential" or (
        kind in ("superlinear", "inconclusive") and iv is not None and iv[0] >= SUPERLINEAR_MIN
    )
    if confident or (kind == "inconclusive" and iv is None):
        return
    kind = kind if kind != "inconclusive" else "not confidently over it"
    backward = series.mode == "eager"
    was = verdict.reason
    verdict.kind, verdict.reason = _verdict_kind(fit.kind, backward), ""
    verdict.key_evidence = [e for e in verdict.key_evidence if e is not was]  # the line that reason is (the object)
    verdict.evidence = [e for e in verdict.evidence if e is not was]
    figure = fit_figure(timed) or timed.kind
    where = f"{jump.phase}'s time" if jump is not None and jump.phase else "the whole point's time"
    verdict.evidence.append(
        f"{where} grows {figure}, as the program's arithmetic does "
        f"({fit_figure(arith)}; read against it: {kind}): the arithmetic explains it, not the gradient"
    )
    ex.excess_kind = ex.excess_kind or (
        "linear"
        if p is not None and p < LINEAR_MAX
        else "mild"
        if p is not None and p < SUPERLINEAR_MIN
        else "superlinear"
    )
    verdict.cause = f"the program grows {fit_figure(arith)}: its arithmetic; {fit.metric} reads {fit.kind}"
    verdict.remedies = []
