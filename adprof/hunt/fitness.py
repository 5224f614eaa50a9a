"""Fitness: the fitted growth of every cost component of an evaluation, and the archive of elites.

A *component* is one cost a target reports at each depth: the engine's counters over the classified phases, each
deterministic metric of each phase (``python_calls:transform``, ``inductor_loop_body_ops:inductor_codegen``), each
phase's time, and the bytes the gradient saves for its backward (``saved_bytes:memory``, measured where the backend
measures memory: a second cost, decided by the check path's memory verdict). Its growth over the search depths is
read as ``adprof check`` reads exact values (the marginal reading of :func:`adprof.analysis.growth.fit_growth`): an
exponential's base per step or a power law's exponent; with too few points to tell them apart, the local exponent
of the tail (``rising``). Times are noisy and overhead-dominated at small depths: their growth is the plain
exponent over the span, a hint for the targets that only time can decide.

The archive keeps, as PerfFuzz keeps an input per program location, the generator that maximises each
component; as MAP-Elites keeps one per cell of a behaviour space, it does so per *cell*: (target, component,
growth family, the generator's axis, whether it reuses a value). A polynomial and an exponential on the same
counter are different pathologies, and a small linear-reuse chain must not be displaced by any exponential.
Within a cell the fitness is the growth, saturated at a base of 2 per step or an exponent of 2, less a penalty
for the generator's size (Singularity's): of two generators that grow alike, or both past the saturation, the
smaller is kept.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from adprof.analysis.growth import fit_growth
from adprof.hunt.evaluate import Evaluation
from adprof.hunt.gen import Generator
from adprof.hunt.targets import Target
from adprof.model import SAVED_BYTES, WHOLE_COMPILE, counter_value

#: Growth strong enough to nominate a candidate for confirmation: an exponential's base per step, a power
#: law's exponent, a rising tail's local exponent (few points: needs to be steep).
STRONG_BASE = 1.3
STRONG_EXPONENT = 1.4
STRONG_RISING = 1.8
#: A time component nominates only over at least this span of depths, growing at least this fast.
TIME_SPAN = 8
STRONG_TIME_EXPONENT = 1.6
#: The size penalty per unit of :attr:`Generator.size` (on the growth's scale: ln(base) or exponent - 1).
SIZE_PENALTY = 0.04
#: Growth past which a cell's fitness stops rising (on the same scale): a base of 2 per step, an exponent of 2.
#: Beyond them a faster growth is not a worse pathology, and of two generators that both pass them the smaller
#: is the better report (its base is its uses: ``y <- y * y`` rather than ten uses of ``y``).
SATURATION = {"exponential": math.log(2.0), "power": 1.0}
#: Points a rising tail needs (three give one ratio of marginals: anything)
MIN_RISING_POINTS = 4

EXPONENTIAL, POWER, RISING = "exponential", "power", "rising"


@dataclass(frozen=True)
class Growth:
    """How one component grows over the search depths."""

    family: str  # EXPONENTIAL | POWER | RISING
    rate: float  # base per step | exponent | local exponent of the tail
    depths: tuple[int, ...] = ()
    values: tuple[float, ...] = ()
    noisy: bool = False

    @property
    def strength(self) -> float:
        """Growth beyond linear on the family's own scale (ln base; exponent - 1)."""
        if self.family == EXPONENTIAL:
            return math.log(max(self.rate, 1e-9))
        return self.rate - 1.0

    @property
    def strong(self) -> bool:
        """Strong enough to be a candidate."""
        if self.noisy:
            span = self.depths[-1] / self.depths[0] if self.depths and self.depths[0] > 0 else 0
            return span >= TIME_SPAN and self.rate >= STRONG_TIME_EXPONENT
        if self.family == EXPONENTIAL:
            return self.rate >= STRONG_BASE
        if self.family == POWER:
            return self.rate >= STRONG_EXPONENT
        return self.rate >= STRONG_RISING

    @property
    def pathology(self) -> str:
        """The verdict family a confirmation must give: ``exponential`` or ``superlinear`` (rising: either)."""
        return {EXPONENTIAL: "exponential", POWER: "superlinear"}.get(self.family, "any")

    def figure(self, axis: str = "layer") -> str:
        if self.family == EXPONENTIAL:
            return f"x{self.rate:.2f}/{axis}"
        sym = "d" if axis == "layer" else axis
        return f"{sym}^{self.rate:.2f}" + (" (rising)" if self.family == RISING else "")


@dataclass(frozen=True)
class Component:
    """One cost of a target: ``name`` (``counters:transform+drop``), whether the check path decides on it, and
    whether it is memory (its confirmation reads the check's memory verdict, not the time verdict)."""

    name: str
    decides: bool
    noisy: bool = False
    memory: bool = False


