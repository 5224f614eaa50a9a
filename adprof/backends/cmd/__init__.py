"""The ``--cmd`` backend: one point = one run of an external program, in any language.

The user's view (how a point runs, the JSON protocol and its mapping onto :class:`adprof.model.Point`
phases, the failures) is docs/native.md; ``--metric instructions`` is docs/instructions.md. Here:

* :func:`run_command_point` runs ``'PROG ARGS {depth}'`` once (``{depth}``, ``{calls}`` replaced,
  :func:`shlex.split`) as its own session, its exit status ending the point, and everything it left
  killed (:mod:`adprof.util.procs`); :func:`~adprof.backends.cmd.protocol.apply_protocol` maps the last
  JSON line of stdout onto the point.
* ``metric="instructions"``: a native run first (its seconds feed the cap and the schedule), then
  callgrind, per ``phases`` pattern (``--toggle-collect``) or for the whole process minus a cached run at
  ``baseline_depth``; the counts go to ``Point.metrics[phase]["instructions"]`` and decide
  (``Series.required_metric``). A callgrind run past ``count_timeout`` or the budget raises
  :class:`~adprof.backends.cmd.point.CountTimeout` (a stop, never a hang); :func:`check_counting` is the
  CLI's pre-flight.
* Failures raise :class:`CommandFailure` with a ``kind`` and a one-line message.

Modules: :mod:`~adprof.backends.cmd.process` (running one process), :mod:`~adprof.backends.cmd.protocol`
(the JSON protocol), :mod:`~adprof.backends.cmd.callgrind` (callgrind runs and per-function profiles),
:mod:`~adprof.backends.cmd.point` (one point).
"""

from __future__ import annotations

from typing import Any

from adprof.backends.cmd.callgrind import (
    VALUE_KEY_EQ,
    Profile,
    callgrind_profile,
    callgrind_totals,
    parse_callgrind,
    profile_from_callgrind,
)
from adprof.backends.cmd.point import CountTimeout, check_counting, run_command_point
from adprof.backends.cmd.process import (
    DEFAULT_OUTPUT_LIMIT,
    METRICS,
    MODES,
    CommandFailure,
    Completed,
    check_program,
    expand,
    run_process,
)
from adprof.backends.cmd.protocol import PROTOCOL_KEYS, TRACED_PHASES, apply_protocol, last_json_object

#: The backend's interface for chain files (``adprof.backends``): it measures programs, not chains.
PROFILES: tuple[str | None, ...] = (None,)


class PointFailure(Exception):
    """Raised by :func:`measure_point`: the cmd backend is driven by ``--cmd``, not by a chain file."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message, self.phase, self.point = kind, message, None, None


def measure_point(chain: Any, mode: str, depth: int, profile: str | None = None, **kw: Any) -> Any:
    """Chains are not measured here: a ``--cmd`` point runs a program (:func:`run_command_point`)."""
    raise PointFailure("chain", "the cmd backend measures a program: use --cmd 'PROG ARGS {depth}'")


__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "METRICS",
    "MODES",
    "PROFILES",
    "PROTOCOL_KEYS",
    "TRACED_PHASES",
    "VALUE_KEY_EQ",
    "CommandFailure",
    "Completed",
    "CountTimeout",
    "PointFailure",
    "Profile",
    "apply_protocol",
    "callgrind_profile",
    "callgrind_totals",
    "check_counting",
    "check_program",
    "expand",
    "last_json_object",
    "measure_point",
    "parse_callgrind",
    "profile_from_callgrind",
    "run_command_point",
    "run_process",
]
