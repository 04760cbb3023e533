"""Anthropic Claude through the official ``anthropic`` SDK (Messages API)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, ClassVar

from pywrapai_graph.adapters._provider_errors import stainless_errors
from pywrapai_graph.adapters._provider_payload import add_extra_body, drop_none, owned_fields
from pywrapai_graph.adapters.llm._anthropic_cache import (
    PromptCache,
    checked_mode,
    mark_breakpoints,
)
from pywrapai_graph.adapters.llm._anthropic_thinking import (
    ThinkingStream,
    reasoning_of,
    thinking_blocks,
)
from pywrapai_graph.adapters.llm._base import (
    SDKChatModel,
    add_tool_result,
    system_text,
    tool_result_of,
    warn_unsupported,
)
from pywrapai_graph.adapters.llm._media import anthropic_tokens, refuse
from pywrapai_graph.adapters.llm._replies import StreamTally
from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.input_tokens import estimate_input_tokens
from pywrapai_graph.application.tools.provider_schemas import anthropic_tools
from pywrapai_graph.domain import (
    ChatRequest,
    DocumentPart,
    ImagePart,
    LLMResponse,
    Message,
    Part,
    ReasoningPart,
    Role,
    StreamChunk,
    TextPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import (
    ArgumentTypeError,
    ConfigurationError,
    MissingExtraError,
    ResponseFormatError,
)

try:
    import anthropic
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("anthropic", "anthropic") from exc

__all__ = ["AnthropicChatModel"]

#: the SDK's clients of the Messages API: Anthropic's own, on Amazon Bedrock, on Vertex AI
AnyAnthropic = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex
AnyAsyncAnthropic = (
    anthropic.AsyncAnthropic | anthropic.AsyncAnthropicBedrock | anthropic.AsyncAnthropicVertex
)

DEFAULT_MODEL = "claude-haiku-4-5-20251001"
DEFAULT_MAX_TOKENS = 4096
_PROVIDER = "anthropic"
_MAX_IMAGE_BASE64 = 5 * 2**20  # the Messages API's limits per image
_MAX_IMAGE_SIDE = 8000
_OWNED = owned_fields(max_tokens="max_tokens=", system="a SYSTEM message", stop_sequences="stop=")
# models that predate structured outputs: chat_structured(mode="auto") forces a tool on them
_BEFORE_NATIVE = (
    "claude-2",
    "claude-3",
    "claude-instant",
    "claude-sonnet-4-0",
    "claude-sonnet-4-2025",
    "claude-opus-4-0",
    "claude-opus-4-2025",
)


def _source(part: ImagePart | DocumentPart) -> dict[str, Any]:
    if isinstance(part, ImagePart) and part.url is not None:
        return {"type": "url", "url": part.url}
    return {"type": "base64", "media_type": part.media_type, "data": part.base64()}


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image", "source": _source(part)}
    block = {"type": "document", "source": _source(part)}
    if part.name:
        block["title"] = part.name
    return block


def _refusal(part: ImagePart | DocumentPart) -> str | None:
    data = part.data
    if not isinstance(part, ImagePart) or data is None:
        return None
    encoded = 4 * -(-len(data) // 3)  # the API limits the base64 text, not the bytes
    if encoded > _MAX_IMAGE_BASE64:
        return (
            f"an image may be at most 5 MB base64-encoded ({_MAX_IMAGE_BASE64 * 3 // 4} bytes), "
            f"this one is {len(data)} bytes; scale it down or compress it"
        )
    size = part.size
    if size is not None and max(size) > _MAX_IMAGE_SIDE:
        return f"an image may be at most {_MAX_IMAGE_SIDE} px a side, this one is {size}"
    return None


def _tokens(m: Message) -> int:
    """A message's estimated input tokens: text, images and documents, tool-call arguments."""
    calls = [json.dumps(c.arguments) for c in m.tool_calls or ()]
    return estimate_input_tokens([m], anthropic_tokens) + estimate_tokens(calls)


def _turns(messages: tuple[Message, ...]) -> tuple[list[dict[str, Any]], list[int]]:
    """(Messages API turns, each turn's estimated tokens); SYSTEM messages are left out and
    consecutive tool results merge into one user turn."""
    turns: list[dict[str, Any]] = []
    sizes: list[int] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            continue
        if m.role is Role.TOOL:
            block = {
                "type": "tool_result",
                "tool_use_id": tool_result_of(m).tool_call_id,
                "content": m.content,
            }
            add_tool_result(turns, "content", block, lambda b: b.get("type") == "tool_result")
        elif m.role is Role.ASSISTANT:
            blocks = thinking_blocks(m.reasoning, _PROVIDER)  # first, as they came
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
                for c in m.tool_calls or ()
            ]
            turns.append({"role": "assistant", "content": blocks or m.content})
        elif m.parts:
            turns.append({"role": "user", "content": [_block(p) for p in m.content_parts]})
        else:
            turns.append({"role": "user", "content": m.content})
        sizes += [0] * (len(turns) - len(sizes))
        sizes[-1] += _tokens(m)
    return turns, sizes


