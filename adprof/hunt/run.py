"""A whole hunt: search, then for each candidate shrink, confirm, attribute and write it out.

1. **Search** (:mod:`~.search`) for a share of the budget, at small depths, in warm workers; with no candidate by
   then, on until its first one or :data:`SEARCH_EXTEND_SHARE` of the budget.
2. **Candidates**: the strongest elite of each (target, growth family, axis) on a component the check path
   decides on (:func:`~.fitness.best_per_target`), taken niche by niche (:func:`niches`): each niche's first
   candidate, then the others.
3. Per candidate, within its share of what is left (a costly target's share is larger):

   * a candidate of a niche whose finding's check of this target already showed the same pathology is
     **merged** into that finding (its table covers it): nothing is measured;
   * **shrink** it (:mod:`~.shrink`, evaluated as the search evaluates);
   * **confirm** it: the chain file written for its target and checked by the check path (:mod:`~.checks`) in
     other workers than the search's, at more depths. Not the same pathology: **rejected**, never reported;
   * **attribute** it: the same file checked on every other target (explicit, bounded depths), the class per
     engine and whose growth it is (:mod:`~.attribute`);
   * **write** it: ``OUT/NNNN_<engine>_<mode>.py``, a chain file with ``@adprof.chain`` and a docstring of what
     it shows; ``adprof check`` on it reproduces the verdict (it is the file the confirmation checked).

4. **Refine**: what is left of the budget checks again the table cells the budget cut short.

Check runs are cached by (program, target): the same program is measured once per target in a hunt. The
costly targets' checks (torch.compile) run on a lane of their own, warmed up while the search runs, beside the
other targets' checks. An interrupt (the executors stop their workers) ends the hunt with what it has: the
findings written so far.
"""

from __future__ import annotations

import os
import shlex
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof import words
from adprof.hunt import attribute as attr
from adprof.hunt.checks import CheckRun, check_targets, confirms, verdict_kind
from adprof.hunt.evaluate import Evaluation, evaluation_of, evaluation_task
from adprof.hunt.fitness import Candidate, best_per_target
from adprof.hunt.gen import ChainOptions, Generator, Node, chain_source
from adprof.hunt.model import Finding, HuntReport, Rejected, Row, Shrunk
from adprof.hunt.search import Search
from adprof.hunt.shrink import ShrinkResult, shrink
from adprof.hunt.targets import COSTLY, SearchPlan, Target, attribution_depths, check_plan, runs_on, tier
from adprof.measure.executor import Executor
from adprof.measure.pool import LanePool
from adprof.model import INCONCLUSIVE, Result, StopReason
from adprof.render.jsonout import result_to_json
from adprof.util.files import FINDING_FILE, write_atomic

#: Share of the budget the search gets; the rest shrinks, confirms and attributes.
SEARCH_SHARE = 0.35
#: A search with no candidate at the end of its share goes on, until its first candidate or this share of the
#: budget (a hunt that found nothing yet spends its budget searching rather than ending early).
SEARCH_EXTEND_SHARE = 0.8
#: Seconds kept at the end for the report (at most this share of the budget).
RESERVE = 3.0
RESERVE_SHARE = 0.05
#: Seconds the costly side lane may take past the hunt's deadline before it is interrupted (and again after).
SIDE_GRACE = 10.0
#: A candidate's share of the time left, by its target's tier (a torch.compile confirmation costs a minute).
WEIGHT = {"screen": 1.0, "sample": 2.0, COSTLY: 5.0}
#: A candidate's share for shrinking (and at most these seconds, by its target's tier), and the most seconds its
#: confirmation may take (a torch.compile series: five compiles after a warm-up); attribution gets the rest.
SHRINK_PART = 0.2
SHRINK_MAX = {"screen": 20.0, "sample": 30.0, COSTLY: 60.0}
CONFIRM_MAX = {"screen": 30.0, "sample": 60.0, COSTLY: 150.0}
#: The least seconds worth starting a candidate with (a check of one engine target takes a second or two).
MIN_SHARE = 3.0
#: The costly lane's warm-up: one point at depth 1 (its first compile in the process is the set-up).
WARM_UP = SearchPlan((1,), 600.0, 600.0)

