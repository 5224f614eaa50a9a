"""Shrinking a finding: delta debugging over the generator, keeping every step at which the finding still holds.

From the candidate, each round tries the reductions of the current generator (:func:`~.mutate.reductions`: a
node dropped, an edge moved to the latest state, a state, an output, a layer, a nesting removed, a rarer op
made plain) in their fixed order, and moves to the first one that still *holds*: evaluated like the search
evaluates (same target, same depths), the same component grows in the same family, from the same cell (axis,
reuse: a Fibonacci-like unroll stays an unroll), strongly (an exponential stays one and keeps half its
log-base: a tree walk's base follows the uses, and the minimal chain has the fewest, down to the square root
of the base it started from; a power law keeps its exponent within 0.2). When no reduction holds, the
generator is 1-minimal: dropping any one more thing loses the finding. The reductions of a round are evaluated
together (every lane busy), then read in order, so the result does not depend on which finished first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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


def holds(cand: Candidate, gen: Generator, ev: Evaluation | None) -> bool:
    """Whether ``gen``'s evaluation shows the candidate's finding (see the module docstring)."""
    if ev is None or ev.error or not ev.points:
        return False
    if (gen.axis, gen.reuses) != (cand.gen.axis, cand.gen.reuses):
        return False
    for comp, (ds, vs) in components(ev).items():
        if comp.name != cand.component:
            continue
        g = growth_of(ds, vs, comp.noisy)
        return g is not None and _as_strong(g, cand.growth)
    return False


def _as_strong(g: Growth, orig: Growth) -> bool:
    if not g.strong:
        return False
    if orig.family == EXPONENTIAL:
        return g.family == EXPONENTIAL and g.strength >= EXP_KEEP * orig.strength
    if orig.family == POWER:
        return g.family == POWER and g.rate >= max(STRONG_EXPONENT, orig.rate - EXPONENT_SLACK)
    return g.strength >= RISING_KEEP * orig.strength  # rising: any family, about as steep


def shrink(cand: Candidate, evaluate: Evaluator, deadline: float, batch: int = 16) -> ShrinkResult:
    """Shrink ``cand`` (see the module docstring) until 1-minimal or ``deadline`` (``time.monotonic()``);
    ``batch``: reductions evaluated at once (a costly target: as many as there are lanes)."""
    start = time.monotonic()
    res = ShrinkResult(gen=cand.gen, start=cand.gen)
    seen: set[str] = {cand.gen.key}
    while time.monotonic() < deadline:
        options = [r for r in reductions(res.gen) if r.key not in seen]
        seen.update(r.key for r in options)
        moved, complete = _round(cand, options, evaluate, deadline, max(1, batch), res)
        if moved is None:
            res.minimal = complete
            break
        res.gen = moved
        res.steps.append(moved)
    res.seconds = time.monotonic() - start
    return res


def _round(
    cand: Candidate,
    options: list[Generator],
    evaluate: Evaluator,
    deadline: float,
    batch: int,
    res: ShrinkResult,
) -> tuple[Generator | None, bool]:
    """The first of ``options`` (in order) that holds, evaluated ``batch`` at a time; ``(None, complete)`` when
    none does (``complete``: every one was measured before the deadline)."""
    for i in range(0, len(options), batch):
        if time.monotonic() >= deadline:
            return None, False
        chunk = options[i : i + batch]
        evaluations = evaluate(chunk)
        res.tried += len(chunk)
        for gen, ev in zip(chunk, evaluations, strict=True):
            if holds(cand, gen, ev):
                return gen, True
        if any(ev is None or ev.stopped in ("budget", "interrupted") for ev in evaluations):
            return None, False
    return None, True


__all__ = ["EXPONENT_SLACK", "EXP_KEEP", "RISING_KEEP", "ShrinkResult", "holds", "shrink"]
