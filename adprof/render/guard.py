"""The guard's outcome rendered: the diff of limit against measured with the evidence of failures
(:func:`guard_text`, what ``adprof guard`` prints and the fixture fails with), and for CI systems: JUnit XML
(``adprof guard --junit PATH``: one test case per series, a failure with its evidence) and a Markdown
table (``--markdown PATH``) for a step summary or a pull-request
comment. They read a :class:`~adprof.guard.GuardReport` and nothing else.

The XML is what Jenkins, GitLab, Azure Pipelines and the JUnit readers of GitHub Actions take: ``<testsuites>``
holding one ``<testsuite name="adprof guard">`` with the versions measured as ``<properties>``, one
``<testcase classname="adprof.guard.FILE" name="CHAIN [BACKEND/PROFILE, MODE]">`` per series, a failing one
with ``<failure message="..." type="VERDICT">`` whose text is the evidence. Characters XML 1.0 cannot carry
(control characters of a chain's error message) are written as ``\\xNN``.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import fields
from html import escape
from pathlib import Path
from typing import Any

from adprof import model, words
from adprof.guard.limits import GuardLimits
from adprof.guard.outcome import (
    ADVICE_FACTOR,
    BaselineRule,
    BaselineState,
    GuardCheck,
    GuardReport,
    MemoryBaseline,
    MemoryLimit,
    MemoryPart,
    MemoryState,
    MissingDepths,
    Outcome,
    Reading,
    memory_verdict_of,
)
from adprof.model import Result, time_value
from adprof.render.markdown import cell, strong, table
from adprof.report import backend_label, chain_label, measured_versions
from adprof.util.text import depth_ranges, range_text

# --------------------------------------------------------------------------- the sentences of a check's fields


def _past(check: GuardCheck) -> str:
    return f" past depth {check.knee}" if check.knee is not None else ""


def missing_depths_text(result: Result, missing: MissingDepths) -> str:
    """One line: which planned depths are missing, why, and what would measure them."""
    s = result.series
    stop, budget, depths = s.stop, missing.budget, missing.depths
    why = f" ({words.stop_text(stop)})" if stop is not None else ""
    head = f"depth{'s' if len(depths) > 1 else ''} {depth_ranges(depths)} not measured{why}"
    if stop is not None and stop.reason in (model.StopReason.CAP, model.StopReason.PREDICTED_CAP):
        need = max(stop.seconds or 0.0, stop.limit or 0.0)
        if not math.isfinite(need) or (budget is not None and need * 1.5 > budget):
            # no cap within the run's budget measures it: advise none (never a cap of 10^20 seconds)
            took = f"{need:.3g} s" if math.isfinite(need) else "longer than any cap"
            within = f"the {budget:g} s budget" if budget is not None else "any budget"
            at = stop.depth if stop.depth is not None else stop.after
            return f"{head}; depth {at} would take about {took}, past {within}: a cost this steep fails"
        return f"{head}; a cap above {need:.3g} s would measure them (--cap {math.ceil(need * 1.5):d})"
    if stop is not None and stop.reason is model.StopReason.COUNTER_BUDGET:
        # the point past it counted more key comparisons than any depth of a healthy chain: no budget measures it
        return f"{head}; no --budget measures them: a cost that passes the key-comparison budget this early fails"
    secs = missing.needed_seconds
    if secs is None or budget is None:
        return f"{head}; rerun with a larger --budget"
    more = max(1, math.ceil(1.5 * secs))
    if more > ADVICE_FACTOR * budget:  # no advice of a budget the run could never have (a model far past its data)
        return f"{head}; they would take about {secs:.3g} s, over {ADVICE_FACTOR:g}x the {budget:g} s budget"
    return f"{head}; they need about {secs:.3g} s more: rerun with --budget {math.ceil(budget + more):d}"


def measured_text(check: GuardCheck) -> str:
    """What was measured against the time limits: ``base 2.00 per layer``, ``exponent 1.02 past depth 4``,
    ``hang``, ``missing depths``, ..."""
    within = f" [{check.interval[0]:.2f}, {check.interval[1]:.2f}]" if check.interval is not None else ""
    if check.reading is Reading.BASE:
        return f"base {check.rate:.2f} per layer{_past(check)}{within}"
    if check.reading is Reading.EXPONENT:
        return f"exponent {check.rate if check.rate is not None else 1.0:.2f}{_past(check)}{within}"
    if check.reading is Reading.UNDECIDED and check.noise is not None:
        n = check.noise
        word = "base" if n.rate_kind is Reading.BASE else "exponent"
        return f"{word} {n.rate:.2f} [{n.low:.2f}, {n.high:.2f}]"
    return check.reading.value


def limit_text(check: GuardCheck) -> str:
    """The limit a check held: the normal limits (with the wall-time tolerance), or the baseline's figures."""
    ref = check.baseline_ref
    if ref is not None and ref.state is BaselineState.COMPARED and ref.before is not None:
        before = ref.before
        what = "base" if before.rate_kind == "base" else "exponent"
        return (
            f"{ref.where}'s {before.verdict} {before.growth}: {what} at most {ref.top:.2f} "
            f"(top {ref.hi:.2f} + {ref.tolerance:g})"
        )
    limits = check.limits
    text = f"max base {limits.max_base:.2f}, max exponent {limits.max_exponent:.2f}"
    return text + (f" (+{check.tolerance:.0%} for wall time)" if check.tolerance else "")


