"""Collapsed stacks and their phase attribution (pure: testable on hand-written collapsed text).

* :func:`parse_collapsed` — py-spy's raw format, ``frame;frame;... count`` per line, frames
  ``name (file:line)``, root first; empty-stack lines such as `` 1`` are kept (no frames).
* :func:`attribute` — each sample goes to the innermost frame that matches :data:`PHASE_TABLE`
  (``other`` if none); its *path* is the chain of matched phases from outer to inner with
  consecutive repeats removed. A phase in :data:`ABSORBING_PHASES` (``setup``: imports and chain
  loading) takes the whole sample whatever runs inside it.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# --------------------------------------------------------------------------- the phase table

#: Frame -> engine phase: ``(phase, function pattern, file pattern)``, first matching row wins.
#: The function pattern (fnmatch) is tried on py-spy's name (a qualname on Python >= 3.11, e.g.
#: ``MetadataScope.close``) and on its last dotted part (``close``). A file pattern without ``/``
#: is matched against the file's basename; one with ``/`` against ``/`` + the whole path
#: (``*/numpy/*`` is any file inside a ``numpy`` package, not the engine's ``engine/numpy.py``).
PHASE_TABLE: tuple[tuple[str, str, str], ...] = (
    # the worker's own setup: imports and chain loading
    ("setup", "make_point", "flame_worker.py"),
    ("setup", "load_chains", "*/adprof/chain/loader.py"),
    ("setup", "_find_and_load", "<frozen importlib._bootstrap>"),
    ("setup", "_get_module_details", "<frozen runpy>"),
    # structural key comparison (seed 001: computegraph's ValueKey::eq)
    ("key equality", "structural_key_eq", "keys.py"),
    ("key equality", "__eq__", "keys.py"),
    # the global metadata table
    ("metadata registration", "register_metadata", "metadata.py"),
    ("metadata registration", "MetadataScope.__init__", "metadata.py"),
    ("metadata deregistration", "deregister_metadata", "metadata.py"),
    ("metadata deregistration", "deregister_metadata_batch", "metadata.py"),
    # dropping derivative graphs and recorded tensors
    ("drop", "__del__", "metadata.py"),
    ("drop", "close", "metadata.py"),
    ("drop", "__del__", "graph.py"),
    ("drop", "close", "graph.py"),
    ("drop", "_forget_*", "keys.py"),
    # the transform
    ("grad", "grad", "ad.py"),
    ("grad", "vjp", "ad.py"),
    ("grad", "jvp", "ad.py"),
    ("grad", "_reverse", "ad.py"),
    ("derivative program", "vjp_program", "ad.py"),
    ("derivative program", "jvp_program", "ad.py"),
    ("derivative traces", "derivative_traces_from_program", "ad.py"),
    # eager backward and the source-program rebuild it does every call
    ("eager backward", "_backward", "eager.py"),
    ("eager backward", "backward", "eager.py"),
    ("trace rebuild", "rebuild_source_program", "eager.py"),
    ("trace rebuild", "freeze", "graph.py"),
    ("trace rebuild", "toposort", "graph.py"),
    ("compile", "Prepared.__init__", "program.py"),
    ("compile", "semantic_fingerprint", "program.py"),
    # recording: the chain's ops (traced ops record; eager ops compute and record)
    ("record", "_bind", "graph.py"),
    ("record", "_apply", "eager.py"),
    ("record", "TensorBase.*", "ops.py"),
    ("record", "*", "*/engine/numpy.py"),
    # numeric work
    ("kernels", "run_program", "<prepared program*"),
    ("kernels", "run_unchecked", "program.py"),
    ("kernels", "kernel*", "program.py"),
    ("kernels", "_*_impl", "ops.py"),
    ("kernels", "*", "*/numpy/*"),
    ("kernels", "*", "*/scipy/*"),
)

#: Phases that take a whole sample when any frame of the stack is theirs (imports inside setup
#: run numpy's module code, which is not kernel time). Their samples, and samples without any
#: Python frame (interpreter start and exit), are counted apart and left out of the shares.
ABSORBING_PHASES: frozenset[str] = frozenset({"setup"})
OTHER = "other"
NO_FRAME = "no Python frame"
#: Display order of the phases (then ``other``).
PHASE_ORDER: tuple[str, ...] = tuple(dict.fromkeys(p for p, _, _ in PHASE_TABLE)) + (OTHER,)

# --------------------------------------------------------------------------- parsing


class Frame(NamedTuple):
    """One py-spy frame: ``name (file:line)``; ``line`` is None with ``--nolineno``."""

    name: str
    file: str
    line: int | None

    @property
    def label(self) -> str:
        """``name (file:line)`` as py-spy wrote it."""
        if not self.file:
            return self.name
        return f"{self.name} ({self.file}{'' if self.line is None else f':{self.line}'})"

    @property
    def function(self) -> str:
        """``name (file)``: the frame without its line number."""
        return f"{self.name} ({self.file})" if self.file else self.name


Stack = tuple[Frame, ...]
_FRAME_RE = re.compile(r"^(.*?) \((.*)\)$")


def parse_frame(text: str) -> Frame:
    """Parse ``name (file:line)``, ``name (file)``, or a bare name."""
    m = _FRAME_RE.match(text)
    if not m:
        return Frame(text, "", None)
    name, where = m.group(1), m.group(2)
    file, sep, line = where.rpartition(":")
    if sep and line.isdigit():
        return Frame(name, file, int(line))
    return Frame(name, where, None)


def parse_collapsed(text: str) -> list[tuple[Stack, int]]:
    """Parse collapsed stacks (py-spy ``-f raw``): one ``(frames root-first, count)`` per line.

    Empty-stack lines (`` 1``) give ``((), 1)``; blank lines are skipped; a line whose last
    field is not a count raises ``ValueError`` naming the line.
    """
    out: list[tuple[Stack, int]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        try:
            c = int(count)
        except ValueError:
            raise ValueError(f"line {n} of the collapsed stacks has no sample count: {line[:80]!r}") from None
        frames = tuple(parse_frame(f) for f in stack.split(";") if f) if stack.strip() else ()
        out.append((frames, c))
    return out


# --------------------------------------------------------------------------- attribution


def _file_matches(pattern: str, file: str) -> bool:
    if "/" in pattern:
        return fnmatch.fnmatchcase("/" + file.replace("\\", "/"), pattern)
    base = file.replace("\\", "/").rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(base, pattern)


def phase_of(frame: Frame, table: Sequence[tuple[str, str, str]] = PHASE_TABLE) -> str | None:
    """The phase of one frame by :data:`PHASE_TABLE`, or None."""
    short = frame.name.rsplit(".", 1)[-1]
    for phase, fn_pat, file_pat in table:
        if (fnmatch.fnmatchcase(frame.name, fn_pat) or fnmatch.fnmatchcase(short, fn_pat)) and _file_matches(
            file_pat, frame.file
        ):
            return phase
    return None


def phase_path(frames: Stack, table: Sequence[tuple[str, str, str]] = PHASE_TABLE) -> tuple[str, ...]:
    """Matched phases along the stack, outer to inner, consecutive repeats removed.

    ``("other",)`` if nothing matches; ``(absorbing phase,)`` if an absorbing phase is on the stack.
    """
    path: list[str] = []
    for f in frames:
        p = phase_of(f, table)
        if p is None:
            continue
        if p in ABSORBING_PHASES:
            return (p,)
        if not path or path[-1] != p:
            path.append(p)
    return tuple(path) if path else (OTHER,)


@dataclass
class FlameSummary:
    """Where the samples went.

    ``total``: all samples; ``excluded``: samples left out of the shares (absorbing phases such
    as ``setup``, and ``no Python frame``); ``probe``: the rest, the denominator of every share.
    Over the probe samples: ``phases`` counts samples per phase of their innermost matched frame,
    ``inclusive`` per phase anywhere on the stack, ``paths`` per phase path, ``top_self`` per leaf
    function (``name (file)``), each most first. ``title`` and ``notes`` are the caller's.
    """

    total: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)
    inclusive: dict[str, int] = field(default_factory=dict)
    paths: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    top_self: list[tuple[str, int]] = field(default_factory=list)
    title: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def probe(self) -> int:
        """Samples counted in the shares (total minus excluded)."""
        return self.total - sum(self.excluded.values())

    def share(self, phase: str) -> float:
        """Fraction of probe samples whose innermost phase is ``phase`` (0 if none)."""
        return self.phases.get(phase, 0) / self.probe if self.probe else 0.0

    def inclusive_share(self, phase: str) -> float:
        """Fraction of probe samples with ``phase`` anywhere on the stack."""
        return self.inclusive.get(phase, 0) / self.probe if self.probe else 0.0

    def path_share(self, path: Sequence[str]) -> float:
        """Fraction of probe samples on exactly this phase path."""
        n = dict(self.paths).get(tuple(path), 0)
        return n / self.probe if self.probe else 0.0


def attribute(stacks: Iterable[tuple[Stack, int]], table: Sequence[tuple[str, str, str]] = PHASE_TABLE) -> FlameSummary:
    """Attribute parsed stacks to phases, phase paths and leaf (self) functions."""
    phases: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    paths: Counter[tuple[str, ...]] = Counter()
    selfs: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    total = 0
    for frames, count in stacks:
        total += count
        if not frames:
            excluded[NO_FRAME] += count
            continue
        path = phase_path(frames, table)
        if path[0] in ABSORBING_PHASES:
            excluded[path[0]] += count
            continue
        phases[path[-1]] += count
        paths[path] += count
        for p in set(path):
            inclusive[p] += count
        selfs[frames[-1].function] += count
    order = {p: i for i, p in enumerate(PHASE_ORDER)}

    def by_count(items):
        return dict(sorted(items, key=lambda kv: (-kv[1], order.get(kv[0], len(order)), kv[0])))

    return FlameSummary(
        total=total,
        excluded=by_count(excluded.items()),
        phases=by_count(phases.items()),
        inclusive=by_count(inclusive.items()),
        paths=sorted(paths.items(), key=lambda kv: (-kv[1], kv[0])),
        top_self=sorted(selfs.items(), key=lambda kv: (-kv[1], kv[0])),
    )
