"""Suite-wide settings.

BLAS and OpenMP use one thread in the test process and everything it starts: a threaded BLAS spins for cores the
other processes of a run (adprof's workers, a second test) hold, and on this 2-core machine that made the TRG tests
eight times slower under load (105 s against 14 s). adprof's own workers already run single-threaded
(adprof.measure.client); numpy was imported by adprof's pytest plugin before this file, so its thread pools are
limited at run time (threadpoolctl), and the environment covers what starts later.
"""

import os

from threadpoolctl import threadpool_limits

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
_LIMITS = threadpool_limits(limits=1)

pytest_plugins = ["pytester"]
