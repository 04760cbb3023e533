"""Lowers a tool server's JSON Schema to the neutral shape ``@tool`` builds.

MCP servers describe arguments with whatever their framework emits: pydantic's ``$defs`` and
``$ref``, a ``title`` on every property, ``anyOf`` with ``{"type": "null"}`` for optional
values, ``type`` lists, ``oneOf``, ``allOf`` wrappers, ``const``. The provider converters
(:mod:`~pywrapai_graph.application.tools.provider_schemas`) and argument validation
(:func:`~pywrapai_graph.application.tools.type_schema.check_value`) read the neutral shape:
references inlined, ``X | None`` as ``X`` (the argument is then simply not required, as for
``Optional[X]`` in ``@tool``), one ``type`` per schema, ``anyOf`` for alternatives, ``enum``
for a constant. Keywords with no meaning to a model (``title``, ``$schema``, ``$id``,
``$comment``) are dropped; everything else is kept for the provider converters to filter.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["lower_schema"]

_DROPPED = frozenset({"title", "$schema", "$id", "$comment", "$defs", "definitions"})
_NULL = {"type": "null"}
#: how deep references are followed before a (recursive) one becomes a plain object
_MAX_DEPTH = 32


def lower_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (an object's argument schema) in the neutral shape; the input is unchanged."""
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            defs.update({f"#/{key}/{name}": sub for name, sub in found.items()})
    lowered = _lower(schema, defs, ())
    lowered["type"] = "object"
    lowered.setdefault("properties", {})
    return lowered


def _lower(
    schema: Mapping[str, Any], defs: Mapping[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _resolved(schema, ref, defs, seen)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _lower_any(sub, defs, seen) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _lower(value, defs, seen)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            out.setdefault("anyOf", []).extend(_lower_any(sub, defs, seen) for sub in value)
        elif key == "allOf" and isinstance(value, list):
            out.setdefault("allOf", []).extend(_lower_any(sub, defs, seen) for sub in value)
        elif key == "const":
            out["enum"] = [copy.deepcopy(value)]
        else:
            out[key] = copy.deepcopy(value)
    return _simplified(out)


def _lower_any(value: Any, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    return _lower(value, defs, seen) if isinstance(value, Mapping) else copy.deepcopy(value)


def _resolved(
    schema: Mapping[str, Any], ref: str, defs: Mapping[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    """The referenced schema inlined, the referring schema's own keywords (a description,
    a default) on top; a recursive or unknown reference becomes a plain object."""
    target = defs.get(ref)
    if not isinstance(target, Mapping) or ref in seen or len(seen) >= _MAX_DEPTH:
        inlined: dict[str, Any] = {"type": "object"}
    else:
        inlined = _lower(target, defs, (*seen, ref))
    rest = _lower({k: v for k, v in schema.items() if k != "$ref"}, defs, seen)
    return _simplified({**inlined, **rest})


def _simplified(schema: dict[str, Any]) -> dict[str, Any]:
    """One ``type`` per schema, no ``null`` alternative, single wrappers merged away."""
    kinds = schema.get("type")
    nullable = (isinstance(kinds, list) and "null" in kinds) or (
        isinstance(schema.get("anyOf"), list) and _NULL in schema["anyOf"]
    )
    if isinstance(kinds, list):
        kept = [k for k in kinds if k != "null"]
        if len(kept) == 1:
            schema["type"] = kept[0]
        else:
            del schema["type"]
            if kept:
                schema.setdefault("anyOf", []).extend({"type": k} for k in kept)
    options = schema.get("anyOf")
    if isinstance(options, list):
        options = [o for o in options if o != _NULL]
        if len(options) == 1 and isinstance(options[0], dict):
            del schema["anyOf"]
            schema = {**options[0], **schema}
        elif options:
            schema["anyOf"] = options
        else:
            del schema["anyOf"]
    parts = schema.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict):
        del schema["allOf"]
        schema = {**parts[0], **schema}
    if nullable and "default" in schema and schema["default"] is None:
        del schema["default"]  # as @tool: a None default is the absence of the argument
    return schema
