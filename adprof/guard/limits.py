"""The guard's limits: :class:`GuardLimits`, ``[tool.adprof.guard]`` in ``pyproject.toml`` and the byte units of
``max_leak``."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adprof import model, options

DEFAULT_MAX_BASE = 1.1
DEFAULT_MAX_EXPONENT = 1.3
#: Extra slack on the limits for backends measured on wall time only.
TIME_TOLERANCE = 0.15


class GuardConfigError(ValueError):
    """A bad ``[tool.adprof.guard]`` table (not valid TOML, a non-positive or non-numeric limit, an unknown key)."""


_GUARD_KEYS: dict[str, float | None] = {
    "max_base": DEFAULT_MAX_BASE,
    "max_exponent": DEFAULT_MAX_EXPONENT,
    "max_memory_exponent": None,  # memory limits: unset unless asked for
    "absolute": None,  # hold the raw growth (a flag, read by _flag)
    "max_leak": None,
}

#: Byte units of ``--max-leak`` (as pytest-memray's ``limit_memory``/``limit_leaks`` read them: KB and KiB alike are
#: 1024 bytes).
BYTE_UNITS = {
    "": 1,
    "B": 1,
    "K": 2**10,
    "KB": 2**10,
    "KIB": 2**10,
    "M": 2**20,
    "MB": 2**20,
    "MIB": 2**20,
    "G": 2**30,
    "GB": 2**30,
    "GIB": 2**30,
    "T": 2**40,
    "TB": 2**40,
    "TIB": 2**40,
}
_BYTES = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*$")


def parse_bytes(value: Any) -> float:
    """Bytes from ``4096``, ``"4096"``, ``"1 MB"``, ``"512 KiB"``, ``"1.5GB"`` (units: B, K/KB/KiB, M/MB/MiB,
    G/GB/GiB, T/TB/TiB, case-insensitive, 1024-based); raises ValueError (one line) for anything else or a
    negative or non-finite number."""
    if isinstance(value, bool):
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}")
    if isinstance(value, int | float):
        if options.RULES["max_leak"].problem(value) is not None:
            raise ValueError(f"expected a non-negative number of bytes, got {options.shown(value)}")
        return float(value)
    m = _BYTES.match(value) if isinstance(value, str) and len(value) <= 64 else None
    unit = m.group(2).upper() if m else ""
    if m is None or unit not in BYTE_UNITS:
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}")
    amount = float(m.group(1)) * BYTE_UNITS[unit]
    if options.RULES["max_leak"].problem(amount) is not None:  # '9' * 400 bytes is inf: past the rule's bound
        too_many = model.fmt_bytes(amount)
        raise ValueError(f"expected bytes (4096, '1 MB', '512 KiB'), got {options.shown(value)}: {too_many}")
    return amount


def _flag(table: dict[str, Any], key: str, where: str) -> bool:
    """A true/false key of the table (false when absent)."""
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise GuardConfigError(f"{where} {key}: expected true or false, got {value!r}")
    return value


def _limit(table: dict[str, Any], key: str, where: str) -> float | None:
    value = table.get(key, _GUARD_KEYS[key])
    if value is None:
        return None
    if key == "max_leak":
        try:
            return parse_bytes(value)
        except ValueError as exc:
            raise GuardConfigError(f"{where} {key}: {exc}") from None
    try:
        return float(options.check(key, value))
    except options.OptionError as exc:
        raise GuardConfigError(f"{where} {exc}") from None


@dataclass
class GuardLimits:
    max_base: float = DEFAULT_MAX_BASE
    max_exponent: float = DEFAULT_MAX_EXPONENT
    #: The largest power-law exponent of the memory verdict in depth (saved-for-backward bytes; an exponential
    #: exceeds any): None, not checked.
    max_memory_exponent: float | None = None
    #: The most bytes a call may leave held after ``gc.collect()`` (the memory verdict's bytes per call, at any
    #: depth): None, not checked.
    max_leak: float | None = None
    #: Hold the raw growth against depth (``--absolute``), not the excess over the program (the default: where the
    #: program grows superlinearly the limits hold what the cost adds to it; a linear program reads the same).
    absolute: bool = False

    @property
    def checks_memory(self) -> bool:
        """A memory limit is set: the guard measures memory (``--memory``) and checks it."""
        return self.max_memory_exponent is not None or self.max_leak is not None

    @classmethod
    def from_pyproject(cls, start: Path | None = None) -> GuardLimits:
        """Limits from the nearest ``pyproject.toml``'s ``[tool.adprof.guard]`` (defaults if none).

        Raises :class:`GuardConfigError` (one line naming the file and the key) on a bad table."""
        path = pyproject_path(start)
        table = pyproject_guard_table(start)
        where = f"{path} [tool.adprof.guard]"
        unknown = sorted(set(table) - set(_GUARD_KEYS))
        if unknown:
            raise GuardConfigError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(_GUARD_KEYS)})")
        return cls(
            max_base=_limit(table, "max_base", where),  # type: ignore[arg-type]
            max_exponent=_limit(table, "max_exponent", where),  # type: ignore[arg-type]
            max_memory_exponent=_limit(table, "max_memory_exponent", where),
            max_leak=_limit(table, "max_leak", where),
            absolute=_flag(table, "absolute", where),
        )


#: The limits' names, as ``[tool.adprof.guard]``, the fixture's marker and arguments and the API spell them.
LIMIT_KEYS: tuple[str, ...] = tuple(_GUARD_KEYS)


def choose_limits(*given: Mapping[str, Any], start: Path | None = None) -> dict[str, Any]:
    """Each limit by precedence: the first mapping of ``given`` (highest first: a call's arguments, a marker, the
    command line's options) that sets it (not None; ``0`` is a value, for its rule to refuse), else
    ``[tool.adprof.guard]`` of the nearest ``pyproject.toml`` at or above ``start`` (the cwd), else the default.
    Given values are returned as given (the caller checks them under their rules, with its own words); raises
    :class:`GuardConfigError` on a bad table."""
    table = GuardLimits.from_pyproject(start)
    return {key: next((g[key] for g in given if g.get(key) is not None), getattr(table, key)) for key in LIMIT_KEYS}


def pyproject_path(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (the cwd), or None."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        f = d / "pyproject.toml"
        if f.is_file():
            return f
    return None


def pyproject_guard_table(start: Path | None = None) -> dict[str, Any]:
    """``[tool.adprof.guard]`` of the nearest pyproject.toml at or above ``start`` (or {}).

    Raises :class:`GuardConfigError` when that file cannot be read or is not valid TOML, or the
    table is not a table."""
    f = pyproject_path(start)
    if f is None:
        return {}
    try:
        data = tomllib.loads(f.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise GuardConfigError(f"{f}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise GuardConfigError(f"{f} is not valid TOML (not UTF-8: byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise GuardConfigError(f"{f} is not valid TOML ({exc})") from None
    table: Any = data
    for i, key in enumerate(("tool", "adprof", "guard")):  # each level must be a table, or be absent
        table = table.get(key, {})
        if not isinstance(table, dict):
            where = ".".join(("tool", "adprof", "guard")[: i + 1])
            raise GuardConfigError(f"{f} [{where}]: expected a table, got {table!r}")
    return dict(table)
