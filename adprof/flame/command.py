"""``adprof flame``: sample the measured phases of a chain's points with py-spy and say where the time went.

``adprof flame FILE::CHAIN --backend torch --mode eager --depth 12 -o g.svg`` runs
``python -m adprof.flame.flame_worker`` (see there) as py-spy's child (``--native`` by default where the work is
in C++: torch). The worker measures points with the backend's own runner; only the time inside the phases it
reports is kept, each sample with its phase (:mod:`~adprof.flame.timeline`). From that this module writes the
requested output (an interactive SVG, speedscope JSON, a Chrome trace, or collapsed stacks) and prints a summary:
the phases, and on the reference engine seed 001's sampling paragraph::

    915 of 1383 samples (66%) in drop -> metadata deregistration -> key equality

``--vs D2`` samples a second depth and writes a differential graph (the deeper run's shape, coloured by the
change of each frame's share), and names the functions whose self time per point grows fastest
(:mod:`~adprof.flame.diff`).

Exit codes of :func:`run_flame`: 0 ok, 1 the probe raised in the worker, 2 nothing could be sampled (bad target
or options, py-spy missing or refused, zero samples); errors are one line.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from adprof import options
from adprof.chain import ChainError, parse_target
from adprof.flame import sampling
from adprof.flame.collapse import Stack, attribute
from adprof.flame.diff import growth, render_growth
from adprof.flame.output import render_chrometrace, render_collapsed, render_speedscope, render_summary
from adprof.flame.sampling import INSTALL_FIX, LOAD_TIMEOUT, MAX_SECONDS, FlameError, FlameRun, sample_probe
from adprof.flame.svg import render_flame_svg
from adprof.util.files import OutputPathError, check_output_path, write_atomic
from adprof.util.text import terminal_safe

#: Output formats; ``raw`` is the old name of ``collapsed``.
FORMATS = ("svg", "speedscope", "chrometrace", "collapsed", "raw")
#: The file suffixes each format may be written to (the first is the default file's).
SUFFIXES: dict[str, tuple[str, ...]] = {
    "svg": (".svg",),
    "speedscope": (".json",),
    "chrometrace": (".json",),
    "collapsed": (".txt", ".folded", ".collapsed", ".stacks"),
    "raw": (".txt", ".folded", ".collapsed", ".stacks"),
}
#: The highest ``--rate``: py-spy takes a sample in well under a millisecond, not in the 10 microseconds that
#: 100 kHz would leave it (it then falls behind and says so); a flame graph needs no more.
MAX_RATE = 1000
DEFAULT_RATE = 250
NATIVE_RATE = 100
#: Below this phase agreement (:attr:`~adprof.flame.timeline.PhasedProfile.agreement`) the summary says so.
AGREEMENT_NOTE = 0.9
#: Backends whose work is in C++ below the Python frames: sampled with py-spy ``--native`` unless ``--no-native``.
NATIVE_BY_DEFAULT = frozenset({"torch"})


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``adprof flame`` (shared by the ``adprof`` parser and :func:`main`)."""
    p.add_argument("target", nargs="?", metavar="FILE::CHAIN", help="chain file and chain name")
    p.add_argument(
        "--backend",
        default=None,
        help="engine, jax, torch, autograd, tinygrad, ... (default: engine, or the one backend the chain declares)",
    )
    p.add_argument(
        "--mode", default=None, help="probe mode (default: the chain's first on the backend, else the backend's first)"
    )
    p.add_argument("--depth", type=options.arg("depth"), required=True, help="chain depth to probe")
    p.add_argument(
        "--vs", type=options.arg("depth"), default=None, metavar="D2", help="also sample depth D2: a differential graph"
    )
    p.add_argument("--profile", default=None, help="engine cost profile: v08 or fixed (fixed)")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds of points to sample, per depth (3)")
    p.add_argument("--rate", type=int, default=None, help=f"samples per second, 1..{MAX_RATE} (250; 100 with --native)")
    p.add_argument(
        "--native",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="sample C/C++ frames too (py-spy --native; default on for torch)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="svg flame graph (default), speedscope JSON, chrometrace JSON (Perfetto) or collapsed stacks "
        "(raw: the same); without it, -o's suffix says",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default flame-CHAIN-MODE-dDEPTH.EXT)")
    p.add_argument("--top", type=int, default=8, help="paths and functions to list (8)")
    p.add_argument("--focus", default=None, metavar="REGEX", help="--cmd: the function whose share to name")
    if not any(a.dest == "no_color" for a in p._actions):
        p.add_argument("--no-color", action="store_true", help="no colours (flame prints plain text)")


