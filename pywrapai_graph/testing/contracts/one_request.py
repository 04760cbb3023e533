"""The retrieval part of the vector-store contract: ``retrieve(StoreQuery)`` against one
reference.

Every retrieval a store answers is held to the reference formulas, not to another
implementation: ``dense`` to the exact cosine ranking (:func:`exact_cosines`; its ids and
scores exactly, or 80% of them on an approximate store), ``lexical`` to
:func:`reference_bm25` as the lexical contract holds ``lexical_search`` (exactly, or within
its stated tolerance), and ``hybrid`` to the fusion of :mod:`pywrapai_graph.application.fusion`
of the two reference lists, ``rescored`` with both reference scores of every candidate.
A hybrid answer agrees when it has as many hits, shares at least 80% of them, puts first a
hit scored as the reference's best, and scores every shared hit within 5% (the same kind of
score: fused, not cosine or BM25). A store whose engine fuses its own way
(``engine_fusions``: Qdrant's DBSF for ``rescored`` and ``weighted``) is checked by
:func:`_fused_well` instead. A store without ``native_retrieval`` serves ``dense`` and
``lexical`` and refuses ``hybrid`` (the retriever fuses its sides).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import ClassVar, get_args

import numpy as np
import pytest

from pywrapai_graph.application.fusion import (
    fusion_weights,
    reciprocal_rank_fusion,
    rescored_fusion,
    weighted_score_fusion,
)
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import matches_filter
from pywrapai_graph.ports.store_query import Fusion, StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import (
    QUERIES,
    LexicalSearchContract,
    lexical_corpus,
)
from pywrapai_graph.testing.contracts.store_data import exact_cosines

__all__ = ["OneRequestContract", "reference_retrieval"]

Ranking = list[tuple[str, float]]


def _top(chunks: Sequence[Chunk], scores: dict[str, float], n: int) -> list[ScoredChunk]:
    by_id = {c.id: c for c in chunks}
    ranked = sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:n]
    return [ScoredChunk(by_id[i], s) for i, s in ranked]


def reference_sides(
    chunks: list[Chunk], query: StoreQuery, bm25: dict[str, float]
) -> tuple[list[ScoredChunk], list[ScoredChunk], dict[str, float]]:
    """The reference dense and lexical lists of ``query`` (``query.depth`` hits each) and
    the cosine of every chunk the filter keeps; ``bm25`` holds the reference BM25 score of
    every such chunk sharing a term with the query."""
    kept = [c for c in chunks if matches_filter(c.metadata, query.filter)]
    cosines = exact_cosines(kept, query.vector) if query.vector is not None and kept else {}
    dense = {i: s for i, s in cosines.items() if s >= query.min_score}
    return _top(kept, dense, query.depth), _top(kept, bm25, query.depth), cosines


def reference_retrieval(
    chunks: list[Chunk], query: StoreQuery, bm25: dict[str, float]
) -> list[ScoredChunk]:
    """``query`` answered by the reference formulas over ``chunks`` (see
    :func:`reference_sides`)."""
    dense, lexical, cosines = reference_sides(chunks, query, bm25)
    if query.mode != "hybrid":
        return dense if query.mode == "dense" else lexical
    if query.fusion == "rescored":
        return rescored_fusion(dense, lexical, cosines, bm25, weights=query.weights, k=query.k)
    if query.fusion == "weighted":
        return weighted_score_fusion([dense, lexical], weights=query.weights, k=query.k)
    return reciprocal_rank_fusion(
        [dense, lexical], rrf_k=query.rrf_k, weights=query.weights, k=query.k
    )


def _agrees(got: list[ScoredChunk], want: list[ScoredChunk], exact: bool) -> None:
    """``got`` ranks as ``want`` does (the module docstring's tolerance; every id and score
    when ``exact``, chunks tied in score in any order)."""
    pairs = [(h.chunk.id, h.score) for h in got]
    reference = {h.chunk.id: h.score for h in want}
    assert len(got) == len(want), (pairs, want)
    assert [s for _, s in pairs] == sorted((s for _, s in pairs), reverse=True)
    assert all(h.chunk.embedding is None for h in got)
    if exact:
        assert [s for _, s in pairs] == pytest.approx([h.score for h in want], rel=1e-5, abs=1e-6)
        assert sorted((round(s, 5), i) for i, s in pairs) == sorted(
            (round(s, 5), i) for i, s in reference.items()
        )
        return
    shared = [(i, s) for i, s in pairs if i in reference]
    assert len(shared) >= math.ceil(0.8 * len(want)), (pairs, want)
    if want:
        best = reference.get(pairs[0][0], -math.inf)
        assert best == pytest.approx(want[0].score, rel=0.05, abs=1e-6), (pairs, want)
    for chunk_id, score in shared:
        assert score == pytest.approx(reference[chunk_id], rel=0.05, abs=1e-6), (pairs, want)


def _fused_well(
    got: list[ScoredChunk], sides: tuple[list[ScoredChunk], list[ScoredChunk]], k: int
) -> None:
    """An engine's own fusion of the two reference lists: its hits come from either list,
    as many as they give up to ``k``, scores descending, and no candidate ranks above its
    best hit on both lists (a fusion that grows with each side's score puts such a
    candidate first)."""
    ranks = [{h.chunk.id: i for i, h in enumerate(side)} for side in sides]
    union = set(ranks[0]) | set(ranks[1])
    assert {h.chunk.id for h in got} <= union
    assert len(got) == min(k, len(union))
    assert [h.score for h in got] == sorted((h.score for h in got), reverse=True)
    if got:
        top, last = got[0].chunk.id, len(union)
        assert not [c for c in union if all(r.get(c, last) < r.get(top, last) for r in ranks)]


class FixedEmbedder:
    """An embedder answering every text with one vector (the query's)."""

    def __init__(self, vector: list[float]) -> None:
        self.vector = vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self.vector) for _ in texts]

    def embed_one(self, text: str) -> list[float]:
        return list(self.vector)


