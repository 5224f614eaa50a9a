"""Dataclasses to plain JSON values and back, driven by the dataclasses' own type hints.

:func:`from_plain` walks a dataclass's fields recursively (nested dataclasses, ``X | None``, ``list[X]``,
``dict[str, X]``, ``tuple[X, ...]``), so a field added to a model dataclass loads without editing any
loader: unknown keys are ignored and a missing key takes the field's default. Layer 0 (the model's
layer): imports nothing of adprof.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


class PlainError(ValueError):
    """Data that does not fit the dataclass; the message names where (``results[3].points[0].depth``)."""


def to_plain(value: Any) -> Any:
    """A dataclass (recursively, inside lists and dicts too) as plain dicts and lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_plain(tp: type[T] | Any, data: Any, where: str = "") -> T:
    """``data`` (JSON values) converted to the type ``tp`` (a dataclass or a type hint)."""
    if data is None or tp is Any or tp is object:
        return data
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return _from_union(typing.get_args(tp), data, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _from_dataclass(tp, data, where)  # type: ignore[return-value]
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        return _from_sequence(tp, origin, data, where)
    if origin is dict or tp is dict:
        if not isinstance(data, dict):
            raise PlainError(f"{where or 'value'}: expected an object, got {type(data).__name__}")
        args = typing.get_args(tp)
        val_tp = args[1] if len(args) == 2 else Any
        return {k: from_plain(val_tp, v, f"{where}.{k}") for k, v in data.items()}  # type: ignore[return-value]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)  # type: ignore[return-value]
        except ValueError:
            known = ", ".join(repr(m.value) for m in tp)
            raise PlainError(f"{where or 'value'}: {data!r} is not one of {known}") from None
    if tp is float:  # an int stays an int: JSON keeps 12 and 12.0 apart, and so does the loaded report
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise PlainError(f"{where or 'value'}: expected a number, got {type(data).__name__}")
        return data
    if tp in (int, str, bool) and (not isinstance(data, tp) or (tp is int and isinstance(data, bool))):
        raise PlainError(f"{where or 'value'}: expected {tp.__name__}, got {type(data).__name__}")
    return data


def _from_union(args: tuple[Any, ...], data: Any, where: str) -> Any:
    kinds = [a for a in args if a is not type(None)]
    if len(kinds) == 1:
        return from_plain(kinds[0], data, where)
    for kind in kinds:  # the first alternative that takes the value
        try:
            return from_plain(kind, data, where)
        except PlainError:
            continue
    raise PlainError(f"{where or 'value'}: {type(data).__name__} fits none of {', '.join(map(str, kinds))}")


def _from_sequence(tp: Any, origin: Any, data: Any, where: str) -> Any:
    if not isinstance(data, list | tuple):
        raise PlainError(f"{where or 'value'}: expected a list, got {type(data).__name__}")
    args = typing.get_args(tp)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):  # a fixed-length tuple
        return tuple(from_plain(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=False)))
    item_tp = args[0] if args else Any
    items = [from_plain(item_tp, v, f"{where}[{i}]") for i, v in enumerate(data)]
    return tuple(items) if origin is tuple or tp is tuple else items


def _from_dataclass(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise PlainError(f"{where or cls.__name__}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in data:
            kwargs[f.name] = from_plain(hints.get(f.name, Any), data[f.name], f"{where}.{f.name}".lstrip("."))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PlainError(f"{where or cls.__name__}: missing {f.name!r}")
    return cls(**kwargs)


__all__ = ["PlainError", "from_plain", "to_plain"]
