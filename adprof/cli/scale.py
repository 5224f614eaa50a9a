"""Scaling a check out: ``--scheduler`` (a Dask cluster, or an embedded LocalCluster) and ``--shard K/N``
(docs/scale-out.md)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from adprof.cli.common import UsageError
from adprof.measure import MeasureConfig
from adprof.measure.executor import Executor
from adprof.options import shard_arg


def add_scale_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scaling out (docs/scale-out.md)")
    g.add_argument(
        "--scheduler",
        metavar="ADDRESS|local[:N]",
        default=None,
        help="run the series on a Dask cluster: a scheduler address (tcp://host:8786), or local[:N] for an "
        "embedded LocalCluster of N one-thread workers (default N: --jobs); needs pip install 'adprof[dask]'",
    )
    g.add_argument(
        "--shard",
        type=shard_arg,
        metavar="K/N",
        default=None,
        help="measure only part K of N of the series (a stable split by series name, for CI jobs); "
        "merge the N --json reports with: adprof report a.json b.json ...",
    )


def check_scale_options(args: argparse.Namespace) -> None:
    """Bad ``--scheduler`` syntax is one line and exit 2 before anything is loaded."""
    scheduler = getattr(args, "scheduler", None)
    if scheduler is not None:
        from adprof.measure.dask_executor import parse_scheduler

        try:
            parse_scheduler(scheduler)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


@contextlib.contextmanager
def open_executor(args: argparse.Namespace, cfg: MeasureConfig, tasks: int | None = None) -> Iterator[Executor | None]:
    """The Dask executor of ``--scheduler`` (closed on exit), or None: the local lanes. ``tasks``: the series to
    run; an embedded cluster starts no more workers than that (as the local lanes do)."""
    scheduler = getattr(args, "scheduler", None)
    if not scheduler:
        yield None
        return
    from adprof.measure.dask_executor import DaskExecutor, SchedulerError

    try:
        executor = DaskExecutor(scheduler, workers=cfg.jobs, most=tasks, deadline=cfg.deadline)
    except SchedulerError as exc:
        raise UsageError(str(exc)) from None
    try:
        yield executor
    finally:
        executor.close()


__all__ = ["add_scale_options", "check_scale_options", "open_executor", "shard_arg"]
