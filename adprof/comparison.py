"""Two reports compared series by series: ``adprof compare BASE.json NEW.json`` and the limits of ``adprof guard
--baseline`` (docs/compare.md).

A series is named by its :class:`SeriesKey`: the chain file's base name, the chain with its sweep values, the
backend, the profile and the mode. The series of the two reports are paired on the whole key first; what is
left is paired on the key without the file (a renamed file, a notebook cell), then without the profile (``v08``
against ``fixed``: the profile is what changed), then without both, each time only where one series on each
side has that key (never a guess between two). A pair is classified once into a :class:`Change`, the one
decision object the renderers read:

* ``regressed``: a worse verdict (:data:`SEVERITY`), or the same verdict with a rate (the base of an
  exponential, else the exponent) above the old interval's top by more than the tolerance;
* ``improved``: a better verdict, or a rate below the old interval's bottom by more than the tolerance;
* ``unchanged``: neither (and a pair ``inconclusive`` on both sides). An open verdict is never unchanged against a
  closed one: ``inconclusive`` after a decided base is ``regressed`` (the decision was lost); a decided verdict
  after an ``inconclusive`` base is ``regressed`` for a pathology, ``improved`` for ``linear``;
* ``new`` / ``gone``: a series in one report only.

Layer: report (reads results; imports the model and the report's labels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from adprof import model, verdicts, words
from adprof.model import Report, Result
from adprof.report import chain_label, decided_by, fmt_growth, measured_versions

#: How bad a verdict is, from best to worst: a move up is a regression, down an improvement. ``inconclusive``
#: has no rank (the data could not decide: there is nothing to compare it with).
#: A live view of the table's ``severity`` column (:data:`adprof.verdicts.TABLE`).
SEVERITY: Mapping[str, int] = verdicts.SEVERITY
#: How bad a memory verdict is, from best to worst (``inconclusive`` and not measured: no rank, not compared): the
#: table's ``memory_severity`` column.
MEMORY_SEVERITY: Mapping[str, int] = verdicts.MEMORY_SEVERITY
#: Slack on a rate (a base per depth step, or an exponent) beyond the old interval, added to its ends.
DEFAULT_TOLERANCE = 0.1


class State(StrEnum):
    """What happened to one series between the two reports (a public contract: JSON ``state``)."""

    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NEW = "new"
    GONE = "gone"


#: The order the renderers list and count the states in.
STATES = (State.REGRESSED, State.IMPROVED, State.UNCHANGED, State.NEW, State.GONE)


@dataclass(frozen=True)
class SeriesKey:
    """What names a series across reports."""

    file: str  # the chain file's base name ("" for --cmd)
    chain: str  # the chain with its sweep values (powers[k=2])
    backend: str
    profile: str  # "" without profiles
    mode: str

    @classmethod
    def of(cls, result: Result) -> SeriesKey:
        s = result.series
        return cls(Path(s.file).name if s.file else "", chain_label(s), s.backend, s.profile or "", s.mode)

    @property
    def label(self) -> str:
        """``powers[k=2] [engine/v08, traced]``, as every other message names a series."""
        return model.series_label(self.chain, self.backend, self.profile or None, self.mode)


#: The pairing passes: the key's fields each pass ignores (see the module docstring).
PASSES: tuple[tuple[str, ...], ...] = ((), ("file",), ("profile",), ("file", "profile"))


@dataclass
class Side:
    """One report's reading of a series: what the comparison and the renderers need of its result."""

    file: str
    chain: str
    backend: str
    profile: str
    mode: str
    verdict: str
    rate_kind: str = ""  # "base" (exponential) | "exponent" | "" (no rate: error, runaway, no fit)
    rate: float | None = None
    interval: list[float] | None = None  # of the rate, when the fit has one
    growth: str = "-"  # the deciding model's figure (x2.00/layer, d^1.72 [1.55, 1.90], flat)
    decided_by: str = "-"  # counters | the metric's name | time
    finding: bool = False
    #: The memory verdict's kind ("" when the report has none or did not measure it), its rate in depth (the base
    #: of an exponential, else the exponent: "base" | "exponent" | ""), the rate's interval, its cell
    #: (``linear d^1.00``) and the bytes per call of a leak.
    memory: str = ""
    memory_rate_kind: str = ""
    memory_rate: float | None = None
    memory_interval: list[float] | None = None
    memory_text: str = ""
    bytes_per_call: float | None = None

    @classmethod
    def of(cls, result: Result) -> Side:
        s, v = result.series, result.verdict
        rate_kind, rate = "", None
        if v.fit is not None and v.kind in SEVERITY:
            if v.base is not None:
                rate_kind, rate = "base", v.base
            elif v.exponent is not None and v.kind not in (model.ERROR, model.RUNAWAY):
                rate_kind, rate = "exponent", v.exponent
        reading = v.reading  # the rate and its interval from one fit (past a knee where the verdict reads it)
        interval = list(reading.interval) if rate_kind and reading is not None and reading.interval else None
        mv = v.memory if v.memory is not None and v.memory.measured else None
        memory: dict[str, object] = {}
        if mv is not None:
            read = mv.knee.after if mv.knee is not None and mv.knee.after is not None else mv.fit
            mem_kind, mem_rate = ("base", mv.base) if mv.base is not None else ("exponent", mv.exponent)
            memory = {
                "memory": mv.kind,
                "memory_rate_kind": mem_kind if mem_rate is not None else "",
                "memory_rate": mem_rate,
                "memory_interval": list(read.interval) if read is not None and read.interval else None,
                "memory_text": words.memory_summary(mv),
                "bytes_per_call": mv.bytes_per_call,
            }
        return cls(  # type: ignore[arg-type]
            file=s.file or "",
            chain=chain_label(s),
            backend=s.backend,
            profile=s.profile or "",
            mode=s.mode,
            verdict=v.kind,
            rate_kind=rate_kind,
            rate=rate,
            interval=interval,
            growth=fmt_growth(result),
            decided_by=decided_by(result),
            finding=v.is_finding,
            **memory,
        )

    @property
    def backend_profile(self) -> str:
        return f"{self.backend}/{self.profile}" if self.profile else self.backend

    def span(self) -> tuple[float, float] | None:
        """The rate's interval (the rate alone without one), or None without a rate."""
        if self.rate is None:
            return None
        if self.interval and len(self.interval) == 2:
            return min(self.interval[0], self.rate), max(self.interval[1], self.rate)
        return self.rate, self.rate


