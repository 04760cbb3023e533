"""Anthropic extended thinking: ``thinking`` and ``redacted_thinking`` blocks, read from a
reply (whole or streamed) and sent back first, unchanged, in the assistant turn they came
with — the Messages API rejects a tool-use turn whose thinking block is missing or altered."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.domain import ReasoningPart

__all__ = ["ThinkingStream", "reasoning_of", "thinking_blocks"]


def reasoning_of(block: Any, provider: str) -> ReasoningPart | None:
    """The reasoning a content block carries (None for any other block)."""
    if block.type == "thinking":
        return ReasoningPart(block.thinking, block.signature, provider=provider)
    if block.type == "redacted_thinking":
        return ReasoningPart(redacted=block.data, provider=provider)
    return None


def thinking_blocks(parts: Sequence[ReasoningPart], provider: str) -> list[dict[str, Any]]:
    """The blocks to send back for ``parts``: those ``provider`` produced, as they came (a
    part of another provider, or unsigned, means nothing to the Messages API)."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.provider != provider:
            continue
        if part.redacted is not None:
            blocks.append({"type": "redacted_thinking", "data": part.redacted})
        elif part.signature is not None:
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
    return blocks


class ThinkingStream:
    """Folds a stream's thinking blocks: started whole (redacted) or empty, then filled by
    ``thinking_delta`` and ``signature_delta`` events, by block index."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._blocks: dict[int, dict[str, Any]] = {}

    def feed(self, event: Any) -> None:
        """Take one stream event (events of other blocks are ignored)."""
        if event.type == "content_block_start":
            block = event.content_block
            if block.type in ("thinking", "redacted_thinking"):
                self._blocks[event.index] = block.to_dict()
        elif event.type == "content_block_delta" and event.index in self._blocks:
            kept = self._blocks[event.index]
            if event.delta.type == "thinking_delta":
                kept["thinking"] = kept.get("thinking", "") + event.delta.thinking
            elif event.delta.type == "signature_delta":
                kept["signature"] = kept.get("signature", "") + event.delta.signature

    def parts(self) -> tuple[ReasoningPart, ...]:
        """The reasoning received, in block order."""
        out: list[ReasoningPart] = []
        for _, block in sorted(self._blocks.items()):
            if block["type"] == "redacted_thinking":
                out.append(ReasoningPart(redacted=block["data"], provider=self._provider))
            else:
                signature = block.get("signature") or None
                text = block.get("thinking", "")
                out.append(ReasoningPart(text, signature, provider=self._provider))
        return tuple(out)
