"""The engine's cost profile: ``v08`` reproduces tenferro 0.8.0's bookkeeping, ``fixed`` removes it.

The profiles differ in five places only; each module keeps a flag updated through
:func:`on_change` (or calls :func:`current`): key construction (``keys``: interned or not), the
derivative program (``ad``: every replayed forward equation kept in ``v08``), derivative-trace
rebuild (rebuilt keys are fresh objects unless interned), eager per-backward bookkeeping
(``eager``) and the checkpoint chain merge (``checkpoint_chain``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

PROFILES = ("v08", "fixed")
DEFAULT = "fixed"

_active = DEFAULT
_listeners: list = []


def current() -> str:
    """The active profile name."""
    return _active


def set_profile(name: str) -> None:
    """Switch the active profile (``"v08"`` or ``"fixed"``)."""
    global _active
    if name not in PROFILES:
        raise ValueError(f"unknown engine profile {name!r}; expected one of {', '.join(PROFILES)}")
    _active = name
    for listener in _listeners:
        listener(name)


@contextlib.contextmanager
def profile(name: str) -> Iterator[str]:
    """Run a block under profile ``name``, restoring the previous one afterwards."""
    previous = _active
    set_profile(name)
    try:
        yield name
    finally:
        set_profile(previous)


def on_change(listener) -> None:
    """Call ``listener(name)`` now and whenever the profile changes (modules cache flags)."""
    _listeners.append(listener)
    listener(_active)
