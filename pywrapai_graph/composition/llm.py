"""LLM: the engine facade — one provider, one model, a tracker and an optional cache."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from pywrapai_graph.adapters.cache.lru import LRUResponseCache
from pywrapai_graph.application.assemble_messages import as_messages
from pywrapai_graph.application.call_model import CallModel
from pywrapai_graph.application.chat_stream import AsyncChatStream, ChatStream
from pywrapai_graph.application.limited_models import LimitedChatModel
from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.application.structured_output import checked_retries, structured_attempts
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.fallback_models import fallback_targets
from pywrapai_graph.composition.providers import ChatOptions, make_chat_model
from pywrapai_graph.composition.shared_limits import LimitsArg, limit_chat_model
from pywrapai_graph.domain import (
    ChatRequest,
    GenerationOptions,
    GenerationParams,
    LLMResponse,
    Message,
    Role,
    ToolSpec,
)
from pywrapai_graph.domain.request import StructuredMode
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports import ChatModel, ResponseCache
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["LLM"]

if TYPE_CHECKING:  # pydantic loads only when structured output is used
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

_STREAM_TOOLS = (
    "stream() does not accept tools=: use stream_with_tools() to stream tool calls, "
    "chat()/achat() for tool calling, or Agent.stream() for a full loop."
)


class LLM:
    """Calls one provider's chat API.

    Args:
        provider: a provider name ("openai", "anthropic", "gemini", "ollama", and the
            enterprise endpoints "azure-openai", "anthropic-bedrock", "anthropic-vertex",
            "gemini-vertex") resolved lazily to its adapter, or a
            :class:`~pywrapai_graph.ports.ChatModel` instance
            (e.g. ``pywrapai_graph.testing.ScriptedChatModel``).
        model: the model; defaults to the adapter's default model.
        system_prompt: prepended as a SYSTEM message unless the messages already start with one.
        cache: True for an in-memory LRU cache, or any ResponseCache; None/False for none.
        tracker: share a TokenTracker between instances; a new one by default.
        prices: the price table for a new tracker.
        hooks: observability hooks told about every call (see ``pywrapai_graph.observability``).
        generation: default generation parameters (``max_tokens``, ``temperature``, ``top_p``,
            ``stop``, ``seed``); a call's own keyword arguments win over them.
        fallbacks: the models to ask, in order, when this one fails with a rate limit, a
            timeout, an unreachable or failing (5xx, overloaded) provider — never on a
            refusal, a bad request, or once a stream has produced text. Each is an ``LLM``,
            a ``ChatModel`` or a mapping ``{"provider": ..., "model": ..., **options}``.
            The response and its ledger record name the models that failed
            (``fallback_from``); the one that answered is ``response.provider/.model``.
        limits: client-side :class:`~pywrapai_graph.domain.Limits` (requests and tokens per
            minute, requests in flight, the longest wait) — one budget shared by every
            ``LLM`` and ``Embedder`` of the process naming the same provider and key — or a
            ``ProviderLimiter`` to share explicitly.
        **options: adapter options such as ``api_key``, ``base_url``, ``timeout``,
            ``max_retries`` (never shown in reprs or errors); the enterprise endpoints'
            ``azure_endpoint``, ``api_version``, ``azure_ad_token_provider``, ``region``,
            ``project``, ``credentials`` and the ``aws_*`` keys (docs/providers.md).

    Raises:
        UnknownProviderError: for an unknown provider name.
        MissingExtraError: when the provider's SDK is not installed.
    """

    def __init__(
        self,
        provider: str | ChatModel = "openai",
        model: str | None = None,
        *,
        system_prompt: str | None = None,
        cache: bool | ResponseCache | None = None,
        tracker: TokenTracker | None = None,
        prices: PriceTable | None = None,
        hooks: Sequence[Hooks] | None = None,
        generation: GenerationParams | None = None,
        fallbacks: Sequence[LLM | ChatModel | Mapping[str, Any]] | None = None,
        limits: LimitsArg = None,
        **options: Unpack[ChatOptions],
    ) -> None:
        if isinstance(provider, str):
            chat_model = make_chat_model(provider, model, options)
        else:
            if options:
                raise ArgumentTypeError(
                    f"adapter options {sorted(options)} only apply when provider is a name"
                )
            chat_model = provider
        self._chat_model = limit_chat_model(chat_model, options, limits)
        self._model = model or self._chat_model.default_model
        self._generation = generation or GenerationParams()
        self._system_prompt = system_prompt
        self._cache: ResponseCache | None = (
            LRUResponseCache() if cache is True else None if cache is False else cache
        )
        self._tracker = tracker if tracker is not None else TokenTracker(prices)
        chain = fallback_targets(fallbacks)
        self._fallbacks = tuple(chain.targets)
        self._owned = tuple(chain.owned)
        self._calls = CallModel(
            self._chat_model, self._tracker, self._cache, check_hooks(hooks), self._fallbacks
        )

    # ------------------------------------------------------------------ properties
    @property
    def provider(self) -> str:
        """The provider name, e.g. "openai"."""
        return self._chat_model.provider

    @property
    def model(self) -> str:
        """The model every call uses."""
        return self._model

    @property
    def system_prompt(self) -> str | None:
        """The inline system prompt, if any."""
        return self._system_prompt

    @property
    def tokens(self) -> TokenTracker:
        """The tracker recording every call's usage and cost."""
        return self._tracker

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache, or None."""
        return self._cache

    @property
    def generation(self) -> GenerationParams:
        """The default generation parameters of every call."""
        return self._generation

    @property
    def chat_model(self) -> ChatModel:
        """The adapter behind this facade."""
        return self._chat_model

    @property
    def limiter(self) -> ProviderLimiter | None:
        """The client-side limiter this LLM's calls take their turn from (None: no limits)."""
        model = self._chat_model
        return model.limiter if isinstance(model, LimitedChatModel) else None

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """The fallback models, in the order they are asked, as ``"provider/model"``."""
        return tuple(str(t) for t in self._fallbacks)

    # ------------------------------------------------------------------ helpers
    def _messages(self, input: str | Sequence[Message]) -> list[Message]:
        messages = as_messages(input)
        if self._system_prompt and not (messages and messages[0].role is Role.SYSTEM):
            messages.insert(0, Message(Role.SYSTEM, self._system_prompt))
        return messages

    def _request(
        self,
        input: str | Sequence[Message],
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        generation: GenerationOptions | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> ChatRequest:
        return self._calls.build_request(
            self._messages(input),
            model=self._model,
            tools=tools,
            tool_choice=tool_choice,
            generation=GenerationParams.of(generation or {}).over(self._generation),
            extra=extra,
        )

    # ------------------------------------------------------------------ calls
    def chat(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """Send the messages; returns the response with its usage and cost.

        ``extra`` holds provider-specific request fields (``{"user": "u-42", "service_tier":
        "flex"}``), sent unchanged: a field the SDK's call names goes as that keyword
        argument, any other into the request body (OpenAI and Anthropic ``extra_body``,
        Gemini ``http_options.extra_body``, Ollama model ``options``). ``extra`` never
        overrides what the library sends itself: such a field (model, messages, tools,
        temperature, max_tokens, stop...) raises InvalidArgumentError naming the argument to
        use instead. The same holds for every call and stream.

        Raises:
            ValueError: tools not in the neutral format, an impossible ``tool_choice``, or an
                ``extra`` field the library sets itself (InvalidArgumentError).
            ProviderError: (subclasses) when the provider fails.
        """
        request = self._request(input, tools, tool_choice, generation, extra)
        return self._calls.chat(request, prompt_file=prompt_file)

    async def achat(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> LLMResponse:
        """Async :meth:`chat`."""
        request = self._request(input, tools, tool_choice, generation, extra)
        return await self._calls.achat(request, prompt_file=prompt_file)

    def stream(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> ChatStream:
        """Iterate the reply's text as it arrives; afterwards ``.response`` holds the whole
        response (usage and cost are recorded when the stream ends).

        Raises:
            ValueError: when ``tools`` is given (streamed tool calls are not supported).
        """
        if tools:
            raise InvalidArgumentError(_STREAM_TOOLS)
        return self.stream_with_tools(input, extra=extra, prompt_file=prompt_file, **generation)

    def stream_with_tools(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> ChatStream:
        """:meth:`stream` offering ``tools``: ``stream.events()`` yields the text and each
        tool call's pieces (:class:`~pywrapai_graph.domain.ToolCallDelta`) as they arrive;
        once exhausted, ``.response.tool_calls`` holds the decoded calls."""
        request = self._request(input, tools, tool_choice, generation, extra)
        return self._calls.stream(request, prompt_file=prompt_file)

    def astream(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AsyncChatStream:
        """Async :meth:`stream`: ``async for`` the text, then ``.response``.

        Raises:
            ValueError: when ``tools`` is given.
        """
        if tools:
            raise InvalidArgumentError(_STREAM_TOOLS)
        return self.astream_with_tools(input, extra=extra, prompt_file=prompt_file, **generation)

    def astream_with_tools(
        self,
        input: str | Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        tool_choice: str | None = None,
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> AsyncChatStream:
        """Async :meth:`stream_with_tools`."""
        request = self._request(input, tools, tool_choice, generation, extra)
        return self._calls.astream(request, prompt_file=prompt_file)

    def chat_structured(
        self,
        input: str | Sequence[Message],
        schema: type[M],
        *,
        retries: int = 1,
        mode: StructuredMode = "auto",
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> M:
        """Ask for JSON matching the pydantic ``schema`` and return a validated instance.

        A reply that does not validate (not JSON, a schema mismatch, a failed validator) is
        sent back to the model with the errors — as the forced tool's result, or as a user
        message — and the model is asked again, up to ``retries`` more times. Every attempt
        is booked in :attr:`tokens` and traced.

        Args:
            retries: attempts after the first (default 1, as pydantic-ai's output retries);
                0 makes one attempt.
            mode: "auto" (default: the provider's native structured output where it has one,
                else a forced tool), "native", or "tool" (for an OpenAI-compatible server
                without ``json_schema`` support). Gemini and Ollama always use their native
                field.

        Raises:
            StructuredOutputError: no attempt validated; ``replies`` holds every raw reply,
                ``validation_error`` the last errors.
            ArgumentTypeError: ``retries`` is not an int >= 0.
        """
        attempts = self._structured(input, schema, retries, mode, generation, extra)
        return drive(attempts, lambda sent: self._calls.chat(sent, prompt_file=prompt_file))

    async def achat_structured(
        self,
        input: str | Sequence[Message],
        schema: type[M],
        *,
        retries: int = 1,
        mode: StructuredMode = "auto",
        extra: Mapping[str, object] | None = None,
        prompt_file: str | None = None,
        **generation: Unpack[GenerationOptions],
    ) -> M:
        """Async :meth:`chat_structured`."""
        attempts = self._structured(input, schema, retries, mode, generation, extra)
        return await adrive(attempts, lambda sent: self._calls.achat(sent, prompt_file=prompt_file))

    def _structured(
        self,
        input: str | Sequence[Message],
        schema: type[M],
        retries: int,
        mode: StructuredMode,
        generation: GenerationOptions,
        extra: Mapping[str, object] | None,
    ) -> Core[ChatRequest, M]:
        retries = checked_retries(retries)
        request = self._calls.build_request(
            self._messages(input),
            model=self._model,
            response_format=CallModel.structured_format(schema, mode),
            generation=GenerationParams.of(generation).over(self._generation),
            extra=extra,
        )
        return structured_attempts(request, schema, retries)

    def close(self) -> None:
        """Release the adapter's HTTP connections (and those of fallbacks built from
        mappings; an ``LLM`` given as a fallback is closed by its owner)."""
        self._chat_model.close()
        for model in self._owned:
            model.close()

    async def aclose(self) -> None:
        """Release the adapter's async HTTP connections (on the loop that used them)."""
        await self._chat_model.aclose()
        for model in self._owned:
            await model.aclose()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self.close()

    def __repr__(self) -> str:
        return f"LLM(provider={self.provider!r}, model={self.model!r})"
