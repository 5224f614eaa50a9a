"""The outputs of a sampling run: the text summary, an SVG flame graph and a speedscope JSON."""

from __future__ import annotations

import html
import json
import zlib
from collections.abc import Sequence

from adprof.flame.collapse import FlameSummary, Frame, Stack, phase_of


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
