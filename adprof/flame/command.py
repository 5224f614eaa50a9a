"""``adprof flame``: sample a looped probe with py-spy and say where the time went.

``adprof flame FILE::CHAIN --mode traced --depth 17 --profile v08 -o mul.svg`` runs
``python -m adprof.flame.flame_worker`` (see there) as py-spy's child, with ``py-spy record -F -f raw``:
one sampling run (:mod:`~adprof.flame.sampling`) gives the collapsed stacks, from which this module
writes the requested output (a self-contained SVG flame graph, a speedscope JSON, or the raw stacks)
and prints a summary in the style of seed 001's sampling paragraph::

    915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality

The phase attribution is pure (:mod:`~adprof.flame.collapse`); the outputs and the text summary
are in :mod:`~adprof.flame.output`.

Exit codes of :func:`run_flame`: 0 ok, 1 the probe raised in the worker, 2 nothing could be
sampled (bad target or options, py-spy missing or refused, zero samples); errors are one line.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

from adprof.chain import ChainError, parse_target
from adprof.flame import sampling
from adprof.flame.collapse import attribute
from adprof.flame.output import render_speedscope, render_summary, render_svg
from adprof.flame.sampling import INSTALL_FIX, LOAD_TIMEOUT, MAX_SECONDS, FlameError, sample_probe
from adprof.util.files import OutputPathError, check_output_path, write_atomic
from adprof.util.text import terminal_safe

FORMATS = ("svg", "speedscope", "raw")
_SUFFIX = {"svg": ".svg", "speedscope": ".json", "raw": ".txt"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``adprof flame`` (shared by the ``adprof`` parser and :func:`main`)."""
    p.add_argument("target", nargs="?", metavar="FILE::CHAIN", help="chain file and chain name")
    p.add_argument("--mode", choices=("traced", "eager"), default="traced", help="probe mode (traced)")
    p.add_argument("--depth", type=int, required=True, help="chain depth to probe")
    p.add_argument("--profile", choices=("v08", "fixed"), default="fixed", help="engine profile (fixed)")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds of looping to sample (3)")
    p.add_argument("--rate", type=int, default=250, help="samples per second (250; keep <= 1000)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="svg flame graph (default), speedscope JSON or raw collapsed stacks",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default flame-CHAIN-MODE-dDEPTH.EXT)")
    p.add_argument("--top", type=int, default=8, help="paths and self functions to list (8)")


def _resolve_target(target: str) -> tuple[str, str]:
    """Validate ``FILE[::CHAIN]`` by loading it in a subprocess under a timeout (user code never runs in
    adprof's own process); return (``abs file::chain`` for the worker, chain name)."""
    try:
        path, name = parse_target(target)
    except ChainError as exc:
        raise FlameError(f"adprof flame: {exc}") from None
    return sampling.resolve_chain(str(path), name, LOAD_TIMEOUT)


def _check_output(output: str, target: str) -> None:
    """Raise :class:`FlameError` (exit 2) unless ``output`` can be written as a regular file: before sampling."""
    try:
        check_output_path("-o", output, inputs=[target.split("::", 1)[0]])
    except OutputPathError as exc:
        raise FlameError(f"adprof flame: error: {exc.message}") from None


def _default_output(name: str, mode: str, depth: int, fmt: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
    return f"flame-{safe}-{mode}-d{depth}{_SUFFIX[fmt]}"


def _format_for(output: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    if output and output.endswith(".json"):
        return "speedscope"
    if output and output.endswith((".txt", ".folded", ".collapsed")):
        return "raw"
    return "svg"


def check_flame_options(args: argparse.Namespace) -> None:
    """``--seconds``, ``--rate`` and ``--top`` in range (one line, exit 2)."""
    if not (args.seconds > 0 and math.isfinite(args.seconds)) or args.seconds > MAX_SECONDS:
        raise FlameError(f"adprof flame: --seconds must be > 0 and at most {MAX_SECONDS:g}, got {args.seconds:g}")
    if args.rate < 1:
        raise FlameError(f"adprof flame: --rate must be >= 1, got {args.rate}")
    if args.top < 1:
        raise FlameError(f"adprof flame: --top must be >= 1, got {args.top}")


def run_flame(args: argparse.Namespace) -> int:
    """Run ``adprof flame`` for parsed ``args``; print the summary; return the exit code."""
    try:
        return _run(args)
    except FlameError as exc:
        print(terminal_safe(str(exc)), file=sys.stderr)
        return exc.code


def _run(args: argparse.Namespace) -> int:
    if args.depth < 1:
        raise FlameError(f"adprof flame: --depth must be >= 1, got {args.depth}")
    check_flame_options(args)
    fmt = _format_for(args.output, args.format)
    if args.output:
        _check_output(args.output, args.target)  # before loading anything
    worker_target, name = _resolve_target(args.target)
    output = args.output or _default_output(name, args.mode, args.depth, fmt)
    _check_output(output, args.target)
    py_spy = sampling.find_py_spy()  # looked up on the module: tests replace it
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")
    run = sample_probe(worker_target, args.mode, args.depth, args.profile, args.seconds, args.rate, py_spy)
    summary = attribute(run.stacks)
    st = run.status
    done = (
        f"{st.get('iterations', 0)} iterations in {st.get('seconds', 0.0):.2f} s of looping"
        if st.get("state") == "done"
        else f"stopped during iteration {st.get('iterations', 0) + 1}"
    )
    summary.title = (
        f"adprof flame {args.target} ({args.mode}, depth {args.depth}, profile {args.profile}): "
        f"{done}, sampled at {args.rate} Hz"
    )
    if run.capped:
        summary.notes.append(
            f"note: py-spy's {run.seconds_cap} s cap stopped the worker during iteration "
            f"{run.status.get('iterations', 0) + 1}; one iteration takes longer than the cap allows, "
            "so the samples cover part of it (lower --depth for whole iterations)"
        )
    title = f"{name} {args.mode} depth {args.depth} profile {args.profile}"
    if fmt == "svg":
        text = render_svg(run.stacks, title=title)
    elif fmt == "speedscope":
        text = render_speedscope(run.stacks, args.rate, name=title)
    else:
        text = run.raw
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise FlameError(f"adprof flame: -o {output}: cannot write it ({exc.strerror or exc})") from None
    summary.notes.append(f"wrote {output} ({fmt})")
    print(terminal_safe(render_summary(summary, top=args.top)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m adprof.flame FILE::CHAIN ...`` (the same options as ``adprof flame``)."""
    p = argparse.ArgumentParser(prog="adprof flame", description=(__doc__ or "adprof flame").splitlines()[0])
    add_arguments(p)
    return run_flame(p.parse_args(argv))


__all__ = ["FORMATS", "add_arguments", "check_flame_options", "main", "run_flame"]
