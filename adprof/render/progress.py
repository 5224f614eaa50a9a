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

from adprof.model import Series


class SeriesProgress:
    """Transient rich progress on stderr (TTY only): one bar over the series, with what each worker
    lane is measuring right now in its description."""

    def __init__(self, console: Console, total: int, lanes: int, enabled: bool) -> None:
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


__all__ = ["SeriesProgress"]
