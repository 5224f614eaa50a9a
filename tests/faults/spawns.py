"""Item 7: a chain that starts `sleep` and forks a child on every call, and returns normally."""

import os
import subprocess
import time

import adprof


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3))
def spawner(xp, x, depth):
    """y <- sin(y), leaving a `sleep 30` and a forked sleeper behind."""
    subprocess.Popen(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = os.fork()
    if pid == 0:  # the child: sleep, never return into the worker
        try:
            time.sleep(30)
        finally:
            os._exit(0)
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
