"""py-spy's trace placed on the worker's clock: each sample's stack, cut to the probe, with its phase (pure).

py-spy's ``chrometrace`` output is a list of ``B``/``E`` events per thread, written when a sample's stack differs
from the previous one, with ``ts`` in microseconds from py-spy's own start. :func:`stack_segments` rebuilds the
stack between changes; :func:`clock_offset` finds py-spy's clock against the worker's from the clock anchor
(:data:`adprof.flame.flame_worker.ANCHOR`: a spin of known start and end); :func:`phased_profile` splits the
segments by the worker's phase windows (``[time, phase]`` at each ``on_phase``, ``[time, None]`` at each
point's end) and keeps only time inside a window. A stack is cut below the worker's loop
(:data:`~adprof.flame.flame_worker.LOOP`): what is left starts at the backend's ``measure_point``. Time in the
harness's own frames (:data:`HARNESS`: the timer's gc and yield, the call counter's extra run) is left out.

Weights are seconds; a sample of py-spy's stands for the time until the next one (its rate is Poisson), so a
weight times the rate is a number of samples.
"""

from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from adprof.flame.collapse import Frame, Stack
from adprof.flame.flame_worker import ANCHOR, LOOP

#: Frames (function, file suffix) whose time is the harness's, not the probe's.
HARNESS: tuple[tuple[str, str], ...] = (
    ("timed_block", "adprof/backends/base.py"),
    ("count_python_calls", "adprof/backends/base.py"),
    ("_metered", "adprof/backends/engine.py"),
    ("autograd_nodes", "adprof/backends/torch_backend.py"),  # counting the graph's nodes: a metric, untimed
)

#: A sample stands for at most this many sampling periods (the chance of a longer Poisson gap is e**-5): a
#: longer gap means py-spy fell behind (a loaded machine), and the stack it saw first does not stand for it
#: (:func:`stale_after`).
STALE_PERIODS = 5.0


@dataclass(frozen=True)
class Segment:
    """One stack held from ``start`` to ``end`` (seconds on the clock the caller chose)."""

    start: float
    end: float
    frames: Stack


@dataclass(frozen=True)
class Slice:
    """A segment's part inside one phase window (worker seconds), its stack cut to the probe."""

    start: float
    end: float
    phase: str
    frames: Stack


@dataclass
class PhasedProfile:
    """The measured region of a sampling run.

    ``slices``: the timeline (worker seconds, in order); ``rate``: py-spy's samples per second; ``iterations``:
    points measured; ``outside``: seconds sampled outside every phase window (setup, the worker's loop);
    ``harness``: seconds in the harness's frames inside a window (left out); ``offset_error``: half the width
    of the interval the clock offset was read from (seconds); ``late``: seconds of gaps between samples past
    :data:`STALE_PERIODS` periods (py-spy fell behind; not attributed); ``window_seconds``: the phase windows'
    total by the worker's clock.
    """

    slices: list[Slice] = field(default_factory=list)
    rate: float = 100.0
    iterations: int = 0
    outside: float = 0.0
    harness: float = 0.0
    offset_error: float = 0.0
    late: float = 0.0
    window_seconds: float = 0.0
    phase_order: list[str] = field(default_factory=list)
    agreement: float = 1.0

    def seconds_per_point(self) -> float:
        """The worker's own time in the measured phases per point (its clock, not the samples: py-spy falling
        behind loses samples, not time), less the harness's share as the samples saw it."""
        inside = self.seconds
        probe = inside / (inside + self.harness) if inside + self.harness > 0 else 1.0
        return self.window_seconds * probe / max(self.iterations, 1)

    def weights(self) -> dict[tuple[str, Stack], float]:
        """Seconds per (phase, stack), in first-seen order."""
        out: dict[tuple[str, Stack], float] = defaultdict(float)
        for s in self.slices:
            out[(s.phase, s.frames)] += s.end - s.start
        return dict(out)

    def samples(self) -> list[tuple[str, Stack, int]]:
        """(phase, stack, samples) with the weights turned into whole samples at :attr:`rate` (largest remainder:
        the total is the rounded total); stacks of no sample are dropped."""
        w = self.weights()
        exact = {k: v * self.rate for k, v in w.items()}
        floors = {k: int(v) for k, v in exact.items()}
        left = round(sum(exact.values())) - sum(floors.values())
        for k in sorted(exact, key=lambda k: exact[k] - floors[k], reverse=True)[: max(left, 0)]:
            floors[k] += 1
        return [(p, f, n) for (p, f), n in floors.items() if n > 0]

    @property
    def seconds(self) -> float:
        """Seconds inside the phase windows, harness excluded."""
        return sum(s.end - s.start for s in self.slices)


