"""Request and response payload helpers the chat and embedding provider adapters share."""

from __future__ import annotations

import json
from typing import Any

from pywrapai_graph.errors import ResponseFormatError

__all__ = ["drop_none", "parse_arguments"]


def parse_arguments(raw: str | None, tool_name: str) -> dict[str, Any]:
    """Decode a tool call's JSON arguments.

    Raises:
        ResponseFormatError: the text is not a JSON object (``raw`` keeps it).
    """
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResponseFormatError(
            f"the model sent malformed JSON arguments for tool {tool_name!r}: {exc.msg} "
            f"at position {exc.pos}",
            raw=raw,
        ) from exc
    if not isinstance(value, dict):
        raise ResponseFormatError(
            f"the model sent arguments for tool {tool_name!r} that are not a JSON object",
            raw=raw,
        )
    return value


def drop_none(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were actually given."""
    return {k: v for k, v in values.items() if v is not None}
