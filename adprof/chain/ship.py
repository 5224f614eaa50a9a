"""Shipping chains that live in no file (a notebook cell, a REPL, a closure) to the workers, which load chains
from files only: a temporary chain file is written for each, with the chain's **source** or its
**cloudpickle** (the ``notebook`` extra), and removed when the run is over (:class:`Shipment`).

* ``source``: :func:`inspect.getsource` of the function, dedented, its decorators dropped and the chain's
  options written back as ``adprof.chain(fn, **options)``; the globals it uses are written before it (modules
  as imports, literal constants as literals, functions and classes importable from a module as imports,
  other functions of the notebook by their own source). A lambda is shipped when its line holds only it.
* ``cloudpickle``: the whole :class:`~adprof.chain.spec.Chain` (its function by value, with its globals and
  closure), read back by the file; needs cloudpickle in the worker too (the same interpreter).

``auto`` tries cloudpickle (when installed), then the source. Where neither works (a lambda closing over a
lock or an open file) :class:`ShipError` says why in one line. A chain defined at module level of a ``.py``
file is not shipped: the workers import that file (:func:`file_target`).
"""

from __future__ import annotations

import ast
import base64
import builtins
import contextlib
import inspect
import keyword
import sys
import textwrap
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adprof.chain.spec import Chain, ChainError, as_chain
from adprof.util import procs
from adprof.util.bounded import CallTimeout, call_within

SHIP_METHODS = ("auto", "cloudpickle", "source")
#: What the file's first line says (a reader of a stray file knows where it came from).
HEADER = "# adprof: a chain shipped to the measuring workers ({method}); removed when the run ends"


class ShipError(ChainError):
    """A chain that cannot be sent to the workers; the message is one line (why each method failed)."""


class ShipTimeout(ShipError):
    """Shipping ran past the run's end (the budget covers it): final, no other method is tried."""


def is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def file_target(obj: Any) -> str | None:
    """``FILE::NAME`` when the workers can load ``obj`` (a chain or a plain function) from its own file: defined
    at module level of an existing ``.py`` file, not the ``__main__`` script (importing it again would run the
    script), under the name it has there; else None (it must be shipped)."""
    ch = as_chain(obj)
    if ch is not None and ch.source and ch.name.split("[", 1)[0].isidentifier():
        return f"{ch.source}::{ch.name}"  # loaded from its file by load_chains: that file has it
    fn = inspect.unwrap(ch.fn if ch is not None else obj)
    name = ch.name.split("[", 1)[0] if ch is not None else getattr(fn, "__name__", "")
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    qual = getattr(fn, "__qualname__", "")
    if module is None or module.__name__ == "__main__" or "<" in qual or "." in qual or not is_identifier(name):
        return None
    path = getattr(module, "__file__", None)
    code = getattr(fn, "__code__", None)
    if not path or not path.endswith(".py") or code is None or Path(code.co_filename) != Path(path):
        return None
    if not Path(path).is_file() or getattr(module, name, None) not in (obj, fn, ch):
        return None
    return f"{path}::{ch.name if ch is not None else name}"


@dataclass
class Shipped:
    """One chain shipped: the file written for it, the target the workers load, how, and where it came from."""

    chain: str  # the chain's name
    file: str  # the temporary chain file
    target: str  # FILE::VARIABLE
    method: str  # "source" | "cloudpickle"
    origin: str  # where the function was defined (its code's file name: a cell, "<stdin>"), for the report


@dataclass
class Shipment:
    """The temporary chain files of one run; :meth:`close` (or the ``with`` block's end) removes them."""

    method: str = "auto"
    directory: str | None = None
    shipped: list[Shipped] = field(default_factory=list)
    #: ``time.monotonic()`` by which shipping must be done (the run's budget covers it); None: unbounded
    deadline: float | None = None

    def __post_init__(self) -> None:
        if self.method not in SHIP_METHODS:
            raise ShipError(f"ship={self.method!r}: expected one of {', '.join(SHIP_METHODS)}")

    def __enter__(self) -> Shipment:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.directory is not None:
            procs.remove_dir(self.directory)
            self.directory = None

    def add(self, ch: Chain) -> Shipped:
        """Write ``ch`` into a chain file of its own (``auto``: cloudpickle, else its source); raises
        :class:`ShipError` (one line naming why each method failed)."""
        methods = ["cloudpickle", "source"] if self.method == "auto" else [self.method]
        why: list[str] = []
        for method in methods:
            try:
                text = pickled_file(ch, self.deadline) if method == "cloudpickle" else source_file(ch)
            except ShipTimeout as exc:  # the budget is spent: another method would start a run with none left
                raise ShipError(f"cannot send chain {ch.name!r} to the measuring workers: {exc}") from None
            except ShipError as exc:
                why.append(f"{method}: {exc}")
                continue
            return self._write(ch, text, method)
        raise ShipError(
            f"cannot send chain {ch.name!r} to the measuring workers ({'; '.join(why)}): define it with def at "
            "the top level of a cell or a .py file, with no live objects in its closure (or give FILE::CHAIN)"
        )

    def _write(self, ch: Chain, text: str, method: str) -> Shipped:
        if self.directory is None:
            self.directory = procs.temp_dir("adprof-shipped-")
        stem = f"chain_{len(self.shipped)}"
        path = Path(self.directory) / f"{stem}.py"
        path.write_text(text, encoding="utf-8")
        shipped = Shipped(ch.name, str(path), f"{path}::{VARIABLE}", method, origin_of(ch))
        self.shipped.append(shipped)
        return shipped

    def origins(self) -> dict[str, str]:
        """Shipped file -> where its chain was defined (what the report names instead of the temporary file)."""
        return {s.file: s.origin for s in self.shipped}


