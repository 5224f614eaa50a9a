"""One validation rule per option, shared by every entry point.

The command line's argparse types (:func:`Rule.arg`), the chain decorator's options
(:mod:`adprof.chain.spec`), the pytest fixture and its ``--adprof-*`` options (:mod:`adprof.pytest_plugin`),
``[tool.adprof.guard]`` in ``pyproject.toml`` (:mod:`adprof.guard`) and, through the command's parser, the
Python API all read :data:`RULES`: an option accepted by one is accepted by all, and a bad value is refused
by all with one line naming the option (and, for a chain's option, the chain).

A rule is a name, a type (``int`` or ``float``), a closed range, and what the option means. Every number is
finite; a command-line integer is ASCII digits only (``int("١٢")`` is 12 for Python, not for a shell user).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The deepest depth any chain, schedule or option may name (problem sizes included: 5,000 to 160,000 are
#: real). A depth is a loop count the chain runs: past ten million nothing finishes.
MAX_DEPTH = 10_000_000
#: The most depths one list may name (``depths=`` of a chain, ``--depths``).
MAX_DEPTH_COUNT = 4096
#: The most elements of a chain's default random input (a float64 array of 1 GiB).
MAX_INPUT_ELEMENTS = 2**27
#: The most parallel workers an option may ask for; :func:`jobs_for_cores` bounds them by the cores too.
MAX_JOBS = 256
#: The most shards a run may be split into.
MAX_SHARDS = 10_000


class OptionError(ValueError):
    """A value an option's rule refuses; the message is one line that names the option."""


_INT = re.compile(r"^[+-]?[0-9]+$")
_FLOAT = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")


@dataclass(frozen=True)
class Rule:
    """An option's rule: ``type`` (int or float), the range ``[low, high]`` (``low_open``: ``low`` itself is
    refused), always finite; ``meaning`` (what the value counts, for the message and the docs)."""

    name: str
    type: type
    low: float
    high: float
    meaning: str
    low_open: bool = False

    def expected(self) -> str:
        """``a positive number`` / ``an int >= 0`` ...: what the rule accepts, in words."""
        if self.type is int:
            words = {0: "a non-negative integer", 1: "a positive integer"}
            return words.get(int(self.low), f"an integer >= {self.low:g}")
        if self.low == 0:
            return "a positive number" if self.low_open else "a number >= 0"
        return f"a {'positive ' if self.low > 0 else ''}number {'>' if self.low_open else '>='} {self.low:g}"

    def describe(self) -> str:
        """The whole rule in words (for messages and the docs)."""
        return f"{self.meaning}; {self.expected()}, at most {self.most()}"

    def most(self) -> str:
        """The upper bound as written (``10000000``, ``86400``, ``1e+06``)."""
        return str(int(self.high)) if self.type is int else f"{self.high:g}"

    def problem(self, value: Any) -> str | None:
        """Why ``value`` breaks the rule (None: it keeps it). Strings and bools are refused: only numbers."""
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            return "not a number"
        if self.type is int and not isinstance(value, int | np.integer):
            return "not an int"
        if isinstance(value, float | np.floating) and not math.isfinite(value):  # an int of 400 digits is finite
            return "not finite"
        if value < self.low or (self.low_open and value == self.low):
            return "too small"
        if value > self.high:
            return "too large"
        return None

    def check(self, value: Any, who: str = "") -> Any:
        """``value`` as the rule's type, or :class:`OptionError`: ``{who}{name}: expected ..., got ...``."""
        why = self.problem(value)
        if why is not None:
            raise OptionError(f"{who}{self.name}: {self.refusal(value, why)}")
        return self.type(value)

    def refusal(self, value: Any, why: str) -> str:
        """``expected a positive number, got 0: too small (seconds ...; at most ...)``: the message without the
        option's name."""
        return f"expected {self.expected()}, got {shown(value)}: {why} ({self.meaning}; at most {self.most()})"

    def parse(self, text: str) -> Any:
        """A command-line string under the rule (ASCII digits only); :class:`OptionError` without the name
        (argparse and the callers add it)."""
        value = parse_number(text, self.type)
        why = f"not {'an integer' if self.type is int else 'a number'}" if value is None else self.problem(value)
        if why is not None:
            raise OptionError(self.refusal(text, why))
        return value

    def arg(self) -> Callable[[str], Any]:
        """The argparse ``type=`` of the option (argparse prints ``argument --NAME: ...``, exit 2)."""

        def parse(text: str) -> Any:
            try:
                return self.parse(text)
            except OptionError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        parse.__name__ = self.name  # argparse's "invalid NAME value" when it shows the function's name
        return parse


