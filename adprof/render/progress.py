"""The progress of a run on stderr: one transient bar over the series, with what each worker lane is measuring."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from adprof import words
from adprof.model import Series
from adprof.report import analyze_structures


class SeriesProgress:
    """Transient rich progress on stderr (TTY only): one bar over the series, with what each worker
    lane is measuring right now in its description; ``verbose``: a line per series measured when the bar is off,
    and every structure's summary (else the ones at risk, under the bar)."""

    def __init__(self, console: Console, total: int, lanes: int, enabled: bool, verbose: bool = False) -> None:
        self.console, self.enabled, self.verbose = console, enabled, verbose
        self.progress = Progress(
            SpinnerColumn(),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=console,
            transient=True,
            disable=not enabled,
        )
        self.task = self.progress.add_task("starting", total=total)
        self.lanes = [""] * lanes

    def __enter__(self) -> SeriesProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def status(self, lane: int, text: str) -> None:
        if lane < len(self.lanes):
            self.lanes[lane] = text
            self.progress.update(self.task, description=" | ".join(t for t in self.lanes if t))

    def done(self, series: Series) -> None:
        self.progress.advance(self.task)
        if self.verbose and not self.enabled:
            tail = series.error or words.stopped_text(series) or ""
            self.console.print(
                f"measured {series.label}: depths {[p.depth for p in series.points]} {tail}",
                markup=False,
                highlight=False,
            )

    def structures(self, recordings: dict[Any, dict[str, Any]]) -> None:
        """The structure probes' summaries: the chains at risk (every one when verbose)."""
        if not (self.enabled or self.verbose):
            return
        for st in analyze_structures(recordings).values():
            if st.at_risk or self.verbose:
                self.progress.console.print(st.summary(), markup=False, highlight=False, soft_wrap=True)


__all__ = ["SeriesProgress"]
