"""Shape specialization: a compile's exact count over a size axis, read from the depth it settles on (pure).

A compile is read against the size of the program it compiles (:mod:`adprof.analysis.explained`). Over a size axis
(a sequence length, a particle count, a width) the program can be the same graph at every size: self-attention is
11 ops at any ``seq_len``. Its compile then does the same work at every size, except where the compiler
specializes small shapes: Inductor turns a reduction of fewer than 8 elements (``unroll_reductions_threshold``)
into unrolled pointwise code and a size-1 one into a pointwise op, and picks its C++ vectorization by size. Each of
those compiles is of a different kernel program. Measured (torch 2.13, attention's compile, Python calls):
1.53M / 1.43M / 1.71M / 1.86M / 1.47M at sizes 1-6, then 1,261,426 / 1,261,531 / 1,261,422 / 1,270,747 at
8 / 16 / 32 / 64; the ops Inductor traces into its loop bodies: 181 / 135 / 194 / 207 / 206, then 99 at every size
from 8 (115 / 115 at sizes 2 and 4, 99 from 6, with ``unroll_reductions_threshold = 1``). Every point is a fresh
static compile (Dynamo is reset before each): no recompile and no dynamic shape is involved. Read over all the
sizes, such a count is neither a law nor a constant (``only one growing step``).

The rule (:func:`settled_from`), where the backend declares that its compile specializes small shapes
(``BackendInfo.specializes_shapes``):

* every point carries the program's size (``Point.program["ops"]``), the same at every depth (the compiler is given
  one program; a program that grows, as a chain over layers does, never qualifies);
* from some depth on, the count is constant within the exact reading's jitter
  (:func:`~adprof.analysis.marginal.jitter`: it does not rise at every step and stays within 1% of its level), over
  at least :data:`MIN_SETTLED` depths spanning at least :data:`SETTLED_SPAN` x;
* the depths below that depth are left out of the reading (``Fit.settled``: which, from where, the program's size,
  the level and spread of the settled count, and the dropped values), and the evidence says so.

What it cannot hide: a count that grows at large sizes has no settled tail, and a count over a program that grows
(the torch-compile Fibonacci chain over layers, ``probes/wild.py::fibonacci_compile``) has no constant program;
both are read as before, over every depth. A cost that is only high at small sizes is no growth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from adprof.analysis.marginal import JITTER, jitter
from adprof.model import Settled

#: A settled count needs this many depths at least ...
MIN_SETTLED = 3
#: ... spanning at least this ratio (a constant over 8 / 16 / 32, or 16 / 32 / 64).
SETTLED_SPAN = 4.0

__all__ = ["JITTER", "MIN_SETTLED", "SETTLED_SPAN", "settle", "settled_from"]


def settled_from(depths: Sequence[float], values: Sequence[float], ops: Sequence[float | None]) -> int | None:
    """The index of the first depth of a settled count that leaves depths below it out, or None (see the module
    docstring: the same program size at every depth, a constant tail of at least :data:`MIN_SETTLED` depths
    spanning :data:`SETTLED_SPAN` x; the depth just below it is off that constant)."""
    n = len(depths)
    if n < MIN_SETTLED + 1 or len(values) != n or len(ops) != n:
        return None
    if any(o is None for o in ops) or len({float(o) for o in ops if o is not None}) != 1:
        return None
    d, v = np.asarray(depths, float), np.asarray(values, float)
    if not (np.isfinite(v).all() and (np.diff(d) > 0).all() and d[0] > 0):
        return None
    first = n
    for i in range(n - 1, -1, -1):  # the tail grows downwards while it stays within the jitter of its level
        tail = v[i:]
        if tail.min() <= 0 or tail.max() - tail.min() > JITTER * tail.min():
            break
        first = i
    if first == 0 or n - first < MIN_SETTLED or d[-1] / d[first] < SETTLED_SPAN or not jitter(d[first:], v[first:]):
        return None
    return first


def settle(
    depths: list[int], values: list[float], censored: list[bool], ops: Sequence[float | None]
) -> tuple[list[int], list[float], list[bool], Settled | None]:
    """``(depths, values, censored)`` without the depths below the settled count (censored points, lower bounds,
    stay), and the :class:`Settled` record; unchanged and None where :func:`settled_from` finds nothing."""
    exact = [i for i, c in enumerate(censored) if not c]
    first = settled_from([depths[i] for i in exact], [values[i] for i in exact], [ops[i] for i in exact])
    if first is None:
        return depths, values, censored, None
    start = depths[exact[first]]
    drop = [i for i in exact if depths[i] < start]
    tail = np.asarray([values[i] for i in exact[first:]], float)
    level = float(tail.min())
    record = Settled(
        dropped=[int(depths[i]) for i in drop],
        depth=int(start),
        ops=float(ops[exact[0]] or 0.0),
        level=level,
        spread=float((tail.max() - level) / level),
        dropped_values=[float(values[i]) for i in drop],
    )
    keep = [i for i in range(len(depths)) if i not in set(drop)]
    return [depths[i] for i in keep], [values[i] for i in keep], [censored[i] for i in keep], record
