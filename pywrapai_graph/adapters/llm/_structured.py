"""Structured output on OpenAI-style APIs: the ``json_schema`` response format (strict when
the schema can be made strict) or a forced function tool.

Strict mode (constrained decoding) accepts a subset of JSON Schema: every object closed
(``additionalProperties: false``) and every property required, no ``default``. A pydantic
schema is made so by :func:`strict_schema` — a field with a default becomes required, which
the model then always fills and pydantic still validates. A schema with an open mapping
(``dict[str, X]``: ``additionalProperties`` a schema) or a tuple (``prefixItems``) cannot be
made strict; it is sent as
a non-strict ``json_schema`` — a forced tool would be no stricter, its strict mode having the
same rules — and the retries of ``chat_structured`` catch what the model gets wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pywrapai_graph.domain import ResponseFormat

__all__ = ["openai_structured", "strict_schema"]


class _NotStrict(Exception):
    """The schema has an open mapping or a tuple: strict mode cannot express it."""


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "default":
            continue
        if key == "properties" and isinstance(value, Mapping):
            # property names are the user's, not keywords: keep every one
            out[key] = {name: _strict(sub) for name, sub in value.items()}
        else:
            out[key] = _strict(value)
    if "prefixItems" in out:  # a tuple: strict mode has no positional items
        raise _NotStrict
    if "$ref" in out:  # strict mode takes a reference alone (a field's description goes)
        return {"$ref": out["$ref"]}
    if out.get("type") == "object" or "properties" in out:
        if out.get("additionalProperties", False) is not False or "patternProperties" in out:
            raise _NotStrict
        out["additionalProperties"] = False
        out["required"] = list(out.get("properties", {}))
    return out


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of ``schema`` that OpenAI's strict mode accepts, or None when it has an open
    mapping or a tuple, which strict mode cannot express."""
    try:
        made: dict[str, Any] = _strict(schema)
    except _NotStrict:
        return None
    return made


def openai_structured(fmt: ResponseFormat) -> dict[str, Any]:
    """The Chat Completions parameters asking for ``fmt``: ``response_format`` (modes "auto"
    and "native"), or a forced function tool (mode "tool", for OpenAI-compatible servers
    without ``json_schema`` support)."""
    strict = strict_schema(fmt.json_schema)
    schema: dict[str, Any] = dict(fmt.json_schema) if strict is None else strict
    flag = {"strict": True} if strict is not None else {}
    if fmt.mode == "tool":
        function = {"name": fmt.name, "parameters": schema, **flag}
        function["description"] = f"Return the answer as a {fmt.name} object."
        return {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": fmt.name}},
        }
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": schema, **flag},
        }
    }
