"""``python -m adprof``: the same as the ``adprof`` console script."""

import sys

from adprof.cli import main

if __name__ == "__main__":
    sys.exit(main())