class OneRequestContract(LexicalSearchContract):
    """Mixed into :class:`VectorStoreContract`; uses its ``store`` fixture."""

    dim: ClassVar[int] = 16
    #: hybrid fusions the engine computes its own way (checked by :func:`_fused_well`)
    engine_fusions: ClassVar[frozenset[str]] = frozenset()

    def _check_retrieved(
        self, got: list[ScoredChunk], store: BaseVectorStore, live: list[Chunk], q: StoreQuery
    ) -> None:
        bm25: dict[str, float] = {}
        if q.mode != "dense":
            bm25 = dict(self._reference(live, q.text or "", len(live), filter=q.filter))
        if q.mode == "lexical":  # as the lexical contract holds lexical_search
            self._check([(h.chunk.id, h.score) for h in got], list(bm25.items())[: q.k])
            return
        if q.mode == "hybrid" and q.fusion in self.engine_fusions:
            dense, lexical, _ = reference_sides(live, q, bm25)
            _fused_well(got, (dense, lexical), q.k)
            return
        _agrees(got, reference_retrieval(live, q, bm25), store.exact and q.mode == "dense")

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
                    weights = fusion_weights(fusion)
                    asked.append(StoreQuery("hybrid", k, vector, text, part, 8, fusion, weights))
        return asked

    def test_retrieve_agrees_with_the_reference(self, store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        for asked in self._queries(store):
            if asked.mode == "hybrid" and not store.native_retrieval:
                with pytest.raises(UnsupportedOperationError, match="one-request"):
                    store.retrieve(asked)
                continue
            self._check_retrieved(store.retrieve(asked), store, corpus, asked)
            self._check_retrieved(asyncio.run(store.aretrieve(asked)), store, corpus, asked)
        if not store.lexical:
            with pytest.raises(UnsupportedOperationError, match="lexical"):
                store.retrieve(StoreQuery("lexical", 3, text=QUERIES[0]))

    def test_hybrid_gives_every_candidate_both_scores(self, store: BaseVectorStore) -> None:
        """Through the retriever, on any store: the one-sided candidates exist (or this
        case proves nothing) and the answer agrees with the reference ``rescored`` fusion,
        which scores them on both sides."""
        corpus = lexical_corpus(dim=self.dim)
        store.add(corpus)
        if not (store.lexical and store.native_retrieval):
            pytest.skip(f"{type(store).__name__}: no one-request hybrid retrieval")
        if "rescored" in self.engine_fusions:
            pytest.skip(f"{type(store).__name__}'s engine fuses 'rescored' its own way")
        vector = list(np.random.default_rng(5).standard_normal(self.dim))
        retriever = VectorRetriever(FixedEmbedder(vector), store, k=8, mode="hybrid", candidates=8)
        for text in QUERIES[:3]:
            asked = StoreQuery("hybrid", 8, vector, text, candidates=8, min_score=0.0)
            bm25 = dict(self._reference(corpus, text, len(corpus)))
            dense, lexical, _ = reference_sides(corpus, asked, bm25)
            assert {h.chunk.id for h in dense} != {h.chunk.id for h in lexical}
            want = reference_retrieval(corpus, asked, bm25)
            _agrees(retriever.retrieve(text), want, exact=False)
            _agrees(asyncio.run(retriever.aretrieve(text)), want, exact=False)

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
        gone = {h.chunk.id for h in first[:2]}
        store.delete(list(gone))
        again = store.retrieve(asked)
        assert not gone & {h.chunk.id for h in again}
        self._check_retrieved(again, store, [c for c in corpus if c.id not in gone], asked)
