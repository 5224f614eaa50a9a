"""Peak bytes alone: a reading, never a finding (pure).

``peak_bytes`` is the worker's resident high-water mark: it counts the allocator's arenas, the interpreter's own
growth, the tracer's caches and whatever the machine's other work does to page reuse. Two runs of one chain read it
``d^2.64`` and ``d^1.69``. A noisy figure is never the only evidence for a finding: where a backend and mode measure
no deterministic figure (saved-for-backward bytes), the memory verdict is ``peak-only``, carrying the peak's fit (its
figure) and the class that fit alone would read, and it is never a finding (no exit 1, no failed guard).

Imports only the model and the rest of analysis.
"""

from __future__ import annotations

from adprof.analysis.growth import interval_text
from adprof.model import PEAK_BYTES, PEAK_ONLY, SAVED_BYTES, Fit, MemoryVerdict

#: A fit's kind -> the memory class the peak alone would read (shown, never deciding).
PEAK_CLASS = {
    "linear": "linear",
    "mild": "mildly superlinear",
    "superlinear": "superlinear",
    "exponential": "exponential",
    "inconclusive": "no law",
}


def peak_class(peak: Fit) -> str:
    """The class the peak's own fit reads (``superlinear``, ``linear``, ``no law``): words for the evidence."""
    if peak.kind == "linear" and (peak.exponent == 0.0):
        return "flat"
    return PEAK_CLASS.get(peak.kind, "no law")


def peak_only_reading(mv: MemoryVerdict, peak: Fit, *, backend: str = "", mode: str = "", why: str = "") -> None:
    """Only the peak was measured: ``mv`` reads ``peak-only`` with the peak's fit as its figure (``why``: the series'
    note on why no saved bytes were measured)."""
    mv.decided_by, mv.fit = PEAK_BYTES, peak
    mv.growth = PEAK_ONLY
    where = " ".join(x for x in (backend, mode) if x) or "this series"
    missing = why or f"{where} measures no saved-for-backward bytes"
    mv.reason = (
        f"peak bytes only (the worker's high-water mark: noisy, a cross-check): no deterministic memory figure for "
        f"{where} ({SAVED_BYTES}: {missing}), so no memory finding"
    )
    figure = interval_text(peak) or peak.kind
    depths = f"{peak.depths[0]}..{peak.depths[-1]}" if len(peak.depths) > 1 else "?"
    mv.evidence.append(
        f"peak bytes read {peak_class(peak)} ({figure}) over depths {depths}: measured and noisy, not a finding "
        "without a deterministic figure that says so"
    )


__all__ = ["PEAK_CLASS", "peak_class", "peak_only_reading"]
