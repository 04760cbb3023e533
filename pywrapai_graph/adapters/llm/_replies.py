"""What every chat adapter does with a reply it cannot trust: garbage, a cut stream, a 429.

* :class:`~pywrapai_graph.adapters._transport.BodyRecorder` (beside the HTTP-stack kit)
  keeps the last body, so a reply the SDK cannot decode is reported with it.
* :func:`decoding` turns the decoding failures of an SDK or of our translation into one
  :class:`~pywrapai_graph.errors.ResponseFormatError` carrying that body.
* :func:`retrying` / :func:`aretrying` retry rate limits, timeouts and 5xx for SDKs that do
  not (or not with ``Retry-After``), waiting what the server asked for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

from pywrapai_graph.adapters._provider_errors import decoding
from pywrapai_graph.adapters._provider_payload import parse_arguments
from pywrapai_graph.domain import StreamChunk, TokenUsage, ToolCall, ToolCallDelta
from pywrapai_graph.errors import (
    IncompleteStreamError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    ResponseFormatError,
)

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "StreamTally",
    "aretrying",
    "decoding",
    "incomplete",
    "retrying",
]

T = TypeVar("T")
#: seconds; the OpenAI and Anthropic SDKs' own default, applied to every provider
DEFAULT_TIMEOUT = 600.0
#: the OpenAI and Anthropic SDKs' own default, applied to every provider
DEFAULT_MAX_RETRIES = 2
_retry_log = logging.getLogger("pywrapai_graph.retries")
_MAX_WAIT = 60.0  # never sleep longer than this, whatever Retry-After says


def incomplete(provider: str, marker: str, partial: str) -> IncompleteStreamError:
    """The error for a stream that ended before ``marker``."""
    return IncompleteStreamError(
        f"{provider}: the stream ended before its end marker ({marker}); the answer is "
        f"truncated after {len(partial)} characters. Retry the request.",
        provider=provider,
        partial=partial,
    )


class StreamTally(ABC):
    """Follows one provider stream: :meth:`feed` each event (subclasses), then :meth:`final`.

    Keeps the text so far, the tool-call pieces (:meth:`call_delta`), the usage and the
    model, and whether the provider's end marker (``marker``) arrived: :meth:`final` raises
    IncompleteStreamError when it did not, and carries the tool calls the pieces make.
    """

    marker: ClassVar[str]

    def __init__(self, provider: str) -> None:
        #: the adapter's provider name (a platform's, for a provider's API on a platform)
        self.provider = provider
        self.parts: list[str] = []
        self.usage = TokenUsage()
        self.model: str | None = None
        self.ended = False
        self.deltas: list[ToolCallDelta] = []
        self._handed = 0  # deltas already handed on in a chunk

    @abstractmethod
    def feed(self, event: Any) -> str:
        """Take one event; return its text (possibly empty), which :meth:`step` keeps."""

    def text(self) -> str:
        """The text received so far."""
        return "".join(self.parts)

    def reported(self) -> TokenUsage:
        """The usage the provider has reported so far (all zero before it says anything)."""
        return self.usage

    def call_delta(
        self, index: int, id: str | None = None, name: str | None = None, arguments: str = ""
    ) -> None:
        """Note a piece of tool call ``index`` (``feed`` calls it): its id and name when the
        provider starts the call, then pieces of its JSON arguments."""
        self.deltas.append(ToolCallDelta(index, id, name, arguments))

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls the pieces make, in index order (id ``call_<index>`` where the provider
        gave none).

        Raises:
            ResponseFormatError: a call's arguments are not a JSON object.
        """
        ids: dict[int, str] = {}
        names: dict[int, str] = {}
        arguments: dict[int, list[str]] = {}
        for d in self.deltas:
            arguments.setdefault(d.index, []).append(d.arguments)
            if d.id:
                ids.setdefault(d.index, d.id)
            if d.name:
                names.setdefault(d.index, d.name)
        calls = []
        for i in sorted(arguments):
            name = names.get(i, "")
            args = parse_arguments("".join(arguments[i]), name)
            calls.append(ToolCall(ids.get(i, f"call_{i}"), name, args))
        return tuple(calls)

    def chunk(self, text: str, before: TokenUsage) -> StreamChunk | None:
        """The chunk to hand on after an event: its text and tool-call pieces, and the usage
        when the provider reported more than ``before`` (so a stream stopped early books what
        was reported); None when the event brought none of these."""
        deltas = tuple(self.deltas[self._handed :])
        self._handed = len(self.deltas)
        usage = self.reported()
        if usage == before:
            return StreamChunk(text, tool_call_deltas=deltas) if text or deltas else None
        return StreamChunk(text, usage, tool_call_deltas=deltas)

    def step(self, event: Any) -> StreamChunk | None:
        """:meth:`feed` one event; the chunk to hand on after it (see :meth:`chunk`)."""
        before = self.reported()
        text = self.feed(event)
        self.parts.append(text)
        return self.chunk(text, before)

    def final(self) -> StreamChunk:
        """The closing chunk (usage, model, tool calls), or IncompleteStreamError if the
        stream was cut.

        Raises:
            IncompleteStreamError: the end marker never arrived.
            ResponseFormatError: a tool call's arguments are not a JSON object (with the
                usage, billed all the same).
        """
        if not self.ended:
            raise incomplete(self.provider, self.marker, self.text())
        try:
            calls = self.tool_calls()
        except ResponseFormatError as exc:
            exc.usage = self.usage
            raise
        return StreamChunk(usage=self.usage, model=self.model, tool_calls=calls)


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, RateLimitError | ProviderTimeoutError):
        return True
    return isinstance(exc, ProviderUnavailableError) and (
        exc.status_code is None or exc.status_code >= 500
    )


def _wait(exc: Exception, attempt: int) -> float:
    after = exc.retry_after if isinstance(exc, RateLimitError) else None
    if after is not None and after >= 0:
        return min(after, _MAX_WAIT)
    return min(0.5 * 2.0**attempt, 8.0)


def _announce(exc: Exception, wait: float, attempt: int, max_retries: int) -> float:
    provider = getattr(exc, "provider", None) or "provider"
    _retry_log.warning(
        "%s: retrying in %.2f s after %s (retry %d of %d)",
        provider,
        wait,
        type(exc).__name__,
        attempt + 1,
        max_retries,
        extra={"attributes": {"gen_ai.provider.name": provider, "retry": attempt + 1}},
    )
    return wait


def retrying(
    call: Callable[[], T], max_retries: int, sleep: Callable[[float], None] = time.sleep
) -> T:
    """``call()``, retried up to ``max_retries`` times on 429, timeouts, 5xx and lost
    connections, sleeping ``Retry-After`` when the server sent one (else 0.5 s, 1 s, 2 s...)."""
    attempt = 0
    while True:
        try:
            return call()
        except (RateLimitError, ProviderUnavailableError, ProviderTimeoutError) as exc:
            if attempt >= max_retries or not _retryable(exc):
                raise
            sleep(_announce(exc, _wait(exc, attempt), attempt, max_retries))
            attempt += 1


async def aretrying(
    call: Callable[[], Awaitable[T]],
    max_retries: int,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """The async twin of :func:`retrying`."""
    attempt = 0
    while True:
        try:
            return await call()
        except (RateLimitError, ProviderUnavailableError, ProviderTimeoutError) as exc:
            if attempt >= max_retries or not _retryable(exc):
                raise
            await sleep(_announce(exc, _wait(exc, attempt), attempt, max_retries))
            attempt += 1