#: The name a shipped file gives its chain (the target's ``::VARIABLE``; the chain keeps its own name).
VARIABLE = "chain"


def origin_of(ch: Chain) -> str:
    """Where the chain's function was defined: its code's file name (``/tmp/ipykernel_7/3.py``, ``<stdin>``)."""
    fn = inspect.unwrap(ch.fn)
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else "<unknown>"


# --------------------------------------------------------------------------- cloudpickle


#: Packages a worker imports by name (on its path): their functions are pickled by reference.
_WORKER_PACKAGES = ("adprof", "engine", "probes")


def _by_value_modules(fn: Callable[..., Any]) -> list[types.ModuleType]:
    """The function's module when a worker could not import it by name (a test module, a file imported by
    path), to be pickled by value; ``__main__`` always is, installed packages and the standard library are
    imported by the worker."""
    name = getattr(fn, "__module__", None) or ""
    module = sys.modules.get(name)
    path = str(getattr(module, "__file__", "") or "")
    if module is None or name == "__main__" or not path or name.split(".")[0] in _WORKER_PACKAGES:
        return []
    if "site-packages" in path or "dist-packages" in path or path.startswith(sys.base_prefix):
        return []
    return [module]


def pickled_file(ch: Chain, deadline: float | None = None) -> str:
    """The text of a chain file that unpickles ``ch`` (raises :class:`ShipError`); pickling runs user code (a
    ``__reduce__``, a ``__getstate__``): past ``deadline`` (``time.monotonic()``) it is given up on."""
    try:
        import cloudpickle
    except ImportError:
        raise ShipError("cloudpickle is not installed (pip install 'adprof[notebook]')") from None
    fn = inspect.unwrap(ch.fn)
    modules = _by_value_modules(fn)

    def dumps() -> bytes:
        for m in modules:
            cloudpickle.register_pickle_by_value(m)
        try:
            return bytes(cloudpickle.dumps(ch))
        finally:
            for m in modules:
                with contextlib.suppress(ValueError):
                    cloudpickle.unregister_pickle_by_value(m)

    try:
        if deadline is None:
            payload = dumps()
        else:
            payload = call_within(dumps, deadline - time.monotonic(), "pickling it")
    except CallTimeout as exc:
        raise ShipTimeout(f"{exc} (the budget's end)") from None
    except Exception as exc:  # what cloudpickle cannot pickle: a lock, an open file, a generator ...
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ShipError(msg) from None
    data = base64.b64encode(payload).decode("ascii")
    lines = [
        HEADER.format(method="cloudpickle"),
        "import base64",
        "",
        "import cloudpickle",
        "",
        f"{VARIABLE} = cloudpickle.loads(base64.b64decode({data!r}))",
        f"{VARIABLE}.fn.__module__ = __name__  # the file's own chain (load_chains lists the chains a file defines)",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- source


def _literal(value: Any) -> str | None:
    """``repr(value)`` when it reads back as an equal Python literal, else None."""
    try:
        text = repr(value)
        return text if type(ast.literal_eval(text)) is type(value) and ast.literal_eval(text) == value else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _function_source(fn: types.FunctionType) -> str:
    """The dedented source of a ``def`` without its decorators, or ``NAME = lambda ...`` for a lambda alone on
    its lines (raises :class:`ShipError`)."""
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise ShipError(f"its source is not available ({exc})") from None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        raise ShipError("its source lines do not parse on their own (a lambda inside an expression?)") from None
    if fn.__name__ == "<lambda>":
        lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
        if len(lambdas) != 1:
            raise ShipError(f"its line holds {len(lambdas)} lambdas: cannot tell which is this one")
        segment = ast.get_source_segment(text, lambdas[0])
        return f"_adprof_lambda = {segment}\n"
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == fn.__name__]
    if not defs:
        raise ShipError(f"no 'def {fn.__name__}' in its source")
    lines = text.splitlines(keepends=True)
    return "".join(lines[defs[0].lineno - 1 : defs[0].end_lineno])


