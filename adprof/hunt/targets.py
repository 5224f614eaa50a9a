"""What a hunt measures: its targets (backend, profile, mode), how each is searched cheaply, how a finding on it
is confirmed and attributed, and which generators each can run at all.

A :class:`Target` is one series' worth of (backend, profile, mode). Searching (:func:`search_plan`) runs a
generator at a few small depths, going no deeper once a point costs more than the target's point cap:
deterministic metrics see growth at small depths, and time there is mostly overhead. Confirming and
attributing run the check path (:func:`check_depths`): the real schedule on the engine, explicit bounded depths
on the peers, whose points cost tenths of seconds (torch.compile: seconds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from adprof.backend_info import BackendInfo
from adprof.backends import (
    BACKEND_MODES,
    BACKEND_PROFILES,
    backend_declaration,
    backend_info,
    check_backend,
    installed_backends,
    known_backends,
    memory_asked,
)
from adprof.hunt.gen import Generator, Node
from adprof.measure.plan import UsageError, csv_list, select

#: Backends a hunt never targets: ``cmd`` runs a program, not a chain.
NOT_HUNTED = ("cmd",)


@dataclass(frozen=True, order=True)
class Target:
    """One (backend, profile, mode): where a generator's cost is measured."""

    backend: str
    profile: str | None
    mode: str

    @property
    def info(self) -> BackendInfo:
        """The backend's declarations for this mode (:meth:`adprof.backends.base.Backend.info`)."""
        return backend_info(self.backend, self.mode)

    @property
    def engine(self) -> str:
        """The engine's name in file names and tables: the profile where the backend is named by it (adprof's
        engine: ``v08``), else the backend (``jax``)."""
        return self.profile if self.info.named_by_profile and self.profile else self.backend

    @property
    def label(self) -> str:
        """``engine/v08 traced``, ``torch compile``."""
        prof = f"/{self.profile}" if self.profile else ""
        return f"{self.backend}{prof} {self.mode}"

    @property
    def slug(self) -> str:
        """``v08_traced``, ``torch_compile``: the tail of a found chain's file name."""
        return f"{self.engine}_{self.mode}"

    def to_dict(self) -> dict[str, str | None]:
        return {"backend": self.backend, "profile": self.profile, "mode": self.mode}

    @classmethod
    def from_dict(cls, data: dict[str, str | None]) -> Target:
        return cls(str(data["backend"]), data.get("profile"), str(data["mode"]))

    def check_options(self) -> list[str]:
        """The ``adprof check`` options that select this target."""
        out = ["--backend", self.backend, "--mode", self.mode]
        if self.profile:
            out += ["--profile", self.profile]
        return out

    @property
    def decider(self) -> str:
        """What decides this target's verdicts on the check path: ``counters`` (where the backend declares the
        counters that decide), a deterministic metric the backend declares, or ``time`` (a backend's counters that
        it does not declare decide too, where its points report them: see :attr:`counters_decide`)."""
        if self.info.deciding_counters:
            return "counters"
        deciding = self.deciding_metrics
        return deciding[0] if deciding else "time"

    @property
    def counters_decide(self) -> bool:
        """Whether the counters the points report decide (as on ``check``'s path): unless the backend declares
        that none do (``deciding_counters = ()``)."""
        return self.info.counters_decide

    @property
    def deciding_metrics(self) -> tuple[str, ...]:
        """The deterministic metrics the backend declares deciding in this mode, in order of preference."""
        return tuple(backend_declaration(self.backend).deciding_metrics.get(self.mode, ()))

    @property
    def lower_bounds(self) -> tuple[str, ...]:
        """Metrics that decide this target when they grow superlinearly (lower bounds on its work)."""
        return tuple(backend_declaration(self.backend).lower_bound_metrics.get(self.mode, ()))


def expand_backends(value: str) -> list[str]:
    """``--backend``: a comma-separated list, or ``all`` (every installed backend); each checked (one line)."""
    names = list(dict.fromkeys(csv_list(value)))
    if not names:
        raise UsageError(f"--backend: no backend given (got {value!r}); known: all, {', '.join(known_backends())}")
    if names == ["all"]:
        return installed_backends(NOT_HUNTED)
    if "all" in names:
        raise UsageError("--backend: 'all' stands alone (every installed backend)")
    for n in names:
        if n in NOT_HUNTED:
            raise UsageError(f"--backend {n}: a hunt measures chains; {n} runs a program (adprof check --cmd)")
        check_backend(n)
    return names


def hunt_targets(backends: Sequence[str], profiles: str | None, modes: str | None) -> list[Target]:
    """The targets of ``backends`` (each backend's profiles and modes, narrowed by ``--profile``/``--mode``);
    raises :class:`UsageError` for a profile or mode that none of them has."""
    every_mode = tuple(dict.fromkeys(m for b in backends for m in BACKEND_MODES[b]))
    want_modes = select(modes, every_mode, "mode")
    with_profiles = [b for b in backends if any(p for p in BACKEND_PROFILES[b])]
    if profiles is not None and not with_profiles:
        raise UsageError(f"--profile: backend {', '.join(backends)} has no profiles")
    out: list[Target] = []
    for b in backends:
        known = [p for p in BACKEND_PROFILES[b] if p]
        chosen: list[str | None] = list(known) or [None]
        if profiles is not None and known:
            chosen = list(select(profiles, known, "profile", b) or [])
        for prof in chosen:
            for m in BACKEND_MODES[b]:
                if want_modes is None or m in want_modes:
                    out.append(Target(b, prof, m))
    if not out:
        raise UsageError("nothing to hunt: no backend has the selected modes")
    return out