def _hang_text(result: Result) -> str:
    v, stop = result.verdict, result.series.killed
    why = v.reason if v.kind == model.RUNAWAY else words.killed_text(stop) if stop is not None else ""
    return why or "a point was stopped far past its prediction"


def undecided_text(check: GuardCheck) -> str:
    """The one line of an undecided check: the measured noise, and the budget that would decide."""
    n = check.noise
    if n is None:
        return "too noisy to decide"
    word = "base" if n.rate_kind is Reading.BASE else "exponent"
    again = f"re-measured {n.remeasured}x; " if n.remeasured else "not re-measured; "
    head = (
        f"too noisy to decide: the {word}'s interval [{n.low:.2f}, {n.high:.2f}] spans the limit {n.limit:.2f}; "
        f"{again}{n.repeats} repeats per depth, spread {n.spread:.0%}"
    )
    if n.needed_seconds is None or not math.isfinite(n.needed_seconds):
        return f"{head}; no budget decides it (the {word} sits on the limit)"
    more = math.ceil(n.needed_seconds * 1.5 + (n.budget or 0.0))
    return (
        f"{head}; about {n.needed_seconds:.3g} s of repeats would decide (it took {n.seconds:.3g} s): "
        f"a quieter machine, or --budget {more:d}"
    )


def reason_text(check: GuardCheck) -> str:
    """Why a check held or failed, one line."""
    v, reading = check.result.verdict, check.reading
    if reading is Reading.HANG:
        return _hang_text(check.result)
    if reading is Reading.ERROR:
        return check.result.series.error or "the chain failed"
    if reading is Reading.MISSING:
        return missing_depths_text(check.result, check.missing or MissingDepths(()))
    if reading is Reading.INCONCLUSIVE:
        fit_reason = v.fit.reason if v.fit is not None else ""
        return v.reason or fit_reason or "too few points to decide: give it more depths"
    if reading is Reading.RUNAWAY:
        return v.reason or "a point ran past its cap"
    if reading is Reading.UNDECIDED:
        return undecided_text(check)
    ref = check.baseline_ref
    if ref is not None and ref.state is BaselineState.COMPARED and ref.before is not None:
        before = ref.before
        if ref.rule is BaselineRule.CLASS:
            return f"{check.kind}: {'better' if check.rate_held else 'worse'} than the baseline's {before.verdict}"
        if ref.rule is BaselineRule.SAME:
            return f"{check.kind}: as in the baseline"
        what = "base" if before.rate_kind == "base" else "exponent"
        return f"{check.kind}: {what} {check.rate:.2f}" + (
            f" <= {ref.top:.2f}" if check.rate_held else f" > {ref.top:.2f}"
        )
    if check.top_bound is not None and check.interval is not None:  # held by its deepest halving
        lo, hi = check.interval
        return (
            f"{check.kind}: the exponent's interval [{lo:.2f}, {hi:.2f}] spans {check.bound:.2f}, but its deepest "
            f"halving grows at most depth^{check.top_bound:.2f}, under it"
        )
    if check.interval is not None:  # inconclusive, held by its interval
        word = "base" if reading is Reading.BASE else "exponent"
        lo, hi = check.interval
        return (
            f"{check.kind}: the {word}'s interval [{lo:.2f}, {hi:.2f}] is under {check.bound:.2f}, whatever the class"
        )
    against = " against its program" if check.excess else ""
    over = "" if check.rate_held else f" > {check.bound:.2f}"
    if reading is Reading.BASE:
        return f"{check.kind}: cost x{check.rate:.2f} per layer{_past(check)}{against}{over}"
    what = f"(depth - {check.knee})" if check.knee is not None else "depth"
    return f"{check.kind}: cost ~ {what}^{check.rate:.2f}{against}{over}"


