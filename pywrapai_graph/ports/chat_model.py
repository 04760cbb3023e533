"""The chat-model port: what every LLM provider adapter implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from pywrapai_graph.domain import ChatRequest, DocumentPart, ImagePart, LLMResponse, StreamChunk

__all__ = ["ChatModel", "CountsMediaTokens"]


@runtime_checkable
class CountsMediaTokens(Protocol):
    """A chat model that knows its provider's token formula for images and documents, used
    to estimate the input of a call whose usage the provider never reported."""

    def media_tokens(self, part: ImagePart | DocumentPart) -> int:
        """The input tokens ``part`` costs on this provider (an estimate)."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A provider's chat API, in domain terms.

    Adapters receive a fully assembled :class:`ChatRequest` (system prompt first, neutral
    tool specs) and translate it to their wire format; they never reorder messages.

    Structured output: when ``request.response_format`` is set, the adapter asks for it the
    way its ``mode`` says (the provider's native JSON-schema field, or a forced tool) and
    returns the JSON document as ``LLMResponse.content`` (the facade validates it); on the
    forced-tool path it also returns that tool call in ``tool_calls``, which a retry answers
    with a tool result.

    Streaming: ``stream``/``astream`` yield text pieces and, as the model streams a tool
    call, its ``tool_call_deltas`` (a delta naming the call, then pieces of its JSON
    arguments); the last chunk carries the usage the provider reported for the whole stream
    and the decoded ``tool_calls``.

    Raises:
        pywrapai_graph.errors.ProviderError: (and subclasses) on any provider failure, with
            the SDK's exception as ``__cause__``.
        pywrapai_graph.errors.ResponseFormatError: when the provider's answer cannot be decoded.
    """

    @property
    def provider(self) -> str:
        """Short provider name, e.g. "openai"."""
        ...

    @property
    def default_model(self) -> str:
        """The model used when the caller names none."""
        ...

    def chat(self, request: ChatRequest) -> LLMResponse:
        """Send one request and return the complete response."""
        ...

    async def achat(self, request: ChatRequest) -> LLMResponse:
        """Async :meth:`chat`, on the provider's native async client."""
        ...

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        """Stream the response's text and tool-call deltas; the final chunk carries usage
        and the decoded tool calls."""
        ...

    def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        """Async :meth:`stream`."""
        ...

    def close(self) -> None:
        """Release the synchronous client's connections."""
        ...

    async def aclose(self) -> None:
        """Release the async client's connections (call it on the loop that used them)."""
        ...
