#!/usr/bin/env python3
"""A ``--cmd`` program of exact counts for tests/test_hostile_round4_lies.py: ``knee.py DEPTH``.

Flat (``FLAT``, 1000) up to depth ``KNEE`` (8), then x``BASE`` (2) per layer: ``FLAT * BASE**(d - KNEE)``; with
``SLOPE``, a line ``SLOPE * d`` under it. ``NOPHASE=1`` (eager): prints only forward times, no backward phase.
"""

import json
import os
import sys

d = int(sys.argv[1])
flat = float(os.environ.get("FLAT", "1000"))
knee = int(os.environ.get("KNEE", "8"))
base = float(os.environ.get("BASE", "2"))
slope = float(os.environ.get("SLOPE", "0"))
c = slope * d + flat * base ** max(d - knee, 0)
if os.environ.get("NOPHASE"):
    print(json.dumps({"forward_seconds": [1e-6 * c] * 3}))
else:
    print(json.dumps({"transform_seconds": 1e-6 * c, "counters": {"transform": {"key_comparisons": c}}}))
