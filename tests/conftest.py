"""Suite-wide settings.

BLAS and OpenMP use one thread in the test process and everything it starts: a threaded BLAS spins for cores the
other processes of a run (adprof's workers, a second test) hold, and on this 2-core machine that made the TRG tests
eight times slower under load (105 s against 14 s). adprof's own workers already run single-threaded
(adprof.measure.client); numpy was imported by adprof's pytest plugin before this file, so its thread pools are
limited at run time (threadpoolctl), and the environment covers what starts later.

Bytecode is cached even where ``PYTHONDONTWRITEBYTECODE`` is set (as on our CI machines): the suite starts about
a thousand Python processes (adprof commands, their workers, pytest's own workers), and without a cache each one
compiles every module it imports from source, and each pytest worker re-does the assertion rewriting of every test
module. The cache goes to a directory of its own under the system's temporary directory (``PYTHONPYCACHEPREFIX``),
never into the source tree, and Python checks each entry against its source's time and size.
"""

import os
import tempfile

from threadpoolctl import threadpool_limits

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
_LIMITS = threadpool_limits(limits=1)

if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:  # before pytest-xdist starts its workers
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), f"adprof-pycache-{os.getuid()}"))

pytest_plugins = ["pytester"]