Progress = Callable[[str, dict[str, Any]], None]


@dataclass
class HuntConfig:
    """What a hunt needs: its targets, seed, budget (seconds from ``started``), output directory and lanes."""

    targets: list[Target]
    seed: int
    budget: float
    out: Path
    workdir: Path
    jobs: int = 2
    started: float = field(default_factory=time.monotonic)
    max_tries: int | None = None
    search_share: float = SEARCH_SHARE
    search_extend_share: float = SEARCH_EXTEND_SHARE

    @property
    def deadline(self) -> float:
        return self.started + self.budget


@dataclass
class _Program:
    """A generator written for checking: its file, chain name, and the check results by target."""

    gen: Generator
    file: str
    chain: str
    plan_target: Target
    results: dict[Target, Result] = field(default_factory=dict)
    not_applicable: dict[Target, str] = field(default_factory=dict)


class Hunt:
    """One hunt (see the module docstring): :meth:`run` returns the :class:`HuntReport`."""

    def __init__(
        self,
        cfg: HuntConfig,
        executor: Executor,
        check_executor: Executor | None = None,
        progress: Progress | None = None,
        poll: Callable[[], None] | None = None,
    ) -> None:
        self.cfg, self.executor, self.progress, self.poll = cfg, executor, progress, poll
        self.check_executor = check_executor
        self.report = HuntReport(seed=cfg.seed, budget_seconds=cfg.budget, targets=[t.label for t in cfg.targets])
        self.report.out = str(cfg.out)
        self.programs: dict[tuple[str, str], _Program] = {}
        self.finding_programs: dict[int, _Program] = {}
        self.search: Search | None = None
        #: A lane of its own for the costly targets' checks (torch.compile: its first compile in a process costs
        #: tens of seconds), warmed up while the search runs; never used by the search.
        self.costly = [t for t in cfg.targets if tier(t) == COSTLY] if check_executor is None else []
        self.costly_pool: LanePool | None = LanePool(1) if self.costly else None
        self.warming: threading.Thread | None = None

    # ------------------------------------------------------------------ the whole

    def run(self) -> HuntReport:
        own_checks = self.check_executor is None
        try:
            self._warm_up()
            archive = self._search()
            if not self._stopped():
                cands = best_per_target(archive.candidates(), self.cfg.targets)
                self.report.stats.candidates = len(cands)
                self._emit("candidates", {"count": len(cands)})
                if own_checks and cands:
                    self.check_executor = LanePool(self.cfg.jobs)
                    self._start_check_workers(self.check_executor)
                self._process(cands)
                if not self._stopped():
                    self._refine()
        except KeyboardInterrupt as exc:  # between two runs of the executors (they stop their own workers)
            self.report.interrupted = getattr(exc, "signal_name", "SIGINT")
        finally:
            if self.costly_pool is not None:
                if self._stopped():
                    self.costly_pool.interrupt()
                if self.warming is not None:
                    self.warming.join(timeout=10)
                self.costly_pool.close()
            if own_checks and isinstance(self.check_executor, LanePool):
                self.check_executor.close()
        if self.search is not None and not self.report.stats.candidates:  # interrupted in or right after the search
            self.report.stats.candidates = len(best_per_target(self.search.archive.candidates(), self.cfg.targets))
        interrupted = getattr(self.executor, "interrupted", None) or getattr(self.check_executor, "interrupted", None)
        if interrupted is not None and self.report.interrupted is None:
            self.report.interrupted = getattr(interrupted, "signal_name", None) or "SIGINT"
        self.report.elapsed_seconds = time.monotonic() - self.cfg.started
        return self.report

    def _stopped(self) -> bool:
        pools = (self.executor, self.check_executor, self.costly_pool)
        return self.report.interrupted is not None or any(
            getattr(e, "interrupted", None) is not None for e in pools if e
        )

    def _warm_up(self) -> None:
        """The costly lane's worker does its one-time set-up (a tiny chain at depth 1 on each costly target) in
        the background while the search runs."""
        pool = self.costly_pool
        if pool is None:
            return
        probe = Generator((Node("sin", (0,)),))
        task = evaluation_task(
            self.cfg.workdir, probe, self.costly, self.cfg.deadline, plans={t: WARM_UP for t in self.costly}
        )
        self.warming = threading.Thread(target=pool.run, args=([task],), name="adprof-hunt-warm-up", daemon=True)
        self.warming.start()

    def _start_check_workers(self, pool: LanePool) -> None:
        """The check lanes' workers started before the candidates share the time left: a worker's start (its
        imports: seconds on a loaded machine) is then not charged to the first candidate's check, whose share may
        be a few seconds (a check that could not start its worker rejected every candidate of a short hunt)."""

        def start(worker: Any, lane: int) -> None:
            worker.start(max(1.0, self._left()))

        pool.map([start] * pool.lanes)  # a lane whose worker did not start (its error is the result) restarts it

    def _emit(self, what: str, data: dict[str, Any]) -> None:
        if self.progress is not None:
            self.progress(what, data)

    def _search(self) -> Any:
        deadline = self.cfg.started + self.cfg.search_share * self.cfg.budget
        self.search = Search(
            self.cfg.targets,
            self.cfg.seed,
            self.executor,
            self.cfg.workdir,
            deadline,
            progress=self.progress,
            max_tries=self.cfg.max_tries,
            poll=self.poll,
            extend_until=self.cfg.started + max(self.cfg.search_share, self.cfg.search_extend_share) * self.cfg.budget,
        )
        archive = self.search.run()
        st = self.search.stats
        stats = self.report.stats
        stats.tried, stats.drawn, stats.evaluations = st.tried, st.drawn, st.evaluations
        stats.generations = st.generations
        stats.search_seconds, stats.per_target = st.seconds, dict(st.per_target)
        stats.search_extended = st.extended
        return archive

    # ------------------------------------------------------------------ candidates

    def _process(self, cands: list[Candidate]) -> None:
        """Candidates niche by niche (:func:`niches`): first each niche's first candidate, each with its share of
        what is left (:data:`WEIGHT`), then the niches' other candidates (most are covered by the first one's table
        by then: free) with what remains."""
        groups = niches(cands, self.cfg.targets)
        firsts = [g[0] for g in groups]
        rest = [c for g in groups for c in g[1:]]
        for queue in (firsts, rest):
            for i, cand in enumerate(queue):
                if self._stopped():
                    break
                if self._merge(cand, cand.gen) or self._recheck_and_merge(cand):
                    self.report.stats.processed += 1
                    continue
                left = self._left()
                if left < MIN_SHARE:
                    continue
                weights = [WEIGHT[self._tier(c.target)] for c in queue[i:]]
                self._candidate(cand, left * weights[0] / sum(weights))
                self.report.stats.processed += 1
        self.report.stats.unprocessed = len(cands) - self.report.stats.processed

    def _modes(self) -> tuple[str, ...]:
        """The modes a written chain declares: the built-ins' and every hunted target's (a plugin's own mode names:
        ``check`` skips a mode the chain does not declare)."""
        return tuple(dict.fromkeys(("traced", "eager", "compile", *(t.mode for t in self.cfg.targets))))

    def _tier(self, target: Target) -> str:
        """The target's tier by the cost per evaluation the search measured there (its estimate until then)."""
        st = self.search.stats.per_target.get(target.label) if self.search is not None else None
        return tier(target, st.cost_per_evaluation if st is not None else None)

    def _left(self) -> float:
        """Seconds left for measuring (the report's reserve kept)."""
        return self.cfg.deadline - self._reserve() - time.monotonic()

    def _reserve(self) -> float:
        return min(RESERVE, RESERVE_SHARE * self.cfg.budget)

    def _candidate(self, cand: Candidate, share: float) -> None:
        start = time.monotonic()
        shrink_until = start + min(SHRINK_PART * share, SHRINK_MAX[self._tier(cand.target)])
        shrunk = self._shrink(cand, shrink_until)
        gen = shrunk.gen
        if gen.key != cand.gen.key and self._merge(cand, gen):
            return
        prog = self._program(gen, cand.target)
        if cand.target not in prog.results:
            budget = min(CONFIRM_MAX[self._tier(cand.target)], max(MIN_SHARE, start + share - time.monotonic()))
            self._check(prog, [cand.target], min(budget, self._left()), explicit=False)
        result = prog.results.get(cand.target)
        if not confirms(result, cand.expect, cand.memory):
            self._reject(cand, gen, result)
            return
        others = [t for t in self.cfg.targets if t != cand.target and t not in prog.results]
        if others and self._left() > 1.0:
            budget = min(self._left(), max(MIN_SHARE, start + share - time.monotonic()))
            self._check(prog, others, budget, explicit=True, structure=False)
        self._finding(cand, prog, shrunk, result)

    def _recheck_and_merge(self, cand: Candidate) -> bool:
        """A finding of the candidate's niche whose check of its target the budget cut short: that target checked
        again first (cheaper than a finding of its own), then merged if it shows the same pathology."""
        for f in self.report.findings:
            prog = self.finding_programs[f.id]
            niche = (prog.gen.axis, prog.gen.reuses) == (cand.gen.axis, cand.gen.reuses)
            if (
                niche
                and f.memory == cand.memory
                and cand.target not in prog.not_applicable
                and _cut_short(prog.results.get(cand.target))
            ):
                left = self._left()
                if left < MIN_SHARE:
                    return False
                prog.results.pop(cand.target, None)
                budget = min(left, CONFIRM_MAX[self._tier(cand.target)])
                self._check(prog, [cand.target], budget, explicit=True, structure=False)
                self._retable(f, prog)
                return self._merge(cand, cand.gen)
        return False

    def _retable(self, f: Finding, prog: _Program) -> None:
        """A finding's table, attribution and file after more checks of its program."""
        f.table = self._rows(prog, f.file, Target(f.backend, f.profile, f.mode), f.memory)
        f.attribution, f.attribution_text = attr.attribute(f.table)
        f.source = found_source(f, prog.gen, prog.plan_target, self.cfg.seed, self._modes())
        self._write_file(f)

    def _refine(self) -> None:
        """What is left of the budget checks again the table cells that the budget cut short (not measured, or
        inconclusive because a series stopped at its share), finding by finding; the tables, attributions and
        files are updated."""
        for f in list(self.report.findings):
            prog = self.finding_programs[f.id]
            again = [t for t in self.cfg.targets if t not in prog.not_applicable and _cut_short(prog.results.get(t))]
            left = self._left()
            if not again or left < MIN_SHARE or self._stopped():
                continue
            for t in again:
                prog.results.pop(t, None)
            self._check(prog, again, left / (len(self.report.findings) - self.report.findings.index(f)), True, False)
            self._retable(f, prog)
            self._emit("refined", {"finding": f.id, "targets": [t.label for t in again]})

    def _merge(self, cand: Candidate, gen: Generator) -> bool:
        """A finding already covers this candidate: its program is this one, or a program of the same cell (axis,
        reuse), of the same cost (time, memory), and its check of this target showed the same pathology. Merged into
        it (its table covers it)."""
        for f in self.report.findings:
            prog = self.finding_programs[f.id]
            same = prog.gen.key == gen.key or (prog.gen.axis, prog.gen.reuses) == (gen.axis, gen.reuses)
            if same and f.memory == cand.memory and confirms(prog.results.get(cand.target), cand.expect, f.memory):
                if cand.target.label not in f.also:
                    f.also.append(cand.target.label)
                self.report.stats.merged += 1
                self._emit("merged", {"target": cand.target.label, "finding": f.id})
                return True
        return False

    def _shrink(self, cand: Candidate, deadline: float) -> ShrinkResult:
        lanes = max(1, getattr(self.executor, "lanes", 1))
        batch = lanes if self._tier(cand.target) == COSTLY else 4 * lanes

        hard = self.cfg.deadline - self._reserve()  # an evaluation started before the shrink's deadline runs to its end

        def evaluate(gens: Sequence[Generator]) -> list[Evaluation | None]:
            tasks = [evaluation_task(self.cfg.workdir, g, [cand.target], hard) for g in gens]
            out: list[Evaluation | None] = []
            for res in self.executor.run(tasks, poll=self.poll):
                out.append(evaluation_of(res[0]) if isinstance(res, list) and res else None)
            return out

        self._emit("shrink", {"target": cand.target.label, "size": cand.gen.size, "summary": cand.gen.summary()})
        res = shrink(cand, evaluate, deadline, batch=batch)
        if res.gen.key != cand.gen.key:
            self._emit("shrunk", {"target": cand.target.label, "from": cand.gen.size, "to": res.gen.size})
        return res

    # ------------------------------------------------------------------ check runs

    def _program(self, gen: Generator, target: Target) -> _Program:
        """The chain file of ``gen`` written for ``target`` (its depth options), once per (program, plan)."""
        plan = check_plan(target, gen)
        key = (gen.key, f"{plan}")
        if key not in self.programs:
            chain = f"hunt_{gen.key}"
            opts = ChainOptions(
                name=chain, depths=plan.depths, max_depth=plan.max_depth, cap=plan.cap, modes=self._modes()
            )
            file = self.cfg.workdir / f"check_{gen.key}_{target.slug}.py"
            write_atomic(str(file), chain_source([(gen, opts)]))
            self.programs[key] = _Program(gen, str(file), chain, target)
        return self.programs[key]

    def _check(
        self, prog: _Program, targets: Sequence[Target], budget: float, explicit: bool, structure: bool = True
    ) -> None:
        """The check path on ``targets`` (the costly ones on their warm lane, at the same time as the others)."""
        runnable = []
        for t in targets:
            why = runs_on(t, prog.gen)
            if why:
                prog.not_applicable[t] = why
            else:
                runnable.append(t)
        if not runnable:
            return
        self._emit("check", {"targets": [t.label for t in runnable], "summary": prog.gen.summary()})
        costly = [t for t in runnable if t in self.costly] if self.costly_pool is not None else []
        rest = [t for t in runnable if t not in costly]
        runs: list[CheckRun] = []

        def one(group: list[Target], executor: Executor | None) -> None:
            depths = {t: attribution_depths(t, prog.gen) for t in group} if explicit else None
            runs.append(
                check_targets(
                    prog.file,
                    prog.chain,
                    group,
                    budget=budget,
                    jobs=self.cfg.jobs,
                    executor=executor,
                    depths=depths,
                    poll=self.poll,
                    structure=structure,
                )
            )

        side = None
        if costly:
            if self.warming is not None:  # the warm-up has the lane until it is done (or the budget says so)
                self.warming.join(timeout=max(0.0, min(budget, self._left())))
            side = threading.Thread(target=one, args=(costly, self.costly_pool), name="adprof-hunt-costly")
            side.start()
        try:
            if rest:
                one(rest, self.check_executor)
        finally:
            if side is not None:
                if self._stopped() and self.costly_pool is not None:
                    self.costly_pool.interrupt()
                # bounded: the hunt's deadline (its workers honour it), then the costly lane is killed
                side.join(timeout=max(0.0, self.cfg.deadline - time.monotonic()) + SIDE_GRACE)
                if side.is_alive() and self.costly_pool is not None:
                    self.costly_pool.interrupt()
                    side.join(timeout=SIDE_GRACE)
        for run in runs:
            prog.results.update(run.results)
            for t, why in run.skipped.items():
                prog.not_applicable.setdefault(t, why)

    # ------------------------------------------------------------------ outcomes

    def _reject(self, cand: Candidate, gen: Generator, result: Result | None) -> None:
        verdict = verdict_kind(result, cand.memory) if result is not None else "not measured"
        reason = ""
        if result is not None:
            row = attr.row_of(cand.target, result, memory=cand.memory)
            reason = result.series.error or (row.note if cand.memory else attr.one_line_reason(result))
        self.report.rejected.append(
            Rejected(
                target=cand.target.label,
                summary=gen.summary(),
                search_figure=cand.growth.figure(gen.axis),
                component=cand.component,
                verdict=verdict,
                figure=_figure(result, cand.memory) if result is not None else "",
                reason=reason,
            )
        )
        self.report.stats.rejected += 1
        self._emit("rejected", {"target": cand.target.label, "verdict": verdict})

    def _finding(self, cand: Candidate, prog: _Program, shrunk: ShrinkResult, result: Result | None) -> None:
        assert result is not None
        n = self._next_number()
        t = cand.target
        gen = prog.gen
        name = f"finding_{n:04d}"
        path = self.cfg.out / f"{n:04d}_{t.slug}.py"
        rows = self._rows(prog, str(path), t, cand.memory)
        label, text = attr.attribute(rows)
        reproduce = "adprof check " + shlex.join([str(path), *t.check_options()])
        verdict = verdict_kind(result, cand.memory)
        figure = _figure(result, cand.memory)
        mv = result.verdict.memory
        finding = Finding(
            id=n,
            file=str(path),
            chain=name,
            target=t.label,
            backend=t.backend,
            profile=t.profile,
            mode=t.mode,
            verdict=verdict,
            figure=figure,
            decided_by=mv.decided_by if cand.memory and mv is not None else attr.decided_by(result),
            memory=cand.memory,
            axis=gen.axis,
            summary=gen.summary(),
            generator=gen.to_dict(),
            uses=gen.uses,
            predicted_base=gen.predicted_base,
            component=cand.component,
            search_figure=cand.growth.figure(gen.axis),
            reproduce=reproduce,
            attribution=label,
            attribution_text=text,
            table=rows,
            shrunk=Shrunk(
                from_size=shrunk.start.size,
                to_size=gen.size,
                steps=len(shrunk.steps),
                tried=shrunk.tried,
                minimal=shrunk.minimal,
                original=shrunk.start.summary(),
                original_generator=shrunk.start.to_dict(),
                seconds=round(shrunk.seconds, 2),
            ),
            confirmation=result_to_json(result),
        )
        finding.source = found_source(finding, gen, prog.plan_target, self.cfg.seed, self._modes())
        self._write_file(finding)
        self.report.findings.append(finding)
        self.finding_programs[n] = prog
        self.report.stats.confirmed += 1
        if gen.key != shrunk.start.key:
            self.report.stats.shrunk += 1
        self._emit("finding", {"id": n, "target": t.label, "verdict": verdict, "figure": figure, "file": str(path)})

    def _rows(self, prog: _Program, file: str, primary: Target, memory: bool = False) -> list[Row]:
        """The finding's table (``memory``: of its memory's class), each measured cell with the ``adprof check``
        command that measured it (the confirmation: the file's own options; an attribution: its explicit depths, no
        structure probe)."""
        rows = attr.table(self.cfg.targets, prog.results, prog.not_applicable, memory)
        for t, row in zip(self.cfg.targets, rows, strict=True):
            if t not in prog.results:
                continue
            words = [file, *t.check_options()]
            depths = attribution_depths(t, prog.gen) if t != primary else None
            if t != primary:
                words += (["--depths", ",".join(map(str, depths))] if depths else []) + ["--no-structure"]
            row.reproduce = "adprof check " + shlex.join(words)
        return rows

    def _write_file(self, f: Finding) -> None:
        """Write a finding's chain file. A failure (a full disk, a read-only folder, a dangling link) is kept in the
        finding (:attr:`Finding.write_error`) and said once; the hunt goes on, and its report is written whatever
        happens to one file."""
        try:
            self.cfg.out.mkdir(parents=True, exist_ok=True)
            write_atomic(f.file, f.source)
        except OSError as exc:
            first = not f.write_error
            f.write_error = exc.strerror or str(exc) or type(exc).__name__
            if first:
                self._emit("unwritten", {"id": f.id, "file": f.file, "error": f.write_error})
        else:
            f.write_error = ""

    def _next_number(self) -> int:
        """The next finding's number: past every finding of this hunt and every ``N_*.py`` in ``--out``, of any
        width (``9999_...`` is followed by ``10000_...``)."""
        used = [f.id for f in self.report.findings]
        try:
            names = [entry.name for entry in os.scandir(self.cfg.out)]
        except OSError:  # not there yet
            names = []
        existing = [int(m.group(1)) for name in names if (m := FINDING_FILE.fullmatch(name))]
        return max([0, *used, *existing]) + 1


