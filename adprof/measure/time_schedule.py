"""The depth schedule of a series that time decides (no engine counters, no deterministic metric).

Time is noisy and a program's fixed overhead can hide its growth at small depths, so the schedule of
exact series (unit steps, then doublings, stopped by a two-point prediction) does not fit it. This one
is a pure function of the points measured so far and the current fit (:meth:`TimeSchedule.next_step`):

1. **explore / deepen**: doublings from the first depth (the cost is often flat at first: the growth
   shows once it is several times the first point's), each step as long as a *pessimistic* extrapolation
   (the steepest per-layer rate of the totals, of the marginal cost, and of the growing part above the
   overhead level, which sees an exponential still hidden under an overhead) allows: under the cap, or,
   when the deciding model predicts (``Fit.predicts``: it fits, is not pinned at a grid edge, its interval
   is closed at the top), that model's point estimate under the cap and the extrapolation well under the
   timeout. Only such a model stops the deepening (:attr:`Deepening.PREDICTED`); a step of one layer is
   otherwise always allowed: a prediction the data cannot support never stops a series, and the kill at
   the timeout is the safety net (a killed point is bisected below; past :data:`MAX_KILLS` kills the depths below
   are refined and swept, never deeper). A point over the cap closes it.
2. **fill**: a growth that just emerged above the overhead (its rate not measured yet), a step whose cost
   grew faster than a power law allows (x :data:`FILL_RATIO` with a local exponent above
   :data:`FILL_EXPONENT`, e.g. x86 from 8 to 16), the step up to the first depth over the cap or killed,
   and any step in the growing range once the fit reads exponential, are bisected: exponentials get
   consecutive depths.
3. **refine**: gaps wider than :data:`REFINE_RATIO` are bisected (geometrically), deepest first, where the
   growth shows (:func:`informative`), for enough depths to bound the model's parameter.
4. **repeat**: while the reading is open, a deep informative depth whose minimum rests on few runs (a second
   mode of the noise: runs within :data:`FAST_WITHIN` of the minimum are few) is run again, deepest first,
   until measuring it again would most likely not move its minimum (the chance that as many runs all miss
   the fast mode under :data:`SHAKY_CHANCE`): the bootstrap interval of the fit rests on these depths.
5. **sweep**: every informative depth is measured again, alternately downwards and upwards, so that a
   drift of the machine does not look like growth, and each depth gets repeats for a robust statistic.
   The series loop ends the sweeps once the decision holds over two passes (or at the budget).

**Read against the program** (issue #34): where the points carry the program's figures (``Point.program``) and the
one that explains the cost (a run's arithmetic, a transform's or compile's size: :func:`explanation`) grows
superlinearly, every extrapolation is of the *excess*: the cost over that figure, continued as above, times the
figure's own law at the next depth (:class:`Explanation`). A healthy program whose arithmetic grows d² is then
extrapolated as d², never as the steep per-layer rate a d² series shows from a shallow depth (a runaway it is
not), and a model's prediction is bounded by the steepest law of the excess. A linear program reads as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from adprof.constants import CPU_CLOCKS
from adprof.measure import bounds
from adprof.model import Fit, Point, cost_phases, model_cost, time_value

FILL_EXPONENT = 3.5  # a step whose local power-law exponent passes this is filled in ...
FILL_RATIO = 3.0  # ... when its cost also grew more than this (a burst of load is at most x2)
GROWTH_SHARE = 0.1  # informative depths: the growing part's share of the cost >= this x its share at the top
ANCHORS = 3  # the shallowest depths, always informative (they pin the overhead)
BASE_SPAN = 1.25  # an exponential's interval hi/lo that settles it (about +-10% around the base)
MODELS = ("a + c*d^p", "a + c*b^d")
EMERGE_SHARE = 0.1  # a growing part above this share of the overhead level is measured (below: noise)
#: Points killed at the timeout before a time-decided series stops bisecting towards them (each bisects below it);
#: past them the depths already under the cap are still refined and swept (a compile cliff past 80 unrolls killed
#: 85, 92 and 106, and the series ended with 53 -> 79 one step of x4, its law undecided and 228 s of 360 left).
MAX_KILLS = 2
REFINE_RATIO = 2 ** (1 / 3)  # refined spacing (3 depths per doubling)
KILL_SHARE = 0.8  # steps stay pessimistically under this share of the timeout
PREDICT_MARGIN = 1.2  # a model's prediction within 20 % of the cap counts as over it (timing noise)
MIN_PASSES = 2  # measurements per depth before a decision may end the sweeps
MAX_PASSES = 6
MAX_POINTS = 240  # points per series at most (a program of microseconds would otherwise sweep for ever)
TIME_DEPTH = 256  # where a series free to go deeper first stops deepening (then deeper while the verdict is open)
DEEPEST = 65536  # the deepest depth a series free to go deeper may reach (a flat cost would double for ever)
#: ... along another axis than layers (derivative order, unroll count): each step nests the whole program once more
#: (a 512th derivative overflows the interpreter's stack long before it tells anything)
AXIS_DEEPEST = 32

EXPLORE, DEEPEN, FILL, REFINE, SWEEP = "explore", "deepen", "fill", "refine", "sweep"
CONFIRM = "confirm"  # a second run at the deepest depth of an open reading, before refining or sweeping
REPEAT = "repeat"  # another run of a deep depth whose minimum rests on few runs (an open reading)
FAST_WITHIN = 1.05  # runs within this factor of a depth's minimum are its fast mode
SHAKY_CHANCE = 0.025  # a depth's minimum is shaky while (slow share)^(runs) is above this
SHAKY_DEPTHS = 3  # the deepest informative depths whose minimum is made firm
MAX_REPEATS = 10  # runs of one depth at most for its minimum (beyond, the noise is continuous: the fit's own)
EXTEND_RATIO = 1.25  # an open series' deepest depth moves at least this much deeper (else: no deeper)
#: The program figure that explains a series' cost, in order of preference (issue #34, as
#: :mod:`adprof.analysis.explained` reads it): a run against its arithmetic, a transform or compile against its size.
RUN_FIGURES = ("flops", "bytes", "ops")
SIZE_FIGURES = ("ops", "flops", "bytes")
#: Phases that run the program (the rest transform or compile it).
RUN_PHASES = frozenset({"forward", "forward0", "backward", "backward0", "run"})


@dataclass
class Step:
    """The next point of a time-decided series: its depth, why, and the cost it is expected to take."""

    depth: int
    why: str  # EXPLORE | DEEPEN | FILL | REFINE | SWEEP | CONFIRM | REPEAT
    expected: float | None = None  # seconds of its cost phases (measured there before, or extrapolated)


class Deepening(StrEnum):
    """Where deepening stands: still going, or why it ended."""

    OPEN = "open"
    CAP = "cap"  # a deeper point was measured over the cap (or killed at the timeout)
    PREDICTED = "predicted"  # a model that fits predicts the next depth over the cap
    MAX_DEPTH = "max-depth"  # the deepest depth of the range is measured


@dataclass
class Frontier:
    """Where deepening stands: the deepest depth measured under the cap, and whether (why) it ended."""

    depth: int | None = None
    reason: Deepening = Deepening.OPEN
    predicted: float | None = None  # the prediction that ended it


@dataclass(frozen=True)
class Explanation:
    """The program figure that explains a series' cost, where it grows superlinearly: its value at each measured
    depth, and its own power law past the deepest (``exponent``, exact: read between the deepest two depths)."""

    figure: str
    values: dict[int, float]
    exponent: float

    def at(self, x: int) -> float:
        """The figure at depth ``x``: measured, else continued along its power law from the nearest depth below."""
        if x in self.values:
            return self.values[x]
        below = [d for d in self.values if d <= x] or [min(self.values)]
        d = max(below)
        return self.values[d] * (x / d) ** self.exponent

    def excess(self, depths: Sequence[int], costs: Sequence[float]) -> list[float]:
        """The costs over the figure (per unit of it) at ``depths``."""
        return [c / self.values[d] for d, c in zip(depths, costs, strict=True)]


def explanation(points: Sequence[Point], mode: str, phases: Sequence[str] = ()) -> Explanation | None:
    """The program figure that explains the cost of these points where it grows superlinearly (its local exponent
    between the deepest two depths at least :data:`LINEAR_EDGE`), else None: a linear program, or no program figures
    (the schedule then reads the raw costs, as before)."""
    run = all(ph in RUN_PHASES for ph in (tuple(phases) or cost_phases(mode)))
    for name in RUN_FIGURES if run else SIZE_FIGURES:
        values: dict[int, float] = {}
        for p in points:
            v = p.program.get(name) if isinstance(p.program, dict) else None
            if isinstance(v, int | float) and math.isfinite(v) and v > 0 and p.depth > 0:
                values[p.depth] = float(v)
        if len(values) < 2:
            continue
        d1, d2 = sorted(values)[-2:]
        q = math.log(values[d2] / values[d1]) / math.log(d2 / d1)
        return Explanation(name, values, q) if q >= LINEAR_EDGE else None
    return None


def excess_extrapolation(depths: Sequence[int], low: Sequence[float], x: int, ex: Explanation) -> float:
    """The cost at ``x`` read against the program (``ex``): the deepest cost plus the marginal cost per unit of the
    program (between the deepest two depths) times the program's growth to ``x``, continued at the steepest
    per-layer rate of the excess (of the costs per unit of the program, and of the marginal cost per unit: 1 while
    the cost grows as the program does, an overhead included); never less than the deepest cost."""
    top, v = depths[-1], low[-1]
    if len(depths) < 2 or x <= top:
        return v
    a_top = ex.values[top]
    rate = 1.0
    for dj, vj in zip(depths[-4:-1], low[-4:-1], strict=True):  # the costs per unit of the program
        per_j, per_top = vj / ex.values[dj], v / a_top
        if per_j > 0 and per_top > per_j and top > dj:
            rate = max(rate, (per_top / per_j) ** (1.0 / (top - dj)))
    tail = list(zip(depths[-3:], low[-3:], strict=True))
    marginals = [
        (v2 - v1) / (ex.values[d2] - ex.values[d1])
        for (d1, v1), (d2, v2) in zip(tail, tail[1:], strict=False)
        if ex.values[d2] > ex.values[d1]
    ]
    if len(marginals) == 2 and marginals[0] > 0 and marginals[1] > marginals[0]:
        rate = max(rate, (marginals[1] / marginals[0]) ** (2.0 / (top - depths[-3])))
    m = max(marginals[-1], 0.0) if marginals else v / a_top
    try:
        return max(v, v + m * min(rate, 50.0) ** (x - top) * (ex.at(x) - a_top))
    except OverflowError:
        return math.inf


def point_seconds(point: Point, mode: str, phases: Sequence[str] = ()) -> float | None:
    """The classified cost of a point (the series' cost phases, default the mode's; or the process for a command
    without phases)."""
    v = time_value(point, tuple(phases) or cost_phases(mode))
    if v is None:
        v = point.times.get("process")
    return v


def time_decided(point: Point, mode: str, deciding_metrics: Sequence[str], cost: Sequence[str] = ()) -> bool:
    """True when time decides this series: the point has no counters and no deciding metric on its cost phases
    (``cost``: the series', default the mode's)."""
    phases = (*(tuple(cost) or cost_phases(mode)), "process")
    if any(isinstance(point.counters.get(ph), dict) and point.counters[ph] for ph in phases):
        return False
    return not any(name in point.metrics.get(ph, {}) for ph in phases for name in deciding_metrics)


def by_depth(
    points: Sequence[Point], mode: str, cap: float, phases: Sequence[str] = ()
) -> tuple[dict[int, list[float]], set[int], bool]:
    """Costs per depth of the exact points, the depths whose every measurement has a phase over ``cap``, and
    whether a point was censored."""
    costs: dict[int, list[float]] = {}
    fits: set[int] = set()  # depths measured under the cap at least once
    over: set[int] = set()
    censored = False
    for p in points:
        if p.censored:
            censored = True
            over.add(p.depth)
            continue
        v = point_seconds(p, mode, phases)
        if v is None:
            continue
        costs.setdefault(p.depth, []).append(v)
        if any(t > cap for t in p.times.values() if t is not None):
            over.add(p.depth)
        else:
            fits.add(p.depth)
    return costs, over - fits, censored


class TimeSchedule:
    """Depths for a time-decided series from ``lo`` up to ``hi`` (see the module docstring); ``limit``: how deep
    :meth:`extend` may move ``hi`` (the deepest depth is then a safety, not a stop)."""

    def __init__(
        self,
        lo: int,
        hi: int,
        mode: str,
        cap: float,
        timeout: float,
        limit: int | None = None,
        phases: Sequence[str] = (),
    ) -> None:
        self.phases = tuple(phases)  # the series' cost phases (empty: the mode's)
        self.lo, self.hi = max(1, int(lo)), max(1, int(hi))
        self.limit = max(self.hi, int(limit or hi))
        self.mode, self.cap, self.timeout = mode, cap, timeout
        self.share = 1.0  # the largest phase's time over the classified cost (the cap applies per phase)
        #: The lower envelope (depths under the cap, the least cost of each) the model's predictions are bounded by.
        self._envelope: tuple[list[int], list[float]] = ([], [])
        #: The program figure the costs are read against (:func:`explanation`; None: the raw costs).
        self._explain: Explanation | None = None
        #: Points the budget still has room for (the series loop sets it before each step; None: unbounded):
        #: refining stops where the depths could not each get MIN_PASSES more repeats.
        self.room: float | None = None
        #: The kills are spent (more than MAX_KILLS points killed at their timeout): no more bisecting towards them;
        #: the depths below are still refined and swept while the budget lasts.
        self.kills_spent = False

    def doubling_cost(self, points: Sequence[Point], x: int | None = None) -> float:
        """The pessimistic cost of one point at the next doubling of the deepest depth, or at ``x`` (inf: none
        measured)."""
        costs, over, _ = self._by_depth(points)
        under = sorted(d for d in costs if d not in over)
        if not under:
            return math.inf
        self._envelope = (under, [min(costs[d]) for d in under])
        depths, low = thinned(under, [min(costs[d]) for d in under])
        return self.extrapolated(depths, low, x if x is not None else min(2 * self.hi, self.limit))

    def extend(self, points: Sequence[Point], fit: Fit | None, afford: Callable[[float], bool] | None = None) -> bool:
        """Move the deepest depth deeper, when the frontier is there and the limit allows it: to the deepest depth
        up to one doubling (at least :data:`EXTEND_RATIO` deeper) whose cost the cap allows (predicted well under it)
        and the budget can ``afford`` (its pessimistic cost); True if it did. An open series goes as deep as the cap
        allows (depth 384 when 512 is over it) before it spends its budget on repeats of shallow depths."""
        front = self.frontier(points, fit)
        if front.reason is not Deepening.MAX_DEPTH or self.hi >= self.limit or front.depth is None:
            return False
        least = min(self.hi + max(1, math.ceil((EXTEND_RATIO - 1) * self.hi)), self.limit)
        for x in range(min(2 * self.hi, self.limit), least - 1, -max(1, self.hi // 8)):
            cost = self.doubling_cost(points, x)
            if self._ok(x, cost, fit) and (afford is None or afford(cost)):
                self.hi = x
                return True
        return False

    # -- what was measured ------------------------------------------------------------------------------
    def _by_depth(self, points: Sequence[Point]) -> tuple[dict[int, list[float]], set[int], bool]:
        """Costs per depth of the exact points, the depths over the cap (every measurement of them), and whether
        a point was censored (killed, or stopped by the budget: deepening ends there). Reads the program figure the
        costs are read against, too (:func:`explanation`)."""
        self._explain = explanation([p for p in points if not p.censored], self.mode, self.phases)
        return by_depth(points, self.mode, self.cap, self.phases)

    # -- predictions ------------------------------------------------------------------------------------
    def extrapolated(self, depths: list[int], low: list[float], x: int) -> float:
        """:meth:`pessimistic`, or where a superlinear program explains the costs (:class:`Explanation`) the less of
        it and :meth:`excess_extrapolation`: a d² arithmetic is continued as d², not as a runaway."""
        pess = self.pessimistic(depths, low, x)
        ex = self._explain
        if ex is None or any(d not in ex.values for d in depths):
            return pess
        return min(pess, excess_extrapolation(depths, low, x, ex))

    @staticmethod
    def pessimistic(depths: list[int], low: list[float], x: int) -> float:
        """An extrapolation to ``x`` that errs high: the steepest per-layer rate, over the deepest depths, of the
        totals, of the marginal cost per layer, and of the growing part above the overhead level (which sees an
        exponential still hidden under an overhead); one point: quadratic growth."""
        top, v = depths[-1], low[-1]
        if len(depths) < 2:
            return v * (x / top) ** 2
        rates = [1.0]
        for dj, vj in zip(depths[-4:-1], low[-4:-1], strict=True):  # the top against each of the three before
            if vj > 0 and v > vj:
                rates.append((v / vj) ** (1.0 / (top - dj)))
        if len(depths) >= 3:
            (d0, d1), (v0, v1) = depths[-3:-1], low[-3:-1]
            m1, m2 = (v1 - v0) / (d1 - d0), (v - v1) / (top - d1)
            if m1 > 0 and m2 > 0:
                rates.append((m2 / m1) ** (2.0 / (top - d0)))
        r = min(max(rates), 50.0)
        base = overhead_level(low)
        g, g_rate = v - base, 1.0
        for dj, vj in zip(depths[-4:-1], low[-4:-1], strict=True):
            gj = vj - base
            if gj > EMERGE_SHARE * base and g > gj:
                g_rate = max(g_rate, (g / gj) ** (1.0 / (top - dj)))
        try:
            return max(v * r ** (x - top), base + max(g, 0.0) * min(g_rate, 50.0) ** (x - top))
        except OverflowError:
            return math.inf

    def _ok(self, x: int, pess: float, fit: Fit | None) -> bool:
        """A step to ``x`` that the cap allows: by the deciding model's point estimate when it predicts (the
        pessimistic extrapolation then only has to stay well under the timeout), else by the extrapolation."""
        limit = self.cap_cost / PREDICT_MARGIN
        if fit is not None and fit.predicts:
            m = self.model_prediction(fit, x)
            return m is not None and m <= limit and pess <= min(KILL_SHARE * self.timeout, 2 * self.cap)
        return pess <= limit

    def model_prediction(self, fit: Fit, x: int) -> float | None:
        """The deciding model's cost at ``x``, no more than the steepest law through the measured costs allows
        (:func:`adprof.measure.bounds.capped`: a model never predicts a runaway its own points do not show)."""
        m = model_cost(fit, x)
        if m is None:
            return None
        depths, low = self._envelope
        ex = self._explain
        if ex is not None and depths and all(d in ex.values for d in depths):
            # the steepest law of the excess over the program, times the program there: a model read on the raw
            # costs (an exponential through a d² arithmetic) never predicts a runaway the excess does not show
            bound = bounds.law_bound(depths, ex.excess(depths, low), x)
            return m if bound is None else min(m, bound * ex.at(x))
        return bounds.capped(m, depths, low, x)

    # -- the next step ----------------------------------------------------------------------------------
    @property
    def cap_cost(self) -> float:
        """The cost (the classified phases' seconds) at which the largest phase reaches the cap."""
        return self.cap / max(self.share, 1e-9)

    def frontier(self, points: Sequence[Point], fit: Fit | None) -> Frontier:
        """Where deepening stands: the deepest depth under the cap and why it ended, if it did."""
        self.share = phase_share(points, self.mode, self.phases)
        costs, over, censored = self._by_depth(points)
        under = sorted(d for d in costs if d not in over)
        if not under:
            return Frontier(None, Deepening.CAP if over else Deepening.OPEN)
        top = under[-1]
        self._envelope = (under, [min(costs[d]) for d in under])
        if censored or any(d > top for d in over):
            return Frontier(top, Deepening.CAP)
        if top >= self.hi:
            return Frontier(top, Deepening.MAX_DEPTH)
        if fit is not None and fit.predicts:  # only a model that fits stops the deepening (never an extrapolation)
            m = self.model_prediction(fit, top + 1)
            if m is not None and m * PREDICT_MARGIN > self.cap_cost:
                return Frontier(top, Deepening.PREDICTED, m * self.share)
        return Frontier(top, Deepening.OPEN)

    def next_step(self, points: Sequence[Point], fit: Fit | None) -> Step | None:
        """The next point to measure (None: nothing left; the series loop decides when sweeps end). Once the kills
        are spent, never deeper than the deepest depth measured."""
        step = self._next_step(points, fit)
        if step is not None and self.kills_spent:
            deepest = max((p.depth for p in points if not p.censored), default=0)
            return step if step.depth <= deepest else None
        return step

    def _next_step(self, points: Sequence[Point], fit: Fit | None) -> Step | None:
        costs, over, _ = self._by_depth(points)
        if not costs and not over:
            return Step(self.lo, EXPLORE)
        self.share = phase_share(points, self.mode, self.phases)
        under = sorted(d for d in costs if d not in over)
        if not under:
            return None
        low = [min(costs[d]) for d in under]
        front = self.frontier(points, fit)
        if front.reason is Deepening.OPEN:
            step = self._deepen(under, low, fit, len(costs[under[-1]]))
            if step is not None:
                return step
        keep = informative(under, fit, {d: len(costs[d]) for d in under})
        below = self._below(under, low, over, costs, self.kills_spent)
        first = self._past_knee(under, low, fit) or self._fill(under, low, fit) or below
        if first is not None:
            return first
        if fit is not None and front.reason is not Deepening.OPEN and open_reading(fit) and len(costs[under[-1]]) < 2:
            # the deepest depth decides most (and whether to go deeper): a second run there before the rest
            return Step(under[-1], CONFIRM, low[-1])
        if fit is not None and front.reason is not Deepening.OPEN and open_reading(fit) and not flat(fit):
            # the minimum the fit reads: on the CPU clock, preemption does not make it shaky (a compile under load
            # read its wall minimum shaky and spent 8 repeats on one depth, and the budget, short of the tail)
            firm = cpu_costs(points, self.mode, self.phases) if fit.clock in CPU_CLOCKS else None
            shaky = shaky_depth(firm or costs, keep)
            if shaky is not None:
                return Step(shaky, REPEAT, min(costs[shaky]))
        return (None if flat(fit) or self._crowded(under) else self._refine(under, low, keep)) or self._sweep(
            self._passed(points, costs), keep
        )

    def _passed(self, points: Sequence[Point], costs: dict[int, list[float]]) -> dict[int, list[float]]:
        """The costs per depth without the REPEAT runs (``Point.scheduled``): the passes' own count. A depth whose
        runs were all repeats keeps them (it is measured)."""
        own, _, _ = self._by_depth([p for p in points if p.scheduled != REPEAT])
        return {d: own.get(d) or c for d, c in costs.items()}

    @staticmethod
    def _below(
        under: list[int], low: list[float], over: set[int], costs: dict[int, list[float]], kills_spent: bool = False
    ) -> Step | None:
        """Bisect the step from the deepest depth under the cap to the first depth over it (measured, or killed
        at the timeout) while it is wider than REFINE_RATIO, or steeper than a power law allows, or ends in a
        kill: the deepest depths decide the most, and an exponential needs consecutive depths up to the cap. Once
        the kills are spent (``kills_spent``), never towards a kill."""
        top = under[-1]
        above = [d for d in over if d > top]
        if not above:
            return None
        c = min(above)
        if kills_spent and c not in costs:
            return None
        if c - top < 2:
            return None
        v1, v2 = low[-1], min(costs.get(c) or [math.inf])
        steep = v1 > 0 and v2 / v1 > FILL_RATIO and math.log(v2 / v1) / math.log(c / top) > FILL_EXPONENT
        if c / top > REFINE_RATIO * 1.001 or steep or c not in costs:
            return Step((top + c) // 2, FILL, None)
        return None

    def _deepen(self, under: list[int], low: list[float], fit: Fit | None, top_runs: int = 2) -> Step | None:
        top = under[-1]
        if len(under) >= 2:
            base = overhead_level(low)
            g_top, g_prev = low[-1] - base, low[-2] - base
            emerged = g_top > EMERGE_SHARE * base and g_prev <= EMERGE_SHARE * base
            if emerged and top_runs < 2:
                # one run that rose above the overhead may be a slow run (a frequency step, a busy core: one in
                # five, 30-60% slower): a second run there (interference only slows) before any bisecting towards
                # it, or extrapolating from it
                return Step(top, CONFIRM, low[-1])
            if emerged and top - under[-2] >= 2:
                # the growth has just emerged above the overhead: its rate is not measured yet, and an exponential
                # hidden under the overhead would pass any cap one doubling later: bisect the step first
                return Step((under[-2] + top) // 2, FILL, math.sqrt(low[-2] * low[-1]))
        why = EXPLORE if low[-1] < 8 * low[0] else DEEPEN
        for x in range(min(2 * top, self.hi), top, -1):
            pess = self.extrapolated(under, low, x)
            if self._ok(x, pess, fit) or x == top + 1:  # one layer deeper is always allowed (the kill is the net)
                m = self.model_prediction(fit, x) if fit is not None and fit.predicts else None
                # the step errs deep-cautious; what its point is expected to cost (what the budget is charged) errs
                # no higher than the points' own worst law: noisy unit steps (0.33, 0.34, 0.64 s at depths 10-12)
                # make a marginal rate of x30/layer, and a 31.8 s prediction stopped a healthy compile at 12
                expected = bounds.capped(pess, under, low, x)
                return Step(x, why, max(m, expected) if m is not None else expected)
        return None

    @staticmethod
    def _past_knee(under: list[int], low: list[float], fit: Fit | None) -> Step | None:
        """A change of regime with too few depths past it to read its law: bisect between the knee and the first
        depth past it (the growth is measured where it sets in)."""
        if fit is None or fit.knee is None or fit.knee not in under:
            return None
        i = under.index(fit.knee)
        if i + 1 >= len(under) or under[i + 1] - under[i] < 2:
            return None
        return Step((under[i] + under[i + 1]) // 2, FILL, math.sqrt(low[i] * low[i + 1]))

    @staticmethod
    def _fill(under: list[int], low: list[float], fit: Fit | None) -> Step | None:
        """Bisect the deepest step that grew faster than a power law allows (or any growing step under an
        exponential reading)."""
        exponential = fit is not None and fit.model == "a + c*b^d" and fit.kind == "exponential"
        floor = min(low)
        for i in range(len(under) - 1, 0, -1):
            d1, d2, v1, v2 = under[i - 1], under[i], low[i - 1], low[i]
            if d2 - d1 < 2 or v1 <= 0 or v2 <= 0:
                continue
            steep = v2 / v1 > FILL_RATIO and math.log(v2 / v1) / math.log(d2 / d1) > FILL_EXPONENT
            if steep or (exponential and v2 > 1.1 * floor):
                return Step((d1 + d2) // 2, FILL, math.sqrt(v1 * v2))
        return None

    def _crowded(self, under: list[int]) -> bool:
        """More depths would leave no room in the budget for MIN_PASSES more repeats of each: repeats where the
        depths are tell more than new depths between them (a depth measured once, its run slowed, widens the
        interval of the whole fit)."""
        return self.room is not None and (len(under) + 1) * MIN_PASSES > self.room

    @staticmethod
    def _refine(under: list[int], low: list[float], keep: set[int]) -> Step | None:
        """Bisect (geometrically) the deepest gap wider than REFINE_RATIO where the growth shows."""
        for i in range(len(under) - 1, 0, -1):
            d1, d2 = under[i - 1], under[i]
            if d2 in keep and d2 - d1 >= 2 and d2 / d1 > REFINE_RATIO * 1.001:
                mid = min(max(int(round(math.sqrt(d1 * d2))), d1 + 1), d2 - 1)
                return Step(mid, REFINE, math.sqrt(low[i - 1] * low[i]))
        return None

    @staticmethod
    def _sweep(costs: dict[int, list[float]], keep: set[int]) -> Step | None:
        """The next depth of the current pass over the informative depths: odd passes downwards, even upwards."""
        eligible = sorted(keep)
        if not eligible:
            return None
        counts = {d: len(costs[d]) for d in eligible}
        k = min(counts.values())
        todo = [d for d in eligible if counts[d] == k]
        d = todo[-1] if k % 2 == 1 else todo[0]
        return Step(d, SWEEP, sorted(costs[d])[len(costs[d]) // 2])

    def passes(self, points: Sequence[Point], fit: Fit | None) -> int:
        """Measurements per informative depth when they all have the same number (a finished pass; REPEAT runs
        not counted), else 0."""
        costs, over, _ = self._by_depth(points)
        costs = self._passed(points, costs)
        under = sorted(d for d in costs if d not in over)
        counts = {len(costs[d]) for d in informative(under, fit, {d: len(costs[d]) for d in under})}
        return counts.pop() if len(counts) == 1 else 0


def cpu_costs(points: Sequence[Point], mode: str, phases: Sequence[str] = ()) -> dict[int, list[float]] | None:
    """The CPU seconds per depth of the exact points (each point's least run, its cost phases summed run by run), or
    None where a point lacks CPU samples of a timed cost phase."""
    out: dict[int, list[float]] = {}
    for p in points:
        if p.censored:
            continue
        names = [ph for ph in (tuple(phases) or cost_phases(mode)) if p.times.get(ph) is not None]
        lists = [p.cpu_samples.get(ph) or [] for ph in names]
        if not names or not all(lists) or len({len(x) for x in lists}) != 1:
            return None
        out.setdefault(p.depth, []).append(min(sum(col) for col in zip(*lists, strict=True)))
    return out


def shaky_chance(runs: Sequence[float]) -> float:
    """The chance that as many new runs of a depth all miss its fast mode (the runs within :data:`FAST_WITHIN`
    of its minimum), at the share of slow runs measured there: how likely its minimum would move if measured
    again (the bootstrap's view of it)."""
    n = len(runs)
    if n < 2:
        return 0.0
    low = min(runs)
    fast = sum(r <= FAST_WITHIN * low for r in runs)
    return ((n - fast) / n) ** n


def shaky_depth(costs: dict[int, list[float]], keep: set[int]) -> int | None:
    """The deepest of the :data:`SHAKY_DEPTHS` deepest informative depths whose minimum is shaky
    (:func:`shaky_chance` over :data:`SHAKY_CHANCE`, under :data:`MAX_REPEATS` runs), else None."""
    for d in sorted((d for d in keep if d in costs), reverse=True)[:SHAKY_DEPTHS]:
        runs = costs[d]
        if len(runs) < MAX_REPEATS and shaky_chance(runs) > SHAKY_CHANCE:
            return d
    return None


def thinned(depths: list[int], low: list[float], ratio: float = 1.5) -> tuple[list[int], list[float]]:
    """The depths (and their costs) at least ``ratio`` apart, from the deepest down: an extrapolation over a
    doubling from depths a few layers apart reads their noise as a rate."""
    keep: list[int] = []
    for i in range(len(depths) - 1, -1, -1):
        if not keep or depths[keep[-1]] >= ratio * depths[i]:
            keep.append(i)
    keep.reverse()
    return [depths[i] for i in keep], [low[i] for i in keep]


def phase_share(points: Sequence[Point], mode: str, phases: Sequence[str] = ()) -> float:
    """The largest phase's time over the classified cost, at the deepest measured depths (the cap applies to
    every phase; the schedule predicts the classified cost)."""
    shares = []
    for p in sorted((q for q in points if not q.censored), key=lambda q: -q.depth)[:4]:
        v = point_seconds(p, mode, phases)
        big = max((t for t in p.times.values() if t is not None), default=None)
        if v and big is not None:
            shares.append(big / v)
    return max(shares) if shares else 1.0


def overhead_level(low: list[float]) -> float:
    """The cost level before any growth: the least cost of the shallowest depths (depth order)."""
    return min(low[:ANCHORS])


def informative(depths: list[int], fit: Fit | None, counts: dict[int, int] | None = None) -> set[int]:
    """The depths where the growth shows (its share of the cost at least :data:`GROWTH_SHARE` of its share at
    the deepest depth) and the shallowest few, which pin the overhead; every depth without a fitted overhead.
    While the reading is undecided, every depth measured fewer than twice too (``counts``: measurements per
    depth): a depth measured once, its one run slowed, widens the interval of the whole fit."""
    if not depths or fit is None or not fit.overhead or not fit.scale or fit.model not in MODELS:
        return set(depths)
    once = {d for d in depths if counts is not None and counts.get(d, 0) < 2} if fit.kind == "inconclusive" else set()

    def share(x: int) -> float:
        total = model_cost(fit, x)
        return 0.0 if not total or not math.isfinite(total) else (total - (fit.overhead or 0.0)) / total

    top = share(depths[-1])
    keep = {d for d in depths if share(d) >= GROWTH_SHARE * top}
    return keep | set(depths[:ANCHORS]) | once


#: The bands' edges (adprof.analysis.bands), read by :func:`open_reading` (the schedule does not import analysis).
LINEAR_EDGE, SUPERLINEAR_EDGE = 1.15, 1.3


def open_reading(fit: Fit | None) -> bool:
    """A reading that more depths could still change: undecided, flat (a growth under the overhead shows deeper),
    or a power law whose interval spans linear and superlinear."""
    if fit is None or not settled(fit) or flat(fit):
        return True
    iv = fit.interval
    return fit.model == "a + c*d^p" and bool(iv) and iv[0] < LINEAR_EDGE and iv[1] >= SUPERLINEAR_EDGE


def flat(fit: Fit | None) -> bool:
    """A reading of no growth at all (a constant over the depths measured)."""
    return fit is not None and fit.kind == "linear" and fit.exponent == 0.0


def settled(fit: Fit | None) -> bool:
    """A decision that more repeats would not sharpen: a reading, and for an exponential a base within
    about 10% (its interval spans at most :data:`BASE_SPAN`)."""
    if fit is None or fit.kind in ("inconclusive", "runaway"):
        return False
    if fit.kind == "exponential":
        return bool(fit.interval) and fit.interval[0] > 0 and fit.interval[1] / fit.interval[0] <= BASE_SPAN
    return True
