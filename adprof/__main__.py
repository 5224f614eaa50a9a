"""``python -m adprof``: the same as the ``adprof`` console script."""

import signal
import sys


class _TerminatedWhileStarting(KeyboardInterrupt):
    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def _on_stop(signum, frame):  # until adprof.cli.main installs its own
    raise _TerminatedWhileStarting(signal.Signals(signum).name)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _on_stop)
    signal.signal(signal.SIGHUP, _on_stop)
    try:
        from adprof.cli import main
    except KeyboardInterrupt as exc:  # a signal during the imports: no traceback, the documented code
        name = getattr(exc, "signal_name", "SIGINT")
        print(f"adprof: interrupted by {name} while starting", file=sys.stderr)
        sys.exit(128 + int(signal.Signals[name]))
    sys.exit(main())
