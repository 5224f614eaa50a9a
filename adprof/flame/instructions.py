"""Where the instructions went: a per-function table and a bar SVG of inclusive instruction counts.

Pure rendering of ``[(function, inclusive, self), ...]`` rows (callgrind's per-function costs, as
:func:`adprof.backends.cmd.callgrind_profile` returns them, recursion counted once) against the
``total`` instructions counted; ``highlight`` (a regular expression) marks the function whose share
the summary names, e.g. upstream computegraph's ``ValueKey::eq``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

Row = tuple[str, int, int]

#: Rows that are not functions of the program (valgrind's own start-up stubs).
_NOISE = re.compile(r"^0x[0-9a-f]+$|^\?\?\?$|^\(below main\)$")


def top_rows(rows: Sequence[Row], top: int, total: int | None = None) -> list[Row]:
    """The ``top`` rows by inclusive cost, without address-only rows and (given ``total``) without the
    callers that only pass everything through (``main``, the runtime's start-up frames)."""
    kept = [r for r in rows if not _NOISE.match(r[0])]
    if total:
        kept = [r for r in kept if not (r[1] >= total and r[2] == 0)] or kept
    return kept[:top]


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def highlight_share(rows: Sequence[Row], total: int, highlight: str) -> tuple[str | None, float]:
    """The function matching ``highlight`` with the largest inclusive cost, and its share of ``total``."""
    rx = re.compile(highlight)
    best = max((r for r in rows if rx.search(r[0])), key=lambda r: r[1], default=None)
    if best is None or not total:
        return None, 0.0
    return best[0], best[1] / total


def render_table(
    rows: Sequence[Row], total: int, *, title: str, highlight: str | None, label: str, top: int = 15
) -> str:
    """A text table: inclusive and self instructions per function, with the highlighted share first (only when
    ``highlight``, the user's ``--focus``, is given)."""
    lines = [title, f"{total:,} instructions counted"]
    if highlight:
        name, share = highlight_share(rows, total, highlight)
        if name is None:
            lines.append(f"{label}: no function matches {highlight!r}")
        else:
            lines.append(f"{share:.1%} of the instructions (inclusive) in {label}: {name}")
    lines.append("")
    lines.append(f"  {'inclusive':>14} {'share':>7} {'self':>14}  function")
    for fn, inc, self_ in top_rows(rows, top, total):
        pct = 100.0 * inc / total if total else 0.0
        lines.append(f"  {inc:>14,} {pct:>6.1f}% {self_:>14,}  {_short(fn, 110)}")
    return "\n".join(lines)


def render_bars_svg(
    rows: Sequence[Row], total: int, *, title: str, highlight: str | None, top: int = 15, width: int = 1200
) -> str:
    """A self-contained SVG: one bar per function, its length the inclusive share of ``total``
    (the highlighted function in red; hover a bar for its counts)."""
    rx = re.compile(highlight or r"(?!)")
    shown = top_rows(rows, top, total)
    row_h, pad, head, label_w = 20, 10, 40, 520
    height = head + len(shown) * row_h + 2 * pad + 16
    bar_w = width - label_w - 2 * pad - 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
        '<rect width="100%" height="100%" fill="#fbfbf8"/>',
        f'<text x="{pad}" y="18" font-size="13">{html.escape(title)} ({total:,} instructions)</text>',
        f'<text x="{pad}" y="33" fill="#666">bar = inclusive share of the instructions counted '
        "(callgrind Ir; recursion counted once)</text>",
    ]
    for i, (fn, inc, self_) in enumerate(shown):
        y = head + pad + i * row_h
        share = inc / total if total else 0.0
        colour = "#e0413a" if rx.search(fn) else "#6f8fd6"
        tip = html.escape(f"{fn}: {inc:,} inclusive ({share:.1%}), {self_:,} self")
        out.append(
            f"<g><title>{tip}</title>"
            f'<text x="{pad}" y="{y + 13}">{html.escape(_short(fn, 80))}</text>'
            f'<rect x="{label_w}" y="{y + 2}" width="{max(share * bar_w, 0.5):.1f}" height="{row_h - 5}" '
            f'rx="2" fill="{colour}"/>'
            f'<text x="{label_w + share * bar_w + 6:.1f}" y="{y + 13}">{share:.1%}</text></g>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = ["highlight_share", "render_bars_svg", "render_table", "top_rows"]