@dataclass
class Change:
    """The decision on one series of the comparison: its state, both readings and why (a sentence)."""

    state: State
    key: SeriesKey  # the new report's key (the base's for a series that is gone)
    before: Side | None
    after: Side | None
    reason: str
    #: The key's fields the pairing ignored to find this pair ("": the whole key matched).
    matched_without: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = State(self.state)

    @property
    def label(self) -> str:
        return self.key.label


@dataclass
class Comparison:
    """Every series of two reports, compared; the versions each was measured with."""

    changes: list[Change] = field(default_factory=list)
    tolerance: float = DEFAULT_TOLERANCE
    base: str = ""  # where the reports came from (their paths)
    new: str = ""
    versions_before: dict[str, str] = field(default_factory=dict)
    versions_after: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def count(self, state: State) -> int:
        return sum(c.state is state for c in self.changes)

    @property
    def regressed(self) -> bool:
        """Some series regressed: ``adprof compare`` exits 1."""
        return any(c.state is State.REGRESSED for c in self.changes)

    def summary(self) -> str:
        """``3 regressed, 20 improved, 3 unchanged, 0 new, 0 gone (tolerance 0.1)``."""
        counts = ", ".join(f"{self.count(s)} {s.value}" for s in STATES)
        return f"{counts} (tolerance {self.tolerance:g})"

    def version_rows(self) -> list[tuple[str, str, str]]:
        """``(package, before, after)`` of every package either report names ("-": not recorded there)."""
        names = list(dict.fromkeys([*self.versions_before, *self.versions_after]))
        names.sort(key=lambda n: (n != "adprof", n))
        return [(n, self.versions_before.get(n, "-"), self.versions_after.get(n, "-")) for n in names]


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def classify(before: Side, after: Side, tolerance: float = DEFAULT_TOLERANCE) -> tuple[State, str]:
    """The state of a pair and its sentence (see the module docstring): the time verdict's, and the memory verdict's
    where both reports measured memory (a regression of either is a regression; else an improvement of either)."""
    state, reason = classify_time(before, after, tolerance)
    memory = classify_memory(before, after, tolerance)
    if memory is None:
        return state, reason
    mstate, mreason = memory
    if mstate is State.UNCHANGED and before.memory_text == after.memory_text:
        return state, reason  # the same memory reading: nothing to say (its cells say it once, in the JSON)
    if mstate is State.REGRESSED and state is not State.REGRESSED:
        return State.REGRESSED, f"memory: {mreason}; time: {reason}"
    if mstate is State.IMPROVED and state is State.UNCHANGED:
        return State.IMPROVED, f"memory: {mreason}; time: {reason}"
    return state, f"{reason}; memory: {mreason}"


