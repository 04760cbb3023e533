"""Google Gemini through the official ``google-genai`` SDK (Gemini Developer API)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from pywrapai_graph.adapters._gemini import close_aio, gemini_client
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._provider_errors import status_code_errors
from pywrapai_graph.adapters._provider_payload import drop_none, owned_fields, split_extra
from pywrapai_graph.adapters._transport import BodyRecorder
from pywrapai_graph.adapters.llm._base import (
    SDKChatModel,
    add_tool_result,
    system_text,
    tool_result_of,
)
from pywrapai_graph.adapters.llm._gemini_thoughts import sign_first, thoughts_of
from pywrapai_graph.adapters.llm._media import gemini_tokens, media_parts, refuse
from pywrapai_graph.adapters.llm._replies import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    StreamTally,
)
from pywrapai_graph.application.tools.provider_schemas import gemini_declarations, gemini_schema
from pywrapai_graph.domain import (
    ChatRequest,
    DocumentPart,
    ImagePart,
    LLMResponse,
    Message,
    Part,
    Role,
    StreamChunk,
    TextPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import MissingExtraError, ResponseFormatError, UnsupportedContentError

try:
    import httpx
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
    from google.genai.client import AsyncClient
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("google-genai", "gemini") from exc

__all__ = ["GeminiChatModel"]

DEFAULT_MODEL = "gemini-2.5-flash"
_PROVIDER = "gemini"
_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
# extra= keys that name a GenerateContentConfig field go in the config (typed by the SDK);
# the others go into the request body through http_options.extra_body
_OWNED = owned_fields(
    contents="the input messages",
    config="extra= keys (config fields) and the generation arguments",
    generation_config="the generation arguments or extra= config keys (e.g. top_k)",
    generationConfig="the generation arguments or extra= config keys (e.g. top_k)",
    system_instruction="a SYSTEM message",
    systemInstruction="a SYSTEM message",
    tool_config="tool_choice=",
    toolConfig="tool_choice=",
    automatic_function_calling="tools= (never called automatically)",
    response_mime_type="chat_structured()",
    response_schema="chat_structured()",
    response_json_schema="chat_structured()",
    max_output_tokens="max_tokens=",
    stop_sequences="stop=",
    http_options="the client's options (timeout=, base_url=) or plain extra= fields",
)


_IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")
_MAX_INLINE_BYTES = 20 * 2**20  # a whole generateContent request carries at most 20 MB


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    return {"inline_data": {"mime_type": part.media_type, "data": part.data}}


def _refusal(part: ImagePart | DocumentPart) -> str | None:
    if isinstance(part, ImagePart) and part.url is not None:
        return (
            "the Gemini API fetches no image URLs (only its own Files API and YouTube); "
            "download the image and pass ImagePart.from_bytes(...)"
        )
    if isinstance(part, ImagePart) and part.media_type not in _IMAGE_TYPES:
        return f"Gemini takes images of {list(_IMAGE_TYPES)} only; convert it to PNG"
    return None


def _refuse_too_large(messages: tuple[Message, ...]) -> None:
    inline = sum(len(p.data or b"") for _, p in media_parts(messages))
    if inline > _MAX_INLINE_BYTES:
        raise UnsupportedContentError(
            f"gemini: the request's images and documents add up to {inline} bytes; a "
            f"request carries at most {_MAX_INLINE_BYTES // 2**20} MB inline (upload larger "
            "files with the Gemini Files API)"
        )


def _contents(messages: tuple[Message, ...]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system instruction, contents); consecutive tool results merge into one user turn."""
    contents: list[dict[str, Any]] = []
    for m in messages:
        if m.role is Role.SYSTEM:
            continue
        if m.role is Role.TOOL:
            result = tool_result_of(m)
            part = {
                "function_response": {
                    "id": result.tool_call_id,
                    "name": result.name,
                    "response": {"result": m.content},
                }
            }
            add_tool_result(contents, "parts", part, lambda p: "function_response" in p)
        elif m.role is Role.ASSISTANT:
            parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
            parts += [
                {"function_call": {"id": c.id, "name": c.name, "args": dict(c.arguments)}}
                for c in m.tool_calls or ()
            ]
            parts = parts or [{"text": ""}]
            sign_first(parts, m.reasoning, _PROVIDER)
            contents.append({"role": "model", "parts": parts})
        elif m.parts:
            contents.append({"role": "user", "parts": [_part(p) for p in m.content_parts]})
        else:
            contents.append({"role": "user", "parts": [{"text": m.content}]})
    return system_text(messages), contents