def _resolve_target(target: str) -> tuple[str, str, dict]:
    """Validate ``FILE[::CHAIN]`` by loading it in a subprocess under a timeout (user code never runs in
    adprof's own process); return (``abs file::chain`` for the worker, chain name, its declared modes)."""
    try:
        path, name = parse_target(target)
    except ChainError as exc:
        raise FlameError(f"adprof flame: {exc}") from None
    return sampling.resolve_chain(str(path), name, LOAD_TIMEOUT)


def _check_output(output: str, target: str, fmt: str) -> None:
    """Raise :class:`FlameError` (exit 2) unless ``output`` can be written as a regular file: before sampling."""
    try:
        check_output_path("-o", output, SUFFIXES[fmt], inputs=[target.split("::", 1)[0]])
    except OutputPathError as exc:
        raise FlameError(f"adprof flame: error: {exc.message}") from None


def _default_output(name: str, mode: str, depth: int, fmt: str, vs: int | None = None) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
    tail = f"-vs{vs}" if vs is not None else ""
    return f"flame-{safe}-{mode}-d{depth}{tail}{SUFFIXES[fmt][0]}"


def output_format(output: str | None, fmt: str | None, allowed: tuple[str, ...] = FORMATS) -> str:
    """The format to write: ``--format``, else the suffix of ``-o``; raise :class:`FlameError` (one line, exit 2)
    when the two disagree, the suffix is none of the formats', or the format is not in ``allowed``."""
    suffix = Path(output).suffix.lower() if output else ""
    if fmt is None and output:
        fmt = next((f for f in allowed if suffix in SUFFIXES[f]), None)
        if fmt is None:
            known = ", ".join(sorted({s for f in allowed for s in SUFFIXES[f]}))
            raise FlameError(
                f"adprof flame: -o {output}: flame writes {', '.join(f for f in allowed if f != 'raw')} "
                f"({known}), not {suffix or 'a file without a suffix'}; give one of those suffixes or --format"
            )
    fmt = fmt or "svg"
    if fmt not in allowed:
        raise FlameError(f"adprof flame: --format {fmt} is not available here (only {', '.join(allowed)})")
    if output and suffix not in SUFFIXES[fmt]:
        raise FlameError(
            f"adprof flame: -o {output} does not match --format {fmt} (write it to a {' or '.join(SUFFIXES[fmt])} file)"
        )
    return fmt


def check_flame_options(args: argparse.Namespace) -> None:
    """``--seconds``, ``--rate``, ``--top``, ``--depth``/``--vs`` in range, and ``-o`` against ``--format``
    (one line, exit 2); shared by the chain and the ``--cmd`` paths."""
    if not (args.seconds > 0 and math.isfinite(args.seconds)) or args.seconds > MAX_SECONDS:
        raise FlameError(f"adprof flame: --seconds must be > 0 and at most {MAX_SECONDS:g}, got {args.seconds:g}")
    if args.rate is not None and not 1 <= args.rate <= MAX_RATE:
        raise FlameError(f"adprof flame: --rate must be 1..{MAX_RATE} samples per second, got {args.rate}")
    if args.top < 1:
        raise FlameError(f"adprof flame: --top must be >= 1, got {args.top}")
    if args.depth < 1:
        raise FlameError(f"adprof flame: --depth must be >= 1, got {args.depth}")
    vs = getattr(args, "vs", None)
    if vs is not None and (vs < 1 or vs == args.depth):
        raise FlameError(f"adprof flame: --vs must be a depth >= 1 other than --depth {args.depth}, got {vs}")
    if getattr(args, "focus", None):
        try:
            re.compile(args.focus)
        except re.error as exc:
            raise FlameError(f"adprof flame: --focus {args.focus!r} is not a regular expression ({exc})") from None
    cmd = getattr(args, "cmd", None)
    output_format(args.output, args.format, ("svg",) if cmd else FORMATS)


