"""Failures and retries are WARNING records with the root logger at WARNING and nothing else
configured (no tracer, no meter, no hook, no INFO logging), one record per failure, redacted."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from pywrapai_graph import LLM, Embedder, GraphLLM, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.application.observability.telemetry import listeners
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import AuthenticationError, IncompleteStreamError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.testing.wire import AnthropicWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer

API_KEY = "planted-api-key-7f3a9c"  # not key-shaped: only the adapter knows to mask it
KEY_SHAPED = "sk-planted0123456789abcdef"  # masked by shape wherever it appears
PASSWORD = "planted-pw-5e1d"
SECRETS = (API_KEY, KEY_SHAPED, PASSWORD)


@pytest.fixture
def warnings_only(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The root logger at WARNING, the library's loggers unset, nothing listening."""
    caplog.set_level(logging.WARNING)
    assert listeners() == (None, None, ())
    assert logging.getLogger("pywrapai_graph").level == logging.NOTSET
    assert not logging.getLogger("pywrapai_graph.llm").isEnabledFor(logging.INFO)
    return caplog


def _records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    for r in records:
        text = r.getMessage() + repr(getattr(r, "attributes", ""))
        for secret in SECRETS:
            assert secret not in text, (secret, text)
    return records


def _llm(name: str, wire: WireServer, retries: int = 0) -> LLM:
    url = wire.base_url if name == "openai" else wire.url
    return LLM(provider=name, api_key=API_KEY, base_url=url, max_retries=retries)


WIRES = {"openai": OpenAIWire, "anthropic": AnthropicWire}
FAILURE = f"invalid x-api-key {API_KEY} (also tried {KEY_SHAPED})"


@pytest.mark.parametrize("name", list(WIRES))
def test_a_provider_failure_is_one_warning(
    name: str, warnings_only: pytest.LogCaptureFixture
) -> None:
    with WIRES[name]() as wire, _llm(name, wire) as llm:
        wire.fail(401, FAILURE)
        with pytest.raises(AuthenticationError):
            llm.chat("Hi")
    [record] = _records(warnings_only)
    assert record.name == "pywrapai_graph.llm"
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("chat failed: AuthenticationError: ")
    assert "***" in record.getMessage()  # the message is there, the secrets are not


@pytest.mark.parametrize("name", list(WIRES))
def test_a_failed_async_stream_is_one_warning(
    name: str, warnings_only: pytest.LogCaptureFixture
) -> None:
    async def consume(llm: LLM) -> None:
        try:
            async for _ in llm.astream("Hi"):
                pass
        finally:
            await llm.aclose()

    with WIRES[name]() as wire, _llm(name, wire) as llm:
        wire.fail(401, FAILURE)
        with pytest.raises(AuthenticationError):
            asyncio.run(consume(llm))
        wire.cut("a reply the connection drops", keep=2)
        with pytest.raises(IncompleteStreamError):
            asyncio.run(consume(llm))
    first, second = _records(warnings_only)
    assert [first.name, second.name] == ["pywrapai_graph.llm"] * 2
    assert "AuthenticationError" in first.getMessage()
    assert "IncompleteStreamError" in second.getMessage()


@pytest.mark.parametrize("name", list(WIRES))
def test_a_retry_is_one_warning_and_the_recovered_call_none(
    name: str, warnings_only: pytest.LogCaptureFixture
) -> None:
    with WIRES[name]() as wire, _llm(name, wire, retries=1) as llm:
        wire.fail(503, FAILURE, headers={"retry-after-ms": "1"}).reply("recovered")
        assert llm.chat("Hi").content == "recovered"
    [record] = _records(warnings_only)
    assert record.name == "pywrapai_graph.retries"
    assert "retry 1" in record.getMessage()


class UnreachableStore(InMemoryVectorStore):
    """A user's own store whose driver fails quoting its connection string."""

    def search(
        self, query_embedding: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        raise ConnectionError(
            f"could not connect to postgresql://app:{PASSWORD}@db.internal:5432/docs"
        )


def test_a_store_failure_is_one_warning_however_deep(
    warnings_only: pytest.LogCaptureFixture,
) -> None:
    retriever = VectorRetriever(Embedder(provider="hashing", dimension=16), UnreachableStore())
    retriever.add_documents([Document("refunds take 5 days", id="policy")])
    with OpenAIWire() as wire, _llm("openai", wire) as llm:
        graph = GraphLLM(llm, retriever=retriever)
        with pytest.raises(ConnectionError):
            graph.chat("How long do refunds take?")  # store < retrieval < GraphLLM.chat
        assert list(wire.chat_requests()) == []
    [record] = _records(warnings_only)
    assert record.name == "pywrapai_graph.store"
    message = record.getMessage()
    assert message.startswith("vector store operation failed: ConnectionError: ")
    assert "postgresql://app:***@db.internal" in message


def test_successful_calls_log_nothing_at_warning(
    warnings_only: pytest.LogCaptureFixture,
) -> None:
    retriever = VectorRetriever(Embedder(provider="hashing", dimension=16), InMemoryVectorStore())
    retriever.add_documents([Document("refunds take 5 days", id="policy")])
    with OpenAIWire() as wire, _llm("openai", wire) as llm:
        wire.reply("Five days.", "Five days.")
        graph = GraphLLM(llm, retriever=retriever)
        graph.chat("How long do refunds take?")
        assert "".join(graph.stream("And exchanges?")) == "Five days."
    assert _records(warnings_only) == []


def test_the_same_failure_with_info_logging_is_still_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    retriever = VectorRetriever(Embedder(provider="hashing", dimension=16), UnreachableStore())
    retriever.add_documents([Document("refunds take 5 days", id="policy")])
    caplog.set_level(logging.INFO)
    with OpenAIWire() as wire, _llm("openai", wire) as llm, pytest.raises(ConnectionError):
        GraphLLM(llm, retriever=retriever).chat("How long do refunds take?")
    warned = _records(caplog)
    assert [r.name for r in warned] == ["pywrapai_graph.store"]
    told: list[Any] = [r for r in caplog.records if r.name == "pywrapai_graph.retrieval"]
    assert [r.levelno for r in told] == [logging.INFO]  # the enclosing operation, not again
