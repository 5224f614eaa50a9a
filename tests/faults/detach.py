"""Issue 20 N8: a healthy chain that leaves detached processes behind on every call: a child in its own
session (``start_new_session``) and a daemon made by a double fork (its parent exits at once). Process
groups cannot hold either; nothing of it may outlive adprof."""

import os
import subprocess
import time

import adprof


def _mark(name):
    d = os.environ.get("ADPROF_FAULT_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


def _daemon(seconds: int) -> None:
    pid = os.fork()
    if pid == 0:  # the first child: a new session, then it forks the daemon and exits
        try:
            os.setsid()
            if os.fork() == 0:
                time.sleep(seconds)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@adprof.chain(input_shape=(3,), reuse=1, depths=(1, 2, 3, 4))
def detacher(xp, x, depth):
    """y <- sin(y), leaving a detached `sleep 40` and a double-forked daemon behind."""
    subprocess.Popen(["sleep", "40"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _daemon(40)
    _mark("detacher")
    y = x
    for _ in range(depth):
        y = xp.sin(y)
    return xp.sum(y)
