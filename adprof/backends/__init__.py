"""Backend adapters: run one point of one chain in one mode on one autodiff engine.

Only the instrumented reference engine (``engine``) exists for now; jax and torch adapters come
later. A backend module exposes ``PROFILES`` (its cost profiles, or ``(None,)``), ``MODES`` and
``measure_point(chain, mode, depth, profile, ...) -> Point``. Backends are imported lazily (and in
the worker process only), so the parent never imports an engine or user code.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Backend name -> module path.
BACKENDS: dict[str, str] = {"engine": "adprof.backends.engine"}
KNOWN_BACKENDS: tuple[str, ...] = tuple(BACKENDS)
#: Cost profiles per backend (``None``: the backend has a single behaviour).
BACKEND_PROFILES: dict[str, tuple[str | None, ...]] = {"engine": ("v08", "fixed")}


class UnknownBackendError(ValueError):
    """The backend name is not one of :data:`KNOWN_BACKENDS`; the message is one line."""


def check_backend(name: str) -> str:
    """Return ``name`` if it is a known backend, else raise :class:`UnknownBackendError`."""
    if name not in BACKENDS:
        raise UnknownBackendError(f"unknown backend {name!r}; known backends: {', '.join(KNOWN_BACKENDS)}")
    return name


def get_backend(name: str) -> ModuleType:
    """The adapter module of backend ``name`` (imports the engine)."""
    return importlib.import_module(BACKENDS[check_backend(name)])


__all__ = [
    "BACKENDS",
    "BACKEND_PROFILES",
    "KNOWN_BACKENDS",
    "UnknownBackendError",
    "check_backend",
    "get_backend",
]