#: The memory component: saved-for-backward bytes, exact, decided by the check path's memory verdict.
SAVED_BYTES_COMPONENT = Component(f"{SAVED_BYTES}:memory", True, memory=True)


def components(ev: Evaluation) -> dict[Component, tuple[list[int], list[float]]]:
    """Every component of an evaluation's points, with its (depths, values) where it was measured."""
    t = ev.target
    info = t.info
    phases = info.cost_phases
    deciding = _deciding(t)
    counters_decide = info.counters_decide and any(p.counters for p in ev.points if not p.censored)
    series: dict[Component, tuple[list[int], list[float]]] = {}

    def add(comp: Component, depth: int, value: float | None) -> None:
        if value is None or not math.isfinite(value):
            return
        ds, vs = series.setdefault(comp, ([], []))
        ds.append(depth)
        vs.append(float(value))

    joined = "+".join(p for p in phases if p != WHOLE_COMPILE)
    for p in ev.points:
        if p.censored:
            continue
        if p.counters:
            add(Component(f"counters:{joined}", counters_decide), p.depth, counter_value(p, phases, info))
            for ph in phases:
                if ph in p.counters:
                    add(Component(f"counters:{ph}", False), p.depth, counter_value(p, (ph,), info))
        for ph, metrics in p.metrics.items():
            if ph not in phases:
                continue
            for name, value in metrics.items():
                add(Component(f"{name}:{ph}", name in deciding), p.depth, value)
        times = [p.times[ph] for ph in phases if ph in p.times]
        if times:
            add(Component(f"time:{joined}", not deciding and not counters_decide, noisy=True), p.depth, sum(times))
        saved = p.memory.get(SAVED_BYTES) if isinstance(p.memory, dict) else None
        if isinstance(saved, int | float) and not isinstance(saved, bool):
            add(SAVED_BYTES_COMPONENT, p.depth, saved)
    return series


def _deciding(t: Target) -> frozenset[str]:
    """The metrics that decide on the check path: the backend's deciding and lower-bound metrics."""
    return frozenset((*t.lower_bounds, *t.deciding_metrics))


def growth_of(depths: Sequence[int], values: Sequence[float], noisy: bool = False) -> Growth | None:
    """The growth of one component (None: fewer than three depths, or nothing grows)."""
    if len(depths) < 3:
        return None
    ds, vs = tuple(int(d) for d in depths), tuple(float(v) for v in values)
    if noisy:
        if vs[0] <= 0 or vs[-1] <= 0 or ds[-1] <= ds[0]:
            return None
        p = math.log(vs[-1] / vs[0]) / math.log(ds[-1] / ds[0])
        return Growth(RISING, round(p, 3), ds, vs, noisy=True)
    fit = fit_growth(ds, vs, exact=True)
    if fit.kind == "exponential" and fit.base is not None:
        return Growth(EXPONENTIAL, round(fit.base, 3), ds, vs)
    if fit.kind in ("superlinear", "mild", "linear") and fit.exponent is not None:
        return Growth(POWER, round(fit.exponent, 3), ds, vs)
    local = _tail_exponent(ds, vs) if len(ds) >= MIN_RISING_POINTS else None
    return Growth(RISING, round(local, 3), ds, vs) if local is not None else None


def _tail_exponent(ds: Sequence[int], vs: Sequence[float]) -> float | None:
    """1 + the local power of the marginal cost at the deepest pair (the reading of too few points)."""
    m = [(vs[i + 1] - vs[i]) / (ds[i + 1] - ds[i]) for i in range(len(ds) - 1)]
    x = [(ds[i + 1] + ds[i]) / 2 for i in range(len(ds) - 1)]
    if len(m) < 2 or m[-1] <= 0 or m[-2] <= 0:
        return None
    return 1.0 + math.log(m[-1] / m[-2]) / math.log(x[-1] / x[-2])


def fitness(g: Growth, gen: Generator) -> float:
    """Growth, saturated (:data:`SATURATION`), less the size penalty; rounded, so that equal measurements compare
    equal on every run."""
    return round(min(g.strength, SATURATION.get(g.family, math.inf)) - SIZE_PENALTY * gen.size, 4)


# --------------------------------------------------------------------------- the archive


@dataclass(frozen=True)
class Cell:
    """Where an elite lives: the target, the component, the growth family and the generator's descriptor."""

    target: Target
    component: str
    family: str
    axis: str
    reuses: bool

    @property
    def label(self) -> str:
        reuse = "reuse" if self.reuses else "no reuse"
        return f"{self.target.label} {self.component} ({self.family}, {self.axis}, {reuse})"


