"""The conversation port: what the agent needs from ``GraphLLM``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Iterator, Sequence
from typing import Protocol, TypeVar, Unpack, runtime_checkable

from pywrapai_graph.domain import (
    GenerationOptions,
    LLMResponse,
    Message,
    ToolCallDelta,
    ToolSpec,
)
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["AsyncReplyStream", "Conversation", "ReplyStream", "StreamingConversation"]

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


class ReplyStream(Protocol):
    """A streamed reply (``ChatStream``): its events, then its whole response."""

    def events(self) -> Iterator[str | ToolCallDelta]:
        """Text pieces and tool-call pieces, in order."""
        ...

    @property
    def response(self) -> LLMResponse:
        """The whole response, once the events are exhausted."""
        ...

    def close(self) -> None:
        """Stop early; what was produced is booked."""
        ...


class AsyncReplyStream(Protocol):
    """Async :class:`ReplyStream` (``AsyncChatStream``)."""

    def events(self) -> AsyncGenerator[str | ToolCallDelta, None]:
        """Text pieces and tool-call pieces, in order."""
        ...

    @property
    def response(self) -> LLMResponse:
        """The whole response, once the events are exhausted."""
        ...

    async def aclose(self) -> None:
        """Stop early; what was produced is booked."""
        ...


@runtime_checkable
class StreamingConversation(Conversation, Protocol):
    """A conversation that also streams a call offering tools (what ``Agent.stream`` needs;
    ``GraphLLM`` is the implementation)."""

    @property
    def stream_with_tools(self) -> _Chat[ReplyStream]:
        """One call, streamed."""
        ...

    @property
    def astream_with_tools(self) -> _Chat[AsyncReplyStream]:
        """One call, streamed on the provider's async client."""
        ...