def _check_backend(name: str):
    """The declaration of backend ``name``, checked without importing an engine (one line, exit 2)."""
    from adprof.backends import UnknownBackendError, backend_declaration, check_backend

    try:
        return backend_declaration(check_backend(name))
    except UnknownBackendError as exc:
        raise FlameError(f"adprof flame: {exc}") from None


def _backend_settings(args: argparse.Namespace, name: str, declared: dict) -> tuple[str, str, str | None, bool]:
    """(backend, mode, profile, native): the options, else what the chain declares (its one backend, its first
    mode there), else the engine and the backend's first mode; a backend or mode the chain is not declared for
    is refused in one line."""
    per_backend: dict[str, list[str]] = declared.get("backend_modes") or {}
    backend_name = args.backend or (
        next(iter(per_backend)) if per_backend and "engine" not in per_backend else "engine"
    )
    if per_backend and backend_name not in per_backend:
        which = ", ".join(f"--backend {b} ({', '.join(m)})" for b, m in per_backend.items())
        raise FlameError(f"adprof flame: chain {name} is declared for {which}, not for {backend_name}")
    backend = _check_backend(backend_name)
    chain_modes = per_backend.get(backend_name) or declared.get("modes") or ()
    mode = args.mode or next((m for m in chain_modes if m in backend.modes), backend.modes[0])
    profile = args.profile
    if profile is None and backend.profiles != (None,):
        profile = "fixed" if "fixed" in backend.profiles else backend.profiles[0]
    try:
        backend.check_arguments(mode, profile)
    except ValueError as exc:
        raise FlameError(f"adprof flame: {exc}") from None
    args.backend = backend_name
    native = run_native(args)
    if args.rate is None:  # a native sample costs milliseconds: py-spy keeps up with fewer
        args.rate = NATIVE_RATE if native else DEFAULT_RATE
    return backend_name, mode, profile, native


def run_native(args: argparse.Namespace) -> bool:
    """Whether the run samples C/C++ frames (``--native``, else the backend's default)."""
    return args.native if args.native is not None else args.backend in NATIVE_BY_DEFAULT


def run_flame(args: argparse.Namespace) -> int:
    """Run ``adprof flame`` for parsed ``args``; print the summary; return the exit code."""
    try:
        return _run(args)
    except FlameError as exc:
        print(terminal_safe(str(exc)), file=sys.stderr)
        return exc.code


def _weighted(run: FlameRun) -> list[tuple[str, Stack, float]]:
    return [(p, f, w) for (p, f), w in run.profile.weights().items()]


def _run(args: argparse.Namespace) -> int:
    check_flame_options(args)
    fmt = output_format(args.output, args.format)
    if args.backend:
        _check_backend(args.backend)  # before loading anything
    if args.output:
        _check_output(args.output, args.target, fmt)
    worker_target, name, declared = _resolve_target(args.target)
    backend, mode, profile, native = _backend_settings(args, name, declared)
    output = args.output or _default_output(name, mode, args.depth, fmt, args.vs)
    _check_output(output, args.target, fmt)
    py_spy = sampling.find_py_spy()  # looked up on the module: tests replace it
    if not py_spy:
        raise FlameError(f"adprof flame: py-spy not found; {INSTALL_FIX}")

    def sample(depth: int) -> FlameRun:
        return sample_probe(
            worker_target, mode, depth, profile, args.seconds, args.rate, py_spy, backend=backend, native=native
        )

    run = sample(args.depth)
    where = f"{backend} {mode}" + (f", profile {profile}" if profile else "") + (", native" if native else "")
    shown, base = run, None
    shallow, deep = args.depth, args.depth
    if args.vs is not None:  # the differential reads the deeper run against the shallower, whichever was --depth
        other = sample(args.vs)
        shallow, deep = sorted((args.depth, args.vs))
        base, shown = (run, other) if args.depth < args.vs else (other, run)
    text = _render(fmt, shown, base, args, name, where)
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise FlameError(f"adprof flame: -o {output}: cannot write it ({exc.strerror or exc})") from None
    if base is None:
        print(terminal_safe(_summary(run, args, where, args.depth)))
    else:
        print(terminal_safe(_summary(base, args, where, shallow)))
        print()
        print(terminal_safe(_summary(shown, args, where, deep)))
        print()
        rows = growth(base.profile, shown.profile, deep - shallow)
        print(terminal_safe(render_growth(rows, shallow, deep, top=args.top)))
    print(f"\nwrote {output} ({fmt}{', differential' if base is not None else ''})")
    return 0