def stack_segments(events: Iterable[dict], tid: int | None = None) -> list[Segment]:
    """The stacks of one thread (``tid``; None: the thread with the most events) between py-spy's changes.

    Times are py-spy's ``ts`` in seconds. Frames come root first as :class:`Frame` (``args.filename``,
    ``args.line``). The last event's time closes the last segment.
    """
    evs = [e for e in events if isinstance(e, dict) and e.get("ph") in ("B", "E")]
    if tid is None and evs:
        counts: dict[int, int] = defaultdict(int)
        for e in evs:
            counts[e.get("tid")] += 1
        tid = max(counts, key=lambda t: counts[t])
    evs = [e for e in evs if e.get("tid") == tid]
    evs.sort(key=lambda e: e.get("ts", 0))  # stable: py-spy writes a change's E events before its B events
    out: list[Segment] = []
    stack: list[Frame] = []
    i = 0
    while i < len(evs):
        ts = evs[i].get("ts", 0)
        while i < len(evs) and evs[i].get("ts", 0) == ts:
            e = evs[i]
            if e["ph"] == "B":
                args = e.get("args") or {}
                line = args.get("line")
                stack.append(Frame(str(e.get("name", "")), str(args.get("filename", "")), line if line else None))
            elif stack:
                stack.pop()
            i += 1
        t = ts / 1e6
        if out and out[-1].end < 0:
            prev = out[-1]
            out[-1] = Segment(prev.start, t, prev.frames)
        if stack:
            out.append(Segment(t, -1.0, tuple(stack)))
    if out and out[-1].end < 0:
        out.pop()
    return out


def clock_offset(segments: Sequence[Segment], anchor: tuple[float, float], rate: float) -> tuple[float, float]:
    """(py-spy time minus worker time, half-width of the interval it lies in), from the clock anchor.

    The first sample inside the anchor (at ``b``, py-spy time) was taken in ``[w0, w1]`` (worker time), the first
    sample after it (at ``e``) after ``w1``: the offset lies in ``[b - w1, min(b - w0, e - w1)]``. The expected
    wait for a Poisson sample is one period, so the estimate is the mean of ``b - w0`` and ``e - w1`` less a period,
    kept inside that interval. Raises ``ValueError`` when the anchor is not in the trace.
    """
    w0, w1 = anchor
    inside = [i for i, s in enumerate(segments) if any(f.name == ANCHOR for f in s.frames)]
    if not inside:
        raise ValueError("the clock anchor is not in py-spy's trace")
    first, last = inside[0], inside[-1]
    b = segments[first].start
    e = segments[last].end
    lo, hi = b - w1, min(b - w0, e - w1)
    if hi < lo:
        hi = lo
    guess = (b - w0 + e - w1) / 2 - 1.0 / rate
    return min(max(guess, lo), hi), (hi - lo) / 2


