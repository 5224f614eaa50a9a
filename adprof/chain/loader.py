"""Loading chain files safely: import a file in isolation, find its chains, parse ``FILE[::CHAIN]``.

Every user-facing error is a :class:`~adprof.chain.spec.ChainError` subclass with a one-line message.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from adprof.chain.spec import Chain, ChainError, ChainSignatureError, as_chain, chain

# --------------------------------------------------------------------------- errors


class ChainFileNotFoundError(ChainError):
    """The chain file does not exist."""


class NotAPythonFileError(ChainError):
    """The path is a directory or does not end in ``.py``."""


class ChainSyntaxError(ChainError):
    """The chain file does not parse."""


class ChainImportError(ChainError):
    """Executing the chain file raised."""


class NoChainsError(ChainError):
    """The file defines no ``@adprof.chain`` functions and no names were given."""


class ChainNotFoundError(ChainError):
    """A requested chain name is not defined in the file."""


class TargetSyntaxError(ChainError):
    """A CLI target is not of the form ``FILE[::CHAIN]``."""


def chains_in(namespace: Mapping[str, Any] | Any, module_name: str | None = None) -> list[Chain]:
    """Chains defined in a module or namespace dict, in definition order (unique objects).

    With ``module_name``, only chains whose function was defined in that module are returned
    (chains imported from elsewhere are skipped).
    """
    ns = namespace if isinstance(namespace, Mapping) else vars(namespace)
    if module_name is None and not isinstance(namespace, Mapping):
        module_name = getattr(namespace, "__name__", None)
    seen: set[int] = set()
    found: list[tuple[int, int, Chain]] = []
    for i, value in enumerate(list(ns.values())):
        ch = as_chain(value)
        if ch is None or id(ch) in seen:
            continue
        if module_name is not None and getattr(ch.fn, "__module__", None) != module_name:
            continue
        seen.add(id(ch))
        code = getattr(ch.fn, "__code__", None)
        found.append((code.co_firstlineno if code else 1 << 30, i, ch))
    return [ch for _, _, ch in sorted(found, key=lambda t: (t[0], t[1]))]


# --------------------------------------------------------------------------- loading files


def parse_target(target: str) -> tuple[Path, str | None]:
    """Split the CLI target ``FILE[::CHAIN]`` into ``(Path(FILE), CHAIN or None)``.

    CHAIN may name a sweep variant, e.g. ``probes/chains.py::reuse[k=2]``.
    """
    if not isinstance(target, str) or not target.strip():
        raise TargetSyntaxError("empty target; expected FILE[::CHAIN]")
    path, sep, name = target.partition("::")
    if not path:
        raise TargetSyntaxError(f"target {target!r} has no file; expected FILE[::CHAIN]")
    if not sep:
        return Path(path), None
    base = name.split("[", 1)[0]
    if not base.isidentifier() or ("[" in name and not name.endswith("]")) or "::" in name:
        raise TargetSyntaxError(f"target {target!r}: {name!r} is not a chain name; expected FILE[::CHAIN]")
    return Path(path), name


def _error_line(exc: BaseException, filename: str) -> str:
    """' (line N)' for the deepest traceback frame in ``filename``, else ''."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == Path(filename).resolve():
            line = frame.lineno
    return f" (line {line})" if line else ""


def _import_isolated(path: Path) -> Any:
    """Execute ``path`` as a fresh module; sys.modules and sys.path are restored afterwards."""
    try:
        source = path.read_bytes()  # bytes: compile honours a BOM and a coding cookie (PEP 263), as import does
    except OSError as exc:
        raise ChainImportError(f"cannot read {path}: {exc}") from None
    try:
        compile(source, str(path), "exec")
    except SyntaxError as exc:
        where = f" line {exc.lineno}" if exc.lineno else ""
        raise ChainSyntaxError(f"syntax error in {path}{where}: {exc.msg}") from None
    except ValueError as exc:  # null bytes (Python 3.11)
        raise ChainSyntaxError(f"syntax error in {path}: {exc}") from None

    mod_name = f"_adprof_chains_{path.stem if path.stem.isidentifier() else 'file'}_{uuid.uuid4().hex[:12]}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ChainImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    directory = str(path.parent)
    sys.path.insert(0, directory)
    sys.modules[mod_name] = module  # dataclasses, pickle-by-reference etc. look the module up
    try:
        spec.loader.exec_module(module)
    except ChainError:
        raise  # raised by @chain at import time; the message names the file and line
    except (Exception, SystemExit) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else ""
        raise ChainImportError(
            f"error importing {path}{_error_line(exc, str(path))}: {type(exc).__name__}: {msg}".rstrip(": ")
        ) from exc
    finally:
        sys.modules.pop(mod_name, None)
        try:
            sys.path.remove(directory)
        except ValueError:
            pass
    return module


