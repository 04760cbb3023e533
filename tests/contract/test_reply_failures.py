"""Replies that cannot be trusted, on all four providers through their SDKs over real HTTP:
garbage 200s, streams cut before their end marker, 429/5xx retries with Retry-After, timeouts."""

from __future__ import annotations

import asyncio
import json

import pytest

from pywrapai_graph.adapters.llm._replies import DEFAULT_TIMEOUT, retrying
from pywrapai_graph.errors import (
    IncompleteStreamError,
    ProviderUnavailableError,
    RateLimitError,
    ResponseFormatError,
)
from tests.contract.test_chat_adapters import Provider, provider

__all__ = ["provider"]

GARBAGE = ["not json at all", "", '{"unexpected": 1}', "[1, 2]", '{"choices": 5, "content": 5}']


@pytest.mark.parametrize("body", GARBAGE)
def test_a_garbage_200_is_a_response_format_error_with_the_raw_body(
    provider: Provider, body: str
) -> None:
    provider.wire.raw(body)
    llm = provider.llm()
    with pytest.raises(ResponseFormatError) as info:
        llm.chat("Hi")
    assert info.value.raw == body
    assert len(llm.tokens) == 1  # a 200 may be billed: it is recorded, parsed or not


@pytest.mark.parametrize("body", GARBAGE)
def test_a_garbage_200_is_typed_with_the_raw_body_in_async_calls_too(
    provider: Provider, body: str
) -> None:
    provider.wire.raw(body)
    llm = provider.llm()

    async def run() -> None:
        try:
            await llm.achat("Hi")
        finally:
            await llm.aclose()

    with pytest.raises(ResponseFormatError) as info:
        asyncio.run(run())
    assert info.value.raw == body
    assert len(llm.tokens) == 1


def test_a_stream_cut_before_its_end_marker_is_an_error(provider: Provider) -> None:
    provider.wire.cut("Once upon a time there was a long story", keep=2)
    llm = provider.llm()
    received: list[str] = []

    def consume() -> None:
        received.extend(llm.stream("Tell a story"))

    with pytest.raises(IncompleteStreamError) as info:
        consume()
    assert "Once upon a time there was a long story".startswith(info.value.partial)
    assert "".join(received) == info.value.partial
    assert info.value.provider == provider.name
    assert len(llm.tokens) == 1


def test_an_async_stream_cut_before_its_end_marker_is_an_error(provider: Provider) -> None:
    provider.wire.cut("Once upon a time there was a long story", keep=2)
    llm = provider.llm()

    async def run() -> None:
        try:
            async for _ in llm.astream("Tell a story"):
                pass
        finally:
            await llm.aclose()

    with pytest.raises(IncompleteStreamError):
        asyncio.run(run())


@pytest.mark.parametrize("status", [429, 500])
def test_every_provider_honours_max_retries(provider: Provider, status: int) -> None:
    provider.wire.fail(status, "busy", headers={"retry-after": "0"})
    provider.wire.reply("recovered")
    assert provider.llm(max_retries=1).chat("Hi").content == "recovered"
    assert len(list(provider.wire.chat_requests())) == 2


def test_max_retries_zero_means_one_request(provider: Provider) -> None:
    provider.wire.fail(429, "busy", headers={"retry-after": "0"})
    provider.wire.reply("never sent")
    with pytest.raises(RateLimitError):
        provider.llm(max_retries=0).chat("Hi")
    assert len(list(provider.wire.chat_requests())) == 1


def test_every_provider_reports_retry_after(provider: Provider) -> None:
    provider.wire.fail(429, "slow down", headers={"retry-after": "7"})
    with pytest.raises(RateLimitError) as info:
        provider.llm(max_retries=0).chat("Hi")
    assert info.value.retry_after == 7.0


def test_every_provider_has_a_default_timeout(provider: Provider) -> None:
    llm = provider.llm(timeout=None)
    client = llm.chat_model._client  # type: ignore[attr-defined]
    if provider.name in ("openai", "anthropic"):
        configured = client.timeout.read
    elif provider.name == "ollama":
        configured = client._client.timeout.read
    else:
        configured = client._api_client._http_options.timeout / 1000
    assert configured == DEFAULT_TIMEOUT