def classify_memory(before: Side, after: Side, tolerance: float = DEFAULT_TOLERANCE) -> tuple[State, str] | None:
    """The memory verdicts of a pair compared as the time verdicts are (:data:`MEMORY_SEVERITY`, then the rate in
    depth against the old interval + ``tolerance``, or a leak's bytes per call); None when either report did not
    measure memory."""
    if not before.memory or not after.memory:
        return None
    rb, ra = MEMORY_SEVERITY.get(before.memory), MEMORY_SEVERITY.get(after.memory)
    if rb is None or ra is None:
        return State.UNCHANGED, "not compared: inconclusive memory"
    if ra != rb:
        worse = ra > rb
        state = State.REGRESSED if worse else State.IMPROVED
        return state, f"{'worse' if worse else 'better'} memory verdict ({before.memory_text} -> {after.memory_text})"
    if after.memory == model.LEAK_PER_CALL and before.bytes_per_call and after.bytes_per_call is not None:
        ratio = after.bytes_per_call / before.bytes_per_call
        if ratio > 1 + tolerance:
            return State.REGRESSED, f"leaks {ratio:.2f}x the bytes per call ({after.memory_text})"
        if ratio < 1 - tolerance:
            return State.IMPROVED, f"leaks {ratio:.2f}x the bytes per call ({after.memory_text})"
        return State.UNCHANGED, f"same memory verdict ({after.memory_text})"
    if before.memory_rate is None or after.memory_rate is None or before.memory_rate_kind != after.memory_rate_kind:
        return State.UNCHANGED, f"same memory verdict ({after.memory_text})"
    lo, hi = before.memory_interval or [before.memory_rate, before.memory_rate]
    lo, hi = min(lo, before.memory_rate), max(hi, before.memory_rate)
    what = after.memory_rate_kind
    if after.memory_rate > hi + tolerance:
        return State.REGRESSED, f"{what} {_fmt(after.memory_rate)} > {_fmt(hi + tolerance)} ({after.memory_text})"
    if after.memory_rate < lo - tolerance:
        return State.IMPROVED, f"{what} {_fmt(after.memory_rate)} < {_fmt(lo - tolerance)} ({after.memory_text})"
    return State.UNCHANGED, f"same memory verdict ({after.memory_text})"


