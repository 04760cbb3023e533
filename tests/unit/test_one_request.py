"""The one-request seam: a store with ``native_retrieval`` gets the whole retrieval once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pywrapai_graph import Chunk, InMemoryVectorStore, ScoredChunk
from pywrapai_graph import VectorRetriever as Retriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import EmbedderMismatchError, UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import Fusion, StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus
from pywrapai_graph.testing.contracts.one_request import FixedEmbedder


class OneRequestStore(InMemoryVectorStore):
    """The in-memory one pass, counting what it was asked."""

    def __init__(self, recorded: EmbedderIdentity | None = None) -> None:
        super().__init__()
        self.asked: list[StoreQuery] = []
        self.recorded = recorded

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        self.asked.append(query)
        hits = super()._retrieve(query)
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
    retriever = Retriever(FixedEmbedder([1.0, 0.0, 0.5]), store, k=2, mode=mode)  # type: ignore[arg-type]
    hits = retriever.retrieve("refunds", filter={"k": "v"} if mode == "dense" else None)
    assert store.native_retrieval
    assert len(store.asked) == 1
    asked = store.asked[0]
    assert (asked.mode, asked.k, asked.fusion, asked.min_score) == (mode, 2, "rescored", 0.0)
    assert (asked.text is None) == (mode == "dense")
    assert (asked.vector is None) == (mode == "lexical")
    assert hits == InMemoryVectorStore._retrieve(store, asked)
    assert asyncio.run(retriever.aretrieve("refunds")) == retriever.retrieve("refunds")
    assert len(store.asked) == 3


def test_the_identity_read_in_the_request_is_checked() -> None:
    other = EmbedderIdentity(provider="other", model="m", dimension=3)
    store = OneRequestStore(recorded=other)
    store.add(_corpus())
    retriever = Retriever(FixedEmbedder([1.0, 0.0, 0.5]), store, k=2, mode="hybrid")
    with pytest.raises(EmbedderMismatchError):
        retriever.retrieve("refunds")


class _Composed(InMemoryVectorStore):
    """An in-memory store without its one-pass ``retrieve`` (its BM25 kept for
    ``lexical_search``)."""

    _retrieve = BaseVectorStore._retrieve
    _aretrieve = BaseVectorStore._aretrieve

    def _lexical_search(
        self, query: str, k: int, filter: Any, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        asked = StoreQuery("lexical", k, text=query, filter=filter, k1=k1, b=b)
        return InMemoryVectorStore._retrieve(self, asked)


def test_a_store_without_it_serves_each_side_and_the_retriever_fuses() -> None:
    store = _Composed()
    store.add(_corpus())
    assert not store.native_retrieval
    dense = StoreQuery("dense", 2, [1.0, 0.0, 0.5], min_score=0.9)
    assert store.retrieve(dense) == [h for h in store.search([1.0, 0.0, 0.5], 2) if h.score >= 0.9]
    assert asyncio.run(store.aretrieve(dense)) == store.retrieve(dense)
    lexical = StoreQuery("lexical", 2, text="refunds receipt")
    assert store.retrieve(lexical) == store.lexical_search("refunds receipt", 2)
    with pytest.raises(UnsupportedOperationError, match="one-request retrieval"):
        store.retrieve(StoreQuery("hybrid", 2, [1.0, 0.0, 0.5], "refunds"))
    hits = Retriever(FixedEmbedder([1.0, 0.0, 0.5]), store, k=2, mode="hybrid").retrieve("refunds")
    assert [h.chunk.id for h in hits][:1] == ["c0"]


def test_malformed_queries_are_refused() -> None:
    store = OneRequestStore()
    with pytest.raises(TypeError):
        store.retrieve(StoreQuery("lexical", 2, text=None))
    with pytest.raises((TypeError, ValueError)):
        store.retrieve(StoreQuery("dense", 2, None))
    assert store.asked == []


@pytest.mark.parametrize("fusion", ["rescored", "rrf", "weighted"])
def test_the_in_memory_one_pass_fuses_as_the_retriever_does(fusion: Fusion) -> None:
    """Through the retriever: one ``retrieve`` call on the in-memory store gives the fusion
    the retriever computes from the same store's two sides (``rrf`` and ``weighted`` need
    no other score: the same list; ``rescored`` re-scores the one-sided candidates, which
    only the one pass can, so the two sides fuse as ``weighted`` with its weights), with
    and without a filter."""
    embedder = FeatureHashingEmbedder(32)
    chunks = [
        Chunk(c.text, doc_id=c.doc_id, metadata=c.metadata, id=c.id, embedding=v)
        for c, v in zip(
            lexical_corpus(), embedder.embed([c.text for c in lexical_corpus()]), strict=True
        )
    ]
    one, composed = InMemoryVectorStore(), _Composed()
    for store in (one, composed):
        store.add(chunks)
    assert one.native_retrieval and not composed.native_retrieval
    options: dict[str, Any] = {"mode": "hybrid", "candidates": 7, "k": 5, "rrf_k": 20}
    native: dict[str, Any] = {"fusion": fusion}
    if fusion == "rescored":
        native = {"fusion": "weighted", "weights": (0.6, 0.4)}
    for query, where in ((QUERIES[0], None), (QUERIES[1], {"part": "even"})):
        got = Retriever(embedder, one, **options, **native).retrieve(query, filter=where)
        want = Retriever(embedder, composed, **options, fusion=fusion).retrieve(query, filter=where)
        assert got and all(h.chunk.metadata.get("part") == "even" for h in got if where)
        assert [(h.chunk.id, h.score) for h in got] == [(h.chunk.id, h.score) for h in want]
