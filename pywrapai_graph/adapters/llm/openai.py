"""OpenAI and OpenAI-compatible servers through the official ``openai`` SDK (Chat Completions)."""

from __future__ import annotations

import inspect
import json
from abc import abstractmethod
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from pywrapai_graph.adapters._provider_errors import stainless_errors
from pywrapai_graph.adapters._provider_payload import (
    add_extra_body,
    drop_none,
    owned_fields,
    parse_arguments,
)
from pywrapai_graph.adapters.llm._base import SDKChatModel, tool_result_of
from pywrapai_graph.adapters.llm._media import data_url, openai_tokens, refuse
from pywrapai_graph.adapters.llm._openai_reasoning import (
    ReasoningReplay,
    checked_replay,
    reasoning_parts,
    reasoning_text,
    replayed,
)
from pywrapai_graph.adapters.llm._replies import StreamTally
from pywrapai_graph.adapters.llm._structured import openai_structured
from pywrapai_graph.application.tools.provider_schemas import openai_tools
from pywrapai_graph.domain import (
    ChatRequest,
    DocumentPart,
    LLMResponse,
    Message,
    Part,
    Role,
    StreamChunk,
    TextPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import ConfigurationError, MissingExtraError, ResponseFormatError

try:
    import openai
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("openai", "openai") from exc

__all__ = ["AnyOpenAIClient", "OpenAIChatModel", "OpenAIClients"]

DEFAULT_MODEL = "gpt-4o-mini"
_PROVIDER = "openai"
#: either of the SDK's clients
AnyOpenAIClient = openai.OpenAI | openai.AsyncOpenAI
_OWNED = owned_fields(
    response_format="chat_structured()",
    max_completion_tokens="max_tokens=",
    max_tokens="max_tokens=",
    stop="stop=",
    stream_options="stream()/astream()",
)


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, DocumentPart):
        name = part.name or "document.pdf"
        return {"type": "file", "file": {"filename": name, "file_data": data_url(part)}}
    return {"type": "image_url", "image_url": {"url": part.url or data_url(part)}}


def _message(m: Message, replay: ReasoningReplay) -> dict[str, Any]:
    if m.parts:  # text, images and documents as content parts (USER messages only)
        return {"role": m.role.value, "content": [_part(p) for p in m.content_parts]}
    if m.role is Role.TOOL:
        return {
            "role": "tool",
            "tool_call_id": tool_result_of(m).tool_call_id,
            "content": m.content,
        }
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    if m.tool_calls:
        out["content"] = m.content or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in m.tool_calls
        ]
    if (reasoning := replayed(m, replay, _PROVIDER)) is not None:
        out["reasoning_content"] = reasoning
    return out


def _tool_choice(choice: str | None) -> Any:
    if choice is None or choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _usage(usage: Any) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return TokenUsage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=getattr(prompt_details, "cached_tokens", None) or 0,
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None) or 0,
    )


class _StreamState(StreamTally):
    """Follows a Chat Completions stream: a finish_reason is its end marker; reasoning_content
    deltas are kept for the final chunk."""

    marker = "a finish_reason and [DONE]"

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self.thought: list[str] = []

    def final(self) -> StreamChunk:
        chunk = super().final()
        return replace(chunk, reasoning=reasoning_parts("".join(self.thought), _PROVIDER))

    def feed(self, event: Any) -> str:
        self.model = event.model or self.model
        if event.usage is not None:
            self.usage = _usage(event.usage)
        text = ""
        for choice in event.choices:
            self.ended = self.ended or choice.finish_reason is not None
            text += choice.delta.content or ""
            self.thought.append(reasoning_text(choice.delta))
            for call in choice.delta.tool_calls or ():
                function = call.function
                if call.id or (function and function.name):
                    self.call_delta(call.index, call.id, function and function.name)
                if function and function.arguments:
                    self.call_delta(call.index, arguments=function.arguments)
        return text