def _lookup(module: Any, path: Path, name: str, defined: list[Chain]) -> Chain:
    base, _, rest = name.partition("[")
    if rest:
        parent = _lookup(module, path, base, defined)
        for v in parent.variants():
            if v.name == name or v.name.replace(" ", "") == name.replace(" ", ""):
                return v
        names = ", ".join(v.name for v in parent.variants())
        raise ChainNotFoundError(f"no variant {name!r} in {path}; variants: {names}")
    named = next((c for c in defined if c.name == base), None)
    if named is not None:  # by its chain name: @chain(name=...) may differ from the function's
        return named
    ns = vars(module)
    if base not in ns or base.startswith("__"):
        avail = ", ".join(c.name for c in defined) or "none"
        raise ChainNotFoundError(f"no chain or function named {base!r} in {path}; chains: {avail}")
    obj = ns[base]
    ch = as_chain(obj)
    if ch is None:
        if not inspect.isfunction(obj):
            raise ChainSignatureError(f"{base!r} in {path} is a {type(obj).__name__}, not a function")
        ch = chain(obj, name=base)  # the name it was found by (a module-level lambda's own is '<lambda>')
    return ch


@dataclass(frozen=True)
class ChainFile:
    """A chain file imported once: its module and the ``@chain`` functions it defines, in definition order."""

    path: Path
    module: Any
    defined: list[Chain]

    def select(self, names: Sequence[str] | None = None) -> list[Chain]:
        """The chains :func:`load_chains` returns for ``names`` (every ``@chain`` function when None)."""
        if names is None:
            if not self.defined:
                raise NoChainsError(f"no @adprof.chain functions in {self.path}; name one with {self.path}::FUNC")
            result = self.defined
        else:
            if isinstance(names, str):
                names = [names]
            result = [_lookup(self.module, self.path, n, self.defined) for n in names]
        src = str(self.path.resolve())
        return [replace(ch, source=src) for ch in result]

    def variant(self, name: str) -> Chain:
        """The chain a listing named ``name``: a ``@chain`` function's variant by its own name (``@chain(name=...)``
        included), else what :meth:`select` finds under that name."""
        for ch in self.select() if self.defined else ():
            for v in ch.variants():
                if v.name == name:
                    return v
        return self.select([name])[0]


def import_chain_file(path: str | Path) -> ChainFile:
    """Import a chain file in isolation (its module is not left in ``sys.modules``); raises a
    :class:`ChainError` subclass with a one-line message."""
    p = Path(path)
    if not p.exists():
        raise ChainFileNotFoundError(f"no such file: {p}")
    if p.is_dir() or p.suffix != ".py":
        raise NotAPythonFileError(f"not a Python file: {p} (expected a .py file)")
    module = _import_isolated(p)
    return ChainFile(p, module, chains_in(vars(module), module.__name__))


def load_chains(path: str | Path, names: Sequence[str] | None = None) -> list[Chain]:
    """Import a chain file in isolation and return its chains.

    Without ``names``: every ``@chain`` function defined in the file, in definition order. With
    ``names``: those chains, in the given order; an undecorated function is wrapped with the
    default options, and ``base[k=2]`` selects one sweep variant. Each returned chain records the
    file in ``source``. Raises a :class:`ChainError` subclass with a one-line message.
    """
    return import_chain_file(path).select(names)
