"""The search: generations of generators, evaluated on the targets, kept by the archive (:mod:`~.fitness`).

**Every backend screens.** A new generator is drawn *for a backend* and its first evaluation goes to that
backend's *screen* targets (:func:`screen_targets`): its informative targets (a deterministic metric or the
engine's counters decide; time only where nothing else does), the cheapest by measured seconds per evaluation
(the search plan's estimate until one is measured), and those within :data:`SCREEN_SPREAD` times its cost.
Nothing is ranked by a backend's name. A backend hunted alone gets every evaluation; several share each
generation's lane time equally (a deficit round robin: a backend whose evaluation costs ten times more gets a
tenth of the generators, the same seconds).

**Niches per target** (PerfFuzz keeps an input per program location): the archive's cells are per target, and a
backend's new generators are mutations of *its own* targets' elites; another backend's elites are one input
(:data:`CROSS` of the draws), a quarter are fresh. Every other target (a backend's costlier modes) evaluates one
generator per generation: the next that grew strongly on its own backend, then on any backend, a niche (axis,
reuse) it has not seen first, else a sample of what its backend screened (not on a target costing more than
:data:`NO_SAMPLE_SECONDS` per evaluation: those follow what grew).

**A search that measured nothing says so**: each target's figures (:class:`~adprof.hunt.model.TargetStats`:
evaluations, cost, failures, the generators it could not run and why) and :func:`starved`: a target that
measured fewer than :data:`STARVED_SHARE` of the evaluations its share of lane time allowed makes the hunt
exit 2 with the reason.

Reproducible where one backend is hunted: the path depends only on the seed and on what is measured (time
components never steer it). Where several share the budget, the generation sizes follow the measured costs, so
the path also depends on the machine's speed; ``max_tries`` bounds it by count instead of time.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.hunt.evaluate import evaluation_of, evaluation_task
from adprof.hunt.fitness import Archive, best_per_target
from adprof.hunt.gen import Generator, Node
from adprof.hunt.model import TargetStats
from adprof.hunt.mutate import mutate, random_generator
from adprof.hunt.targets import Target, runs_on, search_plan
from adprof.measure.executor import Executor, Task, WorkerLost

#: Generators of a backend's first generation, and the bounds of every later one.
INITIAL = 12
MIN_BATCH = 8
MAX_BATCH = 48
#: Share of a backend's new generators drawn fresh (not mutated): keeps the archive's niches filling.
FRESH = 0.25
#: Share of a backend's mutations whose parent is another backend's elite (one input among several).
CROSS = 0.2
#: A backend's informative targets within this factor of its cheapest one's cost screen too.
SCREEN_SPREAD = 4.0
#: A target whose evaluation costs more than this (seconds) takes no random sample: only what grew somewhere.
NO_SAMPLE_SECONDS = 10.0
#: A target *starved*: it measured fewer than this share of the evaluations its share of the search's lane time
#: allowed at its cost (:func:`starved`), when that allowed at least :data:`MIN_EXPECTED` of them.
STARVED_SHARE = 0.1
MIN_EXPECTED = 3.0
#: The most generators drawn per generator sent, before a backend whose screen can run nothing is given up.
DRAWS_PER_SENT = 20

_PROBE = Generator((Node("sin", (0,)),))


@dataclass
class SearchStats:
    """What the search did: generators drawn, sent and tried (measured somewhere), evaluations run (and failed),
    generations, seconds, and each target's figures."""

    tried: int = 0
    drawn: int = 0
    sent: int = 0
    evaluations: int = 0
    failed: int = 0
    generations: int = 0
    per_target: dict[str, TargetStats] = field(default_factory=dict)  # target label -> its figures
    seconds: float = 0.0
    lanes: int = 1
    #: The search went on past its share of the budget because it had no candidate yet (:class:`Search`'s
    #: ``extend_until``).
    extended: bool = False


Progress = Callable[[str, dict[str, Any]], None]


def informative(targets: Sequence[Target]) -> list[Target]:
    """The targets a deterministic metric (or the engine's counters) decides; all of them when none is."""
    exact = [t for t in targets if t.decider != "time"]
    return exact or list(targets)


