"""OpenAI's Responses API through the official ``openai`` SDK (``client.responses.create``).

Stateless by default: every request carries the whole history as input items and asks
``store=False``, so OpenAI keeps nothing and the caller owns the conversation. Reasoning
models' reasoning items come back encrypted (``include=["reasoning.encrypted_content"]``),
ride on the assistant message (:attr:`LLMResponse.reasoning`, one ``ReasoningPart`` per
item) and are sent back in the next request's input, so a model keeps its reasoning across
tool turns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pywrapai_graph.adapters._provider_errors import error_for_status
from pywrapai_graph.adapters._provider_payload import (
    add_extra_body,
    drop_none,
    owned_fields,
    parse_arguments,
)
from pywrapai_graph.adapters.llm._base import system_text, tool_result_of, warn_unsupported
from pywrapai_graph.adapters.llm._media import data_url, refuse
from pywrapai_graph.adapters.llm._replies import StreamTally
from pywrapai_graph.adapters.llm._structured import strict_schema
from pywrapai_graph.adapters.llm.openai import AnyOpenAIClient, OpenAIClients
from pywrapai_graph.application.tools.provider_schemas import openai_tools
from pywrapai_graph.domain import (
    ChatRequest,
    DocumentPart,
    LLMResponse,
    Message,
    Part,
    ResponseFormat,
    Role,
    StreamChunk,
    TextPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.errors import ProviderError, ResponseFormatError

# the SDK is there: importing the Chat Completions adapter above raised MissingExtraError if not
# isort: split
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionToolCall,
    ResponseIncompleteEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseStreamEvent,
    ResponseTextDeltaEvent,
    ResponseUsage,
)

__all__ = ["OpenAIResponsesChatModel"]

_PROVIDER = "openai"
_OWNED = owned_fields(
    input="the input messages",
    instructions="a SYSTEM message",
    text="chat_structured()",
    max_output_tokens="max_tokens=",
    stream_options="stream()/astream()",
)
#: the models that reason (o-series, GPT-5 but its chat model, Codex): only they accept a
#: request for their encrypted reasoning; others answer it with a 400
_REASONING_MODELS = re.compile(r"^(?!gpt-5-chat)(o\d|gpt-5|codex)")


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, DocumentPart):
        name = part.name or "document.pdf"
        return {"type": "input_file", "filename": name, "file_data": data_url(part)}
    return {"type": "input_image", "image_url": part.url or data_url(part), "detail": "auto"}


#: the provider tag of the reasoning items this adapter keeps; only they are sent back
_REASONING = "openai-responses"
#: how an item's summaries are joined into one ``ReasoningPart.text``
_SUMMARIES = "\n\n"


def _reasoning_input(part: ReasoningPart) -> dict[str, Any]:
    texts = part.text.split(_SUMMARIES) if part.text else []
    summary = [{"type": "summary_text", "text": text} for text in texts]
    out: dict[str, Any] = {"type": "reasoning", "id": part.id, "summary": summary}
    if part.signature is not None:
        out["encrypted_content"] = part.signature
    return out


def _items(m: Message) -> list[dict[str, Any]]:
    """The input items of one message: its reasoning, its text or parts, its tool calls
    (``function_call``) or its tool result (``function_call_output``), joined by call id."""
    if m.role is Role.TOOL:
        result = tool_result_of(m)
        return [
            {"type": "function_call_output", "call_id": result.tool_call_id, "output": m.content}
        ]
    items = [_reasoning_input(r) for r in m.reasoning if r.provider == _REASONING and r.id]
    if m.parts:
        items.append({"role": m.role.value, "content": [_part(p) for p in m.content_parts]})
    elif m.content or not m.tool_calls:
        items.append({"role": m.role.value, "content": m.content})
    items += [
        {
            "type": "function_call",
            "call_id": c.id,
            "name": c.name,
            "arguments": json.dumps(c.arguments),
        }
        for c in m.tool_calls or ()
    ]
    return items


def _tools(specs: Sequence[Any]) -> list[dict[str, Any]]:
    # Responses tools are flat and strict by default: ours allow optional arguments
    return [{"type": "function", **t["function"], "strict": False} for t in openai_tools(specs)]


def _tool_choice(choice: str) -> Any:
    return (
        choice if choice in ("auto", "required", "none") else {"type": "function", "name": choice}
    )


def _text_format(fmt: ResponseFormat) -> dict[str, Any]:
    strict = strict_schema(fmt.json_schema)
    schema = strict if strict is not None else dict(fmt.json_schema)
    return {
        "format": {
            "type": "json_schema",
            "name": fmt.name,
            "schema": schema,
            "strict": strict is not None,
        }
    }


def _usage(usage: ResponseUsage | None) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    inputs = getattr(usage, "input_tokens_details", None)
    outputs = getattr(usage, "output_tokens_details", None)
    return TokenUsage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=getattr(inputs, "cached_tokens", None) or 0,
        reasoning_tokens=getattr(outputs, "reasoning_tokens", None) or 0,
    )


def _failure(message: str) -> ProviderError:
    """A response that failed on the provider's side (a 5xx in all but the status)."""
    return error_for_status(None, f"the response failed: {message}", provider=_PROVIDER)


