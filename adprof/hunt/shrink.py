"""Shrinking a finding: delta debugging over the generator, keeping every step at which the finding still holds.

From the candidate, each round tries the reductions of the current generator (:func:`~.mutate.reductions`: a
node replaced by any of its arguments (a three-argument select by the value it passes on), an edge moved to the
latest state, a state, an output, a layer, a nesting removed, a rarer op
made plain) in their fixed order, and moves to the first one that still *holds*: evaluated like the search
evaluates (same target, same depths), the same component grows in the same family, from the same axis
(a Fibonacci-like unroll stays an unroll), strongly (an exponential stays one and keeps half its
log-base: a tree walk's base follows the uses, and the minimal chain has the fewest, down to the square root
of the base it started from; a power law keeps its exponent within 0.2, or within the half-width of the
re-measurement's own interval when that is wider). Each reduction is read against the reading of the generator it
reduces (measured the same way), not the starting program's: a smaller program with the same mechanism is not
refused because the start read steeper. When no reduction holds, the
generator is 1-minimal: dropping any one more thing loses the finding. The reductions of a round are evaluated
together (every lane busy), then read in order, so the result does not depend on which finished first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from adprof.analysis.growth import fit_growth
from adprof.hunt.evaluate import Evaluation
from adprof.hunt.fitness import EXPONENTIAL, POWER, STRONG_EXPONENT, Candidate, Growth, components, growth_of
from adprof.hunt.gen import Generator
from adprof.hunt.mutate import reductions

#: An exponential keeps at least this share of its log-base (a base of 4 may shrink to 2, the fewest uses; a
#: derivative order's x3 may not shrink to x1.4, another mechanism), a power law its exponent within this slack,
#: a rising tail this share of its steepness.
EXP_KEEP = 0.5
EXPONENT_SLACK = 0.2
RISING_KEEP = 0.9

#: Evaluates generators on the candidate's target (the search's way); None for one that could not be measured.
Evaluator = Callable[[Sequence[Generator]], list[Evaluation | None]]


@dataclass
class ShrinkResult:
    """The smallest generator found, the steps taken (each a smaller generator that held), the reductions tried,
    and whether it is 1-minimal (False: the time ran out first)."""

    gen: Generator
    start: Generator
    steps: list[Generator] = field(default_factory=list)
    tried: int = 0
    minimal: bool = False
    seconds: float = 0.0


def reading(cand: Candidate, gen: Generator, ev: Evaluation | None) -> Growth | None:
    """``gen``'s reading of the candidate's component (None: not measured, failed, or another niche)."""
    if ev is None or ev.error or not ev.points:
        return None
    if gen.axis != cand.gen.axis:  # an unroll stays an unroll; reuse may go where the class holds without it
        return None
    for comp, (ds, vs) in components(ev).items():
        if comp.name == cand.component:
            return growth_of(ds, vs, comp.noisy)
    return None


def holds(cand: Candidate, gen: Generator, ev: Evaluation | None, ref: Growth | None = None) -> bool:
    """Whether ``gen``'s evaluation shows the candidate's finding (see the module docstring), read against
    ``ref``: the reading of the generator it reduces (the candidate's own when None)."""
    g = reading(cand, gen, ev)
    return g is not None and _as_strong(g, ref or cand.growth)


def slack(g: Growth) -> float:
    """How far a power law's exponent may fall from the reading it reduces: :data:`EXPONENT_SLACK`, or more when
    the re-measurement's own interval (the spread of its tail's marginal readings) is wider."""
    if g.family != POWER or len(g.depths) < 4:
        return EXPONENT_SLACK
    fit = fit_growth(g.depths, g.values, exact=True)
    if fit.interval is None or len(fit.interval) != 2:
        return EXPONENT_SLACK
    lo, hi = fit.interval
    return max(EXPONENT_SLACK, (hi - lo) / 2)


def _as_strong(g: Growth, ref: Growth) -> bool:
    if not g.strong:
        return False
    if ref.family == EXPONENTIAL:
        return g.family == EXPONENTIAL and g.strength >= EXP_KEEP * ref.strength
    if ref.family == POWER:
        return g.family == POWER and g.rate >= max(STRONG_EXPONENT, ref.rate - slack(g))
    return g.strength >= RISING_KEEP * ref.strength  # rising: any family, about as steep


def shrink(cand: Candidate, evaluate: Evaluator, deadline: float, batch: int = 16) -> ShrinkResult:
    """Shrink ``cand`` (see the module docstring) until 1-minimal or ``deadline`` (``time.monotonic()``);
    ``batch``: reductions evaluated at once (a costly target: as many as there are lanes)."""
    start = time.monotonic()
    res = ShrinkResult(gen=cand.gen, start=cand.gen)
    path: set[str] = {cand.gen.key}
    measured: dict[str, Evaluation | None] = {}  # a reduction refused against one reading is read again, not re-run
    ref = cand.growth
    while time.monotonic() < deadline:
        options = [r for r in reductions(res.gen) if r.key not in path]
        moved, complete, got = _round(cand, options, evaluate, deadline, max(1, batch), res, ref, measured)
        if moved is None:
            res.minimal = complete
            break
        res.gen = moved
        path.add(moved.key)
        res.steps.append(moved)
        ref = got or ref  # the next reduction is read against this one's own reading
    res.seconds = time.monotonic() - start
    return res


def _round(
    cand: Candidate,
    options: list[Generator],
    evaluate: Evaluator,
    deadline: float,
    batch: int,
    res: ShrinkResult,
    ref: Growth,
    measured: dict[str, Evaluation | None],
) -> tuple[Generator | None, bool, Growth | None]:
    """The first of ``options`` (in order) that holds against ``ref``, evaluated ``batch`` at a time (those
    ``measured`` before are read again), with its reading; ``(None, complete, None)`` when none does
    (``complete``: every one was measured before the deadline)."""
    for i in range(0, len(options), batch):
        if time.monotonic() >= deadline:
            return None, False, None
        chunk = options[i : i + batch]
        new = [g for g in chunk if g.key not in measured]
        if new:
            for g, ev in zip(new, evaluate(new), strict=True):
                measured[g.key] = ev
            res.tried += len(new)
        evaluations = [measured[g.key] for g in chunk]
        for gen, ev in zip(chunk, evaluations, strict=True):
            if holds(cand, gen, ev, ref):
                return gen, True, reading(cand, gen, ev)
        if any(ev is None or ev.stopped in ("budget", "interrupted") for ev in evaluations):
            return None, False, None
    return None, True, None


__all__ = ["EXPONENT_SLACK", "EXP_KEEP", "RISING_KEEP", "ShrinkResult", "holds", "reading", "shrink", "slack"]
