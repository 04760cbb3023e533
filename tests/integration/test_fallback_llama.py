"""A fallback chain whose second model is a real OpenAI-compatible server: llama.cpp serving
SmolLM2-135M (see ``tests/integration/llama_server.py``). The primary is a wire server that
fails or an address nobody listens on; the answer, its usage and the ledger come from
llama.cpp through the OpenAI SDK."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from pywrapai import LLM
from pywrapai_graph.testing.servers import free_port
from pywrapai_graph.testing.wire import AnthropicWire
from tests.integration.llama_server import ALIAS, LlamaServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer() as server:
        yield server


def smol(server: LlamaServer) -> dict[str, object]:
    return {
        "provider": "openai",
        "model": ALIAS,
        "base_url": server.base_url,
        "api_key": "no-key",
        "timeout": 60.0,
        "max_retries": 0,
    }


def anthropic_then_smol(primary: AnthropicWire, llama: LlamaServer) -> LLM:
    return LLM(
        provider="anthropic",
        model="claude-haiku-4-5",
        base_url=primary.url,
        api_key="sk-ant-test",
        max_retries=0,
        fallbacks=[smol(llama)],
    )


def test_an_overloaded_primary_falls_back_to_llama_cpp(llama: LlamaServer) -> None:
    with AnthropicWire() as primary:
        primary.fail(529, "overloaded")
        llm = anthropic_then_smol(primary, llama)
        response = llm.chat("Say hello.", max_tokens=8)
        llm.close()
    assert response.content.strip()
    assert (response.provider, response.model) == ("openai", ALIAS)
    assert response.usage.input_tokens > 0 and 0 < response.usage.output_tokens <= 8
    [failed] = response.fallback_from
    assert (failed.provider, failed.status_code) == ("anthropic", 529)
    [record] = llm.tokens.records
    assert (record.provider, record.usage) == ("openai", response.usage)


def test_an_unreachable_primary_streams_from_llama_cpp(llama: LlamaServer) -> None:
    llm = LLM(
        provider="openai",
        model="gpt-4o-mini",
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key="sk-test",
        max_retries=0,
        fallbacks=[smol(llama)],
    )
    stream = llm.stream("Count to three.", max_tokens=8)
    pieces = list(stream)
    llm.close()
    assert len(pieces) >= 2  # streamed token by token by the real server
    assert stream.response.content == "".join(pieces)
    assert stream.response.fallback_from[0].error == "ProviderUnavailableError"
    assert llm.tokens.records[-1].usage.output_tokens > 0


def test_async_calls_fall_back_to_llama_cpp(llama: LlamaServer) -> None:
    with AnthropicWire() as primary:
        primary.fail(429, "slow down").fail(503, "down")
        llm = anthropic_then_smol(primary, llama)

        async def run() -> tuple[str, str]:
            try:
                whole = await llm.achat("Say hi.", max_tokens=6)
                streamed = "".join([p async for p in llm.astream("Say hi.", max_tokens=6)])
                return whole.content, streamed
            finally:
                await llm.aclose()

        whole, streamed = asyncio.run(run())
        llm.close()
    assert whole.strip() and streamed.strip()
    assert [r.fallback_from[0].error for r in llm.tokens.records] == [
        "RateLimitError",
        "ProviderUnavailableError",
    ]
