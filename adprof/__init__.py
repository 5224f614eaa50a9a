"""adprof: a diagnostic profiler for autodiff cost pathologies.

Write chains with :func:`chain` (see the README), load them with :func:`load_chains`, and run
``adprof check my_chain.py``.
"""

import sys as _sys


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

__all__ = ["Chain", "ChainError", "__version__", "chain", "load_chains", "parse_target"]
