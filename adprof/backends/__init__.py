"""Backends: run one point of one chain in one mode on one autodiff engine.

A backend is a :class:`adprof.backends.base.Backend` (the documented interface: declarations plus
``prepare_process()`` and ``measure_point(...) -> Point``). Built-ins (:mod:`adprof.backends.builtin`):
the instrumented reference engine ``engine`` and the peers ``jax``, ``torch``, ``autograd`` and
``tinygrad`` (the ``peers`` extra: ``pip install 'adprof[peers]'``). Third-party backends register
under the entry-point group :data:`ENTRY_POINT_GROUP` (``adprof.backends``)::

    [project.entry-points."adprof.backends"]
    myengine = "myengine_adprof:MyEngineBackend"

Discovery lists entry-point names without importing anything; a plugin's module is imported only when
its backend is asked for, and an engine only in the worker (declarations are light), so the parent never
imports an engine or user code.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points

from adprof.backend_info import BackendInfo, generic_info
from adprof.backend_info import register as register_info
from adprof.backends.base import INSTALL_HINT, Backend
from adprof.backends.builtin import BUILTIN_BACKENDS
from adprof.constants import __version__

ENTRY_POINT_GROUP = "adprof.backends"


class UnknownBackendError(ValueError):
    """The backend name is not one of :data:`KNOWN_BACKENDS`; the message is one line."""


class BackendNotInstalledError(UnknownBackendError):
    """A known backend whose packages are not installed; the message says how to install them."""


class BrokenBackendError(UnknownBackendError):
    """A plugin backend whose entry point cannot be loaded or is not a Backend; the message is one line."""


@functools.cache
def plugin_entry_points() -> dict[str, EntryPoint]:
    """Entry points of group ``adprof.backends`` (name -> entry point), not loaded; built-in names win."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in BUILTIN_BACKENDS and ep.name not in found:
            found[ep.name] = ep
    return found


def known_backends() -> tuple[str, ...]:
    """Built-in backend names, then installed plugins' names (sorted)."""
    return tuple(BUILTIN_BACKENDS) + tuple(sorted(plugin_entry_points()))


#: Backend names (built-ins and the plugins installed when adprof was imported).
KNOWN_BACKENDS: tuple[str, ...] = known_backends()


def _load_plugin(name: str) -> Backend:
    ep = plugin_entry_points()[name]
    dist = getattr(getattr(ep, "dist", None), "name", None)
    where = f"plugin backend {name!r} ({ep.value}" + (f", from {dist}" if dist else "") + ")"
    try:
        obj = ep.load()
    except (Exception, SystemExit) as exc:  # SystemExit: a module that calls sys.exit() when imported
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise BrokenBackendError(f"{where} failed to load: {type(exc).__name__}{': ' + msg if msg else ''}") from None
    try:
        backend = obj() if isinstance(obj, type) else obj
    except Exception as exc:
        raise BrokenBackendError(f"{where} could not be created: {type(exc).__name__}: {exc}") from None
    if not isinstance(backend, Backend):
        raise BrokenBackendError(f"{where} is not an adprof.backends.base.Backend (got {type(backend).__name__})")
    if backend.name != name:
        raise BrokenBackendError(f"{where} declares name {backend.name!r}, registered as {name!r}")
    problem = declaration_problem(backend)
    if problem is not None:
        raise BrokenBackendError(f"{where} {problem}")
    return backend


def declaration_problem(backend: Backend) -> str | None:
    """What contradicts itself in a backend's declarations (one line), else None: a backend without modes, a
    mode without phases, a deciding or lower-bound metric the mode does not report."""
    modes = backend.modes
    if not isinstance(modes, tuple | list) or not modes or not all(isinstance(m, str) and m for m in modes):
        return f"declares no modes (modes = {modes!r})"
    for mode in modes:
        phases = backend.phases.get(mode)
        if not phases or not all(isinstance(p, str) and p for p in phases):
            return f"declares mode {mode!r} without phases (phases[{mode!r}] = {phases!r})"
        reported = set(backend.metrics.get(mode, ()))
        for table in ("deciding_metrics", "lower_bound_metrics"):
            extra = [m for m in getattr(backend, table).get(mode, ()) if m not in reported]
            if extra:
                return f"declares {table}[{mode!r}] {extra} that metrics[{mode!r}] does not report"
    return None


@functools.cache
def backend_declaration(name: str) -> Backend:
    """The :class:`Backend` object of ``name`` (declarations; imports a plugin's module, never an engine), its
    declarations registered for series that carry none (:func:`adprof.backend_info.register`).

    Raises :class:`UnknownBackendError` / :class:`BrokenBackendError` (one line)."""
    if name in BUILTIN_BACKENDS:
        backend: Backend = BUILTIN_BACKENDS[name]()
    elif name in plugin_entry_points():
        backend = _load_plugin(name)
    else:
        raise UnknownBackendError(f"unknown backend {name!r}; known backends: {', '.join(known_backends())}")
    register_info(name, backend.info)
    return backend


def backend_info(name: str, mode: str) -> BackendInfo:
    """Backend ``name``'s declarations for ``mode`` (:meth:`Backend.info`); the generic ones for an unknown or
    broken backend (its error is reported where it is used)."""
    try:
        return backend_declaration(name).info(mode)
    except UnknownBackendError:
        return generic_info(mode)


