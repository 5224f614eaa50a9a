"""The outputs of a sampling run: the text summary, collapsed stacks, speedscope JSON and a Chrome trace
(the SVG flame graph is :mod:`adprof.flame.svg`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from adprof.flame.collapse import FlameSummary, Frame, Stack
from adprof.flame.timeline import Slice


def _pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.0f}%" if total else "0%"


def path_line(path: Sequence[str], count: int, total: int) -> str:
    """``915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality``."""
    return f"{count} of {total} samples ({_pct(count, total)}) in {' -> '.join(path)}"


def render_summary(summary: FlameSummary, top: int = 8, min_share: float = 0.01, sections: bool = True) -> str:
    """The text summary: totals, the engine's section table and paths (``sections``: the reference engine's
    :data:`~adprof.flame.collapse.PHASE_TABLE`; >= ``min_share``), top self functions."""
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
    if sections:
        lines.append("")
        lines.append(f"  {'engine section (innermost)':<26}{'samples':>8}{'share':>8}{'inclusive':>11}")
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

PhasedStacks = Sequence[tuple[str, Stack, float]]
#: The root frame a phase gets in the collapsed stacks, speedscope and the trace.
PHASE_PREFIX = "phase "


def phase_frame(phase: str) -> Frame:
    """The frame that stands for a phase at the root of its stacks."""
    return Frame(f"{PHASE_PREFIX}{phase}", "", None)


def render_collapsed(stacks: Sequence[tuple[str, Stack, int]]) -> str:
    """Collapsed stacks (flamegraph.pl, inferno, speedscope read them): ``phase P;frame;frame samples``."""
    lines = []
    for phase, frames, n in stacks:
        labels = [phase_frame(phase).label, *(f.label.replace(";", ",") for f in frames)]
        lines.append(f"{';'.join(labels)} {n}")
    return "\n".join(lines) + ("\n" if lines else "")


def render_speedscope(stacks: PhasedStacks, name: str = "adprof flame", unit: str = "seconds") -> str:
    """A speedscope JSON document: one sampled profile, a phase frame at the root of each stack, the weights
    in ``unit`` (the stacks' weights as given)."""
    index: dict[Frame, int] = {}
    frames_json: list[dict] = []
    samples: list[list[int]] = []
    weights: list[float] = []
    for phase, frames, weight in stacks:
        ids = []
        for f in (phase_frame(phase), *frames):
            i = index.get(f)
            if i is None:
                i = index[f] = len(frames_json)
                fj: dict = {"name": f.name}
                if f.file:
                    fj["file"] = f.file
                if f.line is not None:
                    fj["line"] = f.line
                frames_json.append(fj)
            ids.append(i)
        samples.append(ids)
        weights.append(float(weight))
    doc = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames_json},
        "profiles": [
            {
                "type": "sampled",
                "name": name,
                "unit": unit,
                "startValue": 0,
                "endValue": sum(weights),
                "samples": samples,
                "weights": weights,
            }
        ],
        "activeProfileIndex": 0,
        "exporter": "adprof flame",
        "name": name,
    }
    return json.dumps(doc)


def render_chrometrace(slices: Sequence[Slice], name: str = "adprof flame") -> str:
    """A Chrome trace-event JSON (Perfetto and chrome://tracing open it): one complete (``X``) event per frame
    held over consecutive slices, the phase frame on top, times in microseconds from the first slice."""
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": name}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "probe (measured phases)"}},
    ]
    t0 = slices[0].start if slices else 0.0
    open_: list[tuple[Frame, float]] = []  # the frames held, root first, with their start
    last_end = t0

    def close(keep: int, at: float) -> None:
        while len(open_) > keep:
            f, start = open_.pop()
            ev: dict = {"ph": "X", "name": f.name, "cat": "adprof", "pid": 1, "tid": 1}
            ev["ts"] = round((start - t0) * 1e6, 3)
            ev["dur"] = round((at - start) * 1e6, 3)
            if f.file:
                ev["args"] = {"file": f.file, "line": f.line}
            events.append(ev)

    for s in slices:
        stack = (phase_frame(s.phase), *s.frames)
        if s.start > last_end + 1e-9:  # a gap: nothing measured in between
            close(0, last_end)
        keep = 0
        while keep < len(open_) and keep < len(stack) and open_[keep][0] == stack[keep]:
            keep += 1
        close(keep, s.start)
        for f in stack[keep:]:
            open_.append((f, s.start))
        last_end = s.end
    close(0, last_end)
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"exporter": "adprof flame"}})
