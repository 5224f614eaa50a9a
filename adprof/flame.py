"""``adprof flame``: sample a looped probe with py-spy and say where the time went.

``adprof flame FILE::CHAIN --mode traced --depth 17 --profile v08 -o mul.svg`` runs
``python -m adprof.flame_worker`` (see there) as py-spy's child, with ``py-spy record -F -f raw``:
one sampling run gives the collapsed stacks, from which this module writes the requested output
(a self-contained SVG flame graph, a speedscope JSON, or the raw stacks) and prints a summary in
the style of seed 001's sampling paragraph::

    915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality

The pure part (testable on hand-written collapsed text):

* :func:`parse_collapsed` — py-spy's raw format, ``frame;frame;... count`` per line, frames
  ``name (file:line)``, root first; empty-stack lines such as `` 1`` are kept (no frames).
* :func:`attribute` — each sample goes to the innermost frame that matches :data:`PHASE_TABLE`
  (``other`` if none); its *path* is the chain of matched phases from outer to inner with
  consecutive repeats removed. A phase in :data:`ABSORBING_PHASES` (``setup``: imports and chain
  loading) takes the whole sample whatever runs inside it.
* :func:`render_summary` — the text summary.

Exit codes of :func:`run_flame`: 0 ok, 1 the probe raised in the worker, 2 nothing could be
sampled (bad target or options, py-spy missing or refused, zero samples); errors are one line.
"""

from __future__ import annotations

import argparse
import fnmatch
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

# --------------------------------------------------------------------------- the phase table

#: Frame -> engine phase: ``(phase, function pattern, file pattern)``, first matching row wins.
#: The function pattern (fnmatch) is tried on py-spy's name (a qualname on Python >= 3.11, e.g.
#: ``MetadataScope.close``) and on its last dotted part (``close``). A file pattern without ``/``
#: is matched against the file's basename; one with ``/`` against ``/`` + the whole path
#: (``*/numpy/*`` is any file inside a ``numpy`` package, not the engine's ``engine/numpy.py``).
PHASE_TABLE: tuple[tuple[str, str, str], ...] = (
    # the worker's own setup: imports and chain loading
    ("setup", "make_iteration", "flame_worker.py"),
    ("setup", "load_chains", "chain.py"),
    ("setup", "_find_and_load", "<frozen importlib._bootstrap>"),
    ("setup", "_get_module_details", "<frozen runpy>"),
    # structural key comparison (seed 001: computegraph's ValueKey::eq)
    ("key equality", "structural_key_eq", "keys.py"),
    ("key equality", "__eq__", "keys.py"),
    # the global metadata table
    ("metadata registration", "register_metadata", "metadata.py"),
    ("metadata registration", "register_metadata_batch", "metadata.py"),
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


def _pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.0f}%" if total else "0%"


def path_line(path: Sequence[str], count: int, total: int) -> str:
    """``915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality``."""
    return f"{count} of {total} samples ({_pct(count, total)}) in {' -> '.join(path)}"


def render_summary(summary: FlameSummary, top: int = 8, min_share: float = 0.01) -> str:
    """The text summary: totals, phase table, phase paths (>= ``min_share``), top self functions."""
    s = summary
    n = s.probe
    lines: list[str] = []
    if s.title:
        lines.append(s.title)
    head = f"{n} probe samples"
    if s.excluded:
        left = ", ".join(f"{k} {v}" for k, v in s.excluded.items())
        head += f" (of {s.total}; left out: {left})"
    lines.append(head)
    if not n:
        lines.extend(s.notes)
        return "\n".join(lines)
    lines.append("")
    lines.append(f"  {'phase (innermost frame)':<26}{'samples':>8}{'share':>8}{'inclusive':>11}")
    for phase, k in s.phases.items():
        inc = s.inclusive.get(phase, k)
        lines.append(f"  {phase:<26}{k:>8}{100.0 * k / n:>7.1f}%{100.0 * inc / n:>10.1f}%")
    lines.append("")
    lines.append("  where the samples went:")
    shown = 0
    for path, k in s.paths:
        if shown >= top or k < min_share * n:
            break
        lines.append(f"    {path_line(path, k, n)}")
        shown += 1
    rest = s.paths[shown:]
    if rest:
        lines.append(f"    ({sum(k for _, k in rest)} samples in {len(rest)} other paths)")
    lines.append("")
    lines.append("  top self functions (leaf frames):")
    for fn, k in s.top_self[:top]:
        lines.append(f"    {k:>6} {100.0 * k / n:>5.1f}%  {fn}")
    if s.notes:
        lines.append("")
        lines.extend(s.notes)
    return "\n".join(lines)


# --------------------------------------------------------------------------- outputs

