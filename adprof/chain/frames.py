"""The chain's frame in a crash dump (faulthandler's output of a worker killed by a signal)."""

from __future__ import annotations

import os
import re
from pathlib import Path

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')
_OURS = (str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2] / "engine"), "<frozen ")


def crash_frame(text: str, chain_file: str | None = None) -> str:
    """``"in FILE line N in FUNC"`` for the innermost frame of faulthandler's dump of the crashing
    thread that lies in ``chain_file`` (else the innermost frame outside adprof, the engine and the
    standard library's frozen modules); ``""`` when ``text`` holds no dump."""
    block = text.rsplit("most recent call first):", 1)
    if len(block) < 2:
        return ""
    frames = []
    for ln in block[1].splitlines()[1:] if block[1].startswith("\n") else block[1].splitlines():
        m = _FRAME.match(ln)
        if m is None:
            if frames:
                break
            continue
        frames.append(m)
    if not frames:
        return ""
    want = os.path.realpath(chain_file) if chain_file else None
    pick = next((m for m in frames if want and os.path.realpath(m["path"]) == want), None)
    if pick is None:
        pick = next((m for m in frames if not m["path"].startswith(_OURS)), frames[0])
    return f"in {os.path.basename(pick['path'])} line {pick['line']} in {pick['func']}"
