"""The conversation port: what the agent needs from ``GraphLLM``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Unpack, runtime_checkable

from pywrapai_graph.domain import GenerationOptions, LLMResponse, Message, ToolSpec
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["Conversation"]


@runtime_checkable
class Conversation(Protocol):
    """Assembles and sends messages (``GraphLLM`` is the implementation)."""

    def chat(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """One call."""
        ...

    async def achat(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        rag: bool = True,
        *,
        filter: MetadataFilter | None = None,
        rag_k: int | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """One call on the provider's async client."""
        ...
