"""The one-request part of the vector-store contract: ``retrieve(StoreQuery)``.

A store whose ``native_retrieval`` is True answers a whole retrieval (dense, lexical or
hybrid with any fusion, a filter, ``min_score``) itself, in one engine request. Its answer
must be the retrieval the store's own parts compose: ``search`` for the dense side,
``lexical_search`` for the lexical side, both scores of every candidate (the stored cosines,
the BM25 scores) and the fusion of :mod:`pywrapai_graph.application.fusion`. A store without
it refuses ``retrieve`` with :class:`UnsupportedOperationError` (the retriever composes it).
A store whose engine has fusions of its own (``engine_fusions``: Qdrant's DBSF for ``rescored``
and ``weighted``) answers every other query exactly so, and those by :func:`_fused_well`.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, get_args

import numpy as np
import pytest

from pywrapai_graph.application.fusion import (
    fusion_weights,
    reciprocal_rank_fusion,
    rescored_fusion,
    weighted_score_fusion,
)
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_query import Fusion, StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus

__all__ = ["OneRequestContract", "composed_retrieval"]


def composed_retrieval(store: BaseVectorStore, query: StoreQuery) -> list[ScoredChunk]:
    """``query`` answered from the store's parts, several calls (the reference)."""
    text, vector = query.text or "", list(query.vector or [])
    lex: dict[str, Any] = {"k1": query.k1, "b": query.b}
    if query.mode == "lexical":
        return store.lexical_search(text, query.k, query.filter, **lex)
    dense = [
        h
        for h in store.search(vector, k=query.depth, filter=query.filter)
        if h.score >= query.min_score
    ]
    if query.mode == "dense":
        return dense
    lexical = store.lexical_search(text, query.depth, query.filter, **lex)
    if query.fusion == "rescored":
        everyone = len(store)
        cosines = {h.chunk.id: h.score for h in store.search(vector, k=everyone)}
        bm25 = {h.chunk.id: h.score for h in store.lexical_search(text, everyone, **lex)}
        return rescored_fusion(dense, lexical, cosines, bm25, weights=query.weights, k=query.k)
    if query.fusion == "weighted":
        return weighted_score_fusion([dense, lexical], weights=query.weights, k=query.k)
    return reciprocal_rank_fusion(
        [dense, lexical], rrf_k=query.rrf_k, weights=query.weights, k=query.k
    )


def _same(got: list[ScoredChunk], want: list[ScoredChunk]) -> None:
    """The same hits with the same scores, best first; chunks tied in score in any order."""
    assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-5, abs=1e-6)
    ranked = [(round(h.score, 5), h.chunk.id) for h in got]
    assert sorted(ranked, key=lambda p: (-p[0], p[1])) == sorted(
        [(round(h.score, 5), h.chunk.id) for h in want], key=lambda p: (-p[0], p[1])
    )
    assert all(h.chunk.embedding is None for h in got)


def _fused_well(got: list[ScoredChunk], store: BaseVectorStore, query: StoreQuery) -> None:
    """An engine's own fusion: its hits come from either side's candidates, as many as they
    give up to ``k``, scores descending, and no candidate ranks above its best hit on both
    sides (a fusion that grows with each side's score puts such a candidate first)."""
    vector, text = list(query.vector or []), query.text or ""
    dense = [
        h for h in store.search(vector, query.depth, query.filter) if h.score >= query.min_score
    ]
    lexical = store.lexical_search(text, query.depth, query.filter)
    ranks = [{h.chunk.id: i for i, h in enumerate(side)} for side in (dense, lexical)]
    union = set(ranks[0]) | set(ranks[1])
    assert {h.chunk.id for h in got} <= union
    assert len(got) == min(query.k, len(union))
    assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    if got:
        top, last = got[0].chunk.id, len(union)
        assert not [c for c in union if all(r.get(c, last) < r.get(top, last) for r in ranks)]


class OneRequestContract:
    """Mixed into :class:`VectorStoreContract`; uses its ``store`` fixture."""

    dim: ClassVar[int] = 16
    #: hybrid fusions the engine computes its own way (checked by :func:`_fused_well`)
    engine_fusions: ClassVar[frozenset[str]] = frozenset()

    def _check_retrieved(
        self, got: list[ScoredChunk], store: BaseVectorStore, asked: StoreQuery
    ) -> None:
        if asked.mode == "hybrid" and asked.fusion in self.engine_fusions:
            _fused_well(got, store, asked)
        else:
            _same(got, composed_retrieval(store, asked))

    def _queries(self, store: BaseVectorStore) -> list[StoreQuery]:
        vector = list(np.random.default_rng(5).standard_normal(self.dim))
        asked: list[StoreQuery] = []
        for k, part in ((8, None), (5, {"part": "even"})):
            asked.append(StoreQuery("dense", k, vector, filter=part, min_score=-0.2))
            if not store.lexical:
                continue
            for text in QUERIES[:3]:
                asked.append(StoreQuery("lexical", k, text=text, filter=part))
                for fusion in get_args(Fusion):
                    asked.append(
                        StoreQuery(
                            "hybrid",
                            k,
                            vector,
                            text,
                            part,
                            candidates=8,
                            fusion=fusion,
                            weights=fusion_weights(fusion),
                        )
                    )
        return asked

    def test_retrieve_is_the_composed_retrieval(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        query = StoreQuery("dense", 3, list(np.ones(self.dim)))
        if not store.native_retrieval:
            with pytest.raises(UnsupportedOperationError, match="one-request"):
                store.retrieve(query)
            return
        for asked in self._queries(store):
            self._check_retrieved(store.retrieve(asked), store, asked)
            self._check_retrieved(asyncio.run(store.aretrieve(asked)), store, asked)

    def test_retrieve_follows_writes(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        if not (store.native_retrieval and store.supports_delete):
            pytest.skip(f"{type(store).__name__}: no one-request retrieval or no delete")
        asked = (
            StoreQuery("hybrid", 5, corpus[0].embedding, QUERIES[0])
            if store.lexical
            else StoreQuery("dense", 5, corpus[0].embedding)
        )
        first = store.retrieve(asked)
        store.delete([h.chunk.id for h in first[:2]])
        again = store.retrieve(asked)
        assert not {h.chunk.id for h in first[:2]} & {h.chunk.id for h in again}
        self._check_retrieved(again, store, asked)
