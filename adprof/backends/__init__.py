"""Backend adapters: run one point of one chain in one mode on one autodiff engine.

Backends: the instrumented reference engine (``engine``) and two peers without counters, ``jax`` and
``torch`` (the ``peers`` extra: ``pip install 'adprof[peers]'``). A backend module exposes
``PROFILES`` (its cost profiles, or ``(None,)``), ``MODES`` and ``measure_point(chain, mode, depth,
profile, ...) -> Point``. Backends are imported lazily (and in the worker process only), so the
parent never imports an engine or user code.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

#: Backend name -> module path.
BACKENDS: dict[str, str] = {
    "engine": "adprof.backends.engine",
    "jax": "adprof.backends.jax_backend",
    "torch": "adprof.backends.torch_backend",
    "cmd": "adprof.backends.cmd",  # any program, driven by --cmd (adprof/cli/cmd.py), not by a chain file
}
KNOWN_BACKENDS: tuple[str, ...] = tuple(BACKENDS)
#: Cost profiles per backend (``None``: the backend has a single behaviour).
BACKEND_PROFILES: dict[str, tuple[str | None, ...]] = {
    "engine": ("v08", "fixed"),
    "jax": (None,),
    "torch": (None,),
    "cmd": (None,),
}
#: Top-level packages a backend needs beyond adprof's own dependencies.
BACKEND_REQUIRES: dict[str, tuple[str, ...]] = {
    "jax": ("jax", "jaxlib"),
    "torch": ("torch", "array_api_compat"),
}
INSTALL_HINT = "pip install 'adprof[peers]'"


class UnknownBackendError(ValueError):
    """The backend name is not one of :data:`KNOWN_BACKENDS`; the message is one line."""


class BackendNotInstalledError(UnknownBackendError):
    """A known backend whose packages are not installed; the message says how to install them."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError, AttributeError):  # e.g. sys.modules[module] is None
        return False


def check_backend(name: str) -> str:
    """Return ``name`` if it is a known, installed backend (checked without importing it), else raise
    :class:`UnknownBackendError` (:class:`BackendNotInstalledError` when its packages are missing)."""
    if name not in BACKENDS:
        raise UnknownBackendError(f"unknown backend {name!r}; known backends: {', '.join(KNOWN_BACKENDS)}")
    missing = [m for m in BACKEND_REQUIRES.get(name, ()) if not _installed(m)]
    if missing:
        raise BackendNotInstalledError(
            f"backend {name!r} is not installed (missing {', '.join(missing)}): {INSTALL_HINT}"
        )
    return name


def get_backend(name: str) -> ModuleType:
    """The adapter module of backend ``name`` (imports the engine)."""
    path = BACKENDS[check_backend(name)]
    try:
        return importlib.import_module(path)
    except ImportError as exc:
        if name not in BACKEND_REQUIRES:
            raise
        msg = str(exc)
        if INSTALL_HINT not in msg:
            msg = f"backend {name!r} is not installed ({exc}): {INSTALL_HINT}"
        raise BackendNotInstalledError(msg) from None


__all__ = [
    "BACKENDS",
    "BACKEND_PROFILES",
    "BACKEND_REQUIRES",
    "BackendNotInstalledError",
    "INSTALL_HINT",
    "KNOWN_BACKENDS",
    "UnknownBackendError",
    "check_backend",
    "get_backend",
]
