"""The four providers' wire formats, written from their public API references.

* OpenAI Chat Completions: ``POST /v1/chat/completions`` (JSON; SSE ``data:`` chunks ending
  with ``data: [DONE]``; usage in a final chunk with empty ``choices`` when
  ``stream_options.include_usage`` is set; tool-call deltas keyed by ``index``, arguments
  split across chunks); ``POST /v1/embeddings``.
* Anthropic Messages: ``POST /v1/messages`` (JSON; SSE named events ``message_start``,
  ``content_block_start/delta/stop``, ``message_delta`` with output usage, ``message_stop``;
  ``input_json_delta`` fragments for tool input).
* Gemini: ``POST /v1[beta]/models/{model}:generateContent`` and
  ``:streamGenerateContent?alt=sse`` (SSE of GenerateContentResponse; ``usageMetadata``);
  ``:batchEmbedContents``.
* Ollama: ``POST /api/chat`` (JSON; NDJSON lines, the last with ``done: true`` and eval
  counts); ``POST /api/embed``.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.domain import ToolCall
from pywrapai_graph.testing.scripted import ScriptedReply, split_text
from pywrapai_graph.testing.wire.reasoning import (
    ReasoningLedger,
    anthropic_events,
    anthropic_refusal,
    anthropic_thinking,
    gemini_refusal,
    gemini_thoughts,
    openai_refusal,
)
from pywrapai_graph.testing.wire.server import WireResponse, WireServer, sse

__all__ = ["AnthropicWire", "GeminiWire", "OllamaWire", "OpenAIWire"]

_CREATED = 1_700_000_000
_EMBED_DIM = 32


def _model(body: Any, default: str) -> str:
    return str(body.get("model", default)) if isinstance(body, dict) else default


def _vectors(texts: list[str]) -> list[list[float]]:
    return FeatureHashingEmbedder(_EMBED_DIM).vectors(texts)


def _split_json(value: Any, pieces: int = 3) -> list[str]:
    return split_text(json.dumps(value), pieces)


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


# ====================================================================== OpenAI
def _openai_call(call: ToolCall, arguments: str) -> dict[str, Any]:
    function = {"name": call.name, "arguments": arguments}
    return {"id": call.id, "type": "function", "function": function}


class OpenAIWire(WireServer):
    """Chat Completions and Embeddings, as api.openai.com/v1 speaks them."""

    base_path = "/v1"
    routes: ClassVar[dict[str, str]] = {
        "/v1/chat/completions": "chat",
        "/v1/embeddings": "embeddings",
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: the reasoning_content handed out with tool calls, checked when they come back
        self.ledger = ReasoningLedger()

    @staticmethod
    def usage(reply: ScriptedReply) -> dict[str, Any]:
        u = reply.usage
        return {
            "prompt_tokens": u.input_tokens,
            "completion_tokens": u.output_tokens,
            "total_tokens": u.input_tokens + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        }

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        if refused := openai_refusal(body, self.ledger):
            return WireResponse(400, self.render_error(400, refused))
        model = reply.model or _model(body, "gpt-4o-mini")
        finish = "tool_calls" if reply.tool_calls else "stop"
        head = {"id": "chatcmpl-wire", "created": _CREATED, "model": model}
        thought = "".join(p.text for p in reply.reasoning)
        if thought and reply.tool_calls:
            self.ledger.give((c.id for c in reply.tool_calls), thought)
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
            if thought:
                message["reasoning_content"] = thought
            if reply.tool_calls:
                message["tool_calls"] = [
                    _openai_call(c, json.dumps(c.arguments)) for c in reply.tool_calls
                ]
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            whole = {**head, "object": "chat.completion", "choices": [choice]}
            return WireResponse(body=_json({**whole, "usage": self.usage(reply)}))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return {**head, "object": "chat.completion.chunk", "choices": [choice]}

        events: list[Any] = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"reasoning_content": piece}) for piece in split_text(thought)]
        events += [chunk({"content": piece}) for piece in split_text(reply.content)]
        for i, call in enumerate(reply.tool_calls):
            events.append(chunk({"tool_calls": [{"index": i, **_openai_call(call, "")}]}))
            events += [
                chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                for part in _split_json(call.arguments)
            ]
        events.append(chunk({}, finish))
        if isinstance(body, dict) and (body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk({}), "choices": [], "usage": self.usage(reply)})
        events.append("[DONE]")
        return WireResponse(content_type="text/event-stream", chunks=sse(events))

    def render_embeddings(self, body: Any, path: str) -> WireResponse:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return WireResponse(
            body=_json(
                {
                    "object": "list",
                    "data": [
                        {"object": "embedding", "index": i, "embedding": v}
                        for i, v in enumerate(_vectors(texts))
                    ],
                    "model": _model(body, "text-embedding-3-small"),
                    "usage": {
                        "prompt_tokens": sum(len(t.split()) for t in texts),
                        "total_tokens": sum(len(t.split()) for t in texts),
                    },
                }
            )
        )

    def render_error(self, status: int, message: str) -> bytes:
        kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error"}
        return _json(
            {
                "error": {
                    "message": message,
                    "type": kinds.get(status, "invalid_request_error"),
                    "param": None,
                    "code": None,
                }
            }
        )


# ====================================================================== Anthropic
class AnthropicWire(WireServer):
    """The Messages API, as api.anthropic.com speaks it."""

    routes: ClassVar[dict[str, str]] = {"/v1/messages": "chat"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: the thinking blocks handed out with tool calls, checked when they come back
        self.ledger = ReasoningLedger()

    @staticmethod
    def _blocks(reply: ScriptedReply) -> list[dict[str, Any]]:
        blocks = anthropic_thinking(reply.reasoning)
        if reply.content:
            blocks.append({"type": "text", "text": reply.content})
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
            for c in reply.tool_calls
        ]
        return blocks

    @staticmethod
    def _input_usage(reply: ScriptedReply) -> dict[str, int]:
        u = reply.usage
        return {
            "input_tokens": u.input_tokens - u.cache_read_tokens - u.cache_write_tokens,
            "cache_creation_input_tokens": u.cache_write_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
        }

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        if refused := anthropic_refusal(body, self.ledger):
            return WireResponse(400, self.render_error(400, refused))
        if reply.reasoning and reply.tool_calls:
            self.ledger.give((c.id for c in reply.tool_calls), anthropic_thinking(reply.reasoning))
        model = reply.model or _model(body, "claude-haiku-4-5-20251001")
        stop = "tool_use" if reply.tool_calls else "end_turn"
        message = {
            "id": "msg_wire",
            "type": "message",
            "role": "assistant",
            "model": model,
            "stop_reason": stop,
            "stop_sequence": None,
        }
        if not stream:
            usage = {**self._input_usage(reply), "output_tokens": reply.usage.output_tokens}
            return WireResponse(
                body=_json({**message, "content": self._blocks(reply), "usage": usage})
            )
        events = self.stream_events(reply, message)
        names = [e["type"] for e in events]
        return WireResponse(content_type="text/event-stream", chunks=sse(events, event_names=names))

    def stream_events(self, reply: ScriptedReply, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The Messages stream's events for ``reply`` (``message``: the reply's head)."""
        stop = message["stop_reason"]
        usage = {**self._input_usage(reply), "output_tokens": 1}
        started: dict[str, Any] = {**message, "content": [], "stop_reason": None, "usage": usage}
        events: list[dict[str, Any]] = [{"type": "message_start", "message": started}]
        events += anthropic_events(reply.reasoning)
        # each content block: (its start, its pieces, the delta type, the delta's key)
        blocks: list[tuple[dict[str, Any], list[str], str, str]] = []
        if reply.content:
            text = split_text(reply.content)
            blocks.append(({"type": "text", "text": ""}, text, "text_delta", "text"))
        for c in reply.tool_calls:
            tool = {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}
            blocks.append((tool, _split_json(c.arguments), "input_json_delta", "partial_json"))
        for index, (block, pieces, kind, key) in enumerate(blocks, len(reply.reasoning)):
            events.append({"type": "content_block_start", "index": index, "content_block": block})
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": kind, key: p}}
                for p in pieces
            ]
            events.append({"type": "content_block_stop", "index": index})
        stopped = {"stop_reason": stop, "stop_sequence": None}
        output = reply.usage.output_tokens
        events += [
            {"type": "message_delta", "delta": stopped, "usage": {"output_tokens": output}},
            {"type": "message_stop"},
        ]
        return events

    def render_error(self, status: int, message: str) -> bytes:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }
        return _json(
            {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
        )


# ====================================================================== Gemini
_GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/([^:/?]+):(\w+)")


class GeminiWire(WireServer):
    """generateContent / streamGenerateContent / batchEmbedContents of the Gemini API."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: the thought signatures handed out with function calls, checked when they come back
        self.ledger = ReasoningLedger()

    def route(self, method: str, path: str) -> str | None:
        m = _GEMINI_PATH.match(path)
        if method != "POST" or m is None:
            return None
        if m.group(2) in ("generateContent", "streamGenerateContent"):
            return "chat"
        if m.group(2) in ("batchEmbedContents", "embedContent"):
            return "embeddings"
        return None

    def wants_stream(self, path: str, body: Any) -> bool:
        return ":streamGenerateContent" in path

    @staticmethod
    def usage(reply: ScriptedReply) -> dict[str, int]:
        u = reply.usage
        return {
            "promptTokenCount": u.input_tokens,
            "candidatesTokenCount": u.output_tokens - u.reasoning_tokens,
            "totalTokenCount": u.input_tokens + u.output_tokens,
            "cachedContentTokenCount": u.cache_read_tokens,
            "thoughtsTokenCount": u.reasoning_tokens,
        }

    @staticmethod
    def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        return cand

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        if refused := gemini_refusal(body, self.ledger):
            return WireResponse(400, self.render_error(400, refused))
        model = reply.model or "gemini-2.5-flash"
        calls = [
            {"functionCall": {"id": c.id, "name": c.name, "args": dict(c.arguments)}}
            for c in reply.tool_calls
        ]
        thoughts = gemini_thoughts(reply.reasoning, calls, self.ledger)
        usage = {"usageMetadata": self.usage(reply)}

        def event(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
            return {"candidates": [self._candidate(parts, finish)], "modelVersion": model}

        if not stream:
            parts = thoughts + ([{"text": reply.content}] if reply.content else []) + calls
            return WireResponse(body=_json({**event(parts, "STOP"), **usage}))
        events = [event(thoughts)] if thoughts else []
        events += [event([{"text": p}]) for p in split_text(reply.content)]
        events += [event(calls)] if calls else []
        events.append({**event([{"text": ""}], "STOP"), **usage})
        return WireResponse(content_type="text/event-stream", chunks=sse(events))

    def render_embeddings(self, body: Any, path: str) -> WireResponse:
        requests = body.get("requests") or [body]
        texts = ["".join(p.get("text", "") for p in r["content"]["parts"]) for r in requests]
        return WireResponse(body=_json({"embeddings": [{"values": v} for v in _vectors(texts)]}))

    def render_error(self, status: int, message: str) -> bytes:
        names = {
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            403: "PERMISSION_DENIED",
            429: "RESOURCE_EXHAUSTED",
            500: "INTERNAL",
            503: "UNAVAILABLE",
        }
        return _json(
            {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
        )


# ====================================================================== Ollama
class OllamaWire(WireServer):
    """``/api/chat`` and ``/api/embed`` of an Ollama server."""

    routes: ClassVar[dict[str, str]] = {"/api/chat": "chat", "/api/embed": "embeddings"}

    def wants_stream(self, path: str, body: Any) -> bool:
        return bool(isinstance(body, dict) and body.get("stream", True))

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        model = reply.model or _model(body, "llama3.2")
        base = {"model": model, "created_at": "2026-11-30T00:00:00Z"}
        calls = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in reply.tool_calls
        ]
        final = {
            "done": True,
            "done_reason": "stop",
            "total_duration": 1000,
            "prompt_eval_count": reply.usage.input_tokens,
            "eval_count": reply.usage.output_tokens,
        }
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if calls:
                message["tool_calls"] = calls
            return WireResponse(body=_json({**base, "message": message, **final}))
        lines = [
            {**base, "message": {"role": "assistant", "content": p}, "done": False}
            for p in split_text(reply.content)
        ]
        if calls:
            lines.append(
                {
                    **base,
                    "message": {"role": "assistant", "content": "", "tool_calls": calls},
                    "done": False,
                }
            )
        lines.append({**base, "message": {"role": "assistant", "content": ""}, **final})
        return WireResponse(
            content_type="application/x-ndjson",
            chunks=[(json.dumps(x) + "\n").encode() for x in lines],
        )

    def render_embeddings(self, body: Any, path: str) -> WireResponse:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return WireResponse(
            body=_json({"model": _model(body, "nomic-embed-text"), "embeddings": _vectors(texts)})
        )

    def render_error(self, status: int, message: str) -> bytes:
        return _json({"error": message})
