"""Instruction counts under ``valgrind --tool=callgrind``: the runs, their totals, and per-function profiles."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from adprof.backends.cmd.process import (
    DEFAULT_OUTPUT_LIMIT,
    METRIC_ENV,
    CommandFailure,
    Completed,
    check_exit,
    expand,
    run_process,
)
from adprof.util import procs


def _valgrind() -> str:
    exe = shutil.which("valgrind")
    if exe is None:
        raise CommandFailure("valgrind", "--metric instructions needs valgrind (not found on PATH)")
    return exe


def _callgrind_argv(argv: list[str], out_dir: str, options: list[str]) -> list[str]:
    return [
        _valgrind(),
        "--tool=callgrind",
        f"--callgrind-out-file={out_dir}/callgrind.out",
        f"--log-file={out_dir}/valgrind.log",
        *options,
        *argv,
    ]


def callgrind_totals(path: Path) -> int:
    """The ``totals:`` (or ``summary:``) instruction count of one callgrind output file."""
    summary = None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
        if line.startswith("summary:"):
            summary = int(line.split()[1])
    if summary is None:
        raise CommandFailure("valgrind", f"no totals in callgrind output {path.name}")
    return summary


def _dump_files(out_dir: str) -> list[Path]:
    """Callgrind's output files in order: ``callgrind.out.1``, ``.2``, ... then the final one."""
    d = Path(out_dir)
    parts = sorted(d.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    final = d / "callgrind.out"
    return [*parts, final] if final.exists() else parts


def run_callgrind(
    argv: list[str], options: list[str], *, timeout: float, output_limit: int, env: Mapping[str, str] | None
) -> tuple[Completed, list[int], str]:
    with procs.temporary_dir("adprof-callgrind-") as out_dir:
        run_env = {**(env or {}), METRIC_ENV: "instructions"}
        done = run_process(
            _callgrind_argv(argv, out_dir, options),
            timeout=timeout,
            output_limit=output_limit,
            env=run_env,
            name=f"{argv[0]} (under valgrind)",
        )
        if done.returncode != 0:
            log = Path(out_dir, "valgrind.log")
            if not done.stderr.strip() and log.exists():
                done.stderr = log.read_bytes()
            done.argv = argv
            check_exit(done)
        files = _dump_files(out_dir)
        if not files:
            raise CommandFailure("valgrind", f"callgrind wrote no output for {argv[0]}")
        totals = [callgrind_totals(f) for f in files]
        text = files[-1].read_text(errors="replace")
    done.argv = argv
    return done, totals, text


class Profile(list):
    """``[(function, inclusive, self), ...]`` by inclusive cost, with ``total`` (instructions counted)."""

    total: int = 0

    def share(self, pattern: str) -> float:
        """Largest inclusive share of the functions whose name matches the regular expression ``pattern``
        (recursive functions are one row, so their inclusive cost is counted once)."""
        rx = re.compile(pattern)
        best = max((inc for name, inc, _ in self if rx.search(name)), default=0)
        return best / self.total if self.total else 0.0


#: The function behind seed 001's blowup: upstream computegraph's structural key comparison.
VALUE_KEY_EQ = r"ValueKey<.*> as core::cmp::PartialEq>::eq"

_NAME_REF = re.compile(r"^\((\d+)\)(?: (.*))?$")


def parse_callgrind(text: str) -> tuple[dict[str, int], dict[tuple[str, str], int], int]:
    """Self cost per function, inclusive cost per call arc (caller, callee) and the total, from a
    callgrind output file (first event; recursion-level suffixes like ``'2`` merged)."""
    names: dict[str, str] = {}
    self_cost: dict[str, int] = {}
    arcs: dict[tuple[str, str], int] = {}
    total = 0
    fn = "?"
    callee: str | None = None
    expect_call_cost = False

    def name_of(spec: str) -> str:
        m = _NAME_REF.match(spec.strip())
        if m:
            if m.group(2) is not None:
                names[m.group(1)] = m.group(2)
            spec = names.get(m.group(1), spec)
        return re.sub(r"'\d+$", "", spec.strip())

    for line in text.splitlines():
        if not line:
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            fields = line.split()
            cost = int(fields[1]) if len(fields) > 1 and fields[1].lstrip("-").isdigit() else 0
            if expect_call_cost:
                if callee is not None:
                    arcs[(fn, callee)] = arcs.get((fn, callee), 0) + cost
                expect_call_cost = False
            else:
                self_cost[fn] = self_cost.get(fn, 0) + cost
            continue
        if line.startswith("fn="):
            fn = name_of(line[3:])
            self_cost.setdefault(fn, 0)
        elif line.startswith("cfn="):
            callee = name_of(line[4:])
        elif line.startswith("calls="):
            expect_call_cost = True
        elif line.startswith("totals:") or line.startswith("summary:"):
            total = max(total, int(line.split()[1]))
    return self_cost, arcs, total


def _sccs(nodes: list[str], edges: dict[str, set[str]]) -> dict[str, int]:
    """Strongly connected components (iterative Tarjan): node -> component id."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                cid = len(set(comp.values()))
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp[w] = cid
                    if w == v:
                        break
    return comp


def profile_from_callgrind(text: str) -> Profile:
    """Per-function (name, inclusive, self) from a callgrind output file.

    Inclusive cost of a function = the cost of the calls entering it from outside its recursion
    (its strongly connected component in the call graph), so a recursive comparison such as
    ``ValueKey::eq`` is counted once, not once per level. A function never entered from outside
    (a root) gets its self cost plus its calls leaving the component.
    """
    self_cost, arcs, total = parse_callgrind(text)
    nodes = sorted(set(self_cost) | {a for a, _ in arcs} | {b for _, b in arcs})
    edges: dict[str, set[str]] = {}
    for a, b in arcs:
        edges.setdefault(a, set()).add(b)
    comp = _sccs(nodes, edges)
    entering: dict[str, int] = {}
    leaving: dict[str, int] = {}
    for (a, b), cost in arcs.items():
        if comp[a] != comp[b]:
            entering[b] = entering.get(b, 0) + cost
            leaving[a] = leaving.get(a, 0) + cost
    rows = []
    for name in nodes:
        inclusive = entering.get(name)
        if inclusive is None:
            inclusive = self_cost.get(name, 0) + leaving.get(name, 0)
        rows.append((name, int(inclusive), int(self_cost.get(name, 0))))
    rows.sort(key=lambda r: (-r[1], -r[2], r[0]))
    prof = Profile(rows)
    prof.total = total or (rows[0][1] if rows else 0)
    return prof


def callgrind_profile(
    template: str,
    depth: int,
    *,
    pattern: str | None = None,
    patterns: Sequence[str] = (),
    timeout: float,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    calls: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Profile:
    """Run ``template`` at ``depth`` under callgrind (only inside functions matching ``pattern``, e.g.
    ``'*phase_transform*'``, or any of ``patterns``, when given) and return ``[(function, inclusive,
    self), ...]`` by inclusive instructions; ``.total`` is the count and ``.share(VALUE_KEY_EQ)`` the
    share in ``ValueKey::eq``."""
    argv = expand(template, depth, calls)
    wanted = [*([pattern] if pattern else []), *patterns]
    options = ["--collect-atstart=no", *(f"--toggle-collect={p}" for p in wanted)] if wanted else []
    _, totals, text = run_callgrind(argv, options, timeout=timeout, output_limit=output_limit, env=env)
    prof = profile_from_callgrind(text)
    prof.total = totals[-1] or prof.total
    return prof
