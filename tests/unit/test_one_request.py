"""The one-request seam: a store with ``native_retrieval`` gets the whole retrieval once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from pywrapai_graph import Chunk, InMemoryVectorStore, ScoredChunk
from pywrapai_graph import VectorRetriever as Retriever
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import EmbedderMismatchError, UnsupportedOperationError
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.one_request import composed_retrieval


class _Fixed:
    def __init__(self, vector: list[float]) -> None:
        self.vector = vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self.vector) for _ in texts]

    def embed_one(self, text: str) -> list[float]:
        return list(self.vector)


class OneRequestStore(InMemoryVectorStore):
    """Answers a whole query by composing its parts, and counts what it was asked."""

    def __init__(self, recorded: EmbedderIdentity | None = None) -> None:
        super().__init__()
        self.asked: list[StoreQuery] = []
        self.recorded = recorded

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        self.asked.append(query)
        hits = composed_retrieval(self, query)
        report_identity(self.recorded)  # what the engine read in the request
        return hits


def _corpus() -> list[Chunk]:
    texts = ["refunds take five days", "shipping is free", "refunds need a receipt"]
    return [
        Chunk(t, doc_id=f"d{i}", id=f"c{i}", embedding=[1.0, float(i), 0.5])
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_the_retriever_hands_the_store_one_query(mode: str) -> None:
    store = OneRequestStore()
    store.add(_corpus())
    retriever = Retriever(_Fixed([1.0, 0.0, 0.5]), store, k=2, mode=mode)  # type: ignore[arg-type]
    hits = retriever.retrieve("refunds", filter={"k": "v"} if mode == "dense" else None)
    assert store.native_retrieval
    assert len(store.asked) == 1
    asked = store.asked[0]
    assert (asked.mode, asked.k, asked.fusion, asked.min_score) == (mode, 2, "rescored", 0.0)
    assert (asked.text is None) == (mode == "dense")
    assert (asked.vector is None) == (mode == "lexical")
    assert hits == composed_retrieval(store, asked)
    assert asyncio.run(retriever.aretrieve("refunds")) == retriever.retrieve("refunds")
    assert len(store.asked) == 3


def test_the_identity_read_in_the_request_is_checked() -> None:
    other = EmbedderIdentity(provider="other", model="m", dimension=3)
    store = OneRequestStore(recorded=other)
    store.add(_corpus())
    retriever = Retriever(_Fixed([1.0, 0.0, 0.5]), store, k=2, mode="hybrid")
    with pytest.raises(EmbedderMismatchError):
        retriever.retrieve("refunds")


def test_a_store_without_it_refuses_and_is_composed() -> None:
    store = InMemoryVectorStore()
    store.add(_corpus())
    assert not store.native_retrieval
    with pytest.raises(UnsupportedOperationError, match="one-request retrieval"):
        store.retrieve(StoreQuery("dense", 2, [1.0, 0.0, 0.5]))
    hits = Retriever(_Fixed([1.0, 0.0, 0.5]), store, k=2, mode="hybrid").retrieve("refunds")
    assert [h.chunk.id for h in hits][:1] == ["c0"]


def test_malformed_queries_are_refused() -> None:
    store = OneRequestStore()
    with pytest.raises(TypeError):
        store.retrieve(StoreQuery("lexical", 2, text=None))
    with pytest.raises((TypeError, ValueError)):
        store.retrieve(StoreQuery("dense", 2, None))
    assert store.asked == []