@dataclass
class Elite:
    """The best generator of a cell so far: its growth there, its fitness, when it was found (the tie-break)."""

    gen: Generator
    growth: Growth
    fitness: float
    decides: bool
    found: int  # the index of the evaluation that put it here
    clean: bool = True  # its evaluation ended without an error (a chain that fails deeper cannot be confirmed)
    memory: bool = False  # the component is memory (see :class:`Component`)


@dataclass
class Candidate:
    """A generator whose growth on a deciding component of a target is strong: to shrink and confirm."""

    gen: Generator
    target: Target
    component: str
    growth: Growth
    fitness: float
    memory: bool = False  # a memory component: the confirmation reads the check's memory verdict

    @property
    def expect(self) -> str:
        """The verdict family the confirmation must give (``exponential``, ``superlinear`` or ``any``)."""
        return self.growth.pathology


@dataclass
class Archive:
    """Elites per cell (see the module docstring); :meth:`offer` updates it with one evaluation."""

    elites: dict[Cell, Elite] = field(default_factory=dict)
    offered: int = 0

    def offer(self, gen: Generator, ev: Evaluation) -> list[Cell]:
        """Record an evaluation; the cells it improved."""
        self.offered += 1
        improved = []
        for comp, (ds, vs) in components(ev).items():
            g = growth_of(ds, vs, comp.noisy)
            if g is None or g.strength <= 0:
                continue
            cell = Cell(ev.target, comp.name, g.family, gen.axis, gen.reuses)
            fit = fitness(g, gen)
            old = self.elites.get(cell)
            if old is None or (fit, -gen.size) > (old.fitness, -old.gen.size):
                self.elites[cell] = Elite(gen, g, fit, comp.decides, self.offered, not ev.error, comp.memory)
                improved.append(cell)
        return improved

    def parents(self) -> list[Generator]:
        """Generators to mutate: the elites of exact components (time elites follow the noise, so they do not
        steer the search: the same seed takes the same path), distinct, in a stable order."""
        seen: dict[str, Generator] = {}
        for _, e in sorted(self.elites.items(), key=lambda kv: (kv[1].found, kv[0].label)):
            if not e.growth.noisy and e.gen.key not in seen:
                seen[e.gen.key] = e.gen
        return list(seen.values())

    def promising(self) -> list[tuple[float, Generator]]:
        """Generators that grew strongly on an exact component somewhere, strongest first: what a costly target
        is searched with."""
        best: dict[str, tuple[float, Generator]] = {}
        for e in self.elites.values():
            if e.growth.noisy or not e.growth.strong or not e.clean:
                continue
            s = e.growth.strength
            if e.gen.key not in best or s > best[e.gen.key][0]:
                best[e.gen.key] = (s, e.gen)
        return sorted(best.values(), key=lambda sg: (-sg[0], sg[1].size, sg[1].key))

    def candidates(self) -> list[Candidate]:
        """Strong elites of deciding components, one per (target, generator), strongest first."""
        out: dict[tuple[Target, str], Candidate] = {}
        for cell, e in self.elites.items():
            if not (e.decides and e.growth.strong and e.clean):
                continue
            c = Candidate(e.gen, cell.target, cell.component, e.growth, e.fitness, e.memory)
            k = (cell.target, e.gen.key)
            if k not in out or c.fitness > out[k].fitness:
                out[k] = c
        return sorted(out.values(), key=lambda c: (-c.fitness, c.target, c.gen.key))


def best_per_target(cands: Iterable[Candidate], targets: Sequence[Target]) -> list[Candidate]:
    """The best candidate of each (target, expected family, axis, cost: time or memory), in the order to process
    them: first the strongest of each (target, family, cost), targets in ``targets``' order, then the other axes'
    the same way."""
    best: dict[tuple[Target, str, str, bool], Candidate] = {}
    for c in cands:
        k = (c.target, c.expect, c.gen.axis, c.memory)
        if k not in best or (c.fitness, -c.gen.size) > (best[k].fitness, -best[k].gen.size):
            best[k] = c
    rank = {t: i for i, t in enumerate(targets)}
    ordered = sorted(best.values(), key=lambda c: (rank.get(c.target, len(rank)), -c.fitness, c.gen.key))
    first: list[Candidate] = []
    rest: list[Candidate] = []
    taken: set[tuple[Target, str, bool]] = set()
    for c in ordered:
        (rest if (c.target, c.expect, c.memory) in taken else first).append(c)
        taken.add((c.target, c.expect, c.memory))
    return first + rest


__all__ = [
    "Archive",
    "Candidate",
    "Cell",
    "Component",
    "Elite",
    "Growth",
    "SAVED_BYTES_COMPONENT",
    "best_per_target",
    "components",
    "fitness",
    "growth_of",
]
