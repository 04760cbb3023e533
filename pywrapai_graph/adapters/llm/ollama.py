"""Ollama through the official ``ollama`` Python client (``/api/chat``)."""

from __future__ import annotations

import inspect
import json
import logging
from contextlib import AbstractContextManager
from typing import Any

from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._provider_errors import status_code_errors
from pywrapai_graph.adapters._provider_payload import drop_none, owned_fields, split_extra
from pywrapai_graph.adapters._transport import BodyRecorder
from pywrapai_graph.adapters.llm._base import SDKChatModel
from pywrapai_graph.adapters.llm._media import refuse
from pywrapai_graph.adapters.llm._replies import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    StreamTally,
)
from pywrapai_graph.application.tools.provider_schemas import openai_tools
from pywrapai_graph.domain import (
    ChatRequest,
    DocumentPart,
    ImagePart,
    LLMResponse,
    Message,
    Role,
    TextPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import MissingExtraError

try:
    import ollama
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("ollama", "ollama") from exc

__all__ = ["OllamaChatModel"]

DEFAULT_MODEL = "llama3.2"
_PROVIDER = "ollama"
_log = logging.getLogger(__name__)
# extra= keys that Client.chat names (keep_alive, think...) go as keywords; the others (and
# the entries of extra={"options": {...}}) are model options such as num_ctx or top_k
_OWNED = owned_fields(format="chat_structured()", num_predict="max_tokens=", stop="stop=")


def _refusal(part: ImagePart | DocumentPart) -> str | None:
    if isinstance(part, DocumentPart):
        return "Ollama takes no documents; send the PDF's text as the message's content"
    if part.url is not None:
        return "Ollama fetches no image URLs; pass the bytes with ImagePart.from_bytes(...)"
    return None


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role.value, "content": m.content}
    if m.parts:  # Ollama's images travel beside the text, which is joined
        texts = [p.text for p in m.content_parts if isinstance(p, TextPart)]
        out["content"] = "\n\n".join(texts)
        out["images"] = [p.base64() for p in m.parts if isinstance(p, ImagePart)]
    if m.tool_calls:
        out["tool_calls"] = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in m.tool_calls
        ]
    if m.role is Role.TOOL and m.tool_result is not None:
        out["tool_name"] = m.tool_result.name
    return out


def _usage(raw: Any) -> TokenUsage:
    return TokenUsage(
        input_tokens=getattr(raw, "prompt_eval_count", None) or 0,
        output_tokens=getattr(raw, "eval_count", None) or 0,
    )


class _StreamState(StreamTally):
    """Follows an NDJSON chat stream: the ``done: true`` line ends it and carries usage."""

    marker = "done: true"
    calls = 0  # the tool calls seen so far

    def feed(self, part: Any) -> str:
        text = str(part.message.content) if part.message and part.message.content else ""
        for call in (part.message.tool_calls or ()) if part.message else ():
            index = self.calls
            self.calls += 1  # Ollama sends a call whole, with no id: its name, its arguments
            self.call_delta(index, f"call_{index}", call.function.name)
            self.call_delta(index, arguments=json.dumps(dict(call.function.arguments or {})))
        if part.done:
            self.ended = True
            self.usage, self.model = _usage(part), part.model
        return text


class OllamaChatModel(SDKChatModel[ollama.Client, ollama.AsyncClient]):
    """A local Ollama server through ``ollama.Client`` / ``ollama.AsyncClient``.

    ``OLLAMA_HOST`` works as with the client; ``base_url=`` wins. Ollama follows OpenAI's
    tool format; ``tool_choice`` is not supported by Ollama and is ignored with a warning.
    Tool calls carry no ids on the wire, so ids ``call_0``, ``call_1``... are assigned.

    Raises:
        MissingExtraError: the ``ollama`` package is not installed.
    """

    provider_name = _PROVIDER
    _tally = _StreamState

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | None = None,
        api_key: str | None = None,
        max_retries: int | None = None,
    ) -> None:
        self._model = model or DEFAULT_MODEL
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._secret = api_key
        # the client neither retries nor bounds a request by default: we do both
        self._retries = DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        bodies = self._bodies = BodyRecorder()
        self._client = ollama.Client(
            host=base_url,
            timeout=timeout,
            headers=headers,
            event_hooks={"response": [bodies.hook]},
        )
        self._aclients = PerLoop(
            lambda: ollama.AsyncClient(
                host=base_url,
                timeout=timeout,
                headers=headers,
                event_hooks={"response": [bodies.ahook]},
            ),
            close_async,
        )
        self._keywords = frozenset(inspect.signature(self._client.chat).parameters)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        refuse(_PROVIDER, request.messages, _refusal)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": [_message(m) for m in request.messages],
        }
        if request.tools:
            params["tools"] = openai_tools(request.tools)
        if request.tool_choice not in (None, "auto"):
            _log.warning("Ollama does not support tool_choice=%r; ignoring it", request.tool_choice)
        if request.response_format is not None:
            params["format"] = dict(request.response_format.json_schema)
        keywords, more_options = split_extra(
            request.extra,
            provider=_PROVIDER,
            owned=_OWNED,
            keywords=self._keywords,
            nested="options",
        )
        params.update(keywords)
        options = drop_none(
            num_predict=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            stop=list(request.stop) if request.stop else None,
            seed=request.seed,
        )
        options.update(more_options)
        if options:
            params["options"] = options
        return params

    @staticmethod
    def _response(raw: Any, request: ChatRequest) -> LLMResponse:
        message = raw.message
        calls = [
            ToolCall(f"call_{i}", c.function.name, dict(c.function.arguments or {}))
            for i, c in enumerate(message.tool_calls or ())
        ]
        return LLMResponse(
            content=message.content or "",
            tool_calls=calls,
            usage=_usage(raw),
            model=raw.model or request.model,
            provider=_PROVIDER,
            finish_reason=getattr(raw, "done_reason", None) or None,
        )

    def _errors(self) -> AbstractContextManager[None]:
        return status_code_errors(
            ollama.ResponseError,
            _PROVIDER,
            self._secret,
            "status_code",
            "error",
            headers=lambda _exc: self._bodies.headers(),
        )

    def _create(self, client: ollama.Client | ollama.AsyncClient, params: dict[str, Any]) -> Any:
        return client.chat(**params)

    def _open(self, client: ollama.Client | ollama.AsyncClient, params: dict[str, Any]) -> Any:
        return client.chat(**params, stream=True)