#: The axes from the plainest program to the most involved one (the order niches are taken up in).
AXES = ("layer", "order", "unroll")


def _figure(result: Result, memory: bool) -> str:
    """A finding's growth figure: the time verdict's (:func:`~adprof.report.fmt_growth`), or its memory's."""
    if not memory:
        return attr.fmt_growth(result)
    mv = result.verdict.memory
    return words.memory_interval_text(mv) if mv is not None else ""


def _cut_short(result: Result | None) -> bool:
    """The budget cut this check short: not measured, or inconclusive after a series stopped at its share."""
    if result is None:
        return True
    series = result.series
    if not series.points and not series.error:
        return True
    budget = (StopReason.BUDGET, StopReason.BUDGET_SHARE, StopReason.NOT_MEASURED, StopReason.CENSORED)
    return result.verdict.kind == INCONCLUSIVE and series.stop is not None and series.stop.reason in budget


def niches(cands: Sequence[Candidate], targets: Sequence[Target]) -> list[list[Candidate]]:
    """Candidates grouped by the niche of their generator (axis, reuse) and their cost (time, then memory: the
    second cost): the plainest axis first (layers, then derivative orders, then unrolls), then the niches found on
    the most targets, then by their strongest candidate; within a niche, by the targets' order, exponentials
    first."""
    rank = {t: i for i, t in enumerate(targets)}
    groups: dict[tuple[str, bool, bool], list[Candidate]] = {}
    for c in cands:
        groups.setdefault((c.gen.axis, c.gen.reuses, c.memory), []).append(c)
    for group in groups.values():
        group.sort(key=lambda c: (rank.get(c.target, len(rank)), c.expect != "exponential", -c.fitness))

    def order(item: tuple[tuple[str, bool, bool], list[Candidate]]) -> tuple[bool, int, int, float, str]:
        niche, group = item
        plain = AXES.index(niche[0]) if niche[0] in AXES else len(AXES)
        return (niche[2], plain, -len({c.target for c in group}), -max(c.fitness for c in group), f"{niche}")

    return [g for _, g in sorted(groups.items(), key=order)]


