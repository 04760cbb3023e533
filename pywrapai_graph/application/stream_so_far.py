"""StreamSoFar: what a streamed reply produced so far, and what to book if it ends early."""

from __future__ import annotations

import contextvars
import dataclasses

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.input_tokens import (
    MediaTokens,
    estimate_input_tokens,
    generic_media_tokens,
)
from pywrapai_graph.application.observability.observation import stopped
from pywrapai_graph.domain import ChatRequest, ReasoningPart, StreamChunk, TokenUsage, ToolCall
from pywrapai_graph.errors import IncompleteStreamError, ResponseFormatError

__all__ = ["StreamSoFar"]


class StreamSoFar:
    """Folds the chunks of one stream: its text, the usage, model and reasoning the provider
    reported, and the tool calls of its final chunk.

    A stream that ends early — the consumer closed it (``break``, ``close()``, garbage
    collection) or cancelled its task, or the provider cut it off — was still billed for what
    the provider produced; :meth:`unfinished_usage` says what to book then.

    The context of the first chunk is kept (:attr:`context`), so a stream closed later by the
    garbage collector books into the cost scopes that were open while it was read.
    """

    __slots__ = ("context", "model", "parts", "reasoning", "tool_calls", "usage")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.usage: TokenUsage | None = None
        self.model: str | None = None
        self.context: contextvars.Context | None = None
        self.reasoning: tuple[ReasoningPart, ...] = ()
        self.tool_calls: tuple[ToolCall, ...] = ()

    def start(self) -> None:
        """The consumer asked for the first chunk: the request is about to be sent."""
        self.context = contextvars.copy_context()

    def add(self, chunk: StreamChunk) -> None:
        """Fold one chunk."""
        if chunk.text:
            self.parts.append(chunk.text)
        self.usage = chunk.usage or self.usage
        self.model = chunk.model or self.model
        self.reasoning = chunk.reasoning or self.reasoning
        self.tool_calls = chunk.tool_calls or self.tool_calls

    @property
    def text(self) -> str:
        """The text received so far."""
        return "".join(self.parts)

    def billed(self, exc: BaseException) -> bool:
        """Whether a stream that ended with ``exc`` cost anything: the consumer stopped it
        after the request was sent, text had arrived, or a reply arrived unfinished. A
        request refused before any reply (a 401, a 429) costs nothing."""
        return stopped(exc) or bool(self.parts) or isinstance(exc, _ARRIVED)

    def unfinished_usage(
        self,
        request: ChatRequest,
        exc: BaseException,
        media_tokens: MediaTokens | None = None,
    ) -> tuple[TokenUsage, bool]:
        """(usage to book, whether any of it is estimated) for a stream that ended with
        ``exc``: what the provider reported, each missing count estimated at 4 characters per
        token — the input from the request's messages (images and documents at
        ``media_tokens``, the provider's formula; None: a generic guess), the output from
        the text so far."""
        reported = getattr(exc, "usage", None)
        usage = reported if isinstance(reported, TokenUsage) else self.usage or TokenUsage()
        estimated = False
        if not usage.input_tokens:
            sent = estimate_input_tokens(request.messages, media_tokens or generic_media_tokens)
            usage = dataclasses.replace(usage, input_tokens=sent)
            estimated = True
        if not usage.output_tokens and self.parts:
            usage = dataclasses.replace(usage, output_tokens=estimate_tokens([self.text]))
            estimated = True
        return usage, estimated


_ARRIVED = (IncompleteStreamError, ResponseFormatError)  # a reply arrived, unfinished
