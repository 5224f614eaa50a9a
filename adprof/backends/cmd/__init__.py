"""The ``--cmd`` backend: one point = one run of an external program, in any language.

``run_command_point('PROG ARGS {depth}', depth, mode, ...)`` replaces ``{depth}`` (and ``{calls}``, if
present), splits the template with :func:`shlex.split` and runs it as its own process: its own session
and process group, stdin closed, stdout and stderr captured up to ``output_limit`` bytes each, on Linux
``PR_SET_PDEATHSIG`` so that it dies with adprof. Its exit status ends the point (not end-of-file: a
program may close its pipes and keep working, a detached child may hold them open); then everything it
left is killed, its group and detached descendants alike (:mod:`adprof.util.procs`); past the timeout or
the output limit all of it is killed and the point fails. Protocol keys it does not know are kept by name
(``Point.extra["unknown_keys"]``) and warned about.

The protocol: the program prints JSON objects, one per line; the last line of stdout that starts with
``{`` is read (it must parse). Keys, all optional: ``transform_seconds``, ``drop_seconds``,
``compile_seconds``, ``lower_seconds``, ``forward_seconds``, ``backward_seconds`` (a number, or a list
with one entry per call) and ``counters``. Mapping onto :class:`adprof.model.Point` phases (the
engine's names):

=====================  ===============================  =========================================
protocol key           traced mode                      eager mode
=====================  ===============================  =========================================
``transform_seconds``  ``transform``                    ``transform``
``drop_seconds``       ``drop``                         ``drop``
``compile_seconds``    ``compile``                      ``compile``
``lower_seconds``      ``lower`` (the classifier's      ``lower``
                       compile-mode phase)
``forward_seconds``    ``record`` (the engine's name    list: ``forward0`` = call 0, ``forward`` =
                       for building the chain)          median of calls 1..; ``extra["forward_calls"]``
``backward_seconds``   ``run`` (a list: its median;     list: ``backward0`` = call 0, ``backward`` =
                       ``extra["run_calls"]``)          median of calls 1..; ``extra["backward_calls"]``
                                                        (a single number: ``backward``)
=====================  ===============================  =========================================

``counters`` is either a flat object of numbers, which goes to the phase that decides (traced:
``transform``, standing for transform+drop; eager: ``backward``, per steady call), or an object of
phases (the protocol's base names above or adprof's own), each an object of numbers or, in eager mode,
a list with one object per call (then ``<phase>0`` = call 0, ``<phase>`` = the median call by counter
sum, and ``extra["backward_call_counters"]`` / ``extra["forward_call_counters"]`` the lists). With none
of the known keys, the process's wall time is the cost: phase ``process``. The wall time of the run is
always in ``extra["process_seconds"]``.

``metric="instructions"`` first runs the command natively (its own seconds and counters, read through
the protocol: the cap, the schedule's predictions and the time evidence see those, never valgrind's
wall time), then under ``valgrind --tool=callgrind`` (with ``ADPROF_METRIC=instructions`` in its
environment, so that a program may print constant times and keep its output, and thus its count,
identical run to run), and puts counts in ``Point.metrics[phase]["instructions"]``; they decide
(``Series.required_metric``):

* with ``phases`` (phase -> callgrind function pattern, from ``--phase transform='*phase_transform*'``):
  one run per phase with ``--collect-atstart=no --toggle-collect=PATTERN``, so only the instructions
  executed inside that phase's functions are counted (not start-up, setup or output). In eager mode a
  ``backward`` (``forward``) phase is split per call by ``--dump-before`` on the other phase's pattern
  (callgrind takes one option per function, so the split needs both patterns); call 0 goes to
  ``backward0`` and the median of calls 1.. to ``backward``, the list to
  ``extra["backward_call_instructions"]`` (without the other pattern, or without a per-call list in the
  protocol, ``backward`` holds the phase's total over all calls).
* without ``phases``: the whole process is counted and a baseline run of the same template at
  ``baseline_depth`` (default 0; cached per template) is subtracted: start-up, argument parsing and
  fixed setup cancel. The difference is the cost of the mode's phases: it goes to the first of them
  (traced: ``transform``, standing for transform+drop; eager: ``backward``, per backward call the
  program reported), or to ``process`` when the program reports no phases.

Each callgrind run gets ``count_timeout`` (100x the point's timeout) and ends at the budget's end at
the latest (:class:`~adprof.backends.cmd.point.CountTimeout`: a stop, never a hang or a censored
point). ``Point.extra["counted"]`` says in words what was counted, ``extra["count_seconds"]`` how long
the callgrind runs took. A phase the native run timed as 0 gets ``instructions /
NOMINAL_INSTRUCTION_RATE`` (1e10/s, :mod:`adprof.constants`) as its time. :func:`check_counting` is
the CLI's pre-flight (one callgrind run: a program valgrind cannot run, a failing baseline, or
``--phase`` patterns that match nothing are one line and exit 2). Failures raise
:class:`CommandFailure` with a ``kind`` and a one-line message.

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
