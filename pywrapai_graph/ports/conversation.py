"""The conversation port: what the agent needs from ``GraphLLM``."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Protocol, TypeVar, Unpack, runtime_checkable

from pywrapai_graph.domain import GenerationOptions, LLMResponse, Message, ToolSpec
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["Conversation"]

R_co = TypeVar("R_co", covariant=True)


class _Chat(Protocol[R_co]):
    """The signature of ``chat`` and ``achat``, written once: messages in, ``R_co`` out."""

    def __call__(
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
    ) -> R_co: ...


@runtime_checkable
class Conversation(Protocol):
    """Assembles and sends messages (``GraphLLM`` is the implementation)."""

    @property
    def chat(self) -> _Chat[LLMResponse]:
        """One call."""
        ...

    @property
    def achat(self) -> _Chat[Awaitable[LLMResponse]]:
        """One call on the provider's async client."""
        ...
