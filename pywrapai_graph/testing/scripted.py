"""ScriptedChatModel: a chat model that answers from a script, for offline tests and demos."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from pywrapai_graph.domain import (
    ChatRequest,
    LLMResponse,
    ReasoningPart,
    StreamChunk,
    TokenUsage,
    ToolCall,
    ToolCallDelta,
)
from pywrapai_graph.ports import ChatModel

__all__ = ["ScriptExhaustedError", "ScriptedChatModel", "ScriptedReply"]


class ScriptExhaustedError(AssertionError):
    """The scripted model was called more times than it has replies."""


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One reply of the script: text and/or tool calls, with the usage to report, and the
    reasoning that came first (wire servers render it in their provider's format)."""

    content: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(10, 5))
    model: str | None = None
    reasoning: Sequence[ReasoningPart] = ()


Responder = Callable[[ChatRequest], "ScriptedReply | str"]


def split_text(text: str, pieces: int = 3) -> list[str]:
    """``text`` cut into about ``pieces`` parts (none for an empty text), as a stream sends it."""
    step = max(1, -(-len(text) // pieces))
    return [text[i : i + step] for i in range(0, len(text), step)]


class ScriptedChatModel(ChatModel):
    """Answers each request with the next scripted reply; records every request it gets.

    Args:
        replies: replies in order (a plain string is a text reply).
        respond: alternatively, a function computing the reply from the request; used once
            the queued replies are spent.
        model: the default model name reported.
        provider: the provider name reported (default "scripted", which costs nothing).
        stream_pieces: how many pieces a streamed reply is cut into (at least 1).

    Raises:
        ScriptExhaustedError: (from chat/stream) when no reply is left and no ``respond``.

    Example:
        >>> fake = ScriptedChatModel(["Hello!"])
        >>> from pywrapai_graph import LLM
        >>> LLM(provider=fake).chat("Hi").content
        'Hello!'
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply | str] = (),
        *,
        respond: Responder | None = None,
        model: str = "scripted-model",
        provider: str = "scripted",
        stream_pieces: int = 3,
    ) -> None:
        self._queue: deque[ScriptedReply | str] = deque(replies)
        self._respond = respond
        self._model = model
        self._provider = provider
        self._pieces = max(1, stream_pieces)
        self._lock = threading.Lock()
        self.requests: list[ChatRequest] = []

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def default_model(self) -> str:
        return self._model

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def add(self, *replies: ScriptedReply | str) -> None:
        """Queue more replies."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        """Replies still queued."""
        with self._lock:
            return len(self._queue)

    def _next(self, request: ChatRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
            item = self._queue.popleft() if self._queue else None
        if item is None:
            if self._respond is None:
                raise ScriptExhaustedError(
                    f"ScriptedChatModel has no reply left for call #{len(self.requests)}; "
                    "queue more with add() or pass respond="
                )
            item = self._respond(request)
        return ScriptedReply(item) if isinstance(item, str) else item

    def _response(self, request: ChatRequest) -> LLMResponse:
        reply = self._next(request)
        return LLMResponse(
            content=reply.content,
            tool_calls=list(reply.tool_calls),
            usage=reply.usage,
            model=reply.model or request.model,
            provider=self._provider,
            finish_reason="tool_calls" if reply.tool_calls else "stop",
            reasoning=tuple(reply.reasoning),
        )

    def chat(self, request: ChatRequest) -> LLMResponse:
        return self._response(request)

    async def achat(self, request: ChatRequest) -> LLMResponse:
        return self._response(request)

    def _pieces_of(self, request: ChatRequest) -> list[StreamChunk]:
        """The reply as a provider streams it: its text in pieces, each tool call's name then
        its JSON arguments in pieces, and a final chunk with the usage and the calls."""
        reply = self._next(request)
        chunks = [StreamChunk(text=piece) for piece in split_text(reply.content, self._pieces)]
        for i, call in enumerate(reply.tool_calls):
            pieces = split_text(json.dumps(call.arguments), self._pieces)
            deltas = [
                ToolCallDelta(i, call.id, call.name),
                *(ToolCallDelta(i, None, None, p) for p in pieces),
            ]
            chunks += [StreamChunk(tool_call_deltas=(d,)) for d in deltas]
        model = reply.model or request.model
        chunks.append(
            StreamChunk(
                usage=reply.usage,
                model=model,
                tool_calls=tuple(reply.tool_calls),
                reasoning=tuple(reply.reasoning),
            )
        )
        return chunks

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        yield from self._pieces_of(request)

    async def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        for chunk in self._pieces_of(request):
            yield chunk

    def __repr__(self) -> str:
        return f"ScriptedChatModel(remaining={self.remaining}, calls={len(self.requests)})"
