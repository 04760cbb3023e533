"""The re-scoring part of the vector-store contract: hybrid retrieval's two primitives.

Hybrid retrieval (``fusion="rescored"``) gives every candidate of the dense and lexical lists
both of its scores, asking the store for exactly the candidates one side missed:
``similarities(query_vector, ids)`` (the stored vectors' cosines) and
``lexical_scores(query, ids)`` (BM25, as ``lexical_search`` scores). Every store answers
both — the built-in ones for those ids only, a store written before them through the base
class's defaults — so a hybrid retriever ranks every candidate by both scores on every
backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.fusion import rescored_fusion
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.lexical_search import (
    QUERIES,
    LexicalSearchContract,
    lexical_corpus,
)
from pywrapai_graph.testing.contracts.store_data import exact_cosines

__all__ = ["RescoringContract"]


class _Fixed:
    """An embedder answering every text with one vector (the query's)."""

    def __init__(self, vector: list[float]) -> None:
        self.vector = vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self.vector) for _ in texts]

    def embed_one(self, text: str) -> list[float]:
        return list(self.vector)


class RescoringContract(LexicalSearchContract):
    """Mixed into :class:`VectorStoreContract` (with the lexical contract it extends); uses
    its ``store`` fixture."""

    dim: ClassVar[int] = 16

    def test_similarities_are_the_stored_cosines(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        query = list(np.random.default_rng(3).standard_normal(self.dim))
        want = exact_cosines(corpus, query)
        ids = [c.id for c in corpus[::7]]
        got = store.similarities(query, [*ids, "no-such-id"])
        assert got == pytest.approx({i: want[i] for i in ids}, abs=1e-5)
        assert asyncio.run(store.asimilarities(query, ids)) == pytest.approx(got, abs=1e-6)
        assert store.similarities(query, []) == {}
        with pytest.raises(TypeError, match="list of ids"):
            store.similarities(query, "lex-001")
        if store.supports_delete:
            store.delete([ids[0]])
            assert set(store.similarities(query, ids)) == set(ids[1:])

    def test_lexical_scores_are_the_lexical_search_scores(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        if not store.lexical:
            with pytest.raises(UnsupportedOperationError):
                store.lexical_scores(QUERIES[0], [corpus[0].id])
            return
        for query in QUERIES:
            ranked = {h.chunk.id: h.score for h in store.lexical_search(query, len(corpus))}
            ids = [c.id for c in corpus[::3]]
            got = store.lexical_scores(query, [*ids, "no-such-id"])
            # chunks sharing no term with the query have no score, as in lexical_search
            want = {i: ranked[i] for i in ids if i in ranked}
            assert got == pytest.approx(want, rel=1e-6)
        assert store.lexical_scores("unrelated zebra words", [corpus[0].id]) == {}
        with pytest.raises(ValueError, match="BM25 needs"):
            store.lexical_scores(QUERIES[0], [corpus[0].id], k1=-1.0)

    def test_hybrid_gives_every_candidate_both_scores(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        if not store.lexical:
            pytest.skip(f"{type(store).__name__} declares no lexical search (lexical=False)")
        if "rescored" in getattr(self, "engine_fusions", ()):
            pytest.skip(f"{type(store).__name__}'s engine fuses 'rescored' its own way")
        vector = list(np.random.default_rng(5).standard_normal(self.dim))
        retriever = VectorRetriever(_Fixed(vector), store, k=8, mode="hybrid", candidates=8)
        cosines = exact_cosines(corpus, vector)
        for query in QUERIES[:3]:
            bm25 = {h.chunk.id: h.score for h in store.lexical_search(query, len(corpus))}
            dense = [h for h in store.search(vector, k=8) if h.score >= 0.0]
            lexical = store.lexical_search(query, k=8)
            # the one-sided candidates exist, or this case proves nothing
            assert {h.chunk.id for h in dense} != {h.chunk.id for h in lexical}
            want = rescored_fusion(dense, lexical, cosines, bm25, k=8)
            got = retriever.retrieve(query)
            assert [h.chunk.id for h in got] == [h.chunk.id for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
            again = asyncio.run(retriever.aretrieve(query))
            assert [h.chunk.id for h in again] == [h.chunk.id for h in got]