def found_source(
    finding: Finding, gen: Generator, plan_target: Target, seed: int, modes: tuple[str, ...] | None = None
) -> str:
    """The found chain file: the checked program under the finding's name, with a docstring of what it shows."""
    plan = check_plan(plan_target, gen)
    uses = ""
    if gen.axis == "layer" and gen.reuses:
        uses = f"; the layer uses the previous value {gen.uses} times"
    elif gen.axis == "unroll" and gen.reuses:
        uses = f"; a step's paths from its states grow x{gen.predicted_base:.2f}"
    doc = f"{finding.target}: {finding.verdict} {finding.figure}{uses}."

    searched = f"the search maximised {finding.component} ({finding.search_figure})"

    def para(text: str, indent: str = "") -> str:
        return textwrap.fill(text, 110, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)

    module_doc = "\n\n".join(
        [
            para(f"Found by adprof hunt (seed {seed}): {finding.target} {finding.verdict} {finding.figure}."),
            para(f"The layer: {gen.summary()}"),
            para(f"Decided by {finding.decided_by}; {searched}."),
            para(f"Across engines: {finding.attribution} ({finding.attribution_text})."),
            "Reproduce:",
            f"    {finding.reproduce}",
            "Its generator (adprof.hunt.gen.Generator.from_json):",
            para(gen.to_json(), "    "),
        ]
    )
    opts = ChainOptions(
        name=finding.chain,
        depths=plan.depths,
        max_depth=plan.max_depth,
        cap=plan.cap,
        description=doc,
        **({"modes": modes} if modes else {}),
    )
    return chain_source([(gen, opts)], module_doc)


__all__ = ["Hunt", "HuntConfig", "found_source"]
