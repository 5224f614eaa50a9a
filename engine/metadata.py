"""The global metadata table: value key -> (dtype, shape), as tenferro's ``GLOBAL_METADATA``.

Every recorded traced value registers its entry (the registration is held by its tensor and
released when the tensor is dropped); a derivative graph registers all its keys in one scoped
batch (:class:`MetadataScope`) that deregisters them when its holder is dropped or closed.

The table is a plain ``dict`` keyed by keys whose hash is an O(1) cached fingerprint; a probe that
meets a stored key with the same fingerprint that is not the same object confirms with ``==``,
which in the ``v08`` profile is the full structural comparison (see ``keys``). That is how
registering, and again deregistering, a derivative graph rebuilt with fresh keys gets expensive.
"""

from __future__ import annotations

import time

from .counters import COUNTERS

# key -> [meta, refcount]
_TABLE: dict = {}


def register_metadata(key, meta) -> None:
    """Register one entry (reference-counted: equal keys share one entry)."""
    COUNTERS.metadata_registrations += 1
    entry = _TABLE.get(key)
    if entry is None:
        _TABLE[key] = [meta, 1]
    else:
        entry[1] += 1


def deregister_metadata(key) -> None:
    """Release one registration of ``key``; the entry goes when its last holder does."""
    COUNTERS.metadata_deregistrations += 1
    entry = _TABLE.get(key)
    if entry is None:  # table cleared under us (tests); nothing to release
        return
    entry[1] -= 1
    if entry[1] == 0:
        COUNTERS.metadata_removals += 1
        del _TABLE[key]


def table_size() -> int:
    """Number of distinct keys registered now."""
    return len(_TABLE)


def deregister_metadata_batch(keys: list) -> None:
    """:func:`deregister_metadata` for each of ``keys``, counted once for the batch."""
    table = _TABLE
    size = len(table)
    done = 0  # keys probed so far (the one whose probe raises counts, as it would one by one)
    try:
        for done, key in enumerate(keys, 1):  # noqa: B007 - read in finally
            entry = table.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] == 0:
                    del table[key]
    finally:
        COUNTERS.metadata_deregistrations += done
        COUNTERS.metadata_removals += size - len(table)


class MetadataScope:
    """A batch of registrations released together by :meth:`close` or when the scope is dropped."""

    __slots__ = ("keys", "on_close", "__weakref__")

    def __init__(self, items: list, on_close=None) -> None:
        self.on_close = on_close
        self.keys = keys = []
        table = _TABLE
        try:
            for key, meta in items:  # tracked one by one: a failure midway still releases what it holds
                entry = table.get(key)
                if entry is None:
                    table[key] = [meta, 1]
                else:
                    entry[1] += 1
                keys.append(key)
        finally:  # counted once for the batch (a probe that raised counts, as it would one by one)
            COUNTERS.metadata_registrations += len(keys) + (len(keys) < len(items))

    def close(self) -> None:
        """Deregister the batch now (idempotent); the time goes to ``drop_seconds``."""
        keys, self.keys = self.keys, None
        if keys is None:
            return
        start = time.perf_counter()
        deregister_metadata_batch(keys)
        COUNTERS.drop_seconds += time.perf_counter() - start
        if self.on_close is not None:
            self.on_close()

    def __del__(self) -> None:
        if self.keys is not None:
            self.close()
