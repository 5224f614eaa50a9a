"""A fake ``--cmd`` program for tests/test_cmd_runner.py: ``fake.py BEHAVIOUR DEPTH [MARKER]``.

Behaviours: ``ok`` (the traced protocol, transform cost 2**depth), ``eager`` (per-call lists), ``plain``
(no JSON), ``fail`` (stderr, exit 3), ``malformed`` (a value that is not a number), ``broken`` (a JSON
line that does not parse), ``negative``, ``hang``, ``flood``, ``forks`` (two children that sleep, the
parent exits at once), ``forks-hang`` (two children, the parent hangs); ``json-then-plain`` (the
protocol up to depth 2, no JSON from depth 3), ``hang-deep`` (``ok`` up to depth 4, hangs from depth 5).
MARKER is passed to children so
a test can find every process it started; children write their pids to $FAKE_PIDS when set.
"""

import json
import os
import subprocess
import sys
import time

behaviour, depth = sys.argv[1], int(sys.argv[2])
marker = sys.argv[3] if len(sys.argv) > 3 else "fake-cmd"


def children(n: int) -> None:
    for i in range(n):
        # the first child inherits stdout/stderr (it holds adprof's pipes open), the second does not
        quiet = None if i == 0 else subprocess.DEVNULL
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", marker],
            stdin=subprocess.DEVNULL,
            stdout=quiet,
            stderr=quiet,
        )
        if os.environ.get("FAKE_PIDS"):
            with open(os.environ["FAKE_PIDS"], "a") as f:
                f.write(f"{child.pid}\n")


if behaviour == "ok":
    print("starting")
    print(
        json.dumps(
            {"transform_seconds": 1e-6 * 2**depth, "drop_seconds": 1e-6, "counters": {"key_comparisons": 2**depth}}
        )
    )
elif behaviour == "eager":
    print(json.dumps({"forward_seconds": [0.1, 0.2, 0.3], "backward_seconds": [5.0, 1.0, 3.0, 2.0]}))
elif behaviour == "plain":
    print("no json here", depth)
elif behaviour == "fail":
    print("something went wrong", file=sys.stderr)
    print(f"panicked at depth {depth}", file=sys.stderr)
    sys.exit(3)
elif behaviour == "malformed":
    print(json.dumps({"transform_seconds": "fast"}))
elif behaviour == "broken":
    print('{"transform_seconds": 0.1,')
elif behaviour == "negative":
    print(json.dumps({"transform_seconds": 0.1, "drop_seconds": -0.5}))
elif behaviour == "hang":
    time.sleep(600)
elif behaviour == "flood":
    line = "x" * 4095 + "\n"
    while True:
        sys.stdout.write(line)
elif behaviour == "json-then-plain":
    print(json.dumps({"transform_seconds": 1e-6 * depth}) if depth <= 2 else "no json here")
elif behaviour == "hang-deep":
    if depth >= 5:
        time.sleep(600)
    print(json.dumps({"transform_seconds": 1e-6 * depth, "counters": {"key_comparisons": 10 * depth}}))
elif behaviour == "forks":
    children(2)
    print(json.dumps({"transform_seconds": 0.001}))
elif behaviour == "forks-hang":
    children(2)
    time.sleep(600)
else:
    sys.exit(f"unknown behaviour {behaviour}")