def baseline_text(check: GuardCheck) -> str:
    """The baseline's reading of a check's series, or why the normal limits apply ("" without a baseline)."""
    ref = check.baseline_ref
    if ref is None:
        return ""
    if ref.state is BaselineState.ABSENT:
        return f"not in {ref.where}: the normal limits"
    verdict = ref.before.verdict if ref.before is not None else ""
    if ref.state is BaselineState.NO_FIGURES:
        return f"{ref.where} reads {verdict}, without figures: the normal limits"
    growth = ref.before.growth if ref.before is not None else ""
    return f"{ref.where}: {verdict} {growth}".rstrip()


def memory_limits_text(limits: GuardLimits) -> str:
    """``max memory exponent 1.2, max leak 1.0 MiB per call`` ("" without memory limits)."""
    parts = []
    if limits.max_memory_exponent is not None:
        parts.append(f"max memory exponent {limits.max_memory_exponent:g}")
    if limits.max_leak is not None:
        parts.append(f"max leak {model.fmt_bytes(limits.max_leak)} per call")
    return ", ".join(parts)


def _bytes_span(fit: model.Fit) -> str:
    """``1.1 KiB at depth 1 -> 81.0 KiB at depth 32`` of a memory fit."""
    if not fit.depths:
        return ""
    return (
        f"{model.fmt_bytes(fit.values[0])} at depth {fit.depths[0]} -> "
        f"{model.fmt_bytes(fit.values[-1])} at depth {fit.depths[-1]}"
    )


def _exponent_part(part: MemoryPart, mv: model.MemoryVerdict) -> tuple[str, str]:
    """(measured, reason) of the memory exponent limit."""
    limit = part.limit
    what = "saved-for-backward bytes" if mv.decided_by == model.SAVED_BYTES else "peak bytes"
    fit = mv.fit
    if part.state is MemoryState.NOT_MEASURED or fit is None or not fit.depths:
        why = mv.not_measured.get(model.SAVED_BYTES) or mv.reason or "no bytes against depth were measured"
        return "not measured", f"could not check max memory exponent {limit:g}: memory not measured ({why})"
    if part.state is MemoryState.PEAK_ONLY:
        figure = model.fit_figure(fit) if fit.kind != "inconclusive" else "no law"
        return f"peak only {figure}", f"max memory exponent {limit:g} not checked: {mv.reason}"
    if part.state is MemoryState.INCONCLUSIVE:
        return f"{what} inconclusive", f"could not check max memory exponent {limit:g}: {mv.reason}"
    depths, span = depth_ranges(fit.depths), _bytes_span(fit)
    slack = f" (+{part.tolerance:.0%}: peak bytes are noisy)" if part.tolerance else ""
    if part.state is MemoryState.EXPONENTIAL:
        return (
            f"{what} x{part.base:.2f} per layer over depths {depths}",
            f"{what} limited to depth^{limit:g}{slack} but grow x{part.base:.2f} per layer (exponential) over depths "
            f"{depths}: {span}",
        )
    what += " against its program's intermediates" if part.excess else ""
    measured = f"{what} depth^{part.exponent:.2f} over depths {depths}"
    if part.ok:
        label = mv.kind if part.excess else mv.growth  # scale34 (#34): the excess held is named by its own reading
        return measured, f"{label}: {what} grow as depth^{part.exponent:.2f} <= {part.top:.2f} ({span})"
    return measured, (
        f"{what} limited to depth^{limit:g}{slack} but grow as depth^{part.exponent:.2f} over depths {depths}: {span}"
    )


