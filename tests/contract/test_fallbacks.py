"""Fallback chains through the official SDKs over real HTTP to the local wire servers: every
failure kind moves to the next model (sync, async, streamed before the first token,
structured); a refusal, a bad request, bad credentials or a failure after the first token
does not. The answer, the ledger and the trace name the model that answered and those
that failed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from pywrapai import LLM
from pywrapai_graph import GraphLLM
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import FailedAttempt
from pywrapai_graph.errors import (
    ArgumentTypeError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    InvalidArgumentError,
    ProviderError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    ResponseFormatError,
)
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.servers import free_port
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer

MODELS = {
    "openai": "gpt-4o-mini",
    "anthropic": "claude-haiku-4-5-20251001",
    "gemini": "gemini-2.5-flash",
    "ollama": "llama3.2",
}
WIRES: dict[str, Callable[[], WireServer]] = {
    "openai": OpenAIWire,
    "anthropic": AnthropicWire,
    "gemini": GeminiWire,
    "ollama": OllamaWire,
}


def options(name: str, wire: WireServer | None, *, timeout: float = 5.0) -> dict[str, Any]:
    url = f"http://127.0.0.1:{free_port()}" if wire is None else wire.url  # None: nobody there
    out: dict[str, Any] = {
        "base_url": url + "/v1" if name == "openai" else url,
        "timeout": timeout,
        "max_retries": 0,
    }
    if name != "ollama":
        out["api_key"] = SECRET
    return out


def chain(
    primary: str, wire: WireServer | None, backup: WireServer, *, timeout: float = 5.0
) -> LLM:
    """``primary`` on ``wire`` (None: an address nobody listens on), then OpenAI on ``backup``
    (Anthropic when the primary is OpenAI), given as a configuration mapping."""
    second = "anthropic" if primary == "openai" else "openai"
    fallback = {"provider": second, "model": MODELS[second], **options(second, backup)}
    llm = LLM(
        provider=primary,
        model=MODELS[primary],
        fallbacks=[fallback],
        **options(primary, wire, timeout=timeout),
    )
    _MADE.append(llm)
    return llm


_MADE: list[LLM] = []


@pytest.fixture(autouse=True)
def _close_made() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.pop().close()


def backup_for(primary: str) -> WireServer:
    return (AnthropicWire if primary == "openai" else OpenAIWire)()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=tracing)
    try:
        yield exporter
    finally:
        configure()


# (primary provider, HTTP status, the typed error it is) — every status a provider uses
# for "try again later": rate limits, overload, server errors
STATUSES = [
    ("openai", 429, RateLimitError),
    ("openai", 500, ProviderUnavailableError),
    ("openai", 503, ProviderUnavailableError),
    ("anthropic", 529, ProviderUnavailableError),
    ("anthropic", 429, RateLimitError),
    ("gemini", 503, ProviderUnavailableError),
    ("gemini", 429, RateLimitError),
    ("ollama", 500, ProviderUnavailableError),
]


@pytest.mark.parametrize(("primary", "status", "error"), STATUSES)
def test_a_retryable_status_moves_to_the_next_model(
    primary: str, status: int, error: type[ProviderError], caplog: pytest.LogCaptureFixture
) -> None:
    with WIRES[primary]() as wire, backup_for(primary) as backup:
        wire.fail(status, "try later")
        backup.reply(ScriptedReply("from the backup"))
        llm = chain(primary, wire, backup)
        with caplog.at_level(logging.WARNING, logger="pywrapai_graph.llm"):
            response = llm.chat("Hi")
        llm.close()
        assert response.content == "from the backup"
        failed = FailedAttempt(primary, MODELS[primary], error.__name__, status)
        assert response.fallback_from == (failed,)
        assert response.provider != primary
        assert len(list(wire.chat_requests())) == 1
        assert len(list(backup.chat_requests())) == 1
        [record] = llm.tokens.records  # the failed call cost nothing: one record
        assert (record.provider, record.fallback_from) == (response.provider, (failed,))
        moves = [r for r in caplog.records if "fallback" in r.getMessage()]
        assert len(moves) == 1
        assert str(failed) in moves[0].getMessage()
        assert SECRET not in caplog.text


@pytest.mark.parametrize(("primary", "status", "error"), STATUSES[:4])
def test_a_retryable_status_moves_on_in_async_calls(
    primary: str, status: int, error: type[ProviderError]
) -> None:
    with WIRES[primary]() as wire, backup_for(primary) as backup:
        wire.fail(status, "try later")
        backup.reply("async backup")
        llm = chain(primary, wire, backup)

        async def run() -> str:
            try:
                return (await llm.achat("Hi")).content
            finally:
                await llm.aclose()

        assert asyncio.run(run()) == "async backup"
        assert llm.tokens.records[-1].fallback_from[0].error == error.__name__


def test_a_timeout_moves_to_the_next_model() -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.stall(3.0, "too late")
        backup.reply("in time")
        llm = chain("openai", wire, backup, timeout=0.3)
        response = llm.chat("Hi")
        assert response.content == "in time"
        assert response.fallback_from[0].error == ProviderTimeoutError.__name__


def test_an_unreachable_provider_moves_to_the_next_model_sync_and_async() -> None:
    with AnthropicWire() as backup:
        backup.reply("sync", "async")
        llm = chain("openai", None, backup)
        assert llm.chat("Hi").fallback_from[0].error == ProviderUnavailableError.__name__

        async def run() -> str:
            try:
                return (await llm.achat("Hi")).content
            finally:
                await llm.aclose()

        assert asyncio.run(run()) == "async"


def test_the_last_models_failure_propagates_after_every_model_was_asked() -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(429, "slow down")
        backup.fail(529, "overloaded")
        llm = chain("openai", wire, backup)
        with pytest.raises(ProviderUnavailableError) as info:
            llm.chat("Hi")
        assert info.value.status_code == 529
        assert len(llm.tokens) == 0


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, BadRequestError), (401, AuthenticationError), (404, BadRequestError)],
)
def test_a_bad_request_or_bad_credentials_never_move_on(
    status: int, error: type[ProviderError]
) -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(status, "no")
        llm = chain("openai", wire, backup)
        with pytest.raises(error):
            llm.chat("Hi")
        assert list(backup.chat_requests()) == []


def test_a_refusal_is_an_answer_not_a_failure() -> None:
    refusal = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't."},
                "finish_reason": "content_filter",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.raw(refusal)
        llm = chain("openai", wire, backup)
        response = llm.chat("Something forbidden")
        assert response.finish_reason == "content_filter"
        assert (response.provider, response.fallback_from) == ("openai", ())
        assert list(backup.chat_requests()) == []


def test_a_garbage_reply_from_the_backup_is_booked_with_its_fallback_attribution() -> None:
    """A 200 that cannot be decoded was still billed: its record names the model that failed."""
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(503, "overloaded")
        backup.raw("not json at all")
        llm = chain("openai", wire, backup)
        with pytest.raises(ResponseFormatError):
            llm.chat("Hi")
        [record] = llm.tokens.records
        assert record.provider == "anthropic"
        assert record.fallback_from == (
            FailedAttempt("openai", MODELS["openai"], "ProviderUnavailableError", 503),
        )


class City(BaseModel):
    name: str
    population: int


def test_structured_output_moves_on_and_is_validated_from_the_backup() -> None:
    with AnthropicWire() as wire, OpenAIWire() as backup:
        wire.fail(529, "overloaded")
        backup.reply('{"name": "Paris", "population": 2100000}')
        llm = chain("anthropic", wire, backup)
        assert llm.chat_structured("Paris?", City) == City(name="Paris", population=2100000)
        assert llm.tokens.records[-1].provider == "openai"
        assert backup.requests[-1].json["response_format"]["type"] == "json_schema"

        async def run() -> City:
            backup.reply('{"name": "Lyon", "population": 520000}')
            wire.fail(429, "slow down")
            try:
                return await llm.achat_structured("Lyon?", City)
            finally:
                await llm.aclose()

        assert asyncio.run(run()).name == "Lyon"


# ---------------------------------------------------------------------------- streams


@pytest.mark.parametrize("primary", ["openai", "anthropic", "gemini", "ollama"])
def test_a_stream_that_fails_before_its_first_token_moves_on(primary: str) -> None:
    with WIRES[primary]() as wire, backup_for(primary) as backup:
        wire.fail(429, "slow down")
        backup.reply("streamed from the backup")
        llm = chain(primary, wire, backup)
        stream = llm.stream("Hi")
        assert "".join(stream) == "streamed from the backup"
        assert stream.response.fallback_from[0].provider == primary
        [record] = llm.tokens.records
        assert record.provider == stream.response.provider != primary
        assert record.fallback_from == stream.response.fallback_from


def test_an_async_stream_that_times_out_before_its_first_token_moves_on() -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.stall(3.0, "too late")
        backup.reply("async stream")
        llm = chain("openai", wire, backup, timeout=0.3)

        async def run() -> tuple[str, tuple[FailedAttempt, ...]]:
            stream = llm.astream("Hi")
            try:
                text = "".join([piece async for piece in stream])
                return text, stream.response.fallback_from
            finally:
                await llm.aclose()

        text, failed = asyncio.run(run())
        assert text == "async stream"
        assert failed[0].error == ProviderTimeoutError.__name__


def test_a_stream_that_fails_after_its_first_token_never_moves_on() -> None:
    """The caller has text in hand: a second model's answer would not continue it."""
    with OllamaWire() as wire, OpenAIWire() as backup:
        # Ollama's first line carries text; the read timeout fires before the second one
        wire.pace(10.0).reply("first piece, then silence")
        llm = chain("ollama", wire, backup, timeout=2.0)
        received: list[str] = []
        with pytest.raises(ProviderTimeoutError):
            received.extend(llm.stream("Hi"))
        assert received  # a token had arrived
        assert list(backup.chat_requests()) == []
        [record] = llm.tokens.records  # what was produced is booked, no fallback named
        assert (record.provider, record.fallback_from) == ("ollama", ())


