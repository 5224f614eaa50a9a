"""adprof: a diagnostic profiler for autodiff cost pathologies.

Write chains with :func:`chain` (see the README), load them with :func:`load_chains`, and run
``adprof check my_chain.py``; from Python, :func:`check` and :func:`guard` run the same (docs/api.md), and
``%load_ext adprof`` gives a notebook the ``%%adprof`` cell magic. Importing adprof stays light (a worker and
every chain file import it): the API is imported when first used.
"""

import sys as _sys
import types as _types


def _started_as_the_command() -> bool:
    """This process is ``python -m adprof ...`` or the ``adprof`` script (not a library user, a worker, pytest)."""
    argv = list(getattr(_sys, "orig_argv", []) or [])
    if "--multiprocessing-fork" in argv:  # a process multiprocessing spawned (a LocalCluster's worker): argv is ours
        return False
    if any(a == "-m" and b == "adprof" for a, b in zip(argv, argv[1:], strict=False)):
        return True
    script = (getattr(_sys, "argv", None) or [""])[0]
    return script.rsplit("/", 1)[-1] == "adprof"


def _stop_while_starting() -> None:
    """Until the command installs its own handlers: a stop signal during the imports ends the start-up at once,
    with one line and its shell status (130, 143, 129), never a traceback from inside an import."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: object) -> None:
        os.write(2, f"adprof: interrupted by {signal.Signals(signum).name} while starting\n".encode())
        os._exit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


if _started_as_the_command():
    _stop_while_starting()

from adprof.chain import Chain, ChainError, chain, load_chains, parse_target  # noqa: E402
from adprof.constants import __version__  # noqa: E402

#: The API's names (:mod:`adprof.api`), imported on first use.
_API = ("Comparison", "Interrupted", "Report", "UsageError", "check", "compare", "guard", "load")


def __getattr__(name: str) -> object:
    if name in _API:
        from adprof import api

        return getattr(api, name)
    raise AttributeError(f"module 'adprof' has no attribute {name!r}")


class _Package(_types.ModuleType):
    """The package's module object. Importing a submodule sets the package's attribute of its name, and the
    guard's module is ``adprof.guard``: ``adprof.guard`` stays the API's function (the module is still
    ``sys.modules["adprof.guard"]``, and ``from adprof.guard import ...`` imports from it)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _API and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext adprof``: the ``%%adprof`` cell magic (:mod:`adprof.notebook`)."""
    from adprof.notebook import load_ipython_extension as load

    load(ipython)


__all__ = ["Chain", "ChainError", "__version__", "chain", "load_chains", "parse_target", *_API]