def parse_number(text: str, kind: type) -> int | float | None:
    """``text`` as an int or a float written in ASCII (no ``nan``, ``inf``, ``١٢`` or ``1_000``), else None."""
    if not isinstance(text, str) or len(text) > 64:  # 5000 digits: Python's int() raises, no option wants them
        return None
    s = text.strip()
    if kind is int:
        return int(s) if _INT.match(s) else None
    return float(s) if _FLOAT.match(s) else None


def _rule(name: str, kind: type, low: float, high: float, meaning: str, low_open: bool = False) -> Rule:
    return Rule(name, kind, low, high, meaning, low_open)


#: Every numeric option's rule, by name (the API's and the decorator's keyword; the command line's
#: ``--name-with-dashes``).
RULES: dict[str, Rule] = {
    r.name: r
    for r in (
        _rule("budget", float, 0, 1e6, "seconds of wall time for the whole run", low_open=True),
        _rule("cap", float, 0.001, 86400, "seconds per phase", low_open=False),
        _rule("calls", int, 2, 1_000_000, "eager forward+backward calls per depth"),
        _rule("jobs", int, 1, MAX_JOBS, "parallel worker processes"),
        _rule("tolerance", float, 0, 10, "slack on a base or exponent"),
        _rule("max_base", float, 0, 1e6, "the largest per-layer growth ratio", low_open=True),
        _rule("max_exponent", float, 0, 1000, "the largest power-law exponent", low_open=True),
        _rule("max_memory_exponent", float, 0, 1000, "the largest power-law exponent of memory", low_open=True),
        _rule("max_leak", float, 0, 2.0**60, "bytes an eager call may leave held"),
        _rule("depth", int, 1, MAX_DEPTH, "a depth"),
        _rule("max_depth", int, 1, MAX_DEPTH, "the deepest depth"),
        _rule("seed", int, 0, 2**63 - 1, "the random seed"),
        _rule("tries", int, 1, 10**9, "generators the search tries"),
        _rule("reuse", float, 0, 1e6, "uses of the previous layer's value per layer", low_open=True),
        _rule("repeats", int, 1, 1000, "exact repeats of each timed phase"),
        _rule("input_dim", int, 1, MAX_INPUT_ELEMENTS, "a dimension of the input"),
        _rule("rate_depth", int, 1, 10_000, "the deepest unit step"),
    )
}


def rule(name: str) -> Rule:
    """The rule of option ``name`` (``max_base``, or ``--max-base``)."""
    return RULES[name.lstrip("-").replace("-", "_")]


def check(name: str, value: Any, who: str = "") -> Any:
    """``value`` checked by the rule of ``name``; :class:`OptionError` naming ``who`` and the option."""
    return rule(name).check(value, who)


def arg(name: str) -> Callable[[str], Any]:
    """The argparse type of option ``name``."""
    return rule(name).arg()


# --------------------------------------------------------------------------- composite options


def depths_problem(depths: Iterable[Any]) -> str | None:
    """Why a list of depths breaks the rule (each a depth, at least one, at most :data:`MAX_DEPTH_COUNT`)."""
    if isinstance(depths, range):
        if len(depths) == 0 or depths.step < 1:
            return "no depth"
        for d in (depths[0], depths[-1]):
            if RULES["depth"].problem(d) is not None:
                return f"{shown(d)} is not a depth in [1, {MAX_DEPTH}]"
        return None
    out = list(depths) if not isinstance(depths, str | bytes) else None
    if out is None:
        return "not a list of depths"
    if not out:
        return "no depth"
    if len(out) > MAX_DEPTH_COUNT:
        return f"{len(out)} depths (at most {MAX_DEPTH_COUNT})"
    for d in out:
        if RULES["depth"].problem(d) is not None:
            return f"{shown(d)} is not a depth in [1, {MAX_DEPTH}]"
    return None