def stale_after(segments: Sequence[Segment], rate: float) -> float:
    """The longest time one sample stands for: :data:`STALE_PERIODS` periods of the rate asked for, or of the
    median gap between py-spy's stack changes when that is longer (``--native`` on a loaded machine: py-spy
    samples slower than asked, every time alike)."""
    gaps = sorted(s.end - s.start for s in segments)
    median = gaps[len(gaps) // 2] if gaps else 0.0
    return STALE_PERIODS * max(1.0 / rate, median)


def cut_to_probe(frames: Stack) -> Stack | None:
    """The frames below the worker's loop (None when the loop is not on the stack: setup, the anchor)."""
    for i, f in enumerate(frames):
        if f.name == LOOP and f.file.replace("\\", "/").endswith("flame_worker.py"):
            rest = frames[i + 1 :]
            if rest and rest[0].name.endswith("on_phase"):  # the loop's own logger, when a sample caught it
                return None
            while rest and rest[0].file.replace("\\", "/").endswith("flame_worker.py"):  # the worker's closure
                rest = rest[1:]
            return rest
    return None


def in_harness(frames: Stack) -> bool:
    """Whether a frame of :data:`HARNESS` is on the stack."""
    return any(f.name == fn and f.file.replace("\\", "/").endswith(suffix) for f in frames for fn, suffix in HARNESS)


def phase_windows(events: Sequence[Sequence], kept: Sequence[str] = ()) -> list[tuple[float, float, str]]:
    """``[time, phase|None]`` events -> ``(start, end, phase)`` windows (a phase lasts until the next event); only
    the phases in ``kept`` when given (the backend's measured phases: not its ``check`` of the value)."""
    out = []
    for (t, phase), (t2, _) in zip(events, events[1:], strict=False):
        if phase is not None and t2 > t and (not kept or phase in kept):
            out.append((float(t), float(t2), str(phase)))
    return out


@functools.lru_cache(maxsize=1 << 16)
def _cut(frames: Stack) -> Stack | None:
    """:func:`cut_to_probe`, once per distinct stack (the offset search splits the trace 38 times)."""
    return cut_to_probe(frames)


def _split(
    segments: Sequence[Segment], windows: Sequence[tuple[float, float, str]], off: float, longest: float
) -> Iterator[tuple[str, float, float, str | None, Stack | None]]:
    """Each segment as ``("in", start, end, phase, cut stack)`` when its sample was taken inside a window (worker
    seconds; the cut stack None when it is not the probe's), else ``("out", ...)``, and ``("late", 0, excess)``
    past ``longest``.

    A segment goes whole to the phase its sample was taken in: the stack was seen at the segment's start, and
    the unchanged samples after it ran the same code. Cutting it at a window's edge instead would hand the
    neighbouring phase up to a period of time that was not its own (a phase change changes the stack, and the
    change is seen only at the next sample)."""
    starts = [w[0] for w in windows]
    for seg in segments:
        a, b = seg.start - off, seg.end - off
        if b - a > longest:  # py-spy fell behind: what ran after the sample's first periods is unknown
            yield ("late", 0.0, (b - a) - longest, None, None)
            b = a + longest
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < windows[i][1]:
            yield ("in", a, b, windows[i][2], _cut(seg.frames))
        else:
            yield ("out", a, b, None, None)


#: Frames below ``measure_point`` that say which part of a point a sample is in (:func:`refine_offset`).
KEY_FRAMES = 8


@functools.lru_cache(maxsize=1 << 16)
def _keyed(cut: Stack | None) -> bool:
    """A probe stack deep enough to say which part of a point it is in (the runner's own frames above a phase's
    work are shared by the phases), not the harness's."""
    return cut is not None and len(cut) >= KEY_FRAMES and not in_harness(cut)


def _purity(segments, windows, off: float, longest: float) -> tuple[float, float]:
    """(seconds of probe stacks (:func:`_keyed`) in the phase that holds most of their kind, seconds of them in
    another phase), a kind being the first :data:`KEY_FRAMES` frames and ``forward0`` one phase with ``forward``:
    the first high and the second low when the clocks are aligned."""
    by: dict[Stack, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for kind, lo, hi, phase, cut in _split(segments, windows, off, longest):
        if kind == "in" and _keyed(cut):
            by[cut[:KEY_FRAMES]][str(phase).rstrip("0123456789")] += hi - lo
    agree = sum(max(d.values()) for d in by.values())
    return agree, sum(sum(d.values()) for d in by.values()) - agree


def refine_offset(
    segments: Sequence[Segment], windows: Sequence[tuple[float, float, str]], anchor: float, rate: float
) -> float:
    """The clock offset that puts each kind of probe stack in one phase most: tried from a period before the
    anchor's to eight after it, in quarter periods. A sample's time is taken when py-spy has read the stack,
    and a deep stack (``--native``: C++ frames to unwind) takes longer to read than the anchor's shallow one, so
    the anchor alone places deep samples late, in the next phase."""
    period = 1.0 / rate
    longest = stale_after(segments, rate)

    def score(off: float) -> float:
        agree, other = _purity(segments, windows, off, longest)
        return agree - other

    best, best_score = anchor, score(anchor)
    for k in range(-4, 33):
        cand = anchor + k * period / 4
        score_k = score(cand)
        if score_k > best_score + 1e-9:
            best, best_score = cand, score_k
    return best


def phased_profile(
    segments: Sequence[Segment], log: dict, rate: float, offset: tuple[float, float] | None = None
) -> PhasedProfile:
    """Split py-spy's segments by the worker's phase windows (``log``: the worker's ``--log`` JSON); the clock
    offset is the anchor's (:func:`clock_offset`) refined by :func:`refine_offset` unless ``offset`` is given."""
    windows = phase_windows(log.get("events") or [], log.get("phases") or ())
    if offset is None:
        off, err = clock_offset(segments, tuple(log["anchor"]), rate)
        off = refine_offset(segments, windows, off, rate)
    else:
        off, err = offset
    prof = PhasedProfile(rate=rate, iterations=int(log.get("iterations", 0)), offset_error=err)
    prof.window_seconds = sum(we - ws for ws, we, _ in windows)
    agree, other = _purity(segments, windows, off, stale_after(segments, rate))
    prof.agreement = agree / (agree + other) if agree + other else 1.0
    prof.phase_order = list(log.get("phases") or dict.fromkeys(p for _, _, p in windows))
    for kind, lo, hi, phase, cut in _split(segments, windows, off, stale_after(segments, rate)):
        if kind == "late":
            prof.late += hi - lo
        elif kind == "out" or cut is None:
            prof.outside += hi - lo
        elif in_harness(cut):
            prof.harness += hi - lo
        else:
            prof.slices.append(Slice(lo, hi, str(phase), cut))
    return prof


__all__ = [
    "HARNESS",
    "PhasedProfile",
    "Segment",
    "Slice",
    "clock_offset",
    "cut_to_probe",
    "in_harness",
    "phase_windows",
    "phased_profile",
    "refine_offset",
    "stack_segments",
    "stale_after",
]
