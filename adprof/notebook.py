"""The notebook magic: ``%load_ext adprof`` (which also binds ``adprof`` in the notebook), then a cell that
defines chains and is checked as it runs::

    %%adprof --mode traced --profile v08,fixed
    @adprof.chain(reuse=2, max_depth=10)
    def square(xp, x, depth):
        ...

The cell runs as usual; every ``@adprof.chain`` it defines (or redefines) is then checked by
:func:`adprof.check` (the command's pipeline, in supervised workers; the cell's chains are shipped to them) and
the report is shown inline: HTML, with the terminal table as its ``text/plain``. ``%adprof [options] TARGET...``
(a line) checks chains by their names in the notebook or as ``FILE::CHAIN``. Options are ``adprof check``'s:
``--backend``, ``--profile``, ``--mode``, ``--depths``, ``--budget``, ``--cap``, plus ``--ship``. The last
report is ``_adprof_report`` in the notebook. Bad input is one line; an interrupt (the kernel's stop button)
stops the workers and shows what was measured.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from adprof.api import Interrupted, UsageError, check
from adprof.chain import as_chain

#: The notebook variable that holds the last report.
LAST_REPORT = "_adprof_report"


def _depths(value: str) -> list[int]:
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--depths: expected positive integers, e.g. 1,2,4,8 (got {value!r})") from None


def _defined_by(namespace: dict[str, Any], before: dict[str, Any]) -> list[Any]:
    """The chains a cell defined or redefined (a name that is new, or bound to another object), in the order of
    their definitions."""
    found = []
    for name, value in namespace.items():
        ch = as_chain(value)
        if ch is None or before.get(name) is value or name.startswith("_"):
            continue
        code = getattr(ch.fn, "__code__", None)
        found.append((code.co_firstlineno if code is not None else 0, len(found), value))
    seen: set[int] = set()
    out = []
    for _, _, value in sorted(found, key=lambda t: t[:2]):
        ch = as_chain(value)
        if id(ch) not in seen:
            seen.add(id(ch))
            out.append(ch)
    return out


@magics_class
class AdprofMagics(Magics):
    """``%%adprof`` (a cell's chains) and ``%adprof TARGET...``."""

    @magic_arguments()
    @argument("targets", nargs="*", help="line: chains by their notebook names, or FILE[::CHAIN]")
    @argument("--backend", default=None, help="comma-separated backends (default engine)")
    @argument("--profile", default=None, help="comma-separated engine profiles (default: all)")
    @argument("--mode", default=None, help="comma-separated modes (default: the chain's)")
    @argument("--depths", default=None, help="explicit depths, e.g. 1,2,4,8")
    @argument("--budget", type=float, default=None, help="seconds for the whole run (default 60)")
    @argument("--cap", type=float, default=None, help="seconds per phase (default 1.5)")
    @argument("--ship", default="auto", help="how the cell's chains reach the workers: auto, cloudpickle, source")
    @line_cell_magic
    def adprof(self, line: str, cell: str | None = None) -> None:
        """Check the chains a cell defines (``%%adprof``) or names (``%adprof``), with the report inline."""
        try:
            args = parse_argstring(self.adprof, line)
        except Exception as exc:  # a bad option: its one line, as the command prints it
            print(f"adprof: error: {exc}", file=sys.stderr)
            return
        ns = self.shell.user_ns
        if cell is not None:
            before = dict(ns)  # the objects themselves: a name rebound to a new chain is the cell's
            ran = self.shell.run_cell(cell, store_history=False)
            if not ran.success:  # the cell's own error is shown by IPython
                return
            targets: list[Any] = _defined_by(ns, before)
            if args.targets:
                print("adprof: error: %%adprof checks the cell's chains: give targets to %adprof", file=sys.stderr)
                return
            if not targets:
                print("adprof: this cell defines no @adprof.chain: nothing to check", file=sys.stderr)
                return
        else:
            targets = [ns[t] if t.isidentifier() and t in ns else t for t in args.targets]
        try:
            report = check(
                targets,
                backend=args.backend,
                profile=args.profile,
                mode=args.mode,
                depths=_depths(args.depths) if args.depths else None,
                budget=args.budget,
                cap=args.cap,
                ship=args.ship,
            )
        except UsageError as exc:
            print(f"adprof: error: {exc}", file=sys.stderr)
            return
        except Interrupted as exc:
            if exc.report is not None:
                ns[LAST_REPORT] = exc.report
                display(exc.report)
            print(
                f"adprof: interrupted by {exc.signal_name}: the workers are stopped (partial report)", file=sys.stderr
            )
            return
        ns[LAST_REPORT] = report
        display(report)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext adprof``: registers the magic and binds ``adprof`` in the notebook (a cell's ``@adprof.chain``
    then needs no import; a name ``adprof`` the notebook already has is kept)."""
    ipython.register_magics(AdprofMagics)
    package = sys.modules[__name__.rpartition(".")[0]]  # adprof: imported before any of its modules
    ipython.user_ns.setdefault("adprof", package)


__all__ = ["LAST_REPORT", "AdprofMagics", "load_ipython_extension"]