def screen_targets(targets: Sequence[Target], cost: Callable[[Target], float]) -> list[Target]:
    """One backend's screen: its informative targets within :data:`SCREEN_SPREAD` of the cheapest one's cost
    (``cost``: seconds per evaluation), in the given order."""
    pool = informative(targets)
    cheapest = min(cost(t) for t in pool)
    return [t for t in pool if cost(t) <= SCREEN_SPREAD * cheapest]


class Search:
    """One hunt's search (see the module docstring); :meth:`run` until the deadline or ``max_tries``."""

    def __init__(
        self,
        targets: Sequence[Target],
        seed: int,
        executor: Executor,
        workdir: Path,
        deadline: float,
        progress: Progress | None = None,
        max_tries: int | None = None,
        poll: Callable[[], None] | None = None,
        extend_until: float | None = None,
    ) -> None:
        self.targets = list(targets)
        self.backends = list(dict.fromkeys(t.backend for t in self.targets))
        self.by_backend = {b: [t for t in self.targets if t.backend == b] for b in self.backends}
        self.rng = random.Random(seed)
        self.executor, self.workdir, self.deadline = executor, workdir, deadline
        #: Past ``deadline``, the search goes on while it has no candidate to confirm, until this time (a hunt
        #: that found nothing yet spends its budget searching, not ending early): None, never.
        self.extend_until = extend_until
        self.stopped_on_candidate = False
        self.progress, self.max_tries, self.poll = progress, max_tries, poll
        self.archive = Archive()
        self.stats = SearchStats(
            per_target={t.label: TargetStats() for t in self.targets}, lanes=max(1, getattr(executor, "lanes", 1))
        )
        self.seen: set[tuple[str, str]] = set()  # (generator, backend): drawn for that backend
        self.screened: dict[str, list[Generator]] = {b: [] for b in self.backends}
        self.tried: set[str] = set()
        self.evaluated: set[tuple[str, Target]] = set()
        self.failures: dict[tuple[str, Target], str] = {}
        self.queued: dict[Target, list[Generator]] = {t: [] for t in self.targets}
        self.niches: dict[Target, set[tuple[str, bool]]] = {t: set() for t in self.targets}
        self.firsts: dict[Target, int] = {t: 0 for t in self.targets}  # queue heads of niches new to the target
        self.promoted: set[str] = set()
        self.credit: dict[str, float] = {b: 0.0 for b in self.backends}
        self.given_up: set[str] = set()  # backends whose screen could run no generator drawn
        self.offered: dict[Target, int] = {}  # generators queued for each target (what grew somewhere)

    # ------------------------------------------------------------------ costs and tiers

    def cost(self, t: Target) -> float:
        """Seconds per evaluation on ``t``: measured (the mean of its evaluations), else the plan's estimate
        scaled by :meth:`slowdown` (a loaded machine makes every target slower, not only the measured ones)."""
        measured = self._measured_cost(t)
        return measured if measured is not None else search_plan(t, _PROBE).cost * self.slowdown()

    def _measured_cost(self, t: Target) -> float | None:
        st = self.stats.per_target[t.label]
        if st.measured + st.failures:
            return max(st.seconds / (st.measured + st.failures), 1e-3)
        return None

    def slowdown(self) -> float:
        """How much slower than the plans' estimates the measured targets run here (the geometric mean of
        measured over estimated seconds per evaluation; 1 before any is measured): an unmeasured target's
        estimate is for a quiet machine, and unscaled it would look cheap beside targets measured under load."""
        logs = []
        for t in self.targets:
            measured = self._measured_cost(t)
            if measured is not None:
                logs.append(math.log(measured / search_plan(t, _PROBE).cost))
        return math.exp(sum(logs) / len(logs)) if logs else 1.0

    def screen(self, backend: str) -> list[Target]:
        """``backend``'s screen targets now (see :func:`screen_targets`)."""
        return screen_targets(self.by_backend[backend], self.cost)

    # ------------------------------------------------------------------ the loop

    def run(self) -> Archive:
        start = time.monotonic()
        while not self._done():
            picks = self._picks()
            sizes = self._sizes(picks)
            gens = {b: self._new_generators(b, n) for b, n in sizes.items()}
            if not any(gens.values()) and not picks:
                break
            self._generation(gens, picks)
            self.stats.generations += 1
            if self.executor.interrupted is not None:
                break
        self.stats.seconds = time.monotonic() - start
        counted = self.max_tries is not None and self.stats.sent >= self.max_tries
        interrupted = self.executor.interrupted is not None
        window = max(0.0, self.deadline - 1.0 - start)  # the seconds the search was given (extended: more)
        # what the search could have measured: the time it was given, unless --tries, an interrupt or (searching
        # past its share) a first candidate ended it
        ended_early = counted or interrupted or self.stopped_on_candidate
        allowed = self.stats.seconds if ended_early else max(self.stats.seconds, window)
        for b in self.backends:
            for t in self.screen(b):
                self.stats.per_target[t.label].screen = True
        for t in self.targets:
            st = self.stats.per_target[t.label]
            done = st.measured + st.failures
            st.cost_per_evaluation = round(st.seconds / done, 4) if done else None
        screens = {b: self.screen(b) for b in self.backends}
        offered = {t: self.offered.get(t, 0) for t in self.targets if self.cost(t) > NO_SAMPLE_SECONDS}
        expected(self.stats, self.by_backend, self.cost, screens, allowed, offered)
        return self.archive

    def _done(self) -> bool:
        if self.max_tries is not None and self.stats.sent >= self.max_tries:
            return True
        if time.monotonic() < self.deadline - 1.0:
            # searching past its share: it stops at its first candidate (the rest of the budget confirms it)
            self.stopped_on_candidate = self.stats.extended and self.has_candidates()
            return self.stopped_on_candidate
        extend = self.extend_until
        if self.stats.extended or extend is None or time.monotonic() >= extend - 1.0 or self.has_candidates():
            return True
        self.deadline = extend  # nothing to confirm yet: the search goes on with the budget
        self.stats.extended = True
        if self.progress is not None:
            self.progress("extended", {"tried": self.stats.tried})
        return False

    def has_candidates(self) -> bool:
        """Whether the archive holds a candidate the hunt would confirm."""
        return bool(best_per_target(self.archive.candidates(), self.targets))

    def _sizes(self, picks: list[tuple[Target, Generator]]) -> dict[str, int]:
        """New generators per backend this generation: each backend earns the same lane-seconds (enough screen
        work to keep every lane busy while the longest pick runs, at least :data:`MIN_BATCH` generators of the
        cheapest backend), and draws as many as its screen's cost per generator buys."""
        live = [b for b in self.backends if b not in self.given_up]
        per_gen = {b: sum(self.cost(t) for t in self.screen(b)) or 0.1 for b in live}
        if not live:
            return {}
        if self.stats.generations == 0:
            window = INITIAL * min(per_gen.values())
        else:
            costs = [self.cost(t) for t, _ in picks]
            spare = max(costs, default=0.0) * self.stats.lanes - sum(costs)
            window = max(spare / len(live), MIN_BATCH * min(per_gen.values()))
        sizes: dict[str, int] = {}
        left = None if self.max_tries is None else self.max_tries - self.stats.sent
        for b in live:
            self.credit[b] += window
            n = min(MAX_BATCH, math.floor(self.credit[b] / per_gen[b] + 1e-9))
            if left is not None:
                n = max(0, min(n, left))
                left -= n
            self.credit[b] -= n * per_gen[b]
            sizes[b] = n
        return sizes

    def _parents(self, backend: str) -> tuple[list[Generator], list[Generator]]:
        """Generators to mutate: the elites of exact components on ``backend``'s targets, and on the others' (time
        elites follow the noise, so they do not steer the search), distinct, in a stable order."""
        own: dict[str, Generator] = {}
        other: dict[str, Generator] = {}
        for cell, e in sorted(self.archive.elites.items(), key=lambda kv: (kv[1].found, kv[0].label)):
            if e.growth.noisy:
                continue
            into = own if cell.target.backend == backend else other
            into.setdefault(e.gen.key, e.gen)
        return list(own.values()), [g for k, g in other.items() if k not in own]

    def _new_generators(self, backend: str, n: int) -> list[Generator]:
        """``n`` new generators for ``backend`` that its screen can run (each counted as drawn; one that none of
        its screen targets can run is counted as skipped there, with why)."""
        own, other = self._parents(backend)
        screen = self.screen(backend)
        out: list[Generator] = []
        attempts = 0
        while len(out) < n and attempts < DRAWS_PER_SENT * max(n, MIN_BATCH):
            attempts += 1
            if (own or other) and self.rng.random() >= FRESH:
                pool = own or other
                if own and other and self.rng.random() < CROSS:
                    pool = other
                gen = mutate(self.rng.choice(pool), self.rng)
            else:
                gen = random_generator(self.rng)
            if (gen.key, backend) in self.seen:
                continue
            self.seen.add((gen.key, backend))
            self.stats.drawn += 1
            why = {t: runs_on(t, gen) for t in screen}
            for t, reason in why.items():
                if reason:
                    skipped = self.stats.per_target[t.label].skipped
                    skipped[reason] = skipped.get(reason, 0) + 1
            if not self.first_targets(backend, gen, screen):
                continue
            out.append(gen)
        if n and not out:
            self.given_up.add(backend)  # its screen runs nothing the language draws: said by the per-target figures
        return out

    def first_targets(self, backend: str, gen: Generator, screen: Sequence[Target]) -> list[Target]:
        """Where a new generator of ``backend`` is first evaluated: the ``screen`` targets that can run it, else
        the backend's cheapest other target that can (not one costing more than :data:`NO_SAMPLE_SECONDS`): a
        program its screen cannot run (a nested gradient where the cheapest mode has none) is still searched on
        the backend, not dropped. Empty: no target of the backend runs it."""
        where = [t for t in screen if runs_on(t, gen) is None]
        if where:
            return where
        rest = [
            t
            for t in self.by_backend[backend]
            if t not in screen and runs_on(t, gen) is None and self.cost(t) <= NO_SAMPLE_SECONDS
        ]
        return [min(rest, key=self.cost)] if rest else []

    def _picks(self) -> list[tuple[Target, Generator]]:
        """This generation's evaluation on each target off its backend's screen: its queue's head, else a sample
        of what its backend screened (not on a target too costly to sample)."""
        picks = []
        for b in self.backends:
            screen = self.screen(b)
            for t in self.by_backend[b]:
                if t in screen:
                    continue
                gen = self._pop(t)
                if gen is not None:
                    picks.append((t, gen))
                    continue
                if self.cost(t) > NO_SAMPLE_SECONDS:
                    continue
                pool = [g for g in self.screened[b] if (g.key, t) not in self.evaluated and runs_on(t, g) is None]
                if pool:
                    picks.append((t, self.rng.choice(pool)))
        return picks

    def _pop(self, target: Target) -> Generator | None:
        queue = self.queued[target]
        while queue:
            gen = queue.pop(0)
            self.firsts[target] = max(0, self.firsts[target] - 1)
            if (gen.key, target) not in self.evaluated:
                return gen
        return None

    def _generation(self, gens: dict[str, list[Generator]], picks: list[tuple[Target, Generator]]) -> None:
        tasks: list[Task] = []
        plan: list[tuple[Generator, list[Target]]] = []
        for t, gen in sorted(picks, key=lambda p: -self.cost(p[0])):  # the longest first
            self.evaluated.add((gen.key, t))
            tasks.append(evaluation_task(self.workdir, gen, [t], self.deadline))
            plan.append((gen, [t]))
        for b, new in gens.items():
            screen = self.screen(b)
            for gen in new:
                where = [t for t in self.first_targets(b, gen, screen) if (gen.key, t) not in self.evaluated]
                if not where:
                    continue
                self.stats.sent += 1
                tasks.append(evaluation_task(self.workdir, gen, where, self.deadline))
                plan.append((gen, where))
                self.evaluated.update((gen.key, t) for t in where)
                self.screened[b].append(gen)
        results = self.executor.run(tasks, poll=self.poll)
        for (gen, where), res in zip(plan, results, strict=True):
            self._record(gen, where, res)
        self.stats.tried = len(self.tried)
        self._promote()
        if self.progress is not None:
            # the candidates the hunt would confirm (the best per target and family), as its report counts them
            found = len(best_per_target(self.archive.candidates(), self.targets))
            self.progress("search", {"tried": self.stats.tried, "candidates": found})

    def _record(self, gen: Generator, where: list[Target], res: Any) -> None:
        if not isinstance(res, list):  # lost, interrupted or internal: nothing measured
            reason = str(res) if isinstance(res, WorkerLost) else "not measured"
            for t in where:
                self.failures[(gen.key, t)] = reason
                self.stats.per_target[t.label].lost += 1
            return
        for item in res:
            ev = evaluation_of(item)
            self.stats.evaluations += 1
            st = self.stats.per_target.setdefault(ev.target.label, TargetStats())
            st.evaluations += 1
            st.seconds = round(st.seconds + ev.seconds, 4)
            if ev.error:
                self.stats.failed += 1
                st.failures += 1
                st.last_error = ev.error
                self.failures[(gen.key, ev.target)] = ev.error
            if ev.points:
                st.measured += 1
                self.tried.add(gen.key)
                self.archive.offer(gen, ev)

    def _promote(self) -> None:
        """Queue the generators that grew strongly for the targets they can run on off the screen: first those
        that grew on the target's own backend, a niche the target has not seen before the niches it has."""
        for _, gen in self.archive.promising():  # strongest first
            if gen.key in self.promoted:
                continue
            self.promoted.add(gen.key)
            grew_on = {c.target.backend for c, e in self.archive.elites.items() if e.gen.key == gen.key}
            for t in self.targets:
                if runs_on(t, gen) is None and (gen.key, t) not in self.evaluated:
                    self._enqueue(t, gen, t.backend in grew_on)

    def _enqueue(self, target: Target, gen: Generator, own: bool) -> None:
        """A generator that grew on the target's own backend goes to the front part of its queue (a niche new
        to the target first); one that grew elsewhere only to the back: one input among several."""
        niche = (gen.axis, gen.reuses)
        queue, seen = self.queued[target], self.niches[target]
        self.offered[target] = self.offered.get(target, 0) + 1
        if not own:
            queue.append(gen)
            return
        if niche in seen:
            queue.insert(self.firsts[target] + self._own_tail(target), gen)
            return
        seen.add(niche)
        queue.insert(self.firsts[target], gen)
        self.firsts[target] += 1

    def _own_tail(self, target: Target) -> int:
        """How many of the target's queued generators after the new-niche heads grew on its own backend."""
        n = 0
        for gen in self.queued[target][self.firsts[target] :]:
            if not any(
                c.target.backend == target.backend for c, e in self.archive.elites.items() if e.gen.key == gen.key
            ):
                break
            n += 1
        return n