_PHASE_COLORS = {
    "key equality": "#e0413a",
    "metadata registration": "#f08a3c",
    "metadata deregistration": "#f5a623",
    "drop": "#e8c547",
    "derivative traces": "#b46fd6",
    "derivative program": "#8e7ad8",
    "grad": "#6f8fd6",
    "eager backward": "#5aa0c8",
    "trace rebuild": "#4bb3a3",
    "compile": "#62b86a",
    "record": "#9ccc65",
    "kernels": "#8fd1e8",
    "setup": "#c8c8c8",
}


def _frame_color(frame: Frame) -> str:
    phase = phase_of(frame)
    if phase in _PHASE_COLORS:
        return _PHASE_COLORS[phase]
    h = zlib.crc32(frame.function.encode())
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 110},{40 + (h >> 16) % 50})"


def render_svg(stacks: Sequence[tuple[Stack, int]], title: str = "", width: int = 1200) -> str:
    """A self-contained SVG flame graph (root at the bottom, hover titles give counts)."""
    root: dict = {"n": 0, "kids": {}}
    for frames, count in stacks:
        node = root
        node["n"] += count
        for f in frames:
            node = node["kids"].setdefault(f.label, {"n": 0, "kids": {}, "frame": f})
            node["n"] += count
    total = root["n"]

    def depth(node: dict) -> int:
        return 1 + max((depth(k) for k in node["kids"].values()), default=0)

    row, pad, top_margin = 16, 10, 36
    levels = depth(root) - 1
    height = top_margin + max(levels, 1) * row + pad + 20
    scale = (width - 2 * pad) / total if total else 0.0
    rects: list[str] = []

    def emit(node: dict, x: float, level: int) -> None:
        for label, kid in sorted(node["kids"].items()):
            w = kid["n"] * scale
            if w >= 0.3:
                y = height - 20 - (level + 1) * row
                f: Frame = kid["frame"]
                pct = 100.0 * kid["n"] / total
                tip = html.escape(f"{label}: {kid['n']} samples ({pct:.1f}%)")
                chars = int((w - 4) / 6.6)
                text = ""
                if chars >= 3:
                    name = f.name if len(f.name) <= chars else f.name[: max(chars - 2, 1)] + ".."
                    text = f'<text x="{x + 3:.1f}" y="{y + 11.5:.1f}">{html.escape(name)}</text>'
                rects.append(
                    f'<g><title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{w:.1f}" '
                    f'height="{row - 1}" rx="2" fill="{_frame_color(f)}"/>{text}</g>'
                )
                emit(kid, x, level + 1)
            x += w

    emit(root, float(pad), 0)
    legend = "  ".join(f"{p}" for p in _PHASE_COLORS)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">\n'
        f'<rect width="100%" height="100%" fill="#fbfbf8"/>\n'
        f'<text x="{pad}" y="16" font-size="13">{html.escape(title or "adprof flame")}'
        f" ({total} samples)</text>\n"
        f'<text x="{pad}" y="30" fill="#666">colours by phase: {html.escape(legend)}</text>\n'
        + "\n".join(rects)
        + f'\n<text x="{pad}" y="{height - 5}" fill="#666">width = share of samples; '
        f"hover a frame for its count</text>\n</svg>\n"
    )


def render_speedscope(stacks: Sequence[tuple[Stack, int]], rate: float, name: str = "adprof flame") -> str:
    """A speedscope JSON document (one sampled profile, weights in seconds at ``rate`` Hz)."""
    index: dict[Frame, int] = {}
    frames_json: list[dict] = []
    samples: list[list[int]] = []
    weights: list[float] = []
    for frames, count in stacks:
        ids = []
        for f in frames:
            i = index.get(f)
            if i is None:
                i = index[f] = len(frames_json)
                frames_json.append({"name": f.name, "file": f.file, "line": f.line})
            ids.append(i)
        samples.append(ids)
        weights.append(count / rate)
    end = sum(weights)
    doc = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames_json},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": "seconds",
                "startValue": 0,
                "endValue": end,
                "samples": samples,
                "weights": weights,
            }
        ],
        "activeProfileIndex": 0,
        "exporter": "adprof flame",
        "name": name,
    }
    return json.dumps(doc)


# --------------------------------------------------------------------------- running py-spy

FORMATS = ("svg", "speedscope", "raw")
_SUFFIX = {"svg": ".svg", "speedscope": ".json", "raw": ".txt"}
INSTALL_FIX = "install it with `pip install py-spy` (it must be on PATH or next to the Python interpreter)"
PTRACE_FIX = (
    "py-spy needs ptrace rights on its child: run as root, or grant CAP_SYS_PTRACE "
    "(docker run --cap-add SYS_PTRACE), or set kernel.yama.ptrace_scope to 0 or 1"
)


