"""Text safe to print to a terminal: a user's string (a chain's exception message, a program's stderr or
binary stdout, a chain name) may hold escape sequences that set the window title, clear the screen or
rewrite earlier lines. They are shown, escaped, never executed."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
#: (they reorder what the terminal shows, "Trojan source").
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but tab and newline written as ``\\xNN`` (``\\uNNNN``)."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def one_line_safe(text: str) -> str:
    """:func:`terminal_safe`, with newlines and tabs as spaces (for one-line messages)."""
    return terminal_safe(text).replace("\n", " ").replace("\t", " ")


def range_text(singular: str, plural: str, first: int, last: int) -> str:
    """A range as a person writes it: ``calls 2..5``, or ``call 2`` where it holds one (never ``calls 2..2``)."""
    return f"{singular} {first}" if first == last else f"{plural} {first}..{last}"


def depth_ranges(depths: Iterable[int]) -> str:
    """``9-12, 16, 32``: a sorted list of depths with consecutive runs joined."""
    runs: list[list[int]] = []
    for d in sorted(depths):
        if runs and d == runs[-1][-1] + 1:
            runs[-1].append(d)
        else:
            runs.append([d])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