def _reply(raw: Response) -> tuple[str, list[ToolCall], list[ReasoningPart]]:
    """The text, tool calls and reasoning items of a response's output items (built-in
    tools' items are not offered, so none come back)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in raw.output or ():
        if isinstance(item, ResponseOutputMessage):
            texts += [c.text for c in item.content if isinstance(c, ResponseOutputText)]
        elif isinstance(item, ResponseFunctionToolCall):
            calls.append(
                ToolCall(item.call_id, item.name, parse_arguments(item.arguments, item.name))
            )
    return "".join(texts), calls, _reasoning_of(raw)


def _reasoning_of(raw: Response) -> list[ReasoningPart]:
    """A response's reasoning items, one part each (summaries joined in ``text``)."""
    return [
        ReasoningPart(
            _SUMMARIES.join(s.text for s in item.summary or ()),
            item.encrypted_content,
            provider=_REASONING,
            id=item.id,
        )
        for item in raw.output or ()
        if isinstance(item, ResponseReasoningItem)
    ]


class _StreamState(StreamTally):
    """Follows a Responses stream: ``response.completed`` (or ``response.incomplete``, cut
    by its output cap) is its end marker and carries the usage."""

    marker = "response.completed"

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self.calls: dict[int, int] = {}  # output item index -> tool call index
        self.reasoning: tuple[ReasoningPart, ...] = ()

    def final(self) -> StreamChunk:
        return replace(super().final(), reasoning=self.reasoning)

    def feed(self, event: ResponseStreamEvent) -> str:
        if isinstance(event, ResponseTextDeltaEvent):
            return event.delta
        if isinstance(event, ResponseOutputItemAddedEvent):
            if isinstance(item := event.item, ResponseFunctionToolCall):
                self.calls[event.output_index] = len(self.calls)
                self.call_delta(self.calls[event.output_index], item.call_id, item.name)
        elif isinstance(event, ResponseFunctionCallArgumentsDeltaEvent):
            if event.output_index in self.calls:
                self.call_delta(self.calls[event.output_index], arguments=event.delta)
        elif isinstance(event, ResponseCompletedEvent | ResponseIncompleteEvent):
            self.ended = True
            self.model = event.response.model or self.model
            self.usage = _usage(event.response.usage)
            self.reasoning = tuple(_reasoning_of(event.response))
        elif isinstance(event, ResponseFailedEvent):
            error = event.response.error
            raise _failure(error.message if error else "no reason given")
        elif isinstance(event, ResponseErrorEvent):
            raise _failure(event.message)
        return ""


class OpenAIResponsesChatModel(OpenAIClients):
    """OpenAI's Responses API through ``openai.OpenAI`` / ``openai.AsyncOpenAI``:
    ``LLM(provider="openai", api="responses")``.

    Requests are stateless (``store=False``); ``extra=`` passes any other field of
    ``responses.create`` (``reasoning``, ``store``, ``previous_response_id``, ``include``...).

    Args:
        model, api_key, base_url, timeout, max_retries, default_max_tokens: as for
            :class:`OpenAIClients`.
    """

    _tally = _StreamState

    @staticmethod
    def _endpoint(client: AnyOpenAIClient) -> Any:
        return client.responses.create

    # ------------------------------------------------------------------ translation
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        refuse(_PROVIDER, request.messages)
        warn_unsupported("the Responses API", stop=request.stop, seed=request.seed)
        params: dict[str, Any] = {
            "model": request.model,
            "input": [i for m in request.messages if m.role is not Role.SYSTEM for i in _items(m)],
            "store": False,
        }
        if _REASONING_MODELS.match(request.model):
            params["include"] = ["reasoning.encrypted_content"]
        if request.tools:
            params["tools"] = _tools(request.tools)
        if request.tool_choice is not None:
            params["tool_choice"] = _tool_choice(request.tool_choice)
        if request.response_format is not None:
            params["text"] = _text_format(request.response_format)
        params.update(
            drop_none(
                instructions=system_text(request.messages),
                max_output_tokens=request.max_tokens or self._default_max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
            )
        )
        add_extra_body(
            params, request.extra, provider=_PROVIDER, owned=_OWNED, keywords=self._keywords
        )
        return params

    @staticmethod
    def _response(raw: Response, request: ChatRequest) -> LLMResponse:
        usage = _usage(raw.usage)
        if raw.status == "failed":
            raise _failure(raw.error.message if raw.error else "no reason given")
        try:
            text, calls, reasoning = _reply(raw)
        except ResponseFormatError as exc:
            exc.usage = usage  # billed all the same
            raise
        details = raw.incomplete_details
        return LLMResponse(
            content=text,
            tool_calls=calls,
            usage=usage,
            model=raw.model or "",
            provider=_PROVIDER,
            finish_reason=(details.reason if details else None) or raw.status,
            reasoning=tuple(reasoning),
        )

    # ------------------------------------------------------------------ port
    def _open(self, client: AnyOpenAIClient, params: dict[str, Any]) -> Any:
        return client.responses.create(**params, stream=True)