class FlameError(Exception):
    """A one-line user-facing failure with its exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def find_py_spy() -> str | None:
    """The py-spy executable: next to ``sys.executable`` first, then on PATH; None if missing."""
    exe_dir = Path(sys.executable).parent
    for name in ("py-spy", "py-spy.exe"):
        cand = exe_dir / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return shutil.which("py-spy")


@dataclass
class FlameRun:
    """One sampling run: the parsed stacks, the raw text and the worker's status."""

    stacks: list[tuple[Stack, int]]
    raw: str
    status: dict
    seconds_cap: int


def _repo_root() -> str:
    return str(Path(__file__).resolve().parent.parent)


def sample_probe(
    target: str,
    mode: str,
    depth: int,
    profile: str,
    seconds: float = 3.0,
    rate: int = 250,
    py_spy: str | None = None,
    timeout_margin: float = 30.0,
) -> FlameRun:
    """Run the looped probe as py-spy's child once; raise :class:`FlameError` if nothing was sampled.

    py-spy's ``-d`` is a cap (``2 * seconds + 5``): the worker normally exits first, after
    ``seconds`` of looping; at the cap py-spy kills it mid-iteration (the status says so).
    """
    py_spy = py_spy or find_py_spy()
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")
    cap = int(math.ceil(2 * seconds + 5))
    with tempfile.TemporaryDirectory(prefix="adprof-flame-") as tmp:
        raw_path = os.path.join(tmp, "stacks.txt")
        status_path = os.path.join(tmp, "status.json")
        cmd = [
            py_spy,
            "record",
            "-F",
            "-r",
            str(rate),
            "-d",
            str(cap),
            "-f",
            "raw",
            "-o",
            raw_path,
            "--",
            sys.executable,
            "-m",
            "adprof.flame_worker",
            target,
            "--mode",
            mode,
            "--depth",
            str(depth),
            "--profile",
            profile,
            "--seconds",
            str(seconds),
            "--status",
            status_path,
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_repo_root(), env.get("PYTHONPATH")) if p)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=cap + timeout_margin)
        except FileNotFoundError:
            raise FlameError(f"adprof flame: cannot run {py_spy}; {INSTALL_FIX}") from None
        except subprocess.TimeoutExpired:
            raise FlameError(
                f"adprof flame: py-spy did not finish within {cap + timeout_margin:.0f} s; lower --depth or --seconds"
            ) from None
        status = _read_status(status_path)
        raw = Path(raw_path).read_text(encoding="utf-8", errors="replace") if os.path.exists(raw_path) else ""
    err = _py_spy_error(proc.stderr)
    if proc.returncode != 0 and not raw.strip():
        if status.get("state") == "error":
            raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
        low = (err or "").lower()
        if "permission" in low or "ptrace" in low or "operation not permitted" in low:
            raise FlameError(f"adprof flame: py-spy cannot read its child ({err}); {PTRACE_FIX}")
        raise FlameError(f"adprof flame: py-spy failed (exit {proc.returncode}): {err or 'no message'}")
    stacks = parse_collapsed(raw)
    if status.get("state") == "error":
        raise FlameError(f"adprof flame: the probe failed in the worker: {status.get('error')}", 1)
    if not status:
        tail = _last_line(proc.stderr) or "no output"
        raise FlameError(
            f"adprof flame: the worker did not start ({tail}); "
            f"try: {sys.executable} -m adprof.flame_worker {target} --depth {depth}"
        )
    if sum(c for _, c in stacks) == 0:
        raise FlameError(
            f"adprof flame: py-spy recorded no samples (worker state {status.get('state')}, "
            f"{status.get('iterations', 0)} iterations); check that `{py_spy} record -- "
            f"{sys.executable} -c 'while 1: pass'` samples here, or {PTRACE_FIX}"
        )
    return FlameRun(stacks, raw, status, cap)


def _read_status(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _py_spy_error(stderr: str) -> str:
    """py-spy's error line (``Error: ...``), else its last non-status line."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("Error:") or "Permission" in ln:
            return ln
    rest = [ln for ln in lines if not ln.startswith("py-spy>")]
    return rest[-1] if rest else ""


# --------------------------------------------------------------------------- the command


def add_flame_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``flame`` on an ``add_subparsers()`` object; the handler is ``func=run_flame``."""
    p = subparsers.add_parser(
        "flame",
        help="sample a looped probe with py-spy: flame graph + where the time went",
        description="Run the probe of FILE::CHAIN in a loop under py-spy, write a flame graph and "
        "print the share of samples in each engine phase (key equality, metadata "
        "registration/deregistration, derivative traces, trace rebuild, kernels).",
    )
    _add_arguments(p)
    p.set_defaults(func=run_flame)
    return p


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="FILE::CHAIN", help="chain file and chain name")
    p.add_argument("--mode", choices=("traced", "eager"), default="traced", help="probe mode (traced)")
    p.add_argument("--depth", type=int, required=True, help="chain depth to probe")
    p.add_argument("--profile", choices=("v08", "fixed"), default="fixed", help="engine profile (fixed)")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds of looping to sample (3)")
    p.add_argument("--rate", type=int, default=250, help="samples per second (250; keep <= 1000)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="svg flame graph (default), speedscope JSON or raw collapsed stacks",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default flame-CHAIN-MODE-dDEPTH.EXT)")
    p.add_argument("--top", type=int, default=8, help="paths and self functions to list (8)")


