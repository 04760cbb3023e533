"""A tool as a tool server (an MCP server) lists it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RemoteToolSpec"]


@dataclass(frozen=True, slots=True)
class RemoteToolSpec:
    """One tool a tool server offers, as it listed it.

    Attributes:
        name: the name the server knows it by.
        description: what the server says it does ("" when it says nothing).
        input_schema: the JSON Schema of its arguments, as the server sent it (it may use
            ``$defs``/``$ref``, ``title``, ``anyOf`` with ``null``...).
    """

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