def _leak_part(part: MemoryPart, mv: model.MemoryVerdict) -> tuple[str, str]:
    """(measured, reason) of the leak limit."""
    shown = model.fmt_bytes(part.limit)
    leak = part.leak
    if part.state is MemoryState.NO_CALLS:
        return "no calls", f"max leak {shown} per call not checked: retained bytes are per eager call"
    if part.state is MemoryState.NOT_MEASURED or leak is None:
        why = mv.not_measured.get(model.RETAINED) or "no retained bytes were measured"
        return "not measured", f"could not check max leak {shown} per call: retained bytes not measured ({why})"
    if part.state is MemoryState.UNDECIDED:
        why = leak.fit.reason if leak.fit is not None else "undecided"
        return "undecided", f"could not check max leak {shown} per call at depth {leak.depth}: {why}"
    if part.state is MemoryState.NO_LEAK:
        held = model.fmt_bytes(leak.retained[-1]) if leak.retained else "-"
        return "no leak", f"no leak: retained bytes flat over the calls at every depth ({held} at depth {leak.depth})"
    bpc = leak.bytes_per_call
    leaking_depths = depth_ranges([r.depth for r in mv.leaks if r.leaking])
    measured = f"+{model.fmt_bytes(bpc)} per call at depth {leak.depth}"
    if part.ok:
        return measured, f"leaks {model.fmt_bytes(bpc)} per call <= {shown} (depths {leaking_depths})"
    calls = range_text("call", "calls", leak.calls[0], leak.calls[-1]) if leak.calls else "the calls"
    grew = f"{model.fmt_bytes(leak.retained[0])} -> {model.fmt_bytes(leak.retained[-1])}" if leak.retained else ""
    return measured, (
        f"limited to {shown} leaked per call but leaked {model.fmt_bytes(bpc)} per call at depth {leak.depth} "
        f"(retained {grew} over {calls}; leaking at depths {leaking_depths})"
    )


def _memory_parts(check: GuardCheck) -> list[tuple[str, str]]:
    mem = check.memory
    if mem is None:
        return []
    mv = memory_verdict_of(check.result)
    return [
        _exponent_part(p, mv) if p.name is MemoryLimit.MAX_MEMORY_EXPONENT else _leak_part(p, mv) for p in mem.parts
    ]


def _memory_baseline_limit(base: MemoryBaseline) -> str:
    return f"{base.where}'s memory {base.before.memory_text}".rstrip()


def memory_measured_text(check: GuardCheck) -> str:
    """What the memory limits measured ("" without memory limits)."""
    mem = check.memory
    if mem is None:
        return ""
    if not mem.parts and mem.baseline is not None:
        return mem.baseline.after.memory_text
    return "; ".join(m for m, _ in _memory_parts(check))


def memory_limit_text(check: GuardCheck) -> str:
    """The memory limits a check held (the baseline's memory after them, with ``--baseline``)."""
    mem = check.memory
    if mem is None:
        return ""
    texts = [memory_limits_text(check.limits)] if mem.parts else []
    if mem.baseline is not None:
        texts.append(_memory_baseline_limit(mem.baseline))
    return "; ".join(texts)


def memory_reason_text(check: GuardCheck) -> str:
    """Why the memory limits held or failed, one line."""
    mem = check.memory
    if mem is None:
        return ""
    if not mem.parts and mem.baseline is not None:
        return mem.baseline.reason
    text = "; ".join(r for _, r in _memory_parts(check))
    if mem.baseline is not None:
        text += f"; {mem.baseline.where}: {mem.baseline.reason}"
    return text


def _cost_rows(result: Result) -> list[tuple[int, float]]:
    fit = result.verdict.fit
    if fit is None:
        return []
    return list(zip(fit.depths, fit.values, strict=False))


