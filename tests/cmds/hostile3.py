#!/usr/bin/env python3
"""A ``--cmd`` program for the third hostile round: ``hostile3.py BEHAVIOUR DEPTH``.

Healthy (``ok``), it reports ``transform_seconds`` linear in depth (1 ms per depth, slept) and linear counters. Each
behaviour breaks one thing, most of them at one depth only (``AT``, 4 unless ``ADPROF_H3_AT`` says otherwise):

* output: ``garbage`` (binary noise, no JSON), ``list`` (a JSON list), ``brace`` (``{`` that does not parse),
  ``nan``/``inf``/``neg``/``string``/``bool``/``null`` (that value as ``transform_seconds`` at AT),
  ``bigint`` (a 400-digit integer as ``transform_seconds`` at AT), ``bigvalue`` (a 400-digit ``value``),
  ``bigcounter`` (a 400-digit counter at AT), ``nancounter`` (a NaN counter at AT), ``escape_key`` (a counter
  named with escape sequences), ``flood`` (2 MiB of JSON at AT), ``lines`` (200,000 short lines),
  ``trailing`` (valid JSON then text on the same line), ``dupkey`` (``transform_seconds`` twice);
* exits and timing: ``exit3`` (exit 3 at AT), ``segv`` (killed by SIGSEGV at AT), ``sleepcap`` (sleeps an hour
  at AT), ``slowpoint`` (sleeps ``ADPROF_H3_SLEEP`` seconds at AT, then reports as usual), ``jump`` (1000x the
  time from AT on), ``expsleep`` (counters linear, sleeps ``0.0005 * 2**depth`` seconds: the issue's example),
  ``nocounters_exp`` (no counters, ``transform_seconds`` doubling per depth, really slept).
"""

import json
import os
import signal
import sys
import time

behaviour, depth = sys.argv[1], int(sys.argv[2])
AT = int(os.environ.get("ADPROF_H3_AT", "4"))
at = depth == AT


def healthy(seconds: float | None = None) -> dict:
    secs = 0.001 * depth if seconds is None else seconds
    time.sleep(secs)
    return {"transform_seconds": secs, "counters": {"transform": {"key_comparisons": 10 * depth}}}


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


if behaviour == "ok":
    emit(healthy())
elif behaviour == "garbage":
    sys.stdout.buffer.write(os.urandom(512).replace(b"{", b"(") + b"\n")
elif behaviour == "list":
    print("[1, 2, 3]")
elif behaviour == "brace":
    print('{"transform_seconds": 0.1,')
elif behaviour in ("nan", "inf", "neg", "string", "bool", "null"):
    value = {"nan": "NaN", "inf": "Infinity", "neg": "-0.5", "string": '"0.1"', "bool": "true", "null": "null"}
    obj = healthy()
    line = json.dumps(obj)
    if at:
        line = line.replace(
            f'"transform_seconds": {obj["transform_seconds"]}', f'"transform_seconds": {value[behaviour]}'
        )
    print(line, flush=True)
elif behaviour == "bigint":
    obj = healthy()
    if at:
        obj["transform_seconds"] = 10**400
    emit(obj)
elif behaviour == "bigvalue":
    emit({**healthy(), "value": 10**400})
elif behaviour == "bigcounter":
    obj = healthy()
    if at:
        obj["counters"]["transform"]["key_comparisons"] = 10**400
    emit(obj)
elif behaviour == "nancounter":
    obj = healthy()
    line = json.dumps(obj)
    if at:
        line = line.replace(f'"key_comparisons": {10 * depth}', '"key_comparisons": NaN')
    print(line, flush=True)
elif behaviour == "escape_key":
    obj = healthy()
    obj["counters"]["transform"]["\x1b]0;PWNED\x07\x1b[2J"] = depth
    emit(obj)
elif behaviour == "flood":
    obj = healthy()
    if at:
        obj["pad"] = "x" * (2 << 20)
    emit(obj)
elif behaviour == "lines":
    sys.stdout.write("noise line\n" * 200_000)
    emit(healthy())
elif behaviour == "trailing":
    print(json.dumps(healthy()) + " trailing words", flush=True)
elif behaviour == "dupkey":
    obj = healthy()
    print('{"transform_seconds": 5.0, ' + json.dumps(obj)[1:], flush=True)
elif behaviour == "exit3":
    obj = healthy()
    if at:
        print("about to fail", file=sys.stderr)
        sys.exit(3)
    emit(obj)
elif behaviour == "segv":
    if at:
        os.kill(os.getpid(), signal.SIGSEGV)
    emit(healthy())
elif behaviour == "sleepcap":
    if at:
        time.sleep(3600)
    emit(healthy())
elif behaviour == "slowpoint":
    if at:
        time.sleep(float(os.environ.get("ADPROF_H3_SLEEP", "2")))
    emit(healthy())
elif behaviour == "jump":
    emit(healthy(0.001 * depth * (1000 if depth >= AT else 1)))
elif behaviour == "expsleep":
    secs = 0.0005 * 2**depth
    time.sleep(secs)
    emit({"counters": {"transform": {"key_comparisons": 10 * depth}}})
elif behaviour == "nocounters_exp":
    secs = 0.0005 * 2**depth
    time.sleep(secs)
    emit({"transform_seconds": secs})
else:
    sys.exit(f"unknown behaviour {behaviour}")