def check_depths(depths: Any, who: str = "", name: str = "depths") -> tuple[int, ...]:
    """A sequence of depths, sorted, each once; :class:`OptionError` (``positive ints``, each at most
    :data:`MAX_DEPTH`, at most :data:`MAX_DEPTH_COUNT` of them)."""
    ok = isinstance(depths, Sequence | range) and not isinstance(depths, str | bytes)
    why = depths_problem(depths) if ok else "not a list of depths"
    if why is not None:
        raise OptionError(f"{who}{name}: expected positive ints, each at most {MAX_DEPTH}, got {shown(depths)} ({why})")
    if isinstance(depths, range):  # never materialised past MAX_DEPTH_COUNT (max_depth=10**7 is a range)
        return tuple(depths) if len(depths) <= MAX_DEPTH_COUNT else depths  # type: ignore[return-value]
    return tuple(sorted({int(d) for d in depths}))


def parse_depths(text: str) -> tuple[int, ...]:
    """``--depths 1,2,4,8``: comma-separated ASCII ints; an empty item (``1,,2``) is refused."""
    items = [v.strip() for v in text.split(",")]
    values = [parse_number(v, int) for v in items]
    if not items or any(v is None for v in values):
        raise OptionError(f"expected positive ints, e.g. 1,2,4,8 (each at most {MAX_DEPTH}), got {text!r}")
    return check_depths(values)


def depths_arg(text: str) -> tuple[int, ...]:
    """The argparse type of ``--depths``."""
    try:
        return parse_depths(text)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("depths: ")) from None


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard K/N``: ASCII ints, 1 <= K <= N <= :data:`MAX_SHARDS`."""
    k, sep, n = text.partition("/")
    kk, nn = parse_number(k, int), parse_number(n, int)
    if sep and kk is not None and nn is not None and 1 <= kk <= nn <= MAX_SHARDS:
        return kk, nn
    raise OptionError(f"expected K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 1/4 (got {text!r})")


def shard_arg(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except OptionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_input_shape(shape: Any, who: str = "") -> tuple[int, ...]:
    """A chain's ``input_shape``: an int or a tuple of positive ints whose product is at most
    :data:`MAX_INPUT_ELEMENTS` (``()`` is a scalar input)."""
    if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
        shape = (shape,)
    bad = OptionError(
        f"{who}input_shape: expected a tuple of positive ints with at most {MAX_INPUT_ELEMENTS} elements in all, "
        f"got {shown(shape)}"
    )
    if isinstance(shape, str | bytes) or not isinstance(shape, Sequence) or len(shape) > 32:
        raise bad
    if any(RULES["input_dim"].problem(n) is not None for n in shape):
        raise bad
    dims = tuple(int(n) for n in shape)
    if math.prod(dims) > MAX_INPUT_ELEMENTS:
        raise bad
    return dims


def jobs_for_cores(jobs: int, cores: int | None = None) -> tuple[int, str | None]:
    """``jobs`` bounded by the machine's cores: ``(jobs to start, the line saying so or None)``."""
    n = cores if cores is not None else (os.cpu_count() or 1)
    if jobs <= n:
        return jobs, None
    return n, f"--jobs {jobs}: this machine has {n} core{'s' if n != 1 else ''}; starting {n} workers"


def shown(value: Any) -> str:
    """``repr(value)`` for a message, at most 80 characters (an int of 5000 digits has no repr: Python refuses to
    write it)."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of {value.bit_length()} bits"
    try:
        text = repr(value)
    except ValueError:  # a list holding such an int
        return f"a {type(value).__name__} holding an integer too long to write"
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = [
    "MAX_DEPTH",
    "MAX_DEPTH_COUNT",
    "MAX_INPUT_ELEMENTS",
    "MAX_JOBS",
    "MAX_SHARDS",
    "RULES",
    "OptionError",
    "Rule",
    "arg",
    "check",
    "check_depths",
    "check_input_shape",
    "depths_arg",
    "jobs_for_cores",
    "parse_depths",
    "parse_number",
    "parse_shard",
    "rule",
    "shard_arg",
    "shown",
]
