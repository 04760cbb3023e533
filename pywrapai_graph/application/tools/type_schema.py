"""Maps Python type hints to JSON Schema, and checks arguments against such a schema.

Mapping (the reference's table, extended): ``str`` → string, ``int`` → integer, ``float`` →
number, ``bool`` → boolean, ``list``/``tuple``/``set`` → array (``list[X]`` adds ``items``),
``dict`` → object, ``Literal[...]`` and ``Enum`` subclasses → ``enum``, ``Optional[X]`` /
``X | None`` → X (not required), ``Annotated[X, "text"]`` → X with a description. Anything
else, or no hint, → string.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["NONE_TYPE", "check_value", "is_optional", "schema_for_hint"]

NONE_TYPE = type(None)

_SCALARS: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
}
_ARRAYS: tuple[type, ...] = (list, tuple, set, frozenset)
_ARRAY_ORIGINS: tuple[Any, ...] = (*_ARRAYS, Sequence, typing.Sequence)


def _json_type_of_values(values: Sequence[Any]) -> str:
    kinds = {_SCALARS.get(type(v), "string") for v in values}
    return kinds.pop() if len(kinds) == 1 else "string"


def is_optional(hint: Any) -> bool:
    """True for ``Optional[X]`` / ``X | None``."""
    origin = typing.get_origin(hint)
    return origin in (typing.Union, types.UnionType) and NONE_TYPE in typing.get_args(hint)


def schema_for_hint(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one type hint (see the module docstring for the mapping)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        schema = schema_for_hint(args[0])
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = notes[0]
        return schema
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not NONE_TYPE]
        if len(members) == 1:
            return schema_for_hint(members[0])
        return {"anyOf": [schema_for_hint(m) for m in members]}
    if origin is typing.Literal:
        return {"type": _json_type_of_values(args), "enum": list(args)}
    return _plain_schema(hint, origin, args)


def _plain_schema(hint: Any, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """The schema of an enum, collection or scalar hint (anything else is a string)."""
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        return {"type": _json_type_of_values(values), "enum": values}
    if origin in _ARRAY_ORIGINS or hint in _ARRAYS:
        array: dict[str, Any] = {"type": "array"}
        item_args = [a for a in args if a is not Ellipsis]
        if len(item_args) == 1:
            array["items"] = schema_for_hint(item_args[0])
        return array
    if origin in (dict, Mapping, typing.Mapping):
        return {"type": "object"}
    scalar = next((json for py, json in _SCALARS.items() if hint is py), "string")
    return {"type": scalar}


#: What each JSON Schema type accepts (bool is not a number here, as in JSON).
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list | tuple),
    "object": lambda v: isinstance(v, Mapping),
    "null": lambda v: v is None,
}


def _type_matches(value: Any, json_type: str) -> bool:
    check = _TYPE_CHECKS.get(json_type)
    return True if check is None else check(value)


def check_value(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    """Problems with ``value`` against ``schema`` (type, enum, items, anyOf); empty when valid."""
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(not check_value(value, s, path) for s in options):
            return []
        return [f"{path} does not match any allowed type"]
    problems: list[str] = []
    json_type = schema.get("type")
    if isinstance(json_type, str) and not _type_matches(value, json_type):
        return [f"{path} must be of type {json_type}, got {type(value).__name__} {value!r:.60}"]
    enum_values = schema.get("enum")
    if enum_values is not None and value not in enum_values:
        problems.append(f"{path} must be one of {list(enum_values)!r}, got {value!r:.60}")
    items = schema.get("items")
    if isinstance(items, Mapping) and isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problems.extend(check_value(item, items, f"{path}[{i}]"))
    return problems