def test_retrying_waits_what_retry_after_asks_then_backs_off() -> None:
    waits: list[float] = []
    failures = [
        RateLimitError("slow", retry_after=3.0),
        ProviderUnavailableError("down", status_code=503),
        RateLimitError("slow", retry_after=None),
    ]

    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    assert retrying(call, max_retries=3, sleep=waits.append) == "ok"
    assert waits == [3.0, 1.0, 2.0]  # Retry-After, then the exponential backoff of attempts 2, 3


def test_retrying_stops_after_max_retries() -> None:
    calls: list[int] = []

    def down() -> str:
        calls.append(1)
        raise ProviderUnavailableError("nope", status_code=501)

    with pytest.raises(ProviderUnavailableError):
        retrying(down, max_retries=2, sleep=lambda _s: None)
    assert len(calls) == 3


def _collect(provider: Provider, *, is_async: bool, max_retries: int) -> str:
    llm = provider.llm(max_retries=max_retries)
    if not is_async:
        return "".join(llm.stream("Hi"))

    async def run() -> str:
        try:
            return "".join([piece async for piece in llm.astream("Hi")])
        finally:
            await llm.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("status", [429, 500, 503])
def test_the_request_that_opens_a_stream_is_retried(
    provider: Provider, status: int, is_async: bool
) -> None:
    provider.wire.fail(status, "busy", headers={"retry-after": "0"})
    provider.wire.fail(status, "still busy", headers={"retry-after": "0"})
    provider.wire.reply("streamed after two refusals")
    assert _collect(provider, is_async=is_async, max_retries=2) == "streamed after two refusals"
    assert len(list(provider.wire.chat_requests())) == 3


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_stream_open_stops_after_max_retries_with_retry_after(
    provider: Provider, is_async: bool
) -> None:
    for _ in range(3):
        provider.wire.fail(429, "slow down", headers={"retry-after": "0"})
    provider.wire.reply("never sent")
    with pytest.raises(RateLimitError) as info:
        _collect(provider, is_async=is_async, max_retries=1)
    assert info.value.retry_after == 0.0
    assert len(list(provider.wire.chat_requests())) == 2


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_stream_that_already_delivered_text_is_not_retried(
    provider: Provider, is_async: bool
) -> None:
    provider.wire.cut("Once upon a time there was a long story", keep=2)
    provider.wire.reply("a second answer the caller never asked for")
    with pytest.raises(IncompleteStreamError):
        _collect(provider, is_async=is_async, max_retries=2)
    assert len(list(provider.wire.chat_requests())) == 1


@pytest.mark.parametrize("text", ['{"name": "Paris", "population": 2100000}', "Paris, 2.1M"])
def test_anthropic_structured_reply_without_its_tool_block_is_a_response_format_error(
    text: str,
) -> None:
    """A server that ignores the forced tool (llama.cpp's Anthropic endpoint does) answers in
    free text: that is no structured object, even when the text happens to parse."""
    from pywrapai_graph import LLM
    from pywrapai_graph.testing.contracts.chat_model import SECRET, City
    from pywrapai_graph.testing.wire import AnthropicWire

    with AnthropicWire() as wire:
        llm = LLM(
            provider="anthropic",
            model="claude-haiku-4-5-20251001",
            base_url=wire.url,
            api_key=SECRET,
            max_retries=0,
        )
        wire.reply(text, text)
        try:
            with pytest.raises(ResponseFormatError, match="no such tool_use block") as info:
                llm.chat_structured("Biggest French city?", City, retries=0, mode="tool")
            assert json.loads(info.value.raw)["content"] == [{"type": "text", "text": text}]
            # not a parse failure of the text: the adapter refused the reply
            assert type(info.value.__cause__) is ResponseFormatError

            async def run() -> None:
                try:
                    await llm.achat_structured("Biggest French city?", City, retries=0, mode="tool")
                finally:
                    await llm.aclose()

            with pytest.raises(ResponseFormatError, match="no such tool_use block"):
                asyncio.run(run())
            assert len(llm.tokens) == 2  # billed replies are recorded
        finally:
            llm.close()