def _tool_choice(choice: str) -> dict[str, Any]:
    named = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
    return named.get(choice, {"type": "tool", "name": choice})


def _usage(usage: Any) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    write = getattr(usage, "cache_creation_input_tokens", None) or 0
    return TokenUsage(
        input_tokens=(getattr(usage, "input_tokens", None) or 0) + read + write,
        output_tokens=getattr(usage, "output_tokens", None) or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


class _StreamTally(StreamTally):
    """Follows a Messages stream: text deltas out; usage from message_start + message_delta;
    thinking blocks kept whole for the final chunk."""

    marker = "message_stop"

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self.start_usage: Any = None
        self.output_tokens = 0
        self.thinking = ThinkingStream(_PROVIDER)
        self.blocks: dict[int, int] = {}  # content block index -> tool call index

    def feed(self, event: Any) -> str:
        kind = event.type
        self.thinking.feed(event)
        if kind == "message_stop":
            self.ended = True
        elif kind == "message_start":
            self.start_usage = event.message.usage
            self.model = event.message.model
        elif kind == "message_delta" and event.usage is not None:
            self.output_tokens = event.usage.output_tokens or self.output_tokens
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            self.blocks[event.index] = len(self.blocks)  # the call's index among the calls
            self.call_delta(self.blocks[event.index], block.id, block.name)
        elif kind == "content_block_delta" and event.delta.type == "input_json_delta":
            self.call_delta(self.blocks[event.index], arguments=event.delta.partial_json)
        elif kind == "content_block_delta" and event.delta.type == "text_delta":
            return str(event.delta.text)
        return ""

    def reported(self) -> TokenUsage:
        return replace(_usage(self.start_usage), output_tokens=self.output_tokens)

    def final(self) -> StreamChunk:
        self.usage = self.reported()
        return replace(super().final(), reasoning=self.thinking.parts())


class AnthropicChatModel(SDKChatModel[AnyAnthropic, AnyAsyncAnthropic]):
    """Claude through ``anthropic.Anthropic`` / ``anthropic.AsyncAnthropic``.

    ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` work as with the SDK. SYSTEM messages
    go to the ``system=`` parameter; tool results become ``tool_result`` blocks; structured
    output is native (``output_config.format``, the schema made strict by the SDK's
    ``transform_schema``) or, in mode "tool" and on older models, a forced tool call whose
    input is returned as the JSON content. The ``thinking`` and ``redacted_thinking`` blocks
    of a reply are kept on ``LLMResponse.reasoning`` and sent back first, unchanged, in the
    assistant turn they came with.

    Args:
        prompt_cache: "auto" (default) marks ``cache_control`` breakpoints on the tools, the
            system prompt and the stable history where their prefix reaches the model's
            minimum cacheable length (see ``_anthropic_cache``); "off" marks none.
        thinking: the Messages API's ``thinking`` field sent with every request, e.g.
            ``{"type": "enabled", "budget_tokens": 2048}`` (extended thinking; keep
            ``max_tokens`` above the budget); a call's ``extra={"thinking": ...}`` wins.

    Raises:
        MissingExtraError: the ``anthropic`` package is not installed.
        ConfigurationError: no API key is available.
        InvalidArgumentError: ``prompt_cache`` is neither "auto" nor "off".
        ArgumentTypeError: ``thinking`` is not a mapping.
    """

    provider_name = _PROVIDER
    media_tokens = staticmethod(anthropic_tokens)
    _tally = _StreamTally

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        prompt_cache: PromptCache = "auto",
        thinking: Mapping[str, Any] | None = None,
    ) -> None:
        if thinking is not None and not isinstance(thinking, Mapping):
            raise ArgumentTypeError(
                f"thinking must be a mapping such as {{'type': 'enabled', 'budget_tokens': "
                f"2048}}, got {type(thinking).__name__}"
            )
        self._thinking = dict(thinking) if thinking is not None else None
        self._prompt_cache = checked_mode(prompt_cache)
        self._model = model or DEFAULT_MODEL
        self._default_max_tokens = default_max_tokens
        self._connect(
            drop_none(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        )
        # Recent SDKs dropped temperature/top_p from messages.create (newer models fix them):
        # send what the installed SDK takes, warn about the rest.
        accepted = inspect.signature(self._client.messages.create).parameters
        self._keywords = frozenset(accepted)  # extra= keys sent as keywords, others in the body
        self._sampling = frozenset(p for p in ("temperature", "top_p") if p in accepted)

    def _connect(self, options: dict[str, Any]) -> None:
        """Build the SDK clients and note their key (a platform subclass builds its own)."""
        self._stainless_clients(anthropic.Anthropic, anthropic.AsyncAnthropic, options)
        self._secret = getattr(self._client, "api_key", None)
        if not self._secret:
            raise ConfigurationError(
                "Anthropic needs an API key: set ANTHROPIC_API_KEY or pass api_key="
            )

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        refuse(_PROVIDER, request.messages, _refusal)
        system = system_text(request.messages)
        turns, sizes = _turns(request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": turns,
            "max_tokens": request.max_tokens or self._default_max_tokens,
        }
        if system is not None:
            params["system"] = system
        tools = anthropic_tools(request.tools)
        fmt = request.response_format
        native = _native_schema(request)
        if fmt is not None and native is None:
            tools.append(
                {
                    "name": fmt.name,
                    "description": f"Return the answer as a {fmt.name} object.",
                    "input_schema": dict(fmt.json_schema),
                }
            )
            params["tool_choice"] = {"type": "tool", "name": fmt.name}
        elif request.tool_choice is not None:
            params["tool_choice"] = _tool_choice(request.tool_choice)
        if tools:
            params["tools"] = tools
        sampling = {"temperature": request.temperature, "top_p": request.top_p}
        params.update(drop_none(**{k: v for k, v in sampling.items() if k in self._sampling}))
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        if self._thinking is not None and "thinking" not in request.extra:
            params["thinking"] = dict(self._thinking)
        if self._prompt_cache == "auto":
            mark_breakpoints(params, sizes, request.model)
        unsent = {k: v for k, v in sampling.items() if k not in self._sampling}
        warn_unsupported(_PROVIDER, seed=request.seed, **unsent)
        add_extra_body(
            params, request.extra, provider=_PROVIDER, owned=_OWNED, keywords=self._keywords
        )
        if native is not None:  # beside an output_config effort= the caller set in extra=
            fmt_param = {"type": "json_schema", "schema": native}
            params["output_config"] = {**params.get("output_config", {}), "format": fmt_param}
        return params

    @classmethod
    def _response(cls, raw: Any, request: ChatRequest) -> LLMResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[ReasoningPart] = []
        fmt = request.response_format
        for block in raw.content:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(block.id, block.name, dict(block.input or {})))
            elif (part := reasoning_of(block, _PROVIDER)) is not None:
                reasoning.append(part)
        if fmt is not None and _native_schema(request) is None:
            # the forced tool's call is the object; kept so that a retry can answer it
            calls = [c for c in calls if c.name == fmt.name][:1]
            texts = [_structured(calls, fmt.name, raw)]
        return LLMResponse(
            content="".join(texts),
            tool_calls=calls,
            usage=_usage(raw.usage),
            model=raw.model or "",
            provider=cls.provider_name,
            finish_reason=raw.stop_reason or None,
            reasoning=tuple(reasoning),
        )

    #: whether structured output mode "auto" is native here (the Claude API); Bedrock and
    #: Vertex keep the forced tool, which every Claude platform serves
    native_auto: ClassVar[bool] = True

    def _prepare(self, request: ChatRequest) -> ChatRequest:
        fmt = request.response_format
        if self.native_auto or fmt is None or fmt.mode != "auto":
            return request
        return replace(request, response_format=replace(fmt, mode="tool"))

    def _errors(self) -> AbstractContextManager[None]:
        return stainless_errors(anthropic, self.provider_name, self._secret)

    def _create(self, client: AnyAnthropic | AnyAsyncAnthropic, params: dict[str, Any]) -> Any:
        return client.messages.create(**params)

    def _open(self, client: AnyAnthropic | AnyAsyncAnthropic, params: dict[str, Any]) -> Any:
        return client.messages.create(**params, stream=True)