def classify_time(before: Side, after: Side, tolerance: float = DEFAULT_TOLERANCE) -> tuple[State, str]:
    """The state of a pair's time verdicts and its sentence."""
    rb, ra = SEVERITY.get(before.verdict), SEVERITY.get(after.verdict)
    if rb is None and ra is None:
        return State.UNCHANGED, "not compared: inconclusive before and after (no verdict to compare)"
    if ra is None:  # an open verdict is never unchanged against a closed one: the new report lost the decision
        return State.REGRESSED, f"inconclusive now, where the base read {before.verdict}: no longer decided"
    if rb is None:  # decided now: a pathology is no improvement on an open verdict; linear is
        if ra > SEVERITY[model.LINEAR]:
            return State.REGRESSED, f"{after.verdict} now, where the base was inconclusive"
        return State.IMPROVED, f"{after.verdict} now, where the base was inconclusive"
    if ra > rb:
        return State.REGRESSED, "worse verdict"
    if ra < rb:
        return State.IMPROVED, "better verdict"
    span = before.span()
    if span is None or after.rate is None or before.rate_kind != after.rate_kind:
        return State.UNCHANGED, f"same verdict ({after.verdict})"
    lo, hi = span
    what = after.rate_kind
    if after.rate > hi + tolerance:
        return State.REGRESSED, (
            f"{what} {_fmt(after.rate)} > {_fmt(hi + tolerance)} (the old interval's top {_fmt(hi)} + "
            f"tolerance {tolerance:g})"
        )
    if after.rate < lo - tolerance:
        return State.IMPROVED, (
            f"{what} {_fmt(after.rate)} < {_fmt(lo - tolerance)} (the old interval's bottom {_fmt(lo)} - "
            f"tolerance {tolerance:g})"
        )
    return State.UNCHANGED, f"same verdict, {what} {_fmt(after.rate)} within [{_fmt(lo)}, {_fmt(hi)}] +/- {tolerance:g}"


def _reduced(key: SeriesKey, ignored: Sequence[str]) -> tuple[str, ...]:
    return tuple(
        "" if name in ignored else getattr(key, name) for name in ("file", "chain", "backend", "profile", "mode")
    )


def pair_results(
    base: Sequence[Result], new: Sequence[Result], exact: bool = False
) -> list[tuple[Result | None, Result | None, list[str]]]:
    """``(base result, new result, fields ignored)`` for every series of either side: pairs in the new report's
    order, then the new series' ``(None, r, [])`` among them, then the gone ones ``(r, None, [])`` in the base's
    order. ``exact``: the whole key only (no later pass)."""
    keys_b = [SeriesKey.of(r) for r in base]
    keys_n = [SeriesKey.of(r) for r in new]
    match: dict[int, tuple[int, list[str]]] = {}  # new index -> (base index, fields ignored)
    taken: set[int] = set()
    for ignored in PASSES[:1] if exact else PASSES:
        groups_b: dict[tuple[str, ...], list[int]] = {}
        groups_n: dict[tuple[str, ...], list[int]] = {}
        for i, k in enumerate(keys_b):
            if i not in taken:
                groups_b.setdefault(_reduced(k, ignored), []).append(i)
        for j, k in enumerate(keys_n):
            if j not in match:
                groups_n.setdefault(_reduced(k, ignored), []).append(j)
        for red, js in groups_n.items():
            is_ = groups_b.get(red, [])
            if not ignored:  # the whole key: the same series (a merged report may hold it twice: in order)
                pairs = list(zip(is_, js, strict=False))
            elif len(is_) == 1 and len(js) == 1:  # a reduced key pairs only where it names one series each side
                pairs = [(is_[0], js[0])]
            else:
                pairs = []
            for i, j in pairs:
                match[j] = (i, list(ignored))
                taken.add(i)
    out: list[tuple[Result | None, Result | None, list[str]]] = []
    for j, r in enumerate(new):
        i, ignored = match.get(j, (None, []))
        out.append((base[i] if i is not None else None, r, ignored))
    out.extend((r, None, []) for i, r in enumerate(base) if i not in taken)
    return out


