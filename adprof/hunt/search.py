"""The search: generations of generators, evaluated on the targets, kept by the archive (:mod:`~.fitness`).

Each generation draws new generators from the seed's random stream (mutations of the archive's elites, a
quarter fresh ones) and evaluates each on every *screen* target it can run on (the engine, JAX's traced
mode: hundredths to tenths of a second per generator, deterministic counts). Every other target evaluates
one generator per generation: the next generator that grew strongly somewhere, a niche (axis, reuse) it has
not seen first, else a sample of the screened ones (:func:`~adprof.hunt.targets.tier`). The costliest
(torch.compile: seconds per point) so steers by what the cheap targets found, and the generation's screen
part is sized, from the targets' estimated costs, so that every lane stays busy while it runs.

Reproducible: the path depends only on the seed and on what is measured (time components never steer it;
the sizes use constant cost estimates, not measured times); the budget decides how far along it gets
(``max_tries`` bounds it by count instead).
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
from adprof.hunt.gen import Generator
from adprof.hunt.mutate import mutate, random_generator
from adprof.hunt.targets import SCREEN, Target, runs_on, search_plan, tier
from adprof.measure.executor import Executor, Task, WorkerLost

#: Generators of the first generation, and the bounds of every later one.
INITIAL = 12
MIN_BATCH = 8
MAX_BATCH = 48
#: Share of a generation's new generators drawn fresh (not mutated): keeps the archive's niches filling.
FRESH = 0.25


@dataclass
class SearchStats:
    """What the search did: generators tried, evaluations run (and failed), generations, seconds."""

    tried: int = 0
    evaluations: int = 0
    failed: int = 0
    generations: int = 0
    per_target: dict[str, int] = field(default_factory=dict)  # target label -> evaluations
    seconds: float = 0.0


Progress = Callable[[str, dict[str, Any]], None]


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
    ) -> None:
        self.targets = list(targets)
        self.screen = [t for t in self.targets if tier(t) == SCREEN]
        self.others = [t for t in self.targets if tier(t) != SCREEN]
        self.rng = random.Random(seed)
        self.executor, self.workdir, self.deadline = executor, workdir, deadline
        self.progress, self.max_tries, self.poll = progress, max_tries, poll
        self.archive = Archive()
        self.stats = SearchStats()
        self.seen: dict[str, Generator] = {}
        self.screened: list[Generator] = []
        self.evaluated: set[tuple[str, Target]] = set()
        self.failures: dict[tuple[str, Target], str] = {}
        self.queued: dict[Target, list[Generator]] = {t: [] for t in self.others}
        self.niches: dict[Target, set[tuple[str, bool]]] = {t: set() for t in self.others}
        self.firsts: dict[Target, int] = {t: 0 for t in self.others}  # queue heads of niches new to the target
        self.promoted: set[str] = set()

    # ------------------------------------------------------------------ the loop

    def run(self) -> Archive:
        start = time.monotonic()
        while not self._done():
            picks = self._picks()
            gens = self._new_generators(INITIAL if self.stats.generations == 0 else self._batch_size(picks))
            if not gens and not picks:
                break
            self._generation(gens, picks)
            self.stats.generations += 1
            if self.executor.interrupted is not None:
                break
        self.stats.seconds = time.monotonic() - start
        return self.archive

    def _done(self) -> bool:
        if time.monotonic() >= self.deadline - 1.0:
            return True
        return self.max_tries is not None and self.stats.tried >= self.max_tries

    def _new_generators(self, n: int) -> list[Generator]:
        if self.max_tries is not None:
            n = max(0, min(n, self.max_tries - self.stats.tried))
        parents = self.archive.parents()
        out: list[Generator] = []
        attempts = 0
        while len(out) < n and attempts < 20 * n:
            attempts += 1
            if parents and self.rng.random() >= FRESH:
                gen = mutate(self.rng.choice(parents), self.rng)
            else:
                gen = random_generator(self.rng)
            if gen.key in self.seen:
                continue
            self.seen[gen.key] = gen
            out.append(gen)
        return out

    def _picks(self) -> list[tuple[Target, Generator]]:
        """This generation's evaluation on each non-screen target: its queue's head, else a sample."""
        picks = []
        for t in self.others:
            gen = self._pop(t)
            if gen is not None:
                picks.append((t, gen))
                continue
            pool = [g for g in self.screened if (g.key, t) not in self.evaluated and runs_on(t, g) is None]
            if pool and tier(t) != "costly":
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

    def _batch_size(self, picks: list[tuple[Target, Generator]]) -> int:
        """New generators for a generation: enough screen work to keep every lane busy while the longest
        pick runs (by each target's estimated cost: constants, so the sizes are the same on every run)."""
        probe = Generator.from_dict({"nodes": [{"op": "sin", "args": [0]}]})
        per_gen = sum(search_plan(t, probe).cost for t in self.screen) or 0.1
        costs = [search_plan(t, g).cost for t, g in picks]
        longest = max(costs, default=0.0)
        lanes = max(1, self.executor.lanes)
        spare = longest * lanes - sum(costs)  # lane-seconds the picks leave free while the longest runs
        return max(MIN_BATCH, min(MAX_BATCH, math.ceil(max(spare, 0.0) / per_gen)))

    def _generation(self, gens: list[Generator], picks: list[tuple[Target, Generator]]) -> None:
        tasks: list[Task] = []
        plan: list[tuple[Generator, list[Target]]] = []
        for t, gen in sorted(picks, key=lambda p: -search_plan(p[0], p[1]).cost):  # the longest first
            self.evaluated.add((gen.key, t))
            tasks.append(evaluation_task(self.workdir, gen, [t], self.deadline))
            plan.append((gen, [t]))
        for gen in gens:
            self.stats.tried += 1
            where = [t for t in self.screen if runs_on(t, gen) is None]
            if where:
                tasks.append(evaluation_task(self.workdir, gen, where, self.deadline))
                plan.append((gen, where))
                self.evaluated.update((gen.key, t) for t in where)
                self.screened.append(gen)
        results = self.executor.run(tasks, poll=self.poll)
        for (gen, where), res in zip(plan, results, strict=True):
            self._record(gen, where, res)
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
            return
        for item in res:
            ev = evaluation_of(item)
            self.stats.evaluations += 1
            label = ev.target.label
            self.stats.per_target[label] = self.stats.per_target.get(label, 0) + 1
            if ev.error:
                self.stats.failed += 1
                self.failures[(gen.key, ev.target)] = ev.error
            if ev.points:
                self.archive.offer(gen, ev)

    def _promote(self) -> None:
        """Queue the generators that grew strongly for the other targets they can run on, a niche a target has
        not seen before the niches it has."""
        for _, gen in self.archive.promising():
            if gen.key in self.promoted:
                continue
            self.promoted.add(gen.key)
            for t in self.others:
                if runs_on(t, gen) is None and (gen.key, t) not in self.evaluated:
                    self._enqueue(t, gen)

    def _enqueue(self, target: Target, gen: Generator) -> None:
        niche = (gen.axis, gen.reuses)
        queue, seen = self.queued[target], self.niches[target]
        if niche in seen:
            queue.append(gen)
            return
        seen.add(niche)
        queue.insert(self.firsts[target], gen)
        self.firsts[target] += 1


__all__ = ["Search", "SearchStats"]
