"""``adprof flame``: sample a looped probe with py-spy and say where the time went.

:mod:`~adprof.flame.collapse` (collapsed stacks, the phase table, attribution: pure),
:mod:`~adprof.flame.output` (summary text, SVG flame graph, speedscope JSON),
:mod:`~adprof.flame.sampling` (running py-spy on :mod:`~adprof.flame.flame_worker`, the looped probe),
:mod:`~adprof.flame.command` (the command: options, checks, output file). Layer: imports chain only.
"""

from adprof.flame.collapse import (
    ABSORBING_PHASES,
    PHASE_TABLE,
    FlameSummary,
    Frame,
    attribute,
    parse_collapsed,
    parse_frame,
    phase_of,
    phase_path,
)
from adprof.flame.command import FORMATS, add_arguments, main, run_flame
from adprof.flame.output import path_line, render_speedscope, render_summary, render_svg
from adprof.flame.sampling import INSTALL_FIX, FlameError, FlameRun, find_py_spy, sample_probe

__all__ = [
    "ABSORBING_PHASES",
    "FORMATS",
    "INSTALL_FIX",
    "PHASE_TABLE",
    "FlameError",
    "FlameRun",
    "FlameSummary",
    "Frame",
    "add_arguments",
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