def _names_used(code: types.CodeType) -> set[str]:
    """Global names a code object (and the code nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_used(const)
    return names


def _importable(value: Any) -> str | None:
    """``from MODULE import NAME`` of a function, class or other object a module holds under its name."""
    module, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not module or not qual or module == "__main__" or "<" in qual or "." in qual:
        return None
    mod = sys.modules.get(module)
    if mod is None or getattr(mod, qual, None) is not value:
        return None
    return f"from {module} import {qual}"


class _SourceWriter:
    """Collects the definitions a function needs: imports, constants, helper functions (each once)."""

    def __init__(self) -> None:
        self.imports: dict[str, str] = {}  # name -> import line
        self.constants: dict[str, str] = {}  # name -> assignment
        self.functions: dict[str, str] = {}  # name -> source
        self.seen: set[int] = set()

    def bind(self, name: str, value: Any, owner: str) -> None:
        """How ``name`` (a global or a closure variable of ``owner``) is made in the file."""
        if isinstance(value, types.ModuleType):
            line = f"import {value.__name__}" + (f" as {name}" if value.__name__ != name else "")
            if value.__name__ == "__main__":
                raise ShipError(f"{owner} uses {name!r}, the notebook's own module")
            self.imports[name] = line
            return
        literal = _literal(value)
        if literal is not None:
            self.constants[name] = f"{name} = {literal}"
            return
        imported = _importable(value)
        if imported is not None:
            self.imports[name] = imported + (f" as {name}" if imported.rsplit(" ", 1)[1] != name else "")
            return
        if isinstance(value, types.FunctionType) and as_chain(value) is None:
            if value.__name__ != name:
                raise ShipError(f"{owner} uses {name!r}, a function defined as {value.__name__!r}")
            self.add_function(value)
            return
        raise ShipError(f"{owner} uses {name!r}, a {type(value).__name__} (not a module, a literal or a function)")

    def add_function(self, fn: types.FunctionType) -> str:
        """``fn``'s source, its globals and closure bound first; the name it gets in the file."""
        if id(fn) in self.seen:
            return fn.__name__
        self.seen.add(id(fn))
        owner = f"{fn.__name__!r}" if fn.__name__ != "<lambda>" else "the lambda"
        source = _function_source(fn)
        for name in sorted(_names_used(fn.__code__)):
            if name in fn.__globals__ and not hasattr(builtins, name):
                self.bind(name, fn.__globals__[name], owner)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
            try:
                value = cell.cell_contents
            except ValueError:
                raise ShipError(f"{owner} closes over {name!r}, which is not set") from None
            self.bind(name, value, owner)
        key = "_adprof_lambda" if fn.__name__ == "<lambda>" else fn.__name__
        self.functions[key] = source
        return key

    def text(self, chain_line: str, method: str) -> str:
        parts = [HEADER.format(method=method), "import adprof"]
        parts += [line for line in self.imports.values() if line != "import adprof"]
        parts += list(self.constants.values())
        body = "\n".join(parts) + "\n\n\n" + "\n\n".join(s.rstrip("\n") + "\n" for s in self.functions.values())
        return body + "\n\n" + chain_line + "\n"


def source_file(ch: Chain) -> str:
    """The text of a chain file that defines ``ch`` from its function's source (raises :class:`ShipError`)."""
    if ch.params or ch.base:
        raise ShipError("a sweep variant's function is bound to its parameters: ship the swept chain")
    fn = inspect.unwrap(ch.fn)
    if not isinstance(fn, types.FunctionType):
        raise ShipError(f"a {type(fn).__name__}, not a function")
    writer = _SourceWriter()
    name = writer.add_function(fn)
    options = ch.decorator_options()
    for key, value in options.items():
        if key == "input" and isinstance(value, types.FunctionType):  # input=make_x: shipped beside the chain
            options[key] = _Raw(writer.add_function(value))
        elif _literal(value) is None and value is not None:
            raise ShipError(f"its option {key}={type(value).__name__} is not a literal")
    args = ", ".join(f"{k}={v.name if isinstance(v, _Raw) else repr(v)}" for k, v in options.items())
    return writer.text(f"{VARIABLE} = adprof.chain({name}, {args})", "source")


@dataclass
class _Raw:
    """A name written as itself (not repr'd) in the options."""

    name: str


__all__ = [
    "SHIP_METHODS",
    "ShipError",
    "Shipment",
    "Shipped",
    "file_target",
    "origin_of",
    "pickled_file",
    "source_file",
]