def _render(fmt: str, run: FlameRun, base: FlameRun | None, args: argparse.Namespace, name: str, where: str) -> str:
    prof = run.profile
    depth = max(args.depth, args.vs) if base is not None else args.depth
    title = f"{name} ({where}) depth {depth}"
    if fmt == "svg":
        samples = [(p, f, float(n)) for p, f, n in prof.samples()]
        if base is None:
            sub = (
                f"{prof.iterations} points, {prof.seconds:.2f} s measured, sampled at {args.rate} Hz; colour = phase "
                f"({prof.agreement:.0%} of the samples in their kind's phase)"
            )
            return render_flame_svg(samples, title=f"adprof flame {title}", subtitle=sub, phases=prof.phase_order)
        bsamples = [(p, f, float(n)) for p, f, n in base.profile.samples()]
        shallow, deep = sorted((args.depth, args.vs))
        sub = f"differential: depth {shallow} -> {deep}; colour = change of each frame's share of samples"
        return render_flame_svg(
            samples,
            title=f"adprof flame {title} vs depth {min(args.depth, args.vs)}",
            subtitle=sub,
            base=bsamples,
            phases=prof.phase_order,
        )
    if fmt == "speedscope":
        return render_speedscope(_weighted(run), name=title)
    if fmt == "chrometrace":
        return render_chrometrace(prof.slices, name=title)
    return render_collapsed(prof.samples())


def _summary(run: FlameRun, args: argparse.Namespace, where: str, depth: int) -> str:
    prof = run.profile
    samples = prof.samples()
    total = sum(n for _, _, n in samples)
    lines = [
        f"adprof flame {args.target} ({where}, depth {depth}): {prof.iterations} points, "
        f"{prof.seconds:.2f} s in the measured phases, sampled at {args.rate} Hz",
        f"{total} samples in the measured phases (left out: {prof.outside:.2f} s of setup, imports and the "
        f"worker's loop; {prof.harness:.2f} s of the harness's timers)",
        "",
        f"  {'measured phase':<26}{'samples':>8}{'share':>8}",
    ]
    per_phase: dict[str, int] = dict.fromkeys(prof.phase_order, 0)  # in the order the phases run
    for p, _, n in samples:
        per_phase[p] = per_phase.get(p, 0) + n
    per_phase = {p: n for p, n in per_phase.items() if n}
    for p, n in per_phase.items():
        lines.append(f"  {p:<26}{n:>8}{100.0 * n / max(total, 1):>7.1f}%")
    if prof.agreement < AGREEMENT_NOTE:
        lines.append(
            f"  note: {prof.agreement:.0%} of the samples sit in the phase their kind of stack mostly runs in: the "
            "rest, near a phase's edges, may carry the neighbouring phase (py-spy read the stacks slowly"
            + (": --no-native tags phases sharper)" if run_native(args) else ")")
        )
    summary = attribute([(f, n) for _, f, n in samples])
    body = render_summary(summary, top=args.top, sections=args.backend == "engine")
    lines.append("")
    lines.extend(body.splitlines()[1:])  # its head line repeats the count
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m adprof.flame FILE::CHAIN ...`` (the same options as ``adprof flame``)."""
    p = argparse.ArgumentParser(prog="adprof flame", description=(__doc__ or "adprof flame").splitlines()[0])
    add_arguments(p)
    args = p.parse_args(argv)
    if not args.target:
        print("adprof flame: give FILE::CHAIN", file=sys.stderr)
        return 2
    return run_flame(args)


__all__ = [
    "FORMATS",
    "MAX_RATE",
    "SUFFIXES",
    "add_arguments",
    "check_flame_options",
    "main",
    "output_format",
    "run_flame",
]