for _name in BUILTIN_BACKENDS:  # light: declarations only, so a series read from JSON finds its backend's
    backend_declaration(_name)


def check_backend(name: str) -> str:
    """Return ``name`` if it is a known, loadable backend whose packages are installed (checked without
    importing the engine), else raise :class:`UnknownBackendError` (:class:`BackendNotInstalledError`
    when its packages are missing, :class:`BrokenBackendError` for a plugin that does not load)."""
    backend = backend_declaration(name)
    missing = backend.missing_packages()
    if missing:
        hint = backend.install_hint or f"install {', '.join(missing)}"
        raise BackendNotInstalledError(f"backend {name!r} is not installed (missing {', '.join(missing)}): {hint}")
    return name


def installed_backends(programs: Sequence[str] = ("cmd",)) -> list[str]:
    """Every known backend whose packages are installed (``--backend all``), except ``programs`` (backends that run a
    program, not a chain)."""
    out = []
    for name in known_backends():
        if name in programs:
            continue
        try:
            check_backend(name)
        except UnknownBackendError:
            continue
        out.append(name)
    return out


def get_backend(name: str) -> Backend:
    """The backend ``name``, ready to measure (built-ins: their implementation imported, so a missing
    package is reported here in one line)."""
    backend = backend_declaration(check_backend(name))
    module = getattr(backend, "module", None)
    if module is not None:
        try:
            module()
        except ImportError as exc:
            msg = str(exc)
            hint = backend.install_hint or INSTALL_HINT
            if hint not in msg:
                msg = f"backend {name!r} is not installed ({exc}): {hint}"
            raise BackendNotInstalledError(msg) from None
    return backend


class DeclarationTable(Mapping[str, tuple]):
    """One declaration of every backend (``profiles``, ``modes`` or ``requires``) as a read-only mapping that
    loads a plugin only when its name is looked up (a plugin that does not load is absent)."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __getitem__(self, name: str) -> tuple:
        if name not in BUILTIN_BACKENDS and name not in plugin_entry_points():
            raise KeyError(name)
        try:
            return tuple(getattr(backend_declaration(name), self.attr))
        except UnknownBackendError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(known_backends())

    def __len__(self) -> int:
        return len(known_backends())


BACKEND_PROFILES: Mapping[str, tuple[str | None, ...]] = DeclarationTable("profiles")
BACKEND_MODES: Mapping[str, tuple[str, ...]] = DeclarationTable("modes")
BACKEND_REQUIRES: Mapping[str, tuple[str, ...]] = DeclarationTable("requires")
#: Backend name -> implementation module of the built-ins.
BACKENDS: dict[str, str] = {name: cls.implementation for name, cls in BUILTIN_BACKENDS.items()}


def backend_versions(name: str) -> dict[str, str]:
    """adprof's version and those of the packages backend ``name`` measures with (``numpy``, ``jax``, ``jaxlib``,
    ...; read from their metadata, nothing imported), for :attr:`adprof.model.Series.versions`."""
    out = {"adprof": __version__}
    try:
        out.update(backend_declaration(name).versions())
    except UnknownBackendError:  # --cmd (a program) or a plugin that does not load: adprof's own only
        pass
    return out


def series_fields(name: str, mode: str) -> dict[str, object]:
    """The series-level fields (``deciding_metrics``, ``lower_bound_metrics``, ``metric_notes``, ``statistic``,
    ``clock``) backend ``name`` declares for ``mode`` (empty when the backend is unknown or broken: the error is
    reported where the backend is used)."""
    try:
        return backend_declaration(name).series_fields(mode)
    except UnknownBackendError:
        return {}


def memory_asked(name: str, asked: bool | None) -> bool:
    """Whether series of backend ``name`` measure memory: ``asked`` (``--memory`` / ``--no-memory``), else the
    backend's ``memory_by_default`` (False for an unknown backend)."""
    if asked is not None:
        return asked
    try:
        return backend_declaration(name).memory_by_default
    except UnknownBackendError:
        return False


def memory_notes(name: str, mode: str, asked: bool) -> dict[str, str]:
    """``Series.memory_notes`` of a series of backend ``name`` in ``mode`` (see
    :meth:`Backend.memory_series_notes`); empty for an unknown backend (its error is reported where it is used)."""
    try:
        return backend_declaration(name).memory_series_notes(mode, asked)
    except UnknownBackendError:
        return {}


__all__ = [
    "BACKENDS",
    "BACKEND_MODES",
    "BACKEND_PROFILES",
    "BACKEND_REQUIRES",
    "ENTRY_POINT_GROUP",
    "INSTALL_HINT",
    "KNOWN_BACKENDS",
    "Backend",
    "BackendNotInstalledError",
    "BrokenBackendError",
    "declaration_problem",
    "UnknownBackendError",
    "backend_declaration",
    "backend_info",
    "backend_versions",
    "check_backend",
    "get_backend",
    "installed_backends",
    "known_backends",
    "memory_asked",
    "memory_notes",
    "plugin_entry_points",
    "series_fields",
]