def _native_schema(request: ChatRequest) -> dict[str, Any] | None:
    """The schema sent as ``output_config.format`` (native structured output), or None for
    the forced tool: with mode "tool", for models older than structured outputs (Claude 3,
    Sonnet 4 and Opus 4 of 2025-05) in mode "auto", and for a schema the API's transform
    cannot express (a node with no type, such as ``Any``)."""
    fmt = request.response_format
    if fmt is None or fmt.mode == "tool":
        return None
    if fmt.mode == "auto" and request.model.startswith(_BEFORE_NATIVE):
        return None
    try:
        return anthropic.transform_schema(dict(fmt.json_schema))
    except ValueError:
        return None


def _structured(calls: list[ToolCall], name: str, raw: Any) -> str:
    """The forced tool's input, or ResponseFormatError when the reply did not call it (a
    server that ignores ``tool_choice`` answers in free text, which is no ``name`` object)."""
    if not calls:
        error = ResponseFormatError(
            f"{_PROVIDER}: a structured-output reply must call the tool {name!r}, but it has "
            "no such tool_use block (the server may ignore forced tool choice); its raw body "
            "is in the error's .raw attribute",
            raw="",
        )
        error.usage = _usage(raw.usage)  # billed all the same
        raise error
    return json.dumps(calls[0].arguments)
