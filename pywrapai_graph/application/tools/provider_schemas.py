"""Converts neutral tool definitions (``ToolRegistry.to_schema()``) to each provider's shape.

Adapters call these; callers never need to.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "GEMINI_SCHEMA_KEYS",
    "anthropic_tools",
    "gemini_declarations",
    "gemini_schema",
    "openai_tools",
]

#: The JSON Schema keywords Gemini's function declarations accept; all others are stripped
#: (e.g. "default", "additionalProperties", "$schema", "title", "examples").
GEMINI_SCHEMA_KEYS = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "pattern",
        "anyOf",
        "propertyOrdering",
    }
)


def _parts(spec: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    params = spec.get("parameters") or {"type": "object", "properties": {}}
    return str(spec["name"]), str(spec.get("description", "")), copy.deepcopy(dict(params))


def openai_tools(specs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI Chat Completions: ``[{"type": "function", "function": {...}}]``."""
    out = []
    for spec in specs:
        name, description, params = _parts(spec)
        out.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": params},
            }
        )
    return out


def anthropic_tools(specs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic Messages: ``[{"name": ..., "description": ..., "input_schema": {...}}]``."""
    out = []
    for spec in specs:
        name, description, params = _parts(spec)
        out.append({"name": name, "description": description, "input_schema": params})
    return out


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with every keyword Gemini rejects removed, recursively."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in GEMINI_SCHEMA_KEYS:
            continue
        if key == "properties" and isinstance(value, Mapping):
            # Property names are user data, not keywords: keep every one.
            out[key] = {pname: gemini_schema(sub) for pname, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            out[key] = gemini_schema(value)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [gemini_schema(sub) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


def gemini_declarations(specs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Gemini function declarations: ``[{"name": ..., "description": ..., "parameters": ...}]``."""
    out = []
    for spec in specs:
        name, description, params = _parts(spec)
        out.append({"name": name, "description": description, "parameters": gemini_schema(params)})
    return out
