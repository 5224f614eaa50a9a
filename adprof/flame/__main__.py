"""``python -m adprof.flame FILE::CHAIN ...``: the same as ``adprof flame``."""

import sys

from adprof.flame.command import main

if __name__ == "__main__":
    sys.exit(main())