def _resolve_target(target: str) -> tuple[str, str]:
    """Validate ``FILE[::CHAIN]``; return (``abs file::chain`` for the worker, chain name)."""
    from adprof.chain import ChainError, load_chains, parse_target

    try:
        path, name = parse_target(target)
        chains = load_chains(path, [name] if name else None)
    except ChainError as exc:
        raise FlameError(f"adprof flame: {exc}") from None
    if name is None:
        if len(chains) != 1:
            names = ", ".join(c.name for c in chains)
            raise FlameError(f"adprof flame: {path} defines several chains ({names}); name one with {path}::CHAIN")
        name = chains[0].name
    return f"{Path(path).resolve()}::{name}", name


def _default_output(name: str, mode: str, depth: int, fmt: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
    return f"flame-{safe}-{mode}-d{depth}{_SUFFIX[fmt]}"


def _format_for(output: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    if output and output.endswith(".json"):
        return "speedscope"
    if output and output.endswith((".txt", ".folded", ".collapsed")):
        return "raw"
    return "svg"


def run_flame(args: argparse.Namespace) -> int:
    """Run ``adprof flame`` for parsed ``args``; print the summary; return the exit code."""
    try:
        return _run(args)
    except FlameError as exc:
        print(str(exc), file=sys.stderr)
        return exc.code


def _run(args: argparse.Namespace) -> int:
    if args.depth < 1:
        raise FlameError(f"adprof flame: --depth must be >= 1, got {args.depth}")
    if not args.seconds > 0:
        raise FlameError(f"adprof flame: --seconds must be > 0, got {args.seconds}")
    if args.rate < 1:
        raise FlameError(f"adprof flame: --rate must be >= 1, got {args.rate}")
    fmt = _format_for(args.output, args.format)
    worker_target, name = _resolve_target(args.target)
    output = args.output or _default_output(name, args.mode, args.depth, fmt)
    out_dir = Path(output).resolve().parent
    if not out_dir.is_dir():
        raise FlameError(f"adprof flame: output directory {out_dir} does not exist")
    py_spy = find_py_spy()
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")
    run = sample_probe(worker_target, args.mode, args.depth, args.profile, args.seconds, args.rate, py_spy)
    summary = attribute(run.stacks)
    st = run.status
    done = (
        f"{st.get('iterations', 0)} iterations in {st.get('seconds', 0.0):.2f} s of looping"
        if st.get("state") == "done"
        else f"stopped during iteration {st.get('iterations', 0) + 1}"
    )
    summary.title = (
        f"adprof flame {args.target} ({args.mode}, depth {args.depth}, profile {args.profile}): "
        f"{done}, sampled at {args.rate} Hz"
    )
    if run.status.get("state") == "running":
        summary.notes.append(
            f"note: py-spy's {run.seconds_cap} s cap stopped the worker during iteration "
            f"{run.status.get('iterations', 0) + 1}; one iteration takes longer than the cap allows, "
            "so the samples cover part of it (lower --depth for whole iterations)"
        )
    title = f"{name} {args.mode} depth {args.depth} profile {args.profile}"
    if fmt == "svg":
        text = render_svg(run.stacks, title=title)
    elif fmt == "speedscope":
        text = render_speedscope(run.stacks, args.rate, name=title)
    else:
        text = run.raw
    Path(output).write_text(text, encoding="utf-8")
    summary.notes.append(f"wrote {output} ({fmt})")
    print(render_summary(summary, top=args.top))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m adprof.flame FILE::CHAIN ...`` (the same options as ``adprof flame``)."""
    p = argparse.ArgumentParser(prog="adprof flame", description=__doc__.splitlines()[0])
    _add_arguments(p)
    return run_flame(p.parse_args(argv))


__all__ = [
    "ABSORBING_PHASES",
    "FORMATS",
    "PHASE_TABLE",
    "FlameError",
    "FlameRun",
    "FlameSummary",
    "Frame",
    "add_flame_parser",
    "attribute",
    "find_py_spy",
    "main",
    "parse_collapsed",
    "parse_frame",
    "path_line",
    "phase_of",
    "phase_path",
    "render_speedscope",
    "render_summary",
    "render_svg",
    "run_flame",
    "sample_probe",
]

if __name__ == "__main__":
    sys.exit(main())
