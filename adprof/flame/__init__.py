"""``adprof flame``: sample a looped probe with py-spy and say where the time went.

:mod:`~adprof.flame.collapse` (collapsed stacks, the phase table, attribution: pure),
:mod:`~adprof.flame.timeline` (py-spy's trace on the worker's clock: the measured phases only),
:mod:`~adprof.flame.output` (summary text, collapsed stacks, speedscope JSON, Chrome trace),
:mod:`~adprof.flame.svg` (the interactive SVG), :mod:`~adprof.flame.diff` (growth between two depths),
:mod:`~adprof.flame.sampling` (running py-spy on :mod:`~adprof.flame.flame_worker`, the backend's points),
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
from adprof.flame.diff import Growth, growth, render_growth
from adprof.flame.output import (
    path_line,
    render_chrometrace,
    render_collapsed,
    render_speedscope,
    render_summary,
)
from adprof.flame.sampling import INSTALL_FIX, FlameError, FlameRun, find_py_spy, sample_probe
from adprof.flame.svg import render_flame_svg
from adprof.flame.timeline import PhasedProfile, Slice, phased_profile, stack_segments

__all__ = [
    "ABSORBING_PHASES",
    "FORMATS",
    "INSTALL_FIX",
    "PHASE_TABLE",
    "FlameError",
    "FlameRun",
    "FlameSummary",
    "Frame",
    "Growth",
    "PhasedProfile",
    "Slice",
    "add_arguments",
    "attribute",
    "find_py_spy",
    "growth",
    "main",
    "parse_collapsed",
    "parse_frame",
    "path_line",
    "phase_of",
    "phase_path",
    "phased_profile",
    "render_chrometrace",
    "render_collapsed",
    "render_flame_svg",
    "render_growth",
    "render_speedscope",
    "render_summary",
    "run_flame",
    "sample_probe",
    "stack_segments",
]