# --------------------------------------------------------------------------- what runs where


def runs_on(target: Target, gen: Generator) -> str | None:
    """Why ``gen`` cannot run on ``target`` (one phrase), or None: as the backend declares (``no_nested_grad``:
    no ``xp.grad`` to nest in that mode; ``unsupported_ops``: ops its namespace lacks; docs/backends.md)."""
    info = target.info
    if gen.scale == "order" and not info.nests_grad:
        return "no nested gradient (xp.grad) here"
    missing = sorted({n.op for n in gen.nodes} & set(info.unsupported_ops))
    if missing:
        return f"no {', '.join(missing)} on {target.backend}"
    return None


# --------------------------------------------------------------------------- searching


#: The deterministic work a search point may reach (predicted from the last two) before the series goes no
#: deeper: the engine's counters, a call count, a graph size. On the same generator the same depths are measured
#: on every run, whatever the machine's load: the search's path depends on the seed only.
WORK_CAPS: dict[str, float] = {
    "counters": 2e6,
    "python_calls": 1.5e6,
    "autograd_nodes": 2e5,
    "inductor_loop_body_ops": 4e4,
}


@dataclass(frozen=True)
class SearchPlan:
    """How a target is searched: the depths (ascending); the point's wall time past which the series goes no
    deeper (a safety net: the deterministic :data:`WORK_CAPS` stop it first where the target counts its work);
    the timeout that kills a point (the first of a worker pays the engine's warm-up); eager calls."""

    depths: tuple[int, ...]
    point_cap: float
    timeout: float
    calls: int = 3
    #: Rough seconds of one evaluation, for sharing the search between cheap and costly targets.
    cost: float = 0.1
    #: Measure the memory figures (saved-for-backward bytes: a fitness component), as ``check`` does by default.
    memory: bool = False


def search_plan(target: Target, gen: Generator) -> SearchPlan:
    """The search's depths and limits for ``gen`` on ``target`` (memory measured where ``check`` measures it by
    default)."""
    return dataclasses.replace(_search_plan(target, gen), memory=memory_asked(target.backend, None))


def _search_plan(target: Target, gen: Generator) -> SearchPlan:
    hunt = target.info.hunt  # as the backend declares it for this mode (its points' cost)
    depths = hunt.order_depths if gen.scale == "order" else hunt.search_depths
    return SearchPlan(depths, hunt.point_cap, hunt.timeout, calls=hunt.calls, cost=hunt.evaluation_cost(target.mode))


#: A target's tier by its cost per evaluation (:func:`tier`): a screen-cheap one (hundredths to tenths of a second),
#: a sampled one (tenths to seconds), a costly one (tens of seconds: torch.compile's two gcc runs per point). The
#: search itself ranks targets by their measured cost (:mod:`adprof.hunt.search`); the tier sizes a candidate's
#: share of the confirmation budget and gives the costliest targets a lane of their own.
SCREEN, SAMPLE, COSTLY = "screen", "sample", "costly"
#: Seconds per evaluation at most for the screen tier, and past which a target is costly.
SCREEN_SECONDS = 0.5
COSTLY_SECONDS = 10.0


def tier(target: Target, cost: float | None = None) -> str:
    """The target's tier (see :data:`SCREEN`) by ``cost`` (seconds per evaluation, measured), else by its search
    plan's estimate: never by its name."""
    if cost is None:
        cost = search_plan(target, Generator((Node("sin", (0,)),))).cost
    if cost > COSTLY_SECONDS:
        return COSTLY
    return SCREEN if cost <= SCREEN_SECONDS else SAMPLE


# --------------------------------------------------------------------------- the check path


@dataclass(frozen=True)
class CheckPlan:
    """The ``@adprof.chain`` depth options of a found chain written for its target (what ``adprof check`` on the
    file reproduces), and the explicit depths an attribution run of that chain uses on another target."""

    depths: tuple[int, ...] | None = None  # explicit depths (adaptive=False)
    max_depth: int | None = None  # the adaptive schedule's bound (the engine)
    cap: float | None = None


def check_plan(target: Target, gen: Generator) -> CheckPlan:
    """How a chain found on ``target`` is written: more depths than the search's (the backend's declared ones), the
    schedule's own where the backend declares none; explicit ones where a point costs seconds."""
    hunt = target.info.hunt
    if gen.scale == "order":
        return CheckPlan(depths=hunt.check_order_depths, cap=30.0)
    if hunt.check_depths is None:  # an exponential reads long before 16 layers (the chain's cap applies everywhere)
        return CheckPlan(max_depth=16) if gen.reuses else CheckPlan(max_depth=64)
    return CheckPlan(depths=hunt.check_depths, cap=hunt.check_cap)


def attribution_depths(target: Target, gen: Generator) -> tuple[int, ...] | None:
    """Explicit depths of an attribution run of ``gen`` on ``target`` (None: the chain's own schedule), as the
    backend declares them.

    Bounded so that every engine of every finding fits the hunt's budget: a program that grows fast is
    stopped by the cap's prediction anyway; one that stays linear needs only a span of depths."""
    hunt = target.info.hunt
    return hunt.attribution_order_depths if gen.scale == "order" else hunt.attribution_depths


__all__ = [
    "WORK_CAPS",
    "CheckPlan",
    "SearchPlan",
    "Target",
    "attribution_depths",
    "check_plan",
    "expand_backends",
    "hunt_targets",
    "installed_backends",
    "tier",
    "runs_on",
    "search_plan",
]
