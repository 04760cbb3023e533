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

Inlining is bounded: a few KB of definitions that each refer twice to the next inline to
an exponential size, so the lowered schema may nest at most :data:`MAX_SCHEMA_DEPTH` levels
and hold at most :data:`MAX_SCHEMA_NODES` keywords and values, or lowering stops at once
with :class:`SchemaLimitError`. A recursive reference (a tree) becomes a plain object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "SchemaLimitError", "lower_schema"]

_DROPPED = frozenset({"title", "$schema", "$id", "$comment", "$defs", "definitions"})
_NULL = {"type": "null"}
#: schema levels the lowered schema may nest (references inlined)
MAX_SCHEMA_DEPTH = 64
#: keywords and values the lowered schema may hold (references inlined)
MAX_SCHEMA_NODES = 20_000


class SchemaLimitError(InvalidArgumentError):
    """A schema that would nest too deep or grow too large once its references are inlined."""


def lower_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (an object's argument schema) in the neutral shape; the input is unchanged.

    Raises:
        SchemaLimitError: inlined, it would nest deeper than :data:`MAX_SCHEMA_DEPTH` or
            hold more than :data:`MAX_SCHEMA_NODES` keywords and values.
    """
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            defs.update({f"#/{key}/{name}": sub for name, sub in found.items()})
    lowered = _Lowering(defs).lower(schema, (), 0)
    lowered["type"] = "object"
    lowered.setdefault("properties", {})
    return lowered


class _Lowering:
    """One schema's lowering: its definitions, and what it has produced so far."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._nodes = 0

    def _charge(self, nodes: int, depth: int) -> None:
        self._nodes += nodes
        if self._nodes > MAX_SCHEMA_NODES:
            raise SchemaLimitError(
                f"the schema inlines to more than {MAX_SCHEMA_NODES:,} keywords and values "
                "(references repeated)"
            )
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaLimitError(
                f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels (references inlined)"
            )

    def lower(self, schema: Mapping[str, Any], seen: tuple[str, ...], depth: int) -> dict[str, Any]:
        self._charge(1 + len(schema), depth)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self._resolved(schema, ref, seen, depth)
        out: dict[str, Any] = {}
        below = depth + 1
        for key, value in schema.items():
            if key in _DROPPED:
                continue
            if key == "properties" and isinstance(value, Mapping):
                out[key] = {n: self._any(sub, seen, below) for n, sub in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
                out[key] = self.lower(value, seen, below)
            elif key in ("anyOf", "oneOf") and isinstance(value, list):
                out.setdefault("anyOf", []).extend(self._any(sub, seen, below) for sub in value)
            elif key == "allOf" and isinstance(value, list):
                out.setdefault("allOf", []).extend(self._any(sub, seen, below) for sub in value)
            elif key == "const":
                out["enum"] = [self._copy(value, below)]
            else:
                out[key] = self._copy(value, below)
        return _simplified(out)

    def _any(self, value: Any, seen: tuple[str, ...], depth: int) -> Any:
        return (
            self.lower(value, seen, depth)
            if isinstance(value, Mapping)
            else self._copy(value, depth)
        )

    def _copy(self, value: Any, depth: int) -> Any:
        """A deep copy of a JSON value, charged to the budget."""
        self._charge(1, depth)
        if isinstance(value, Mapping):
            return {k: self._copy(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self._copy(v, depth + 1) for v in value]
        return value

    def _resolved(
        self, schema: Mapping[str, Any], ref: str, seen: tuple[str, ...], depth: int
    ) -> dict[str, Any]:
        """The referenced schema inlined, the referring schema's own keywords (a description,
        a default) on top; a recursive or unknown reference becomes a plain object."""
        target = self._defs.get(ref)
        if not isinstance(target, Mapping) or ref in seen:
            inlined: dict[str, Any] = {"type": "object"}
        else:
            inlined = self.lower(target, (*seen, ref), depth)
        rest = self.lower({k: v for k, v in schema.items() if k != "$ref"}, seen, depth)
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
