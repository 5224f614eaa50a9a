"""``adprof check FILE --metric instructions``: the peers' C++ phases counted under callgrind (opt-in: slow).

Each series gets one worker started under valgrind (:mod:`adprof.backends.instructions`), which imports
the engine once (torch: ~20-30 s under valgrind) and counts every depth of the series; the counts decide
(``Series.required_metric``). The depths are doublings over the chain's range (exact counts need no dense
grid). Without ``--budget`` such a run gets :data:`INSTRUCTIONS_BUDGET`. Counting is declared per backend
and mode (``Backend.instruction_modes``: torch eager, jax compile); anything else is one line and exit 2.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Sequence

from adprof.backends import backend_declaration
from adprof.cli.common import UsageError
from adprof.measure import SeriesSpec
from adprof.measure.client import callgrind_argv, worker_env

#: The default budget of a chain-file run with ``--metric instructions`` (a JAX compile series takes ~4
#: minutes on a loaded 2-core machine, a torch eager one ~1.5: see docs/instructions.md).
INSTRUCTIONS_BUDGET = 600.0
#: Seconds allowed for the check that valgrind runs this Python and its client requests work.
CHECK_TIMEOUT = 120.0

_CHECK = (
    "import sys\n"
    "from adprof.backends.instructions import ClientRequests, CountingUnavailable\n"
    "try:\n"
    "    ok = ClientRequests().running_on_valgrind()\n"
    "except CountingUnavailable as exc:\n"
    "    sys.exit(str(exc))\n"
    "sys.exit(0 if ok else 'the client requests did not reach valgrind')\n"
)


def budget_given(argv: Sequence[str]) -> bool:
    return any(a == "--budget" or a.startswith("--budget=") for a in argv)


def apply_default_budget(args: argparse.Namespace, argv: Sequence[str]) -> str | None:
    """``--metric instructions`` on a chain file without ``--budget``: :data:`INSTRUCTIONS_BUDGET`; the note."""
    if getattr(args, "metric", "time") != "instructions" or getattr(args, "cmd", None) or budget_given(argv):
        return None
    args.budget = INSTRUCTIONS_BUDGET
    return f"--metric instructions: budget {INSTRUCTIONS_BUDGET:g} s (counting runs under valgrind; set --budget)"


def check_valgrind() -> None:
    """One short run of this Python under valgrind, issuing a client request; :class:`UsageError` if it fails."""
    if shutil.which("valgrind") is None:
        raise UsageError("--metric instructions needs valgrind (not found on PATH)")
    argv = callgrind_argv("/dev/null")
    argv[argv.index("-m") :] = ["-c", _CHECK]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=worker_env(), timeout=CHECK_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise UsageError(f"--metric instructions: valgrind did not run Python within {CHECK_TIMEOUT:g} s") from None
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit status {done.returncode}"
        raise UsageError(f"--metric instructions: instructions cannot be counted here: {why}")


def doubling_depths(
    declared: Sequence[int] | None, fallback: Sequence[int] | None, most: int | None = None
) -> tuple[int, ...]:
    """Doublings over the chain's range when it spans >= 8x, else the backend's depths, then one beyond
    (the cap's prediction stops it when too slow); none deeper than ``most`` (the chain's ``max_depth`` or
    ``--max-depth``), which ends the list."""
    lo, hi = 8, 128
    if declared and min(declared) > 0 and max(declared) / min(declared) >= 8:
        lo, hi = min(declared), max(declared)
    elif fallback:
        lo, hi = min(fallback), max(fallback)
    top = 2 * hi if most is None else min(2 * hi, most)
    if most is not None and lo * 8 > top:  # the backend's range starts too deep for the chain: a 8x span below
        lo = max(1, top // 8)
    out, d = [], min(lo, top)
    while d <= top:
        out.append(d)
        d *= 2
    if most is not None and out[-1] < top <= most:
        out.append(top)  # the declared deepest depth is measured
    return tuple(out)


def counted_specs(
    specs: list[SeriesSpec],
    declared_depths: dict[tuple[str, str], Sequence[int] | None],
    explicit: bool,
    deepest: dict[tuple[str, str], int | None] | None = None,
) -> list[SeriesSpec]:
    """The specs, counted: ``metric="instructions"``, instructions deciding, doubling depths (unless the
    depths are ``explicit``), none past ``deepest[(file, chain)]`` (the chain's ``max_depth``/``depths`` or
    ``--max-depth``). Raises :class:`UsageError` for a backend and mode that cannot count, or when
    valgrind cannot run here."""
    cannot: dict[str, list[str]] = {}
    for s in specs:
        if s.mode not in backend_declaration(s.backend).instruction_modes:
            cannot.setdefault(s.backend, [])
            if s.mode not in cannot[s.backend]:
                cannot[s.backend].append(s.mode)
    if cannot:
        what = "; ".join(
            f"{b} {', '.join(modes)} (it counts: {', '.join(backend_declaration(b).instruction_modes) or 'no mode'})"
            for b, modes in cannot.items()
        )
        raise UsageError(
            f"--metric instructions cannot count {what}: use --backend torch --mode eager, jax compile, autograd eager"
        )
    check_valgrind()
    for s in specs:
        s.metric = "instructions"
        s.deciding_metrics = ("instructions",)
        if not explicit:
            key = (s.file, s.chain)
            fallback = backend_declaration(s.backend).depths
            s.depths = doubling_depths(declared_depths.get(key), fallback, (deepest or {}).get(key))
    return specs


__all__ = [
    "INSTRUCTIONS_BUDGET",
    "apply_default_budget",
    "check_valgrind",
    "counted_specs",
    "doubling_depths",
]
