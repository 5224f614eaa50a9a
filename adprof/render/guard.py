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

import re
import xml.etree.ElementTree as ET
from html import escape
from pathlib import Path
from typing import Any

from adprof.guard.limits import GuardLimits
from adprof.guard.outcome import GuardCheck, GuardReport
from adprof.model import Result, time_value
from adprof.render.markdown import cell, strong, table
from adprof.report import backend_label, chain_label, measured_versions


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
        lines[0] += f"; memory {v.memory.summary}" + (f" ({v.memory.decided_by})" if v.memory.decided_by else "")
    if check.baseline:
        lines.append("  baseline   " + check.baseline)
    lines.append("  - limit    " + check.limit)
    lines.append("  + measured " + check.measured)
    mem = check.memory
    if mem is not None:
        lines.append("  - memory limit    " + mem.limit)
        lines.append("  + memory measured " + mem.measured)
        lines.append(f"  memory: {mem.reason}")
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


class RenderedGuardReport(GuardReport):
    """A guard's outcome (:class:`adprof.guard.GuardReport`: ``.ok``, ``.checks``, ``.report``) with its renderings,
    as the API and the fixture return it: ``text()`` is the diff ``adprof guard`` prints; in a notebook it shows
    that diff with the report's HTML."""

    @classmethod
    def of(cls, outcome: GuardReport) -> RenderedGuardReport:
        return cls(checks=outcome.checks, report=outcome.report)

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
        text += f", {limits.memory_text()}"
    if baseline is not None:
        text = f"{baseline}, tolerance {tolerance:g}; {text} for series not in it"
    return text


def guard_text(guard: GuardReport) -> str:
    """A readable diff of limit vs measured, with the evidence of failures."""
    lines = []
    for c in guard.checks:
        mark = "ok  " if c.time_ok else "FAIL"  # the time limits' mark; the memory limits' below it
        loaded = " (loaded)" if c.result.verdict.loaded_machine else ""  # as check marks the row (time decided)
        lines.append(f"{mark} {c.label}{loaded}: {c.measured} (limit: {c.limit}) - {c.reason}")
        if c.memory is not None:
            mark = "ok  " if c.memory.ok else "FAIL"
            lines.append(f"  {mark} memory: {c.memory.measured} (limit: {c.memory.limit}) - {c.memory.reason}")
    for c in guard.failures:
        lines.append("")
        lines.extend(evidence_lines(c))
    return "\n".join(lines)


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
    m = check.memory
    return f"; memory: {m.measured} (limit: {m.limit}) - {m.reason}" if m is not None else ""


def _failure_message(check: GuardCheck) -> str:
    """The failure's one line: the time limits' when they failed, the memory limits' when those failed (both, when
    both did)."""
    parts = [] if check.time_ok else [f"{check.measured} (limit: {check.limit}): {check.reason}"]
    if check.memory is not None and not check.memory.ok:
        parts.append(f"memory: {check.memory.measured} (limit: {check.memory.limit}): {check.memory.reason}")
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
    failures = len(guard.failures)
    total = sum(_seconds(c) for c in checks)
    counts = {"tests": str(len(checks)), "failures": str(failures), "errors": "0", "skipped": "0"}
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
        if not c.ok:
            attrs = {"message": xml_safe(_failure_message(c)), "type": _failure_type(c)}
            failure = ET.SubElement(case, "failure", attrs)
            failure.text = xml_safe("\n".join(evidence_lines(c)))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = xml_safe(f"{c.measured} (limit: {c.limit}) - {c.reason}" + _memory_line(c))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def guard_markdown(guard: GuardReport, title: str = "adprof guard") -> str:
    """One row per series: held or failed, the verdict, measured against the limit, why."""
    held = len(guard.checks) - len(guard.failures)
    rows = []
    memory = any(c.memory is not None for c in guard.checks)
    for c in sorted(guard.checks, key=lambda c: c.ok):  # the failures first
        s, m = c.result.series, c.memory
        mv = c.result.verdict.memory
        mem = [mv.kind if mv is not None and mv.measured else "not measured", m.measured, m.limit] if m else ["-"] * 3
        rows.append(
            [
                strong("FAIL", True) if not c.ok else "ok",
                chain_label(s),
                backend_label(s),
                s.mode,
                c.result.verdict.kind,
                c.measured,
                c.limit,
                *([strong(mem[0], m is not None and not m.ok), mem[1], mem[2]] if memory else []),
                "; ".join(x for x in (c.reason, m.reason if m is not None else "") if x),
            ]
        )
    head = f"### {cell(title)}\n\n{cell(f'{held} of {len(guard.checks)} held')}\n\n"
    headers = ["result", "chain", "backend/profile", "mode", "verdict", "measured", "limit"]
    headers += ["memory", "memory measured", "memory limit"] if memory else []
    body = table([*headers, "why"], rows)
    return head + (body if rows else "No series.\n")


__all__ = [
    "RenderedGuardReport",
    "evidence_lines",
    "guard_markdown",
    "guard_text",
    "junit_xml",
    "limits_text",
    "xml_safe",
]
