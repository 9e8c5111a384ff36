"""Dataclasses to JSON-safe dicts and back, driven by their fields' types.

The engine's state is persisted in status. Writing a reader per field by hand
drifted from the fields more than once; here both directions follow the
dataclass: field `under_slo_since` is key `underSloSince`, a nested dataclass
is an object, a tuple is a list, an enum is its value. Decoding checks every
value against the field's type and names the field when it does not fit:
`engine state incident.cutbackStep: must be an integer, got 'two'`.
Keys missing from the input take the field's default.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import math
import types
import typing
from enum import Enum
from typing import Any, Mapping


class StateError(ValueError):
    """A persisted engine state that cannot be read back. `field` is its dotted path."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(f"engine state {field}: {reason}" if field else f"engine state: {reason}")


@functools.cache
def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def encode(value: Any) -> Any:
    """A JSON-safe form of a dataclass tree (floats are not rounded; inf becomes a string)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in sorted(value.items())}
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def decode(cls: type, raw: Any, where: str) -> Any:
    """Build dataclass `cls` from `encode`'s output, checking every field."""
    if not isinstance(raw, Mapping):
        raise StateError(where, f"must be an object, got {raw!r}")
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        key = camel(f.name)
        if key in raw:
            kwargs[f.name] = _value(hints[f.name], raw[key], f"{where}.{key}" if where else key)
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """The resolved field types of a dataclass, once per class: resolving them compiles every
    annotation string and cost 2 ms per restore, 7x a whole decision."""
    return typing.get_type_hints(cls)


def _value(tp: Any, raw: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _value(inner[0], raw, where)
    if dataclasses.is_dataclass(tp):
        return decode(tp, raw, where)
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(raw)
        except ValueError:
            raise StateError(where, f"must be one of {', '.join(str(m.value) for m in tp)}, got {raw!r}") from None
    if tp is bool:
        if not isinstance(raw, bool):
            raise StateError(where, f"must be true or false, got {raw!r}")
        return raw
    if tp is int:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or int(raw) != raw:
            raise StateError(where, f"must be an integer, got {raw!r}")
        return int(raw)
    if tp is float:
        if isinstance(raw, str) and raw in ("inf", "-inf"):
            return float(raw)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != raw:
            raise StateError(where, f"must be a number, got {raw!r}")
        return float(raw)
    if tp is str:
        if not isinstance(raw, str):
            raise StateError(where, f"must be a string, got {raw!r}")
        return raw
    if origin is tuple:
        if not isinstance(raw, (list, tuple)):
            raise StateError(where, f"must be a list, got {raw!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_value(args[0], v, f"{where}[{i}]") for i, v in enumerate(raw))
        if len(raw) != len(args):
            raise StateError(where, f"must be a list of {len(args)}, got {raw!r}")
        return tuple(_value(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, raw)))
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(raw, Mapping):
            raise StateError(where, f"must be an object, got {raw!r}")
        return {str(k): _value(args[1], v, f"{where}.{k}") for k, v in raw.items()}
    raise StateError(where, f"cannot read a value of type {tp!r}")  # pragma: no cover - a field type the codec lacks
