"""ChatStream / AsyncChatStream: iterate a reply's text (or all its events), then read the
whole response."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Generic, TypeVar

from pywrapai_graph.domain import LLMResponse, ToolCallDelta
from pywrapai_graph.errors import StreamNotFinishedError

__all__ = ["AsyncChatStream", "ChatStream", "ReplyEvent", "StreamEvent"]

S = TypeVar("S")

#: What :meth:`ChatStream.events` yields: text pieces and pieces of tool calls, in the order
#: the model produced them.
ReplyEvent = str | ToolCallDelta
#: What a stream's source yields: reply events, then one final :class:`LLMResponse`.
StreamEvent = str | ToolCallDelta | LLMResponse

_EARLY = (
    "the stream is not finished: iterate it to the end before reading .response "
    "(usage, cost and context are known only then)"
)


class _Received(Generic[S]):
    """What a stream (reading ``source``) has delivered so far: its text pieces, then its
    final response."""

    def __init__(self, source: S) -> None:
        self._source = source
        self._text: list[str] = []
        self._response: LLMResponse | None = None

    def _take(self, event: StreamEvent) -> ReplyEvent | None:
        """Record ``event``; the event to hand out, or None for the final response."""
        if isinstance(event, LLMResponse):
            content = event.content or "".join(self._text)
            self._response = dataclasses.replace(event, content=content)
            return None
        if isinstance(event, str):
            self._text.append(event)
        return event

    @property
    def done(self) -> bool:
        """True once the final response has arrived."""
        return self._response is not None

    @property
    def response(self) -> LLMResponse:
        """The whole response (text, usage, cost, context).

        Raises:
            StreamNotFinishedError: the stream has not been iterated to its end.
        """
        if self._response is None:
            raise StreamNotFinishedError(_EARLY)
        return self._response


class ChatStream(_Received[Iterator[StreamEvent]], Iterator[str]):
    """The text of a streamed reply, piece by piece; afterwards, the whole response.

    ``for piece in graph.stream(...)`` works as with a plain iterator. Once the stream is
    exhausted, :attr:`response` holds the final :class:`LLMResponse`: the full text, usage,
    cost, tool calls and (from ``GraphLLM``) the injected context.

    Iterating yields text only; :meth:`events` yields every event of the reply in order: the
    text pieces (``str``) and, for a reply that calls tools (``stream_with_tools``), each
    call's :class:`~pywrapai_graph.domain.ToolCallDelta` pieces as the model streams them.

    Args:
        source: yields text pieces, then exactly one ``LLMResponse``.
    """

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> str:
        for event in self._source:
            piece = self._take(event)
            if isinstance(piece, str):
                return piece
        raise StopIteration

    def events(self) -> Iterator[ReplyEvent]:
        """Every event left, in order: text pieces (``str``) and tool-call pieces
        (:class:`~pywrapai_graph.domain.ToolCallDelta`); :attr:`response` once exhausted."""
        for event in self._source:
            taken = self._take(event)
            if taken is not None:
                yield taken

    def text(self) -> str:
        """Consume what is left and return the whole text."""
        for _ in self:
            pass
        return self.response.content

    def close(self) -> None:
        """Stop early and release the connection; what was produced is recorded (usage
        estimated when the provider had not reported it yet)."""
        close = getattr(self._source, "close", None)
        if close is not None:
            close()


class AsyncChatStream(_Received[AsyncIterator[StreamEvent]], AsyncIterator[str]):
    """Async :class:`ChatStream`: ``async for piece in graph.astream(...)``, then ``.response``.

    Nothing runs until the first ``__anext__`` (``GraphLLM`` retrieves context then, off the
    event loop).
    """

    def __aiter__(self) -> AsyncChatStream:
        return self

    async def __anext__(self) -> str:
        async for event in self._source:
            piece = self._take(event)
            if isinstance(piece, str):
                return piece
        raise StopAsyncIteration

    async def events(self) -> AsyncGenerator[ReplyEvent, None]:
        """Async :meth:`ChatStream.events`."""
        async for event in self._source:
            taken = self._take(event)
            if taken is not None:
                yield taken

    async def text(self) -> str:
        """Consume what is left and return the whole text."""
        async for _ in self:
            pass
        return self.response.content

    async def aclose(self) -> None:
        """Stop early and release the connection; what was produced is recorded (usage
        estimated when the provider had not reported it yet)."""
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            await aclose()
