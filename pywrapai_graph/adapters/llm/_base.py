"""What every SDK chat adapter shares: its name, default model, clients and their closing, and
the path of a call and of a stream (errors translated, bad replies reported, retries where the
SDK does none)."""

from __future__ import annotations

import itertools
import warnings
from abc import abstractmethod
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from contextlib import contextmanager
from typing import Any, ClassVar

from pywrapai_graph.adapters._per_loop import (
    AsyncClient,
    PerLoop,
    SDKClients,
    SyncClient,
    close_async,
)
from pywrapai_graph.adapters._transport import BodyRecorder, log_retries
from pywrapai_graph.adapters.llm._replies import (
    StreamTally,
    aretrying,
    decoding,
    retrying,
)
from pywrapai_graph.application.input_tokens import generic_media_tokens
from pywrapai_graph.domain import (
    ChatRequest,
    LLMResponse,
    Message,
    Role,
    StreamChunk,
    ToolResult,
    UnsupportedParameterWarning,
)
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import ChatModel

_END = object()  # no first event: the stream was empty

__all__ = [
    "SDKChatModel",
    "add_tool_result",
    "system_text",
    "tool_result_of",
    "warn_unsupported",
]


def system_text(messages: Sequence[Message]) -> str | None:
    """The SYSTEM messages joined, for APIs that take the system prompt apart."""
    system = [m.content for m in messages if m.role is Role.SYSTEM]
    return "\n\n".join(system) if system else None


def tool_result_of(m: Message) -> ToolResult:
    """The result a TOOL message carries.

    Raises:
        ValueError: the message names no call (``tool_result`` is None).
    """
    if m.tool_result is None:
        raise InvalidArgumentError(
            "a TOOL message needs tool_result=ToolResult(...) to name its call"
        )
    return m.tool_result


def add_tool_result(
    turns: list[dict[str, Any]],
    key: str,
    item: dict[str, Any],
    is_result: Callable[[dict[str, Any]], bool],
) -> None:
    """Append ``item`` to the last user turn when that turn holds only tool results, else
    start a new user turn: consecutive tool results travel together."""
    last = turns[-1] if turns else None
    if (
        last is not None
        and last["role"] == "user"
        and isinstance(last[key], list)
        and all(is_result(x) for x in last[key])
    ):
        last[key].append(item)
    else:
        turns.append({"role": "user", key: [item]})


def warn_unsupported(provider: str, **values: object) -> None:
    """Warn (UnsupportedParameterWarning) about set parameters ``provider`` has no field for."""
    given = sorted(name for name, value in values.items() if value is not None)
    if given:
        warnings.warn(
            f"{provider} has no {', '.join(given)} parameter; not sent",
            UnsupportedParameterWarning,
            stacklevel=4,
        )