def expected(
    stats: SearchStats,
    by_backend: dict[str, list[Target]],
    cost: Callable[[Target], float],
    screens: dict[str, list[Target]],
    seconds: float | None = None,
    only_offered: dict[Target, int] | None = None,
) -> None:
    """Each target's expected evaluations (:attr:`TargetStats.expected`): its backend's equal share of the
    search's lane-seconds (``seconds``: the time it was given; its own seconds when None) over the cost of one
    generator on its screen (a screen target), or one per generation at most (a target off the screen; one that
    takes no sample, in ``only_offered``: at most the generators queued for it); and whether it is
    :func:`starved`."""
    lane_seconds = (stats.seconds if seconds is None else seconds) * stats.lanes
    share = lane_seconds / max(1, len(by_backend))
    for b, targets in by_backend.items():
        per_gen = sum(cost(t) for t in screens[b]) or 0.1
        for t in targets:
            st = stats.per_target[t.label]
            if t in screens[b]:
                allowed = share / per_gen
            else:
                most = (only_offered or {}).get(t, stats.generations)
                allowed = min(float(most), share / max(cost(t), 1e-3))
            st.expected = round(allowed, 1)
            st.starved = starved(st)


def starved(st: TargetStats) -> bool:
    """Whether a target measured far fewer evaluations than the budget allowed: fewer than
    :data:`STARVED_SHARE` of its expected ones, when those were at least :data:`MIN_EXPECTED` (a short hunt of a
    costly target is not starved: its budget allowed next to nothing)."""
    return st.expected >= MIN_EXPECTED and st.measured < STARVED_SHARE * st.expected


__all__ = [
    "CROSS",
    "MIN_EXPECTED",
    "STARVED_SHARE",
    "Search",
    "SearchStats",
    "expected",
    "informative",
    "screen_targets",
    "starved",
]
