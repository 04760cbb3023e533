"""The rerank adapters for real: Cohere through its official SDK against a local server that
speaks its wire format, and the local cross-encoder running a real ONNX model the test builds."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph import Chunk, PriceTable, RerankModel, ScoredChunk, TokenTracker
from pywrapai_graph.errors import (
    ArgumentTypeError,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    InvalidArgumentError,
    ProviderError,
    ProviderTimeoutError,
    PyWrapAIError,
    RateLimitError,
    ResponseFormatError,
    UnknownProviderError,
)
from pywrapai_graph.testing.cross_encoder import tiny_cross_encoder_logit, write_tiny_cross_encoder
from pywrapai_graph.testing.wire import CohereWire
from pywrapai_graph.testing.wire.cohere import word_overlap

KEY = "co-test-SECRET-rerank-77"
QUERY = "why do cats purr"
TEXTS = [
    "Dogs bark at the mail carrier.",
    "Cats purr when they are content, and sometimes when they are hurt.",
    "Why the sky is blue.",
    "Cats sleep most of the day.",
]
WEIGHTS = {"cats": 1.0, "purr": 3.0, "why": 0.5, "dogs": 2.0, "sky": -1.0}


def hits(texts: list[str] = TEXTS) -> list[ScoredChunk]:
    return [ScoredChunk(Chunk(t, doc_id=f"d{i}", id=f"c{i}"), 0.1 * i) for i, t in enumerate(texts)]


@pytest.fixture
def wire() -> Iterator[CohereWire]:
    with CohereWire() as server:
        yield server


def cohere(wire: CohereWire, **options: object) -> RerankModel:
    return RerankModel("cohere", api_key=KEY, base_url=wire.url, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- Cohere
def test_cohere_orders_the_hits_by_the_servers_relevance(wire: CohereWire) -> None:
    reranker = cohere(wire)
    ranked = reranker.rerank(QUERY, hits(), k=3)
    expected = sorted(TEXTS, key=lambda t: -word_overlap(QUERY, t))[:3]
    assert [h.chunk.text for h in ranked] == expected
    assert [h.score for h in ranked] == [word_overlap(QUERY, t) for t in expected]
    assert ranked[0].chunk.id == "c1"  # the hit itself, re-scored
    (request,) = wire.requests
    assert request.path == "/v2/rerank"
    assert request.json == {"model": "rerank-v3.5", "query": QUERY, "documents": TEXTS}
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_cohere_async_uses_the_async_client(wire: CohereWire) -> None:
    reranker = cohere(wire, model="rerank-english-v3.0")

    async def run() -> list[ScoredChunk]:
        try:
            return await reranker.arerank(QUERY, hits())
        finally:
            await reranker.aclose()

    ranked = asyncio.run(run())
    assert [h.chunk.id for h in ranked] == ["c1", "c2", "c3", "c0"]
    assert wire.requests[0].json["model"] == "rerank-english-v3.0"


def test_cohere_search_units_are_priced_in_the_ledger(wire: CohereWire) -> None:
    ledger = TokenTracker(PriceTable.default())
    reranker = cohere(wire, tracker=ledger)
    reranker.rerank(QUERY, hits(TEXTS * 60))  # 240 documents: 3 search units
    (record,) = ledger.records
    assert (record.kind, record.provider, record.model) == ("rerank", "cohere", "rerank-v3.5")
    assert record.usage.input_tokens == 3
    assert not record.estimated
    assert record.cost_usd == pytest.approx(3 * 2.0 / 1000)


def test_more_documents_than_a_request_takes_are_split_and_merged(wire: CohereWire) -> None:
    many = [f"document {i} " + ("cats purr " if i % 7 == 0 else "dogs ") for i in range(2300)]
    ranked = cohere(wire).rerank("cats purr", hits(many), k=5)
    assert [len(r.json["documents"]) for r in wire.requests] == [1000, 1000, 300]
    assert all("cats purr" in h.chunk.text for h in ranked)
    assert [h.chunk.doc_id for h in ranked] == ["d0", "d7", "d14", "d21", "d28"]


def test_cohere_retries_a_503_and_a_429_with_retry_after(wire: CohereWire) -> None:
    wire.fail(503, "overloaded").fail(429, "slow down", headers={"retry-after-ms": "1"})
    ranked = cohere(wire).rerank(QUERY, hits())
    assert ranked[0].chunk.id == "c1"
    assert len(wire.requests) == 3


def test_cohere_gives_up_after_max_retries_with_a_typed_error(wire: CohereWire) -> None:
    wire.fail(429, "slow down", headers={"retry-after-ms": "1"})
    wire.fail(429, "slow down", headers={"retry-after-ms": "1"})
    with pytest.raises(RateLimitError) as info:
        cohere(wire, max_retries=1).rerank(QUERY, hits())
    assert info.value.provider == "cohere"
    assert len(wire.requests) == 2


def test_cohere_timeout_is_a_provider_timeout_error(wire: CohereWire) -> None:
    wire.stall(3.0)
    with pytest.raises(ProviderTimeoutError):
        cohere(wire, timeout=0.3, max_retries=0).rerank(QUERY, hits())


def test_cohere_rejected_key_is_an_authentication_error_without_the_key(wire: CohereWire) -> None:
    wire.fail(401, f"invalid api token {KEY}")
    with pytest.raises(AuthenticationError) as info:
        cohere(wire).rerank(QUERY, hits())
    assert KEY not in str(info.value)
    assert "invalid api token" in str(info.value)


def test_cohere_bad_request_is_typed(wire: CohereWire) -> None:
    wire.fail(400, "model not found")
    with pytest.raises(BadRequestError, match="model not found"):
        cohere(wire).rerank(QUERY, hits())


GARBAGE = [
    "not json at all",
    '{"results": [{"index": 0, "relevance',  # cut short
    '{"unexpected": 1}',
    "[1, 2]",
    '{"results": [{"index": 0, "relevance_score": 0.5}]}',  # fewer results than documents
    '{"results": [{"index": 9, "relevance_score": 0.5}, {"index": 1, "relevance_score": 0.1},'
    ' {"index": 2, "relevance_score": 0.1}, {"index": 3, "relevance_score": 0.1}]}',
    '{"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 1},'
    ' {"index": 2, "relevance_score": 1}, {"index": 3, "relevance_score": 1}]}',
    '{"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 1},'
    ' {"index": 2, "relevance_score": 1}, {"index": 3, "relevance_score": 1}]}',
]


@pytest.mark.parametrize("body", GARBAGE)
def test_a_garbage_reply_is_a_response_format_error_with_the_raw_body(
    wire: CohereWire, body: str
) -> None:
    wire.raw(body)
    with pytest.raises(ResponseFormatError) as info:
        cohere(wire).rerank(QUERY, hits())
    assert info.value.raw == body


@pytest.mark.parametrize("body", GARBAGE[:3])
def test_a_garbage_reply_is_typed_in_async_calls_too(wire: CohereWire, body: str) -> None:
    wire.raw(body)
    reranker = cohere(wire)

    async def run() -> None:
        try:
            await reranker.arerank(QUERY, hits())
        finally:
            await reranker.aclose()

    with pytest.raises(ResponseFormatError) as info:
        asyncio.run(run())
    assert info.value.raw == body


def test_cohere_without_a_key_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CO_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="CO_API_KEY"):
        RerankModel("cohere")


def test_cohere_key_is_never_in_the_repr(wire: CohereWire) -> None:
    assert KEY not in repr(cohere(wire))


def test_unknown_rerank_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError, match="cohere, local"):
        RerankModel("voyage")


def test_empty_hits_send_no_request(wire: CohereWire) -> None:
    assert cohere(wire).rerank(QUERY, []) == []
    assert wire.requests == []


@pytest.mark.parametrize(
    ("query", "given", "k", "error"),
    [
        (None, hits(), None, ArgumentTypeError),
        (QUERY, "a text", None, ArgumentTypeError),
        (QUERY, [TEXTS[0]], None, ArgumentTypeError),
        (QUERY, hits(), 0, InvalidArgumentError),
        (QUERY, hits(), "3", InvalidArgumentError),
        ("bad \ud800 surrogate", hits(), None, InvalidArgumentError),
    ],
)
def test_bad_input_is_a_typed_error_before_any_request(
    wire: CohereWire, query: object, given: object, k: object, error: type[PyWrapAIError]
) -> None:
    with pytest.raises(error):
        cohere(wire).rerank(query, given, k)  # type: ignore[arg-type]
    assert wire.requests == []


# ---------------------------------------------------------------------------- local
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"), WEIGHTS, bias=-1.0)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def test_local_cross_encoder_orders_by_the_models_scores(model_dir: Path) -> None:
    reranker = RerankModel("local", model_dir=model_dir)
    ranked = reranker.rerank(QUERY, hits())
    logits = {t: tiny_cross_encoder_logit(QUERY, t, WEIGHTS, -1.0) for t in TEXTS}
    assert [h.chunk.text for h in ranked] == sorted(TEXTS, key=lambda t: -logits[t])
    for hit in ranked:
        assert hit.score == pytest.approx(sigmoid(logits[hit.chunk.text]), rel=1e-6)
    # a word's weight, not how many query words a passage shares, decides
    assert ranked[0].chunk.id == "c1"
    other = reranker.rerank("dogs and cats", hits())
    assert other[0].chunk.id == "c0"  # "dogs" weighs 2, "cats" 1


def test_local_cross_encoder_batches_give_the_same_scores(model_dir: Path) -> None:
    texts = [f"{'cats ' * (i % 5)}purr {'dogs ' * (i % 3)}" for i in range(37)]
    one_call = RerankModel("local", model_dir=model_dir, batch_size=64).rerank(QUERY, hits(texts))
    small = RerankModel("local", model_dir=model_dir, batch_size=4).rerank(QUERY, hits(texts))
    assert [(h.chunk.id, round(h.score, 6)) for h in one_call] == [
        (h.chunk.id, round(h.score, 6)) for h in small
    ]


def test_local_cross_encoder_async_and_ledger(model_dir: Path) -> None:
    ledger = TokenTracker()
    reranker = RerankModel("local", model_dir=model_dir, tracker=ledger)
    ranked = asyncio.run(reranker.arerank(QUERY, hits(), k=2))
    assert [h.chunk.id for h in ranked] == ["c1", "c3"]
    (record,) = ledger.records
    assert (record.kind, record.provider, record.model) == ("rerank", "local", model_dir.name)
    assert record.usage.input_tokens > 0  # the tokens it ran
    assert record.cost_usd == 0.0


def test_local_cross_encoder_bounds_a_huge_passage_by_its_window(model_dir: Path) -> None:
    huge = "purr " * 200_000  # 1 MB of text
    ledger = TokenTracker()
    ranked = RerankModel("local", model_dir=model_dir, max_length=64, tracker=ledger).rerank(
        QUERY, hits([huge, TEXTS[0]])
    )
    assert ranked[0].chunk.text == huge
    assert ledger.records[0].usage.input_tokens <= 2 * 64


def test_a_two_class_model_scores_like_its_one_logit_twin(model_dir: Path, tmp_path: Path) -> None:
    two = write_tiny_cross_encoder(tmp_path / "two", WEIGHTS, bias=-1.0, classes=2)
    one_logit = RerankModel("local", model_dir=model_dir).rerank(QUERY, hits())
    two_class = RerankModel("local", model_dir=two).rerank(QUERY, hits())
    assert [h.chunk.id for h in two_class] == [h.chunk.id for h in one_logit]
    assert [h.score for h in two_class] == pytest.approx([h.score for h in one_logit], rel=1e-5)


def test_a_model_with_more_outputs_per_pair_is_a_provider_error(tmp_path: Path) -> None:
    three = write_tiny_cross_encoder(tmp_path / "three", WEIGHTS, classes=3)
    with pytest.raises(ProviderError, match="3 scores per pair"):
        RerankModel("local", model_dir=three).rerank(QUERY, hits())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "model_dir="),
        ({"model_dir": "/nonexistent/folder"}, "lacks model.onnx and tokenizer.json"),
        ({"model_dir": ".", "threads": 0}, "threads"),
    ],
)
def test_local_cross_encoder_misconfigured_is_a_configuration_error(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RerankModel("local", **options)  # type: ignore[arg-type]


def test_a_folder_with_a_broken_model_is_a_configuration_error(
    model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    (tmp_path / "tokenizer.json").write_bytes((model_dir / "tokenizer.json").read_bytes())
    with pytest.raises(ConfigurationError, match="cannot load ONNX model"):
        RerankModel("local", model_dir=tmp_path)


def test_a_provider_that_scores_too_few_texts_is_a_provider_error(model_dir: Path) -> None:
    from pywrapai_graph.ports.rerank_provider import RerankScores

    class Short:
        provider = "short"
        default_model = "m"
        max_batch = 10

        def score(self, query: str, texts: object, model: str) -> RerankScores:
            return RerankScores([1.0])

        def close(self) -> None:
            return None

    with pytest.raises(ProviderError, match="1 relevance scores for 4 texts"):
        RerankModel(Short()).rerank(QUERY, hits())