def evidence_lines(check: GuardCheck) -> list[str]:
    """The evidence of a check: limit against measured, the cost per depth, the verdict's evidence, the cause and
    the remedies (what a failure shows)."""
    v = check.result.verdict
    lines = [f"{check.label}: {v.kind}" + (f" ({check.metric})" if check.metric else "")]
    if check.memory is not None and v.memory is not None:
        lines[0] += f"; memory {words.memory_summary(v.memory)}" + (
            f" ({v.memory.decided_by})" if v.memory.decided_by else ""
        )
    if check.baseline_ref is not None:
        lines.append("  baseline   " + baseline_text(check))
    lines.append("  - limit    " + limit_text(check))
    lines.append("  + measured " + measured_text(check))
    mem = check.memory
    if mem is not None:
        lines.append("  - memory limit    " + memory_limit_text(check))
        lines.append("  + memory measured " + memory_measured_text(check))
        lines.append(f"  memory: {memory_reason_text(check)}")
    lines.append("  depth  cost")
    for d, val in _cost_rows(check.result):
        lines.append(f"  {d:5d}  {val:.6g}")
    mv = v.memory
    if mem is not None and mv is not None and mv.fit is not None and mv.fit.depths:
        lines.append(f"  depth  {mv.decided_by or 'bytes'}")
        lines.extend(f"  {d:5d}  {val:.6g}" for d, val in zip(mv.fit.depths, mv.fit.values, strict=False))
    lines.extend(f"  evidence: {e}" for e in v.evidence[:4])
    if v.cause:
        lines.append(f"  cause: {v.cause}")
    lines.extend(f"  remedy: {r}" for r in v.remedies[:3])
    if mem is not None and not mem.ok and mv is not None:
        lines.extend(f"  memory evidence: {e}" for e in mv.evidence[:3])
        if mv.cause:
            lines.append(f"  memory cause: {mv.cause}")
        lines.extend(f"  memory remedy: {r}" for r in mv.remedies[:3])
    return lines


class RenderedGuardCheck(GuardCheck):
    """A :class:`~adprof.guard.GuardCheck` with its sentences, as the API returns it: ``.measured``, ``.limit``,
    ``.reason``, ``.baseline`` (renderings of its fields)."""

    @classmethod
    def of(cls, check: GuardCheck) -> RenderedGuardCheck:
        if isinstance(check, RenderedGuardCheck):
            return check
        return cls(**{f.name: getattr(check, f.name) for f in fields(check)})

    @property
    def measured(self) -> str:
        return measured_text(self)

    @property
    def limit(self) -> str:
        return limit_text(self)

    @property
    def reason(self) -> str:
        return reason_text(self)

    @property
    def baseline(self) -> str:
        return baseline_text(self)


