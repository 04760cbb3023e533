"""EmbedTexts, the use case behind Embedder: batches, the count check, one record per request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from pywrapai_graph.application.embed_texts import EmbedTexts, estimate_tokens
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.errors import ProviderError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch


class CountingProvider:
    """Vectors [len(text), index]; reports tokens only when ``reports`` is set."""

    provider = "counting"
    default_model = "count-1"
    max_batch = 3

    def __init__(self, *, reports: bool = False, drop_one: bool = False) -> None:
        self.requests: list[list[str]] = []
        self.reports = reports
        self.drop_one = drop_one

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        self.requests.append(list(texts))
        vectors = [[float(len(t)), float(i)] for i, t in enumerate(texts)]
        if self.drop_one:
            vectors = vectors[:-1]
        return EmbeddingBatch(vectors, 7 if self.reports else None, model)

    def close(self) -> None:
        """Nothing to release."""


def test_batches_are_capped_by_the_provider_and_each_request_is_recorded() -> None:
    provider = CountingProvider()
    tracker = TokenTracker()
    use_case = EmbedTexts(provider, "count-1", tracker, batch_size=10)
    texts = [f"text number {i}" for i in range(7)]
    vectors = use_case.run(texts)
    assert use_case.batch_size == 3
    assert provider.requests == [texts[0:3], texts[3:6], texts[6:7]]
    assert [v[0] for v in vectors] == [float(len(t)) for t in texts]
    assert [r.usage.input_tokens for r in tracker.records] == [
        estimate_tokens(texts[0:3]),
        estimate_tokens(texts[3:6]),
        estimate_tokens(texts[6:7]),
    ]
    assert {(r.kind, r.provider, r.model) for r in tracker.records} == {
        ("embedding", "counting", "count-1")
    }


def test_reported_tokens_win_over_the_estimate_and_async_matches_sync() -> None:
    tracker = TokenTracker()
    use_case = EmbedTexts(CountingProvider(reports=True), "count-1", tracker)
    sync = use_case.run(["a", "bb", "ccc", "dddd"])
    assert asyncio.run(use_case.arun(["a", "bb", "ccc", "dddd"])) == sync
    assert [r.usage.input_tokens for r in tracker.records] == [7, 7, 7, 7]


def test_a_short_answer_is_a_provider_error_and_bad_input_is_refused() -> None:
    use_case = EmbedTexts(CountingProvider(drop_one=True), "count-1", TokenTracker())
    with pytest.raises(ProviderError, match="counting: 1 vectors for 2 texts"):
        use_case.run(["a", "b"])
    with pytest.raises(TypeError, match="list of texts"):
        use_case.run("one string")
    with pytest.raises(ValueError, match="batch_size"):
        EmbedTexts(CountingProvider(), "count-1", TokenTracker(), batch_size=0)
