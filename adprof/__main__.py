"""``python -m adprof``: the same as the ``adprof`` console script."""

import signal
import sys


class _TerminatedWhileStarting(KeyboardInterrupt):
    signal_name = "SIGTERM"


def _on_sigterm(signum, frame):  # until adprof.cli.main installs its own
    raise _TerminatedWhileStarting()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        from adprof.cli import main
    except KeyboardInterrupt as exc:  # a signal during the imports: no traceback, the documented code
        name = getattr(exc, "signal_name", "SIGINT")
        print(f"adprof: interrupted by {name} while starting", file=sys.stderr)
        sys.exit(143 if name == "SIGTERM" else 130)
    sys.exit(main())