class RenderedGuardReport(GuardReport):
    """A guard's outcome (:class:`adprof.guard.GuardReport`: ``.ok``, ``.checks``, ``.report``) with its renderings,
    as the API and the fixture return it: ``text()`` is the diff ``adprof guard`` prints; in a notebook it shows
    that diff with the report's HTML."""

    @classmethod
    def of(cls, outcome: GuardReport) -> RenderedGuardReport:
        return cls(checks=[RenderedGuardCheck.of(c) for c in outcome.checks], report=outcome.report)

    def text(self) -> str:
        """A readable diff of limit vs measured, with the evidence of failures."""
        return guard_text(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """In a notebook: the diff as text (the report's HTML with it when there is one)."""
        bundle = {"text/plain": self.text()}
        if self.report is not None:
            from adprof.render.html import render_html_fragment

            bundle["text/html"] = f"<pre>{escape(self.text())}</pre>" + render_html_fragment(self.report)
        return bundle


def limits_text(limits: GuardLimits, baseline: str | None = None, tolerance: float = 0.0) -> str:
    """The sentence of a guard's limits (``max base 1.1, max exponent 1.3``; with a ``baseline``, e.g.
    ``baseline base.json``, the baseline and its tolerance first)."""
    text = f"max base {limits.max_base:g}, max exponent {limits.max_exponent:g}"
    if limits.checks_memory:
        text += f", {memory_limits_text(limits)}"
    if baseline is not None:
        text = f"{baseline}, tolerance {tolerance:g}; {text} for series not in it"
    return text


def guard_text(guard: GuardReport) -> str:
    """A readable diff of limit vs measured, with the evidence of failures."""
    lines = []
    for c in guard.checks:
        # the time limits' mark (UNDECIDED: too noisy to decide, not a pathology); the memory limits' below it
        mark = "ok  " if c.time_ok else "UNDECIDED" if c.reading is Reading.UNDECIDED else "FAIL"
        loaded = " (loaded)" if c.result.verdict.loaded_machine else ""  # as check marks the row (time decided)
        lines.append(f"{mark} {c.label}{loaded}: {_line(c)}")
        if c.memory is not None:
            mark = "ok  " if c.memory.ok else "FAIL"
            lines.append(f"  {mark} memory: {_memory_line_text(c)}")
    for c in guard.failures:
        lines.append("")
        lines.extend(evidence_lines(c))
    return "\n".join(lines)


def _line(check: GuardCheck) -> str:
    """``measured (limit: ...) - why`` of the time limits."""
    return f"{measured_text(check)} (limit: {limit_text(check)}) - {reason_text(check)}"


def _memory_line_text(check: GuardCheck) -> str:
    """``measured (limit: ...) - why`` of the memory limits."""
    return f"{memory_measured_text(check)} (limit: {memory_limit_text(check)}) - {memory_reason_text(check)}"


#: Characters XML 1.0 does not allow (in text or attributes), even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 cannot hold written as ``\\xNN`` (``\\uNNNN``)."""
    return _NOT_XML.sub(
        lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 256 else f"\\u{ord(m.group(0)):04x}", text
    )


def _seconds(check: GuardCheck) -> float:
    """Wall time of the series' points (what the test case cost), 0 when unknown."""
    s = check.result.series
    walls = [p.wall_seconds for p in s.points if p.wall_seconds is not None]
    if walls:
        return float(sum(walls))
    return float(sum(t for p in s.points if (t := time_value(p, tuple(p.times))) is not None))


def _classname(check: GuardCheck) -> str:
    """``adprof.guard.chains`` (the chain file's stem; ``cmd`` for a program): CI tools group test cases by it."""
    s = check.result.series
    stem = Path(s.file).stem if s.file else s.backend
    return "adprof.guard." + (re.sub(r"[^\w.-]", "_", stem) or "chain")


def _memory_line(check: GuardCheck) -> str:
    """``; memory: measured (limit: ...) - why`` of a check with memory limits, else ""."""
    return f"; memory: {_memory_line_text(check)}" if check.memory is not None else ""


def _failure_message(check: GuardCheck) -> str:
    """The failure's one line: the time limits' when they failed, the memory limits' when those failed (both, when
    both did)."""
    parts = [] if check.time_ok else [f"{measured_text(check)} (limit: {limit_text(check)}): {reason_text(check)}"]
    if check.memory is not None and not check.memory.ok:
        parts.append(
            f"memory: {memory_measured_text(check)} (limit: {memory_limit_text(check)}): {memory_reason_text(check)}"
        )
    return "; ".join(parts)


def _failure_type(check: GuardCheck) -> str:
    """The failure's type: the time verdict, or the memory verdict when only memory failed."""
    mv = check.result.verdict.memory
    if check.memory is not None and not check.memory.ok and mv is not None and check.time_ok:
        return mv.kind
    return check.result.verdict.kind


def junit_xml(guard: GuardReport, name: str = "adprof guard") -> str:
    """The guard's outcome as JUnit XML (see the module docstring)."""
    checks = guard.checks
    failures, errors = len(guard.pathologies), len(guard.undecided)
    total = sum(_seconds(c) for c in checks)
    counts = {"tests": str(len(checks)), "failures": str(failures), "errors": str(errors), "skipped": "0"}
    root = ET.Element("testsuites", {"name": name, **counts, "time": f"{total:.3f}"})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts, "time": f"{total:.3f}"})
    versions = measured_versions([c.result.series for c in checks])
    if versions:
        props = ET.SubElement(suite, "properties")
        for package, version in versions.items():
            ET.SubElement(props, "property", {"name": xml_safe(package), "value": xml_safe(version)})
    for c in checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": xml_safe(_classname(c)), "name": xml_safe(c.label), "time": f"{_seconds(c):.3f}"},
        )
        if c.outcome is Outcome.UNDECIDED:  # not a pathology: an <error> (the guard could not decide), apart
            attrs = {"message": xml_safe(_failure_message(c)), "type": Outcome.UNDECIDED.value}
            error = ET.SubElement(case, "error", attrs)
            error.text = xml_safe("\n".join(evidence_lines(c)))
        elif not c.ok:
            attrs = {"message": xml_safe(_failure_message(c)), "type": _failure_type(c)}
            failure = ET.SubElement(case, "failure", attrs)
            failure.text = xml_safe("\n".join(evidence_lines(c)))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = xml_safe(_line(c) + _memory_line(c))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _noise_json(check: GuardCheck) -> dict[str, Any] | None:
    n = check.noise
    if n is None:
        return None
    return {
        "rate_kind": n.rate_kind.value,
        "rate": n.rate,
        "interval": [n.low, n.high],
        "limit": n.limit,
        "repeats": n.repeats,
        "spread": n.spread,
        "remeasured": n.remeasured,
        "seconds": n.seconds,
        "seconds_to_decide": n.needed_seconds,
    }


