#!/usr/bin/env python3
"""A ``--cmd`` program for the issue-20 tests: ``misbehave.py BEHAVIOUR DEPTH``; it reports the protocol
(``transform_seconds`` linear in depth) unless the behaviour says otherwise.

* ``detach``: starts a child in its own session that inherits stdout and sleeps, and a ``sleep`` in its own
  group; prints its JSON and exits (the child holds the pipe open: the program must not be called a hang,
  and neither child may outlive adprof);
* ``hang``: starts a ``sleep`` in its group, then hangs (from depth 2 on; marks ``hang`` in $ADPROF_FAULT_DIR);
* ``closed``: closes stdout and stderr after printing, then works 50 ms more before exiting 0;
* ``escape``: prints terminal escape sequences and binary bytes to stdout and stderr, then fails (exit 3);
* ``typo``: reports ``transfrom_seconds`` (misspelt) and ``colour``;
* ``huge``: reports ``transform_seconds: 1e300``;
* ``slow``: the protocol after 50 ms of sleep, with a detached child (the fault suite's program).
"""

import json
import os
import subprocess
import sys
import time

behaviour, depth = sys.argv[1], int(sys.argv[2])
line = json.dumps({"transform_seconds": 1e-4 * depth, "drop_seconds": 1e-5})


def mark(name: str) -> None:
    d = os.environ.get("ADPROF_FAULT_DIR")
    if d:
        open(os.path.join(d, name), "a").close()


def detached(seconds: int, inherit: bool) -> None:
    out = None if inherit else subprocess.DEVNULL
    subprocess.Popen(["sleep", str(seconds)], start_new_session=True, stdout=out, stderr=out, stdin=subprocess.DEVNULL)


if behaviour == "detach":
    detached(40, inherit=True)
    subprocess.Popen(["sleep", "41"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(line, flush=True)
elif behaviour == "hang":
    subprocess.Popen(["sleep", "50"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if depth >= 2:
        mark("hang")
        time.sleep(600)
    print(line, flush=True)
elif behaviour == "closed":
    print(line, flush=True)
    os.close(1)
    os.close(2)
    time.sleep(0.05)
elif behaviour == "escape":
    sys.stdout.buffer.write(b"\x1b]0;PWNED\x07\x1b[2J\x00\xff\xfe binary\n")
    sys.stdout.flush()
    sys.stderr.buffer.write(b"\x1b]0;PWNED-ERR\x07\x1b[2J\x9b31m failed\n")
    sys.stderr.flush()
    sys.exit(3)
elif behaviour == "typo":
    print(json.dumps({"transfrom_seconds": 1e-4 * depth, "colour": "blue"}))
elif behaviour == "huge":
    print(json.dumps({"transform_seconds": 1e300}))
elif behaviour == "slow":
    detached(40, inherit=False)
    time.sleep(0.05)
    print(line, flush=True)
else:
    sys.exit(f"unknown behaviour {behaviour}")