def compare_results(
    base: Sequence[Result], new: Sequence[Result], tolerance: float = DEFAULT_TOLERANCE, exact: bool = False
) -> list[Change]:
    """Every series of ``base`` and ``new`` paired and classified."""
    changes = []
    for b, n, ignored in pair_results(base, new, exact):
        if b is None and n is not None:
            changes.append(Change(State.NEW, SeriesKey.of(n), None, Side.of(n), "not in the base report"))
        elif n is None and b is not None:
            changes.append(Change(State.GONE, SeriesKey.of(b), Side.of(b), None, "not in the new report"))
        elif b is not None and n is not None:
            before, after = Side.of(b), Side.of(n)
            state, reason = classify(before, after, tolerance)
            changes.append(Change(state, SeriesKey.of(n), before, after, reason, ignored))
    return changes


def report_versions(report: Report) -> dict[str, str]:
    """The versions a report was measured with: its environment's, else read from its series."""
    recorded = report.environment.get("versions")
    if isinstance(recorded, dict) and recorded:
        return {str(k): str(v) for k, v in recorded.items()}
    return measured_versions([r.series for r in report.results])


def compare_reports(
    base: Report,
    new: Report,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    exact: bool = False,
    names: tuple[str, str] = ("", ""),
) -> Comparison:
    """The comparison of two reports (``names``: where they came from, for the renderers)."""
    changes = compare_results(base.results, new.results, tolerance, exact)
    notes = []
    loose = sorted({f for c in changes for f in c.matched_without})
    if loose:
        n = sum(bool(c.matched_without) for c in changes)
        notes.append(f"{n} series paired without their {' and '.join(loose)} (each the only one of its name there)")
    paired = [(c.before.verdict, c.after.verdict) for c in changes if c.before is not None and c.after is not None]
    both = sum(b == a == model.INCONCLUSIVE for b, a in paired)
    one = sum((b == model.INCONCLUSIVE) != (a == model.INCONCLUSIVE) for b, a in paired)
    if both:
        notes.append(f"{both} series not compared: inconclusive in both reports (each report says why)")
    if one:
        notes.append(
            f"{one} series inconclusive in one report only: an open verdict against a decided one is a change "
            "(its data could not decide: that report says why)"
        )
    vb, va = report_versions(base), report_versions(new)
    if not vb or not va:
        which = " and ".join(w for w, v in (("the base", vb), ("the new", va)) if not v)
        notes.append(f"{which} report records no versions (written before reports recorded them)")
    return Comparison(changes, tolerance, names[0], names[1], vb, va, notes)


def memory_changed(change: Change) -> bool:
    """True when the pair's memory readings differ (or one side alone has one): a row then shows them."""
    b, a = change.before, change.after
    return b is None or a is None or b.memory_text != a.memory_text


def describe_side(side: Side | None, memory: bool = True) -> str:
    """``exponential-transform x2.00/layer`` (or ``-``): a side in one cell; its memory reading with ``memory``."""
    if side is None:
        return "-"
    held = f"; memory {side.memory_text}" if side.memory_text and memory else ""
    return side.verdict + (f" {side.growth}" if side.growth != "-" else "") + held


def profile_text(change: Change) -> str:
    """``engine/v08 -> engine/fixed`` when the pair's profiles differ, else the one backend/profile."""
    b, a = change.before, change.after
    if b is not None and a is not None and b.backend_profile != a.backend_profile:
        return f"{b.backend_profile} -> {a.backend_profile}"
    return (a or b).backend_profile if (a or b) is not None else "-"  # type: ignore[union-attr]


__all__ = [
    "DEFAULT_TOLERANCE",
    "MEMORY_SEVERITY",
    "PASSES",
    "SEVERITY",
    "STATES",
    "Change",
    "Comparison",
    "SeriesKey",
    "Side",
    "State",
    "classify",
    "classify_memory",
    "classify_time",
    "compare_reports",
    "compare_results",
    "describe_side",
    "memory_changed",
    "pair_results",
    "profile_text",
    "report_versions",
]
