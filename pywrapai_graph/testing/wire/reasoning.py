"""Reasoning on the wire: Anthropic thinking blocks and OpenAI-compatible
``reasoning_content``, rendered in replies and checked in the requests that follow.

Like the real APIs, a wire server refuses (400, in its provider's error format) a request
that drops the reasoning it handed out with a tool call:

* Anthropic, with ``thinking`` enabled: the final assistant turn of a tool-use loop must
  start with its thinking blocks, each with the signature it came with (byte for byte);
  redacted blocks with their data unchanged.
* OpenAI-compatible servers in thinking mode (DeepSeek, Kimi): an assistant message with
  tool calls must carry the ``reasoning_content`` it came with.
* Gemini (3 and later): the first function call of a step must carry the thought signature
  it came with.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from pywrapai_graph.domain import ReasoningPart
from pywrapai_graph.testing.scripted import split_text

__all__ = [
    "ReasoningLedger",
    "anthropic_events",
    "anthropic_refusal",
    "anthropic_thinking",
    "gemini_refusal",
    "gemini_thoughts",
    "openai_refusal",
]

#: the Messages API's words for a tool-use turn sent back without its thinking
MISSING_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    "disable `thinking`."
)
#: DeepSeek's words for a tool-call turn sent back without its reasoning_content
MISSING_REASONING = "The `reasoning_content` in the thinking mode must be passed back to the API."
#: Gemini's words for a function call sent back without its thought signature
MISSING_SIGNATURE = "Function call is missing a thought_signature in functionCall parts."
_THINKING = ("thinking", "redacted_thinking")
_ON = ("enabled", "adaptive")  # the thinking types that think


class ReasoningLedger:
    """The reasoning a server handed out with each tool call id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._given: dict[str, Any] = {}

    def give(self, call_ids: Iterable[str], reasoning: Any) -> None:
        """Remember ``reasoning`` as handed out with the calls ``call_ids``."""
        with self._lock:
            self._given.update(dict.fromkeys(call_ids, reasoning))

    def given(self, call_ids: Iterable[str]) -> Any:
        """What was handed out with the first of ``call_ids`` that got any (None: nothing)."""
        with self._lock:
            return next((self._given[i] for i in call_ids if i in self._given), None)


# ---------------------------------------------------------------------- Anthropic
def anthropic_thinking(parts: Sequence[ReasoningPart]) -> list[dict[str, Any]]:
    """The content blocks of ``parts``, as a Messages reply carries them first."""
    return [
        {"type": "redacted_thinking", "data": p.redacted}
        if p.redacted is not None
        else {"type": "thinking", "thinking": p.text, "signature": p.signature or ""}
        for p in parts
    ]


def anthropic_events(parts: Sequence[ReasoningPart]) -> list[dict[str, Any]]:
    """The stream events of ``parts`` (blocks 0..n-1): a thinking block starts empty, fills
    with ``thinking_delta`` pieces and closes with its ``signature_delta``; a redacted block
    arrives whole in its start."""
    events: list[dict[str, Any]] = []
    for index, block in enumerate(anthropic_thinking(parts)):
        delta = {"type": "content_block_delta", "index": index}
        if block["type"] == "redacted_thinking":
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        else:
            start = {"type": "thinking", "thinking": ""}
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            events += [
                {**delta, "delta": {"type": "thinking_delta", "thinking": piece}}
                for piece in split_text(block["thinking"])
            ]
            signed = {"type": "signature_delta", "signature": block["signature"]}
            events.append({**delta, "delta": signed})
        events.append({"type": "content_block_stop", "index": index})
    return events


def _blocks(turn: dict[str, Any]) -> list[dict[str, Any]]:
    content = turn.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def anthropic_refusal(body: Any, ledger: ReasoningLedger) -> str | None:
    """Why the Messages API would refuse ``body`` for its thinking blocks (None: it would
    not): with thinking enabled, the last assistant turn that used tools must start with the
    thinking blocks that came with those tool calls, unchanged."""
    if not isinstance(body, dict) or (body.get("thinking") or {}).get("type") not in _ON:
        return None
    turns: list[dict[str, Any]] = body.get("messages") or []
    last = max((i for i, t in enumerate(turns) if t.get("role") == "assistant"), default=None)
    if last is None or last != len(turns) - 2:
        return None  # no assistant turn just before the tool results
    blocks = _blocks(turns[last])
    uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    if not uses:
        return None
    if blocks[0].get("type") not in _THINKING:
        return MISSING_THINKING.format(index=last, found=blocks[0].get("type"))
    given = ledger.given(uses)
    sent = [b for b in blocks if b.get("type") in _THINKING]
    if given is not None and sent != given:
        return f"messages.{last}.content.0: Invalid `signature` in `thinking` block"
    return None


# ---------------------------------------------------------------------- OpenAI-compatible
def openai_refusal(body: Any, ledger: ReasoningLedger) -> str | None:
    """Why a thinking-mode server (DeepSeek) would refuse ``body``: an assistant message with
    tool calls that lacks the ``reasoning_content`` it came with (None: it would not)."""
    if not isinstance(body, dict):
        return None
    for message in body.get("messages") or ():
        ids = [c.get("id") for c in message.get("tool_calls") or ()]
        given = ledger.given(ids) if message.get("role") == "assistant" else None
        if given is not None and message.get("reasoning_content") != given:
            return MISSING_REASONING
    return None


# ---------------------------------------------------------------------- Gemini
def gemini_thoughts(
    parts: Sequence[ReasoningPart], calls: list[dict[str, Any]], ledger: ReasoningLedger
) -> list[dict[str, Any]]:
    """The thought parts of a reply (``thought: true`` summaries); the first signature of
    ``parts`` goes on the first of ``calls`` (and into ``ledger``)."""
    signature = next((p.signature for p in parts if p.signature), None)
    if signature is not None and calls:
        calls[0]["thoughtSignature"] = signature
        ledger.give((c["functionCall"]["id"] for c in calls), signature)
    return [{"text": p.text, "thought": True} for p in parts if p.text]


def _decoded(signature: object) -> bytes | None:
    """The bytes of a base64 signature (either alphabet, as the SDK may send either)."""
    if not isinstance(signature, str):
        return None
    try:
        return base64.b64decode(signature.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None


def gemini_refusal(body: Any, ledger: ReasoningLedger) -> str | None:
    """Why Gemini would refuse ``body``: a step's first function call sent back without the
    thought signature it came with (None: it would not)."""
    if not isinstance(body, dict):
        return None
    for content in body.get("contents") or ():
        calls = [p for p in content.get("parts") or () if "functionCall" in p]
        given = ledger.given(c["functionCall"].get("id") for c in calls) if calls else None
        if given is not None and _decoded(calls[0].get("thoughtSignature")) != _decoded(given):
            return MISSING_SIGNATURE
    return None
