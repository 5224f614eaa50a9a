"""``--cmd`` points measured in the parent, in the lane's thread, through the worker's request interface.

Why not in a worker: a ``--cmd`` point runs no user code in adprof's process. The program is already
its own process (own session and process group, stdin closed, captured outputs with a size limit,
its own timeout; killed with its group past it, and by ``PR_SET_PDEATHSIG`` if adprof dies, which on
Linux is tied to the starting *thread*: the lane thread, which outlives its series). A Python worker
in between would only add its start-up (numpy, scipy, the engine) to every lane and a second layer of
timeouts. :class:`CommandPoints` answers the series loop's point requests as a worker would, so the
depth schedule, caps, budget and stop rules are the same code as for a chain.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adprof.backends.cmd import CommandFailure, run_command_point
from adprof.backends.cmd.point import CountTimeout
from adprof.backends.cmd.process import cancel_when
from adprof.measure.client import WorkerCrashed, WorkerTimeout
from adprof.model import Point


@dataclass
class CommandSettings:
    """How the points of a ``--cmd`` series are run (the CLI fills it from its options)."""

    template: str  # 'PROG ARGS {depth}'
    metric: str = "time"  # "time" | "instructions"
    phases: dict[str, str] = field(default_factory=dict)  # phase -> callgrind function pattern


def reports_any(point: Point, phases: tuple[str, ...]) -> bool:
    """The point carries a time, counters or a metric of one of ``phases``."""
    return any(ph in point.times or ph in point.counters or ph in point.metrics for ph in phases)


class CommandPoints:
    """Stands in for a :class:`~adprof.measure.client.Worker` for one ``--cmd`` series."""

    def __init__(self, settings: CommandSettings, lane: Any = None, phases: tuple[str, ...] = ()) -> None:
        self.settings = settings
        #: The classified phases of the series: a point whose protocol reports none of them fails at once (the
        #: series could never be classified: measuring depth 1 over and over would only spend the budget).
        self.phases = phases
        #: The lane's worker handle: its ``interrupted`` flag (set by the pool on SIGINT/SIGTERM) kills
        #: the command in progress at once, with everything it started.
        self.lane = lane
        #: Once a point reported phases, a later point that prints no JSON fails (phases were expected).
        self.expect_json = False

    def request(
        self,
        msg: dict[str, Any],
        timeout: float,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        hard_deadline: float | None = None,
    ) -> dict[str, Any]:
        """Measure the point of ``msg`` (``op: point``); answer like the worker, or raise
        :class:`WorkerTimeout` when the command was killed at the timeout (a censored point)."""
        depth = int(msg["depth"])
        limit = timeout
        if hard_deadline is not None:  # as the worker client: the budget's end, but at least 1 s
            limit = min(timeout, max(hard_deadline - time.monotonic(), min(timeout, 1.0)))
        phase: list[str | None] = [None]

        def on_run(what: str) -> None:
            phase[0] = what
            if on_event is not None:
                on_event({"event": "phase", "phase": what, "call": None})

        s = self.settings
        t0 = time.monotonic()
        if self.interrupted():
            raise WorkerCrashed("interrupted", None, interrupted=True)
        try:
            with cancel_when(self.interrupted):
                pt = run_command_point(
                    s.template,
                    depth,
                    msg["mode"],
                    metric=s.metric,
                    phases=s.phases or None,
                    timeout=limit,
                    calls=msg.get("calls"),
                    on_run=on_run,
                    require_json=self.expect_json,
                    deadline=hard_deadline,
                )
        except CountTimeout as exc:  # valgrind's wall time is not the program's: never a hang or a censored point
            to = WorkerTimeout(phase[0], None, exc.seconds, exc.limit)
            to.total, to.by_deadline, to.counting = time.monotonic() - t0, exc.by_deadline, True
            raise to from None
        except CommandFailure as exc:
            if exc.kind == "interrupted":
                raise WorkerCrashed("interrupted", phase[0], interrupted=True) from None
            if exc.kind == "timeout":  # at its own timeout (a hang), or cut short by the budget's end
                to = WorkerTimeout(phase[0], None, time.monotonic() - t0, limit)
                cut = hard_deadline is not None and (limit < timeout or time.monotonic() >= hard_deadline)
                to.total, to.by_deadline = to.elapsed, cut
                raise to from None
            return {"ok": False, "kind": "cmd", "error": f"depth {depth}: {exc.message}"}
        self.expect_json = self.expect_json or set(pt.times) != {"process"}
        if self.phases and "process" not in pt.times and not reports_any(pt, self.phases):
            reported = ", ".join(sorted({*pt.times, *pt.counters, *pt.metrics})) or "nothing"
            return {
                "ok": False,
                "kind": "usage",
                "error": (
                    f"depth {depth}: the program reports {reported} but no {' or '.join(self.phases)} phase, which "
                    f"{msg['mode']} mode classifies: report it (docs/native.md), or measure the mode whose phases it "
                    "reports (--mode)"
                ),
            }
        pt.calls = msg.get("calls")
        return {"ok": True, "point": dataclasses.asdict(pt)}

    def interrupted(self) -> bool:
        return bool(getattr(self.lane, "interrupted", False))