def test_an_async_stream_that_fails_after_its_first_token_never_moves_on() -> None:
    with OllamaWire() as wire, OpenAIWire() as backup:
        wire.pace(10.0).reply("first piece, then silence")
        llm = chain("ollama", wire, backup, timeout=2.0)
        received: list[str] = []

        async def run() -> None:
            try:
                async for piece in llm.astream("Hi"):
                    received.append(piece)
            finally:
                await llm.aclose()

        with pytest.raises(ProviderTimeoutError):
            asyncio.run(run())
        assert received
        assert list(backup.chat_requests()) == []


# ---------------------------------------------------------------------------- trace, graph


def test_the_trace_has_one_span_per_model_asked(spans: InMemorySpanExporter) -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(429, "slow down")
        backup.reply("ok")
        chain("openai", wire, backup).chat("Hi")
    first, second = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    a, b = dict(first.attributes or {}), dict(second.attributes or {})
    assert (a["gen_ai.provider.name"], a["error.type"]) == ("openai", "RateLimitError")
    assert b["gen_ai.provider.name"] == "anthropic"
    assert b["gen_ai.request.model"] == MODELS["anthropic"]
    assert "error.type" not in b
    assert b["pywrapai.fallback.from"] == ("openai/gpt-4o-mini (RateLimitError HTTP 429)",)


