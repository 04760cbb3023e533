"""Messages as JSON-safe dicts, for a caller's history store, and back.

A record holds ``role`` and ``content`` and, only when present, ``tool_calls``,
``tool_result``, ``parts`` (bytes base64-encoded) and ``reasoning``. A record of just ``role`` and
``content`` — what a text-only history has always needed — reads back unchanged.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pywrapai_graph.domain.parts import DocumentPart, ImagePart, Part, TextPart
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.errors import InvalidArgumentError, PyWrapAIError

if TYPE_CHECKING:
    from pywrapai_graph.domain.messages import Message

__all__ = ["message_from_record", "message_to_record"]


def _part_record(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, DocumentPart):
        out: dict[str, Any] = {"type": "document", "data": part.base64()}
        if part.name is not None:
            out["name"] = part.name
        return out
    if part.url is not None:
        out = {"type": "image", "url": part.url}
        if part.media_type is not None:
            out["media_type"] = part.media_type
        return out
    return {"type": "image", "media_type": part.media_type, "data": part.base64()}


def message_to_record(m: Message) -> dict[str, Any]:
    """``m`` as a dict of JSON values (``json.dumps`` takes it as is)."""
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in m.tool_calls
        ]
    if m.tool_result is not None:
        r = m.tool_result
        out["tool_result"] = {"tool_call_id": r.tool_call_id, "name": r.name, "content": r.content}
    if m.parts:
        out["parts"] = [_part_record(p) for p in m.parts]
    if m.reasoning:
        out["reasoning"] = [
            {k: v for k, v in _reasoning_record(r).items() if v is not None} for r in m.reasoning
        ]
    return out


def _reasoning_record(r: ReasoningPart) -> dict[str, str | None]:
    return {
        "text": r.text,
        "signature": r.signature,
        "redacted": r.redacted,
        "provider": r.provider,
        "id": r.id,
    }


def _bytes(record: Mapping[str, Any]) -> bytes:
    try:
        return base64.b64decode(str(record["data"]), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidArgumentError("a part record's data is not base64") from exc


def _part(record: Mapping[str, Any]) -> Part:
    kind = record.get("type")
    if kind == "text":
        return TextPart(str(record["text"]))
    if kind == "document":
        return DocumentPart(_bytes(record), record.get("name"))
    if kind == "image" and "url" in record:
        return ImagePart.from_url(str(record["url"]), record.get("media_type"))
    if kind == "image":
        return ImagePart.from_bytes(_bytes(record), record.get("media_type"))
    raise InvalidArgumentError(
        f"unknown part type {kind!r} in a message record; expected text, image or document"
    )


def message_from_record(record: Mapping[str, Any]) -> Message:
    """The message a :func:`message_to_record` dict describes.

    Raises:
        InvalidArgumentError: a record that is not a mapping, lacks ``role`` or ``content``,
            or holds an unknown or malformed part.
    """
    from pywrapai_graph.domain.messages import Message, Role, ToolCall, ToolResult

    given: object = record
    if not isinstance(given, Mapping) or "role" not in given or "content" not in given:
        raise InvalidArgumentError(
            "a message record is a mapping with 'role' and 'content' (see Message.to_dict)"
        )
    try:
        calls = [
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
            for c in record.get("tool_calls") or ()
        ]
        result = record.get("tool_result")
        return Message(
            Role(str(record["role"])),
            str(record["content"]),
            tool_calls=calls or None,
            tool_result=None if result is None else ToolResult(**result),
            parts=[_part(p) for p in record.get("parts") or ()],
            reasoning=[ReasoningPart(**r) for r in record.get("reasoning") or ()],
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, PyWrapAIError):
            raise
        raise InvalidArgumentError(f"malformed message record: {exc}") from exc
