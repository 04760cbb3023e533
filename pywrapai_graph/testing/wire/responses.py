"""OpenAI's Responses API wire format, written from its public API reference.

``POST /v1/responses`` answers a Response object (``output`` items: ``reasoning``,
``message`` with ``output_text`` parts, ``function_call`` with its ``call_id``; ``usage``
with ``input_tokens_details.cached_tokens`` and ``output_tokens_details.reasoning_tokens``).
With ``stream: true`` it sends named SSE events, each with its ``sequence_number``:
``response.created``, ``response.in_progress``, per item ``response.output_item.added`` /
``.done`` around ``response.output_text.delta`` (inside ``response.content_part.added`` /
``.done``), ``response.function_call_arguments.delta`` / ``.done`` or
``response.reasoning_summary_text.delta`` (inside ``response.reasoning_summary_part.*``), then
``response.completed`` carrying the whole response. No ``[DONE]`` line.

A scripted reply whose usage has reasoning tokens begins with a reasoning item; its
encrypted content is sent when the request includes ``reasoning.encrypted_content``. As
OpenAI does with ``store: false``, a reasoning item sent back in a later input must carry
the encrypted content issued for its id, or the request fails with a 400.
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from typing import Any, ClassVar

from pywrapai_graph.testing.scripted import ScriptedReply, split_text
from pywrapai_graph.testing.wire.providers import OpenAIWire
from pywrapai_graph.testing.wire.server import WireResponse, sse

__all__ = ["OpenAIResponsesWire"]

_CREATED = 1_700_000_000
#: the reasoning summary every scripted reasoning item shows
SUMMARY = "Weighing the question."


def _item_events(item: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The events that stream one output item, between its ``added`` and ``done``."""
    at = {"item_id": item.get("id", ""), "output_index": index}
    if item["type"] == "message":
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        text = item["content"][0]["text"]
        return [
            {"type": "response.content_part.added", **at, "content_index": 0, "part": part},
            *(
                {"type": "response.output_text.delta", **at, "content_index": 0, "delta": piece}
                for piece in split_text(text)
            ),
            {"type": "response.output_text.done", **at, "content_index": 0, "text": text},
            {
                "type": "response.content_part.done",
                **at,
                "content_index": 0,
                "part": {**part, "text": text},
            },
        ]
    if item["type"] == "function_call":
        arguments = item["arguments"]
        return [
            *(
                {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                for piece in split_text(arguments)
            ),
            {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
        ]
    part = {"type": "summary_text", "text": SUMMARY}
    at = {**at, "summary_index": 0}
    return [
        {"type": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}},
        *(
            {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
            for piece in split_text(SUMMARY)
        ),
        {"type": "response.reasoning_summary_text.done", **at, "text": SUMMARY},
        {"type": "response.reasoning_summary_part.done", **at, "part": part},
    ]


def _pending(item: dict[str, Any]) -> dict[str, Any]:
    """An item as ``response.output_item.added`` announces it: nothing produced yet."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return {**item, "summary": [], "encrypted_content": None}


class OpenAIResponsesWire(OpenAIWire):
    """``/v1/responses`` as api.openai.com/v1 speaks it (errors as :class:`OpenAIWire`)."""

    routes: ClassVar[dict[str, str]] = {"/v1/responses": "chat"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._ids = itertools.count(1)
        self._issued_lock = threading.Lock()
        #: reasoning item id -> the encrypted content issued with it
        self.issued: dict[str, str] = {}

    @staticmethod
    def response_usage(reply: ScriptedReply) -> dict[str, Any]:
        u = reply.usage
        return {
            "input_tokens": u.input_tokens,
            "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
            "output_tokens": u.output_tokens,
            "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "total_tokens": u.input_tokens + u.output_tokens,
        }

    def _reasoning(self, body: dict[str, Any]) -> dict[str, Any]:
        n = next(self._ids)
        item_id = f"rs_{n:04d}"
        secret = base64.b64encode(f"reasoning {n} of the wire".encode()).decode()
        with self._issued_lock:
            self.issued[item_id] = secret
        encrypted = secret if "reasoning.encrypted_content" in (body.get("include") or []) else None
        summary = [{"type": "summary_text", "text": SUMMARY}]
        return {
            "type": "reasoning",
            "id": item_id,
            "summary": summary,
            "encrypted_content": encrypted,
        }

    def _output(self, reply: ScriptedReply, body: dict[str, Any]) -> list[dict[str, Any]]:
        items = [self._reasoning(body)] if reply.usage.reasoning_tokens else []
        if reply.content:
            text = {"type": "output_text", "text": reply.content, "annotations": []}
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{next(self._ids):04d}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [text],
                }
            )
        items += [
            {
                "type": "function_call",
                "id": f"fc_{next(self._ids):04d}",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.arguments),
                "status": "completed",
            }
            for call in reply.tool_calls
        ]
        return items

    def _unknown_reasoning(self, body: dict[str, Any]) -> str | None:
        """Why the input's reasoning items cannot be used (None: they can)."""
        for item in body.get("input") or ():
            if isinstance(item, dict) and item.get("type") == "reasoning":
                with self._issued_lock:
                    issued = self.issued.get(str(item.get("id")))
                if issued is None or item.get("encrypted_content") != issued:
                    return (
                        f"Item with id '{item.get('id')}' not found. Items are not persisted "
                        "when `store` is set to false."
                    )
        return None

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        body = body if isinstance(body, dict) else {}
        refused = self._unknown_reasoning(body)
        if refused is not None:
            return WireResponse(400, self.render_error(400, refused))
        output = self._output(reply, body)
        response = {
            "id": f"resp_{next(self._ids):04d}",
            "object": "response",
            "created_at": _CREATED,
            "status": "completed",
            "model": reply.model or str(body.get("model", "gpt-4o-mini")),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "store": body.get("store", True),
            "text": body.get("text", {"format": {"type": "text"}}),
            "error": None,
            "incomplete_details": None,
            "usage": self.response_usage(reply),
        }
        if not stream:
            return WireResponse(body=json.dumps(response).encode())
        return WireResponse(content_type="text/event-stream", chunks=self._events(response))

    @staticmethod
    def _events(response: dict[str, Any]) -> list[bytes]:
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
        ]
        for index, item in enumerate(response["output"]):
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": _pending(item),
                }
            )
            events += _item_events(item, index)
            events.append(
                {"type": "response.output_item.done", "output_index": index, "item": item}
            )
        events.append({"type": "response.completed", "response": response})
        numbered = [{**event, "sequence_number": n} for n, event in enumerate(events)]
        return sse(numbered, event_names=[e["type"] for e in numbered])