class SDKChatModel(SDKClients[SyncClient, AsyncClient], ChatModel):
    """Base of the provider adapters; subclasses set ``provider_name`` and the clients.

    Parameterised with the SDK's own client classes (``SDKChatModel[openai.OpenAI,
    openai.AsyncOpenAI]``), so every SDK call in a subclass is type-checked: a subclass
    writes its request (:meth:`_params`), its two SDK calls on either client (:meth:`_create`,
    :meth:`_open`) and its reply (:meth:`_response`, :attr:`_tally`); the port's methods
    here run them.

    The async client is built per event loop (``_aclients``), so repeated ``asyncio.run``
    and loops in several threads each get a client bound to their own loop.
    """

    provider_name: ClassVar[str]
    #: the input tokens an image or document costs on this provider (an estimate, used when
    #: a call's usage never arrived); subclasses set their provider's published formula
    media_tokens = staticmethod(generic_media_tokens)
    _model: str

    #: the last non-streamed body and headers, for replies the SDK cannot decode (set by
    #: subclasses on their SDK's HTTP client)
    _bodies: BodyRecorder
    #: retries of a call (or of a stream's opening) made here, for SDKs that make none
    #: with ``Retry-After`` themselves; 0 where the SDK retries
    _retries = 0
    #: follows one stream of this provider
    _tally: ClassVar[type[StreamTally]]

    def _stainless_clients(
        self,
        sync: Callable[..., SyncClient],
        asynchronous: Callable[..., AsyncClient],
        options: dict[str, Any],
    ) -> None:
        """The clients of an OpenAI-style SDK (OpenAI, Anthropic: one generator): each logs
        the retries the SDK makes and records its bodies."""
        bodies = self._bodies = BodyRecorder()
        name = self.provider_name
        self._client = log_retries(sync(**options), name, record=bodies.hook)
        self._aclients = PerLoop(
            lambda: log_retries(asynchronous(**options), name, is_async=True, record=bodies.ahook),
            close_async,
        )

    @abstractmethod
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for ``request``."""

    @abstractmethod
    def _create(self, client: SyncClient | AsyncClient, params: dict[str, Any]) -> Any:
        """The SDK's chat call on ``client``: its reply (an awaitable of it on the async
        client)."""

    @abstractmethod
    def _open(self, client: SyncClient | AsyncClient, params: dict[str, Any]) -> Any:
        """The SDK's streaming call on ``client``: its events (an awaitable of them on the
        async client)."""

    @classmethod
    @abstractmethod
    def _response(cls, raw: Any, request: ChatRequest) -> LLMResponse:
        """The response a decoded reply carries (named after ``provider_name``)."""

    @contextmanager
    def _replying(self) -> Iterator[None]:
        """Around one call and the decoding of its reply: SDK errors translated, and any
        failure to decode the reply raised as ResponseFormatError with the raw body (from
        the body recorder)."""
        self._bodies.reset()
        with decoding(self.provider_name, self._bodies.body, [self._secret]), self._errors():
            yield

    def _follow(
        self, start: Callable[[], Iterable[Any]], tally: StreamTally, retries: int = 0
    ) -> Iterator[StreamChunk]:
        """Stream the events of ``start()`` through ``tally``; errors translated, cut streams
        and undecodable events raised.

        With ``retries`` (SDKs that do not retry themselves), the request that opens the
        stream — up to its first event — is retried like a chat call (429, 5xx, timeouts,
        lost connections; ``Retry-After`` honoured). Once an event arrived, nothing is
        retried: the caller has seen text.
        """

        def open_stream() -> tuple[Iterator[Any], list[Any]]:
            with self._errors():
                events = iter(start())
                return events, list(itertools.islice(events, 1))

        with decoding(self.provider_name, tally.text, [self._secret]):
            events, first = retrying(open_stream, retries)
            with self._errors():
                for event in itertools.chain(first, events):
                    if (chunk := tally.step(event)) is not None:
                        yield chunk
        yield tally.final()

    async def _afollow(
        self,
        start: Callable[[], Awaitable[AsyncIterable[Any]]],
        tally: StreamTally,
        retries: int = 0,
    ) -> AsyncIterator[StreamChunk]:
        """The async twin of :meth:`_follow`."""

        async def open_stream() -> tuple[AsyncIterator[Any], list[Any]]:
            with self._errors():
                events = aiter(await start())
                first = await anext(events, _END)
                return events, [] if first is _END else [first]

        with decoding(self.provider_name, tally.text, [self._secret]):
            events, first = await aretrying(open_stream, retries)
            with self._errors():
                for event in first:
                    if (chunk := tally.step(event)) is not None:
                        yield chunk
                async for event in events:
                    if (chunk := tally.step(event)) is not None:
                        yield chunk
        yield tally.final()

    def _prepare(self, request: ChatRequest) -> ChatRequest:
        """The request as this adapter sends it (a subclass may resolve what its platform
        lacks, e.g. structured output mode "auto" to the forced tool)."""
        return request

    def chat(self, request: ChatRequest) -> LLMResponse:
        request = self._prepare(request)
        params = self._params(request)

        def once() -> LLMResponse:
            with self._replying():
                return self._response(self._create(self._client, params), request)

        return retrying(once, self._retries)

    async def achat(self, request: ChatRequest) -> LLMResponse:
        request = self._prepare(request)
        params = self._params(request)

        async def once() -> LLMResponse:
            with self._replying():
                return self._response(await self._create(self._aclient, params), request)

        return await aretrying(once, self._retries)

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        request = self._prepare(request)
        params = self._params(request)
        tally = self._tally(self.provider_name)
        return self._follow(lambda: self._open(self._client, params), tally, self._retries)

    def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        request = self._prepare(request)
        params = self._params(request)
        tally = self._tally(self.provider_name)
        return self._afollow(lambda: self._open(self._aclient, params), tally, self._retries)

    @property
    def provider(self) -> str:
        return self.provider_name

    @property
    def default_model(self) -> str:
        return self._model

    def __repr__(self) -> str:  # no key, no URL: only what identifies the model
        return f"{type(self).__name__}(model={self._model!r})"