def _usage(meta: Any) -> TokenUsage:
    if meta is None:
        return TokenUsage()
    thoughts = meta.thoughts_token_count or 0
    return TokenUsage(
        input_tokens=meta.prompt_token_count or 0,
        output_tokens=(meta.candidates_token_count or 0) + thoughts,
        cache_read_tokens=meta.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


def _parts(raw: Any) -> list[Any]:
    if not raw.candidates or raw.candidates[0].content is None:
        return []
    return list(raw.candidates[0].content.parts or [])


def _finish_reason(raw: Any) -> str | None:
    reason = raw.candidates[0].finish_reason if raw.candidates else None
    return None if reason is None else str(getattr(reason, "value", reason))


class _StreamState(StreamTally):
    """Follows a streamGenerateContent stream: a candidate's finish reason ends it; thought
    parts and signatures are kept for the final chunk."""

    marker = "a finish reason"
    calls = 0  # the tool calls seen so far

    def __init__(self, provider: str) -> None:
        super().__init__(provider)
        self.thoughts: list[Any] = []

    def final(self) -> StreamChunk:
        return replace(super().final(), reasoning=thoughts_of(self.thoughts, _PROVIDER))

    def feed(self, raw: Any) -> str:
        self.thoughts += [p for p in _parts(raw) if p.thought or p.thought_signature]
        self.usage = _usage(raw.usage_metadata) if raw.usage_metadata else self.usage
        self.model = raw.model_version or self.model
        self.ended = self.ended or any(c.finish_reason is not None for c in raw.candidates or ())
        parts = _parts(raw)
        for call in (p.function_call for p in parts if p.function_call is not None):
            index = self.calls
            self.calls += 1  # Gemini sends a call whole: its name, then its arguments
            self.call_delta(index, call.id or f"call_{index}", call.name or "")
            self.call_delta(index, arguments=json.dumps(call.args or {}))
        return "".join(p.text for p in parts if p.text and not p.thought)


class GeminiChatModel(SDKChatModel[genai.Client, AsyncClient]):
    """Gemini through ``google.genai.Client`` (sync and ``client.aio``).

    ``GOOGLE_API_KEY`` (or ``GEMINI_API_KEY``) and ``GOOGLE_GEMINI_BASE_URL`` work as with the
    SDK. SYSTEM messages become ``system_instruction``; tools become function declarations
    with the schema keys Gemini rejects stripped.

    Raises:
        MissingExtraError: the ``google-genai`` package is not installed.
        ConfigurationError: no API key is available.
    """

    provider_name = _PROVIDER
    _tally = _StreamState
    media_tokens = staticmethod(gemini_tokens)
    #: the Vertex AI client options (project, location, credentials); None: the Gemini API
    _vertex: Mapping[str, Any] | None = None

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        # google-genai neither honours Retry-After nor bounds a request by default: we do both
        self._retries = DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        bodies = self._bodies = BodyRecorder()
        hooks = {"event_hooks": {"response": [bodies.hook]}}
        vertex = self._vertex
        self._client = gemini_client(
            api_key, base_url, timeout, 0, client_args=hooks, vertex=vertex
        )

        def async_client() -> AsyncClient:
            # An httpx transport of our own makes the SDK use httpx instead of aiohttp for
            # client.aio, so the response hook sees the exact body of a garbage reply.
            args = {
                "transport": httpx.AsyncHTTPTransport(),
                "event_hooks": {"response": [bodies.ahook]},
            }
            return gemini_client(
                api_key, base_url, timeout, 0, async_client_args=args, vertex=vertex
            ).aio

        # client.aio binds its httpx client to a loop: one whole client per loop
        self._aclients = PerLoop(async_client, close_aio)
        self._model = model or DEFAULT_MODEL
        self._secret = api_key or getattr(self._client._api_client, "api_key", None)

    def _config(self, request: ChatRequest) -> Any:
        t = genai_types
        system, _ = _contents(request.messages)
        config: dict[str, Any] = {}
        if system is not None:
            config["system_instruction"] = system
        if request.tools:
            config["tools"] = [
                t.Tool(
                    function_declarations=[
                        t.FunctionDeclaration(**d) for d in gemini_declarations(request.tools)
                    ]
                )
            ]
            config["automatic_function_calling"] = t.AutomaticFunctionCallingConfig(disable=True)
        if request.tool_choice is not None and request.tools:
            mode = _MODES.get(request.tool_choice, "ANY")
            names = None if request.tool_choice in _MODES else [request.tool_choice]
            config["tool_config"] = t.ToolConfig(
                function_calling_config=t.FunctionCallingConfig(
                    mode=mode, allowed_function_names=names
                )
            )
        if request.response_format is not None:
            config["response_mime_type"] = "application/json"
            config["response_schema"] = gemini_schema(request.response_format.json_schema)
        config.update(
            drop_none(
                max_output_tokens=request.max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
                stop_sequences=list(request.stop) if request.stop else None,
                seed=request.seed,
            )
        )
        keywords, body = split_extra(
            request.extra,
            provider=_PROVIDER,
            owned=_OWNED,
            keywords=t.GenerateContentConfig.model_fields,
            nested="extra_body",
        )
        config.update(keywords)
        if body:
            config["http_options"] = t.HttpOptions(extra_body=body)
        return t.GenerateContentConfig(**config)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        refuse(_PROVIDER, request.messages, _refusal)
        _refuse_too_large(request.messages)
        _, contents = _contents(request.messages)
        return {"model": request.model, "contents": contents, "config": self._config(request)}

    @classmethod
    def _response(cls, raw: Any, request: ChatRequest) -> LLMResponse:
        if not raw.candidates and raw.prompt_feedback is None:
            raise ResponseFormatError(
                "gemini: the reply has no candidates and no prompt feedback", raw=""
            )
        texts: list[str] = []
        calls: list[ToolCall] = []
        for i, part in enumerate(_parts(raw)):
            if part.function_call is not None:
                fc = part.function_call
                calls.append(ToolCall(fc.id or f"call_{i}", fc.name or "", dict(fc.args or {})))
            elif part.text and not part.thought:
                texts.append(part.text)
        return LLMResponse(
            content="".join(texts),
            tool_calls=calls,
            usage=_usage(raw.usage_metadata),
            model=raw.model_version or request.model,
            provider=cls.provider_name,
            finish_reason=_finish_reason(raw),
            reasoning=thoughts_of(_parts(raw), _PROVIDER),
        )

    def _errors(self) -> AbstractContextManager[None]:
        return status_code_errors(
            genai_errors.APIError,
            self.provider_name,
            self._secret,
            "code",
            "message",
            headers=lambda exc: getattr(getattr(exc, "response", None), "headers", None),
        )

    def _create(self, client: genai.Client | AsyncClient, params: dict[str, Any]) -> Any:
        return client.models.generate_content(**params)

    def _open(self, client: genai.Client | AsyncClient, params: dict[str, Any]) -> Any:
        return client.models.generate_content_stream(**params)
