"""JSON Schemas in the form OpenAI's strict structured output accepts.

Strict mode (``"strict": true``) constrains decoding to the schema, but takes only schemas
whose every object lists all its properties as required and forbids additional ones. A
pydantic schema is rewritten that way (an optional field becomes required: the model always
fills it, and validation still accepts the value); a schema with free-form objects
(``dict[str, X]``) cannot be strict and is sent as it is, unconstrained.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["strict_schema"]

_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


class _NotStrict(Exception):
    """The schema has an object that allows additional properties."""


def _visit(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") not in (None, False):
            raise _NotStrict
        node["additionalProperties"] = False
        node["required"] = list(node.get("properties", {}))
    for key in _SCHEMA_MAPS:
        for child in (node.get(key) or {}).values():
            _visit(child)
    for key in _SCHEMA_LISTS:
        for child in node.get(key) or ():
            _visit(child)
    _visit(node.get("items"))


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """``schema`` rewritten for strict mode (a copy), or None when it cannot be strict."""
    out = copy.deepcopy(dict(schema))
    try:
        _visit(out)
    except _NotStrict:
        return None
    return out
