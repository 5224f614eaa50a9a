"""The hunt's report: plain dataclasses (JSON round-trip through :mod:`adprof.plain`), built once by
:mod:`adprof.hunt.run` and only read by the renderers (:mod:`adprof.hunt.render`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The schema of ``adprof hunt --json`` (docs/hunt.md).
HUNT_SCHEMA = 1

#: Attribution labels (a public contract: JSON ``attribution``).
ENGINE_SPECIFIC = "engine-specific"
IN_THE_PROGRAM = "in the program"
UNDETERMINED = "undetermined"


@dataclass
class Row:
    """One target's entry of a finding's cross-engine table."""

    target: str  # "engine/v08 traced"
    backend: str
    profile: str | None
    mode: str
    verdict: str  # a verdict name, or "n/a" (the program cannot run there) / "not measured"
    figure: str = ""  # "x2.00/layer", "d^1.97"
    decided_by: str = ""  # "counters", "python_calls: transform", "time"
    note: str = ""  # why n/a, the error, the stop
    reproduce: str = ""  # the adprof check command that measured this cell


@dataclass
class Shrunk:
    """What shrinking did: the sizes, the steps that held, the reductions tried, whether it ended 1-minimal."""

    from_size: int
    to_size: int
    steps: int
    tried: int
    minimal: bool
    original: str  # the candidate's summary before shrinking
    original_generator: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Finding:
    """A confirmed cost pathology: the program (generator, source, file), where it was found and confirmed, how
    it grows there, and the class per engine (:attr:`table`) with the attribution."""

    id: int
    file: str  # the written chain file (found/0001_v08_traced.py)
    chain: str  # the chain's name in it
    target: str  # where it was found and confirmed
    backend: str
    profile: str | None
    mode: str
    verdict: str  # the check path's verdict there
    figure: str  # its growth figure ("x2.00/layer")
    decided_by: str
    axis: str
    summary: str  # the layer in one line
    generator: dict[str, Any]
    uses: int  # uses of the previous state per step
    predicted_base: float  # the static path-count base per step
    component: str  # the cost component the search maximised ("counters:transform+drop")
    search_figure: str  # its growth in the search ("x2.00/layer")
    reproduce: str  # the adprof check command that reproduces the verdict
    attribution: str = ""  # ENGINE_SPECIFIC | IN_THE_PROGRAM | UNDETERMINED
    attribution_text: str = ""  # the sentence: which engines grow, which stay linear
    table: list[Row] = field(default_factory=list)
    shrunk: Shrunk | None = None
    #: Other targets (labels) where the search's best candidate was this same program, covered by this finding.
    also: list[str] = field(default_factory=list)
    #: The cost that grows: False, time or work (the verdict is the check's); True, the bytes the gradient saves for
    #: its backward (the verdict is the check's memory reading in depth, the table the class of every engine's).
    memory: bool = False
    confirmation: dict[str, Any] = field(default_factory=dict)  # the confirming series' JSON (adprof check's)
    source: str = ""  # the chain file's text
    #: Why :attr:`file` could not be written (a full disk, a read-only folder): "" when it was. The finding, its
    #: source and the report are kept whatever happens to one file.
    write_error: str = ""


@dataclass
class Rejected:
    """A candidate the check path did not confirm (never printed as a finding; the JSON keeps why)."""

    target: str
    summary: str
    search_figure: str
    component: str
    verdict: str  # what the check said
    figure: str = ""
    reason: str = ""


@dataclass
class TargetStats:
    """What the search did on one target: its evaluations (each a generator at the search depths), what they cost,
    what failed, and the generators that could not run there (why, how many)."""

    #: Whether a new generator's first evaluation went here (the cheapest informative targets of its backend).
    screen: bool = False
    evaluations: int = 0  # evaluations run here (measured or failed)
    measured: int = 0  # evaluations with at least one point
    failures: int = 0  # evaluations that ended in an error (the chain or the backend failed)
    lost: int = 0  # evaluations lost with their worker, or interrupted: nothing came back
    seconds: float = 0.0  # worker seconds the evaluations took
    cost_per_evaluation: float | None = None  # seconds per evaluation, measured (None: nothing measured)
    #: How many evaluations the search's share of lane time allowed here at its cost (the starvation threshold's
    #: reference: :data:`adprof.hunt.search.STARVED_SHARE`).
    expected: float = 0.0
    #: Generators that could not run here, by why (``no where on tinygrad``): never sent.
    skipped: dict[str, int] = field(default_factory=dict)
    last_error: str = ""  # the last evaluation's error here
    #: Measured far fewer than the budget allowed (:func:`adprof.hunt.search.starved`): the hunt exits 2.
    starved: bool = False


@dataclass
class HuntStats:
    """Counts of the run: generators drawn and tried (measured on some target), evaluations, candidates,
    confirmed, rejected, merged, shrunk, and what the search did per target."""

    tried: int = 0  # generators measured on at least one target
    drawn: int = 0  # generators drawn (the tried ones, those no target could run, those that failed everywhere)
    evaluations: int = 0
    generations: int = 0
    candidates: int = 0
    confirmed: int = 0
    rejected: int = 0
    merged: int = 0  # candidates that were the program of a finding already (its table covers them)
    shrunk: int = 0  # findings made smaller than their candidate
    processed: int = 0  # candidates taken up (merged, rejected or confirmed)
    unprocessed: int = 0  # candidates the budget did not reach
    search_seconds: float = 0.0
    #: The search went on past its share of the budget: it had no candidate to confirm by then.
    search_extended: bool = False
    per_target: dict[str, TargetStats] = field(default_factory=dict)  # target label -> its search figures


@dataclass
class HuntReport:
    """Everything ``adprof hunt`` reports."""

    seed: int
    budget_seconds: float
    elapsed_seconds: float = 0.0
    targets: list[str] = field(default_factory=list)
    out: str = ""
    stats: HuntStats = field(default_factory=HuntStats)
    findings: list[Finding] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    interrupted: str | None = None
    schema: int = HUNT_SCHEMA


__all__ = [
    "ENGINE_SPECIFIC",
    "HUNT_SCHEMA",
    "IN_THE_PROGRAM",
    "UNDETERMINED",
    "Row",
    "Finding",
    "HuntReport",
    "HuntStats",
    "Rejected",
    "Shrunk",
    "TargetStats",
]
