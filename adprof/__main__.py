"""``python -m adprof``: the same as the ``adprof`` console script.

Stop signals during the start-up are handled by the package (``adprof/__init__.py``): one line, the shell's
status; :func:`adprof.cli.main` installs the run's own handlers."""

import signal
import sys

if __name__ == "__main__":
    try:
        from adprof.cli import main
    except KeyboardInterrupt:  # pragma: no cover - the start-up handler exits first
        print("adprof: interrupted by SIGINT while starting", file=sys.stderr)
        sys.exit(128 + int(signal.SIGINT))
    sys.exit(main())