def test_graph_llm_and_llm_fallbacks_go_through_the_same_chain() -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(500, "boom")
        backup.reply("graph answer")
        primary = LLM(provider="openai", model=MODELS["openai"], **options("openai", wire))
        second = LLM(
            provider="anthropic", model=MODELS["anthropic"], **options("anthropic", backup)
        )
        graph = GraphLLM(
            llm=LLM(
                provider="openai",
                model=MODELS["openai"],
                fallbacks=[second],
                **options("openai", wire),
            )
        )
        response = graph.chat("Hi")
        assert (response.content, response.provider) == ("graph answer", "anthropic")
        assert graph.llm.fallbacks == ("anthropic/" + MODELS["anthropic"],)
        assert second.tokens.records == []  # the primary's ledger books the backup's answer
        graph.llm.close()
        primary.close()
        second.close()


# ---------------------------------------------------------------------------- configuration


def test_fallbacks_come_from_the_configuration() -> None:
    with OpenAIWire() as wire, AnthropicWire() as backup:
        wire.fail(429, "slow down")
        backup.reply("configured backup")
        config = {
            "llm": {
                "provider": "openai",
                "model": MODELS["openai"],
                **options("openai", wire),
                "fallbacks": [
                    {
                        "provider": "anthropic",
                        "model": MODELS["anthropic"],
                        **options("anthropic", backup),
                    }
                ],
            },
            "store": {"backend": "memory"},
        }
        with build_container(config) as container:
            response = container.graph().chat("Hi")
            assert (response.content, response.provider) == ("configured backup", "anthropic")
            [record] = [r for r in container.ledger().records if r.kind == "chat"]
            assert record.fallback_from[0].error == "RateLimitError"


def test_an_unknown_fallback_provider_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="fallbacks"):
        load_settings({"llm": {"provider": "openai", "fallbacks": [{"provider": "nope"}]}})
    with pytest.raises(InvalidArgumentError, match="provider name"):
        LLM(provider=ScriptedChatModel(), fallbacks=[{"model": "x"}])
    with pytest.raises(ArgumentTypeError, match="fallbacks"):
        LLM(provider=ScriptedChatModel(), fallbacks="openai")  # type: ignore[arg-type]