class OpenAIClients(SDKChatModel[openai.OpenAI, openai.AsyncOpenAI]):
    """What the Chat Completions and Responses adapters share: the SDK's two clients, the
    key, the output cap and the error boundary; a subclass names its SDK call
    (:meth:`_endpoint`), whose keywords ``extra=`` may set, and writes its wire format.

    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` work as with the SDK; explicit arguments win.

    Args:
        model: default model (``gpt-4o-mini``).
        api_key, base_url, timeout, max_retries: passed to the SDK clients.
        default_max_tokens: output cap sent when a request sets none (None: provider default).

    Raises:
        MissingExtraError: the ``openai`` package is not installed.
        ConfigurationError: no API key is available.
    """

    provider_name = _PROVIDER
    media_tokens = staticmethod(openai_tokens)

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_max_tokens: int | None = None,
    ) -> None:
        self._model = model or DEFAULT_MODEL
        self._secret = api_key
        self._default_max_tokens = default_max_tokens
        self._connect(
            drop_none(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        )
        # extra= keys the SDK names go as keywords (typed by the SDK), others in extra_body
        self._keywords = frozenset(inspect.signature(self._endpoint(self._client)).parameters)

    @staticmethod
    @abstractmethod
    def _endpoint(client: AnyOpenAIClient) -> Any:
        """The SDK's method a request calls on ``client``."""

    def _connect(self, options: dict[str, Any]) -> None:
        """Build the SDK clients and note their key (a platform subclass builds its own)."""
        try:
            self._stainless_clients(openai.OpenAI, openai.AsyncOpenAI, options)
        except openai.OpenAIError as exc:
            raise ConfigurationError(
                "OpenAI needs an API key: set OPENAI_API_KEY or pass api_key="
            ) from exc
        self._secret = self._client.api_key

    def _errors(self) -> AbstractContextManager[None]:
        return stainless_errors(openai, self.provider_name, self._secret)

    def _create(self, client: AnyOpenAIClient, params: dict[str, Any]) -> Any:
        return self._endpoint(client)(**params)


class OpenAIChatModel(OpenAIClients):
    """Chat Completions through ``openai.OpenAI`` / ``openai.AsyncOpenAI``.

    Args:
        model, api_key, base_url, timeout, max_retries, default_max_tokens: as for
            :class:`OpenAIClients`.
        reasoning_replay: which assistant messages send their ``reasoning_content`` back:
            "tool_calls" (default; DeepSeek and Kimi thinking modes require it there and
            ignore it elsewhere), "always" or "never".

    Raises:
        InvalidArgumentError: an unknown ``reasoning_replay`` (and as :class:`OpenAIClients`).
    """

    _tally = _StreamState

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_max_tokens: int | None = None,
        reasoning_replay: ReasoningReplay = "tool_calls",
    ) -> None:
        self._replay = checked_replay(reasoning_replay)
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            default_max_tokens=default_max_tokens,
        )

    @staticmethod
    def _endpoint(client: AnyOpenAIClient) -> Any:
        return client.chat.completions.create

    # ------------------------------------------------------------------ translation
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        refuse(_PROVIDER, request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": [_message(m, self._replay) for m in request.messages],
        }
        if request.tools:
            params["tools"] = openai_tools(request.tools)
        if request.tool_choice is not None:
            params["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format is not None:
            params.update(openai_structured(request.response_format))
        max_tokens = request.max_tokens or self._default_max_tokens
        params.update(
            drop_none(
                max_completion_tokens=max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
                stop=list(request.stop) if request.stop else None,
                seed=request.seed,
            )
        )
        add_extra_body(
            params, request.extra, provider=_PROVIDER, owned=_OWNED, keywords=self._keywords
        )
        return params

    @classmethod
    def _response(cls, raw: Any, request: ChatRequest) -> LLMResponse:
        if not raw.choices:
            raise ResponseFormatError("openai: the reply has no choices", raw="")
        message = raw.choices[0].message
        usage = _usage(raw.usage)
        try:
            calls = [
                ToolCall(
                    c.id, c.function.name, parse_arguments(c.function.arguments, c.function.name)
                )
                for c in message.tool_calls or ()
            ]
        except ResponseFormatError as exc:
            exc.usage = usage  # billed all the same
            raise
        fmt = request.response_format
        forced = [c for c in message.tool_calls or () if fmt and c.function.name == fmt.name]
        return LLMResponse(
            # the forced tool's arguments are the object (kept as sent, for the retries)
            content=forced[0].function.arguments if forced else message.content or "",
            tool_calls=calls,
            usage=usage,
            model=raw.model or "",
            provider=cls.provider_name,
            finish_reason=raw.choices[0].finish_reason or None,
            reasoning=reasoning_parts(reasoning_text(message), _PROVIDER),
        )

    # ------------------------------------------------------------------ port
    def _open(self, client: AnyOpenAIClient, params: dict[str, Any]) -> Any:
        return client.chat.completions.create(
            **params, stream=True, stream_options={"include_usage": True}
        )
