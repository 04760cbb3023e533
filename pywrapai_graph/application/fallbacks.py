"""FallbackChain: the models one call may ask, in order, and when to ask the next one."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Sequence,
)
from dataclasses import dataclass
from typing import TypeVar

from pywrapai_graph.application.chat_stream import StreamEvent
from pywrapai_graph.domain import ChatRequest, FailedAttempt, StreamChunk
from pywrapai_graph.errors import (
    InvalidArgumentError,
    ProviderError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
)
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["FALLBACK_ERRORS", "FallbackChain", "ModelTarget"]

#: The failures another model may not have: a rate limit (ours or the provider's), a
#: timeout, a provider that cannot be reached or fails on its side (5xx, overloaded). A
#: refusal is an answer, and a bad request or bad credentials would fail the same way again.
FALLBACK_ERRORS: tuple[type[ProviderError], ...] = (
    RateLimitError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)

_log = logging.getLogger("pywrapai_graph.llm")

S = TypeVar("S")
T = TypeVar("T")
C = TypeVar("C")
E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class ModelTarget:
    """One model of a chain: the adapter that calls its provider, and the model's name."""

    chat_model: ChatModel
    model: str

    @property
    def provider(self) -> str:
        """The provider name, e.g. "openai"."""
        return self.chat_model.provider

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


#: One attempt: (the model, the request for it, what failed before it) -> the result.
Attempt = Callable[[ModelTarget, ChatRequest, tuple[FailedAttempt, ...]], T]
#: One streamed attempt: as :data:`Attempt`, with the chunks of the model's stream.
StreamAttempt = Callable[
    [ModelTarget, ChatRequest, Iterator[StreamChunk], tuple[FailedAttempt, ...]],
    Generator[StreamEvent, None, None],
]
AsyncStreamAttempt = Callable[
    [ModelTarget, ChatRequest, AsyncIterator[StreamChunk], tuple[FailedAttempt, ...]],
    AsyncGenerator[StreamEvent, None],
]


class FallbackChain:
    """Asks the first model; on a :data:`FALLBACK_ERRORS` failure, the next one, and so on.

    The last model's failure propagates. A stream moves on only while it has produced no
    text: once a token reached the caller, a failure is the caller's to see. Every move is
    a WARNING record on ``pywrapai_graph.llm`` naming the models and the error's type (never
    its message or the request).

    Args:
        targets: the primary model first, then its fallbacks.

    Raises:
        InvalidArgumentError: no target.
    """

    def __init__(self, targets: Sequence[ModelTarget]) -> None:
        if not targets:
            raise InvalidArgumentError("a fallback chain needs at least one model")
        self._targets = tuple(targets)

    @property
    def targets(self) -> tuple[ModelTarget, ...]:
        """The models, in the order they are asked."""
        return self._targets

    @property
    def primary(self) -> ModelTarget:
        """The model asked first."""
        return self._targets[0]

    def request_for(self, index: int, request: ChatRequest) -> ChatRequest:
        """``request`` addressed to the model at ``index``."""
        if index == 0:
            return request
        return dataclasses.replace(request, model=self._targets[index].model)

    def _moved_on(
        self, index: int, request: ChatRequest, exc: ProviderError, failed: list[FailedAttempt]
    ) -> bool:
        """Note the failure of the model at ``index``; False when no model is left."""
        if index + 1 >= len(self._targets):
            return False
        target = self._targets[index]
        attempt = FailedAttempt(
            target.provider,
            self.request_for(index, request).model,
            type(exc).__name__,
            exc.status_code,
        )
        failed.append(attempt)
        _log.warning(
            "chat fallback: %s failed, asking %s",
            attempt,
            self._targets[index + 1],
            extra={"attributes": {"pywrapai.fallback.failed": str(attempt)}},
        )
        return True

    def attempts(self, request: ChatRequest, attempt: Attempt[Core[S, T]]) -> Core[S, T]:
        """The result of ``attempt`` for the first model that answers, in order: a core
        (:mod:`~pywrapai_graph.ports.sync_async`) running each model's attempt core in turn,
        so the sync and async calls share it."""
        failed: list[FailedAttempt] = []
        index = 0
        while True:
            try:
                target = self._targets[index]
                sent = self.request_for(index, request)
                return (yield from attempt(target, sent, tuple(failed)))
            except FALLBACK_ERRORS as exc:
                if not self._moved_on(index, request, exc, failed):
                    raise
            index += 1

    def stream(
        self, request: ChatRequest, first: Iterator[StreamChunk], attempt: StreamAttempt
    ) -> Iterator[StreamEvent]:
        """The events of the first stream that produces text; ``first`` is the primary
        model's stream (already translated, so a misuse raised before any iteration)."""
        opening = functools.partial(_opening, first, lambda m, sent: m.stream(sent), attempt)
        events, head = drive(self.attempts(request, opening), lambda events: next(events, None))
        with contextlib.closing(events):
            yield from head
            yield from events

    async def astream(
        self, request: ChatRequest, first: AsyncIterator[StreamChunk], attempt: AsyncStreamAttempt
    ) -> AsyncIterator[StreamEvent]:
        """Async :meth:`stream`."""
        opening = functools.partial(_opening, first, lambda m, sent: m.astream(sent), attempt)
        events, head = await adrive(self.attempts(request, opening), lambda e: anext(e, None))
        async with contextlib.aclosing(events):
            for event in head:
                yield event
            async for event in events:
                yield event


def _opening(
    first: C,
    open: Callable[[ChatModel, ChatRequest], C],
    attempt: Callable[[ModelTarget, ChatRequest, C, tuple[FailedAttempt, ...]], E],
    target: ModelTarget,
    sent: ChatRequest,
    failed: tuple[FailedAttempt, ...],
) -> Core[E, tuple[E, list[StreamEvent]]]:
    """A model's stream as an attempt of :meth:`FallbackChain.attempts`: its events and the
    first one (text, or the response of a stream without text), read by the caller's step."""
    events = attempt(target, sent, open(target.chat_model, sent) if failed else first, failed)
    head: StreamEvent | None = yield events
    return events, [head] if head is not None else []