def guard_to_json(guard: GuardReport) -> dict[str, Any]:
    """The guard's outcome as a JSON-ready dict: the ``guard`` field of ``adprof guard --json`` (docs/guards.md)."""
    checks = []
    for c in guard.checks:
        s = c.result.series
        checks.append(
            {
                "chain": s.chain,
                "backend": s.backend,
                "profile": s.profile,
                "mode": s.mode,
                "file": s.file,
                "outcome": c.outcome.value,
                "reading": c.reading.value,
                "verdict": c.result.verdict.kind,
                "rate": c.rate,
                "limit": c.bound,
                "memory_ok": None if c.memory is None else c.memory.ok,
                "noise": _noise_json(c),
                "top_bound": c.top_bound,
                "line": _line(c),
            }
        )
    return {
        "outcome": guard.outcome.value,
        "held": sum(c.ok for c in guard.checks),
        "failed": len(guard.pathologies),
        "undecided": len(guard.undecided),
        "checks": checks,
    }


def _mark(check: GuardCheck) -> str:
    """``UNDECIDED`` (too noisy to decide), ``FAIL`` or ``ok``."""
    return {Outcome.UNDECIDED: "UNDECIDED", Outcome.FAILED: "FAIL"}.get(check.outcome, "ok")


def guard_markdown(guard: GuardReport, title: str = "adprof guard") -> str:
    """One row per series: held or failed, the verdict, measured against the limit, why."""
    held = len(guard.checks) - len(guard.failures)
    undecided = len(guard.undecided)
    rows = []
    memory = any(c.memory is not None for c in guard.checks)
    for c in sorted(guard.checks, key=lambda c: c.ok):  # the failures first
        s, m = c.result.series, c.memory
        mv = c.result.verdict.memory
        mem_kind = mv.kind if mv is not None and mv.measured else "not measured"
        mem = [mem_kind, memory_measured_text(c), memory_limit_text(c)] if m else ["-"] * 3
        rows.append(
            [
                strong("UNDECIDED", True)
                if c.outcome is Outcome.UNDECIDED
                else strong("FAIL", True)
                if not c.ok
                else "ok",
                chain_label(s),
                backend_label(s),
                s.mode,
                c.result.verdict.kind,
                measured_text(c),
                limit_text(c),
                *([strong(mem[0], m is not None and not m.ok), mem[1], mem[2]] if memory else []),
                "; ".join(x for x in (reason_text(c), memory_reason_text(c)) if x),
            ]
        )
    summary = f"{held} of {len(guard.checks)} held" + (f", {undecided} undecided" if undecided else "")
    head = f"### {cell(title)}\n\n{cell(summary)}\n\n"
    headers = ["result", "chain", "backend/profile", "mode", "verdict", "measured", "limit"]
    headers += ["memory", "memory measured", "memory limit"] if memory else []
    body = table([*headers, "why"], rows)
    return head + (body if rows else "No series.\n")


__all__ = [
    "RenderedGuardCheck",
    "RenderedGuardReport",
    "baseline_text",
    "limit_text",
    "measured_text",
    "memory_limit_text",
    "memory_limits_text",
    "memory_measured_text",
    "memory_reason_text",
    "missing_depths_text",
    "reason_text",
    "undecided_text",
    "evidence_lines",
    "guard_markdown",
    "guard_to_json",
    "guard_text",
    "junit_xml",
    "limits_text",
    "xml_safe",
]
