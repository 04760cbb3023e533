"""CallModel: one chat call with validation, cache, usage tracking and structured output."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pywrapai_graph.application.chat_stream import AsyncChatStream, ChatStream, StreamEvent
from pywrapai_graph.application.fallbacks import FallbackChain, ModelTarget
from pywrapai_graph.application.observability.model_calls import observe_llm
from pywrapai_graph.application.observability.observation import Observation
from pywrapai_graph.application.stream_so_far import StreamSoFar
from pywrapai_graph.application.structured_output import validated
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import (
    ChatRequest,
    FailedAttempt,
    GenerationParams,
    ImagePart,
    LLMResponse,
    Message,
    Part,
    ResponseFormat,
    StreamChunk,
    TextPart,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from pywrapai_graph.domain.request import StructuredMode
from pywrapai_graph.errors import (
    ArgumentTypeError,
    IncompleteStreamError,
    InvalidArgumentError,
    ResponseFormatError,
)
from pywrapai_graph.ports import ChatModel, CountsMediaTokens, ResponseCache
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["CallModel", "request_key"]

if TYPE_CHECKING:  # pydantic loads only when structured output is used
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

_TOOL_CHOICES = ("auto", "required", "none")


def _part_json(part: Part) -> list[str | None]:
    """A part in the key: text as is, bytes by their digest (the same image keys the same)."""
    if isinstance(part, TextPart):
        return ["text", part.text]
    if isinstance(part, ImagePart):
        data = part.data
        return ["image", part.media_type, part.url, _digest(data) if data is not None else None]
    return ["document", part.name, _digest(part.data)]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _message_json(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": m.role.value,
        "content": m.content,
        "tool_calls": [[c.id, c.name, c.arguments] for c in m.tool_calls or ()],
        "tool_result": dataclasses.astuple(m.tool_result) if m.tool_result else None,
    }
    if m.parts:  # absent otherwise, so text-only keys stay what they were
        out["parts"] = [_part_json(p) for p in m.parts]
    if m.reasoning:
        out["reasoning"] = [dataclasses.astuple(r) for r in m.reasoning]
    return out


def request_key(provider: str, request: ChatRequest) -> str:
    """A stable digest of everything that determines a response."""
    body = {
        "provider": provider,
        "model": request.model,
        "messages": [_message_json(m) for m in request.messages],
        "tools": list(request.tools),
        "tool_choice": request.tool_choice,
        "format": dataclasses.astuple(request.response_format) if request.response_format else None,
        "generation": request.generation.given(),
        "extra": dict(request.extra),
    }
    raw = json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


def _validate_tools(
    tools: Sequence[ToolSpec] | None, tool_choice: str | None
) -> tuple[ToolSpec, ...]:
    specs = tuple(tools or ())
    names = []
    for i, spec in enumerate(specs):
        given: object = spec  # callers without a type checker pass anything
        if isinstance(given, Mapping) and ("function" in spec or "input_schema" in spec):
            raise InvalidArgumentError(
                f"tools[{i}] is in a provider-specific format; pass ToolRegistry.to_schema()"
            )
        if not isinstance(given, Mapping) or not spec.get("name"):
            raise InvalidArgumentError(
                f"tools[{i}] is not a tool definition; pass ToolRegistry.to_schema() "
                "(dicts with 'name', 'description', 'parameters')"
            )
        names.append(spec["name"])
    if tool_choice is not None and tool_choice not in (*_TOOL_CHOICES, *names):
        raise InvalidArgumentError(
            f"tool_choice={tool_choice!r} is neither one of {list(_TOOL_CHOICES)} nor the "
            f"name of an offered tool {names}"
        )
    if tool_choice == "required" and not specs:
        raise InvalidArgumentError("tool_choice='required' needs at least one tool in tools=")
    return specs


def _checked_extra(extra: Mapping[str, object] | None) -> dict[str, object]:
    given: object = extra  # callers without a type checker pass anything
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ArgumentTypeError(
            "extra= must be a mapping of provider request fields, e.g. {'user': 'u-42'}; "
            f"got {type(given).__name__}"
        )
    keys: list[object] = list(given)
    bad = [k for k in keys if not isinstance(k, str)]
    if bad:
        raise ArgumentTypeError(f"extra= keys must be field names (str), got {bad[0]!r}")
    return dict(given)


class CallModel:
    """Calls a :class:`ChatModel` and keeps the books.

    Args:
        model: the chat-model adapter.
        tracker: where every call's usage and cost is recorded.
        cache: optional response cache; a hit records no new cost.
        hooks: observability hooks told about every call.
        fallbacks: the models asked, in order, when ``model`` fails with a
            :data:`~pywrapai_graph.application.fallbacks.FALLBACK_ERRORS` error (each
            attempt is its own span; the answer and its record name those that failed).
    """

    def __init__(
        self,
        model: ChatModel,
        tracker: TokenTracker,
        cache: ResponseCache | None = None,
        hooks: Sequence[Hooks] = (),
        fallbacks: Sequence[ModelTarget] = (),
    ) -> None:
        self._model = model
        self._tracker = tracker
        self._cache = cache
        self._hooks = tuple(hooks)
        self._chain = FallbackChain((ModelTarget(model, model.default_model), *fallbacks))

    def build_request(
        self,
        messages: Sequence[Message],
        *,
        model: str,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        response_format: ResponseFormat | None = None,
        generation: GenerationParams | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> ChatRequest:
        """Validate the arguments and build the request the adapter receives.

        Raises:
            ValueError: for tools not in the neutral format or an impossible ``tool_choice``.
            TypeError: ``extra`` is not a mapping with string keys.
        """
        if not messages:
            raise InvalidArgumentError("no messages to send")
        return ChatRequest(
            messages=tuple(messages),
            model=model,
            tools=_validate_tools(tools, tool_choice),
            tool_choice=tool_choice,
            response_format=response_format,
            extra=_checked_extra(extra),
            **(generation or GenerationParams()).given(),
        )

    def _book(
        self,
        target: ModelTarget,
        request: ChatRequest,
        response: LLMResponse,
        key: str | None,
        prompt_file: str | None,
        failed: tuple[FailedAttempt, ...],
    ) -> LLMResponse:
        rec = self._tracker.record(
            "chat",
            target.provider,
            response.model or request.model,
            response.usage,
            prompt_file=prompt_file,
            fallback_from=failed,
        )
        booked = dataclasses.replace(
            response,
            provider=target.provider,
            model=response.model or request.model,
            cost_usd=rec.cost_usd,
            fallback_from=failed,
        )
        if self._cache is not None and key is not None:
            self._cache.set(key, booked)
        return booked

    @contextmanager
    def _billed(
        self,
        target: ModelTarget,
        request: ChatRequest,
        prompt_file: str | None,
        failed: tuple[FailedAttempt, ...],
    ) -> Iterator[None]:
        """A reply that arrived but could not be decoded was still billed: record it (with
        its usage when the adapter could read it) before the error propagates."""
        try:
            yield
        except (ResponseFormatError, IncompleteStreamError) as exc:
            usage = exc.usage if isinstance(exc, ResponseFormatError) else None
            self._record_stream(target, request, usage, None, prompt_file, failed=failed)
            raise

    def _observe(
        self, provider: str, request: ChatRequest, prompt_file: str | None, stream: bool = False
    ) -> Observation:
        return observe_llm(
            provider, request, prompt_file=prompt_file, stream=stream, hooks=self._hooks
        )

    def _from_cache(
        self, request: ChatRequest, prompt_file: str | None
    ) -> tuple[str | None, LLMResponse | None]:
        """The cache key of ``request`` and its cached answer (observed as a call, costing
        nothing), if any."""
        if self._cache is None:
            return None, None
        key = request_key(self._model.provider, request)
        hit = self._cache.get(key)
        if hit is not None:
            hit = dataclasses.replace(hit, cost_usd=0.0, cached=True)
            with self._observe(self._model.provider, request, prompt_file) as ob:
                ob.result = hit
        return key, hit

    def chat(self, request: ChatRequest, *, prompt_file: str | None = None) -> LLMResponse:
        """Send ``request`` (or answer it from the cache) and record its cost; on a
        fallback error, ask the next model of the chain."""
        key, hit = self._from_cache(request, prompt_file)
        if hit is not None:
            return hit
        calls = self._chain.attempts(request, functools.partial(self._attempt, key, prompt_file))
        return drive(calls, lambda call: call[0].chat_model.chat(call[1]))

    async def achat(self, request: ChatRequest, *, prompt_file: str | None = None) -> LLMResponse:
        """Async :meth:`chat`."""
        key, hit = self._from_cache(request, prompt_file)
        if hit is not None:
            return hit
        calls = self._chain.attempts(request, functools.partial(self._attempt, key, prompt_file))
        return await adrive(calls, lambda call: call[0].chat_model.achat(call[1]))

    def _attempt(
        self,
        key: str | None,
        prompt_file: str | None,
        target: ModelTarget,
        sent: ChatRequest,
        failed: tuple[FailedAttempt, ...],
    ) -> Core[tuple[ModelTarget, ChatRequest], LLMResponse]:
        """One model's call, observed and booked (written once for :meth:`chat` and
        :meth:`achat`): yields the model and the request to send it, is sent the response."""
        with self._observe(target.provider, sent, prompt_file) as ob:
            with self._billed(target, sent, prompt_file, failed):
                response: LLMResponse = yield target, sent
            ob.result = booked = self._book(target, sent, response, key, prompt_file, failed)
        return booked

    def _record_stream(
        self,
        target: ModelTarget,
        request: ChatRequest,
        usage: TokenUsage | None,
        model: str | None,
        prompt_file: str | None,
        *,
        content: str = "",
        estimated: bool = False,
        failed: tuple[FailedAttempt, ...] = (),
        tool_calls: tuple[ToolCall, ...] = (),
    ) -> LLMResponse:
        rec = self._tracker.record(
            "chat",
            target.provider,
            model or request.model,
            usage or TokenUsage(),
            prompt_file=prompt_file,
            estimated=estimated,
            fallback_from=failed,
        )
        return LLMResponse(
            content=content,
            tool_calls=list(tool_calls),
            usage=rec.usage,
            model=rec.model,
            provider=rec.provider,
            cost_usd=rec.cost_usd,
            fallback_from=failed,
        )

    @contextmanager
    def _streaming(
        self,
        target: ModelTarget,
        request: ChatRequest,
        prompt_file: str | None,
        so_far: StreamSoFar,
        failed: tuple[FailedAttempt, ...],
    ) -> Iterator[Observation]:
        """Around a stream's reading: its observation, and the booking of a stream that ends
        early (closed, cancelled, cut off) — it still cost what the provider produced, and
        names the models that failed before it as a finished one does."""
        so_far.start()
        with self._observe(target.provider, request, prompt_file, stream=True) as ob:
            try:
                yield ob
            except BaseException as exc:
                self._book_unfinished(ob, target, request, so_far, exc, prompt_file, failed)
                raise

    def _book_unfinished(
        self,
        ob: Observation,
        target: ModelTarget,
        request: ChatRequest,
        so_far: StreamSoFar,
        exc: BaseException,
        prompt_file: str | None,
        failed: tuple[FailedAttempt, ...],
    ) -> None:
        """Book an unfinished stream once — in the ledger, the cost scopes open while it was
        read and the span — with the usage the provider reported, or an estimate marked as
        such (nothing when the provider refused it before replying)."""
        if not so_far.billed(exc):
            return
        model = target.chat_model  # the model that streamed (a fallback, maybe)
        media = model.media_tokens if isinstance(model, CountsMediaTokens) else None
        usage, estimated = so_far.unfinished_usage(request, exc, media)
        book = functools.partial(
            self._record_stream,
            target,
            request,
            usage,
            so_far.model,
            prompt_file,
            content=so_far.text,
            estimated=estimated,
            failed=failed,
        )
        context = so_far.context
        ob.result = context.run(book) if context is not None else book()
        if estimated:
            ob.set({"pywrapai.usage.estimated": True})

    def stream(self, request: ChatRequest, *, prompt_file: str | None = None) -> ChatStream:
        """The reply's text pieces; once exhausted, ``.response`` is the booked response.

        Usage and cost are recorded once: when the stream ends, or — closed, cancelled or cut
        off before its end — with what was produced (estimated when the provider had not said).
        """
        # the adapter translates the request now: a misuse (a bad extra= field) raises here
        chunks = self._model.stream(request)
        attempt = functools.partial(self._stream_events, prompt_file=prompt_file)
        return ChatStream(self._chain.stream(request, chunks, attempt))

    async def _astream_events(
        self,
        target: ModelTarget,
        request: ChatRequest,
        chunks: AsyncIterator[StreamChunk],
        failed: tuple[FailedAttempt, ...],
        *,
        prompt_file: str | None,
    ) -> AsyncGenerator[StreamEvent, None]:
        so_far = StreamSoFar()
        with self._streaming(target, request, prompt_file, so_far, failed) as ob:
            async for chunk in chunks:
                so_far.add(chunk)
                if chunk.text:
                    yield chunk.text
                for delta in chunk.tool_call_deltas:
                    yield delta
            booked = self._record_stream(
                target,
                request,
                so_far.usage,
                so_far.model,
                prompt_file,
                failed=failed,
                tool_calls=so_far.tool_calls,
            )
            ob.result = booked = dataclasses.replace(booked, reasoning=so_far.reasoning)
        yield booked

    def _stream_events(
        self,
        target: ModelTarget,
        request: ChatRequest,
        chunks: Iterator[StreamChunk],
        failed: tuple[FailedAttempt, ...],
        *,
        prompt_file: str | None,
    ) -> Generator[StreamEvent, None, None]:
        so_far = StreamSoFar()
        with self._streaming(target, request, prompt_file, so_far, failed) as ob:
            for chunk in chunks:
                so_far.add(chunk)
                if chunk.text:
                    yield chunk.text
                yield from chunk.tool_call_deltas
            booked = self._record_stream(
                target,
                request,
                so_far.usage,
                so_far.model,
                prompt_file,
                failed=failed,
                tool_calls=so_far.tool_calls,
            )
            ob.result = booked = dataclasses.replace(booked, reasoning=so_far.reasoning)
        yield booked

    def astream(self, request: ChatRequest, *, prompt_file: str | None = None) -> AsyncChatStream:
        """Async :meth:`stream`."""
        chunks = self._model.astream(request)  # translated now, as in stream()
        attempt = functools.partial(self._astream_events, prompt_file=prompt_file)
        return AsyncChatStream(self._chain.astream(request, chunks, attempt))

    @staticmethod
    def structured_format(schema: type[BaseModel], mode: StructuredMode = "auto") -> ResponseFormat:
        """The response format asking for JSON that validates against ``schema``, the
        provider's native way or with a forced tool (``mode``)."""
        from pydantic import BaseModel

        given: object = schema
        if not (isinstance(given, type) and issubclass(given, BaseModel)):
            raise ArgumentTypeError(f"schema must be a pydantic BaseModel subclass, got {schema!r}")
        return ResponseFormat(schema.__name__, schema.model_json_schema(), mode)

    @staticmethod
    def parse_structured(response: LLMResponse, schema: type[M]) -> M:
        """Validate the model's JSON against ``schema``.

        Raises:
            StructuredOutputError: invalid JSON or schema mismatch; ``raw`` keeps the text.
        """
        return validated(response.content, schema)
