"""Hybrid retrieval's default fusion: every candidate gets both of its scores."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

import pytest

from pywrapai_graph import InMemoryVectorStore, VectorRetriever
from pywrapai_graph.application.fusion import (
    DEFAULT_RESCORED_WEIGHTS,
    fusion_weights,
    rescored_fusion,
)
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError


class _FixedQuery:
    """Embeds every query as the unit vector (1, 0): the chunks' cosines are their x."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_one(self, text: str) -> list[float]:
        return [1.0, 0.0]


def _at(cosine: float) -> list[float]:
    return [cosine, math.sqrt(1.0 - cosine * cosine)]


#: by cosine a > c > b >> d; by BM25 for "panel flutter" b > d, a and c share no term.
CHUNKS = [
    Chunk("Propeller slipstream over a swept wing.", doc_id="a", id="a", embedding=_at(0.95)),
    Chunk("Flutter flutter of a thin panel.", doc_id="b", id="b", embedding=_at(0.93)),
    Chunk("Boundary layer transition on a cone.", doc_id="c", id="c", embedding=_at(0.94)),
    Chunk("Panel flutter at supersonic speed.", doc_id="d", id="d", embedding=_at(0.10)),
    Chunk("Heat transfer in laminar flow.", doc_id="e", id="e", embedding=_at(0.05)),
]


def _retriever(**kw: object) -> VectorRetriever:
    store = InMemoryVectorStore()
    store.add([Chunk(c.text, doc_id=c.doc_id, id=c.id, embedding=c.embedding) for c in CHUNKS])
    return VectorRetriever(_FixedQuery(), store, k=2, mode="hybrid", candidates=2, **kw)  # type: ignore[arg-type]


def test_a_candidate_one_side_missed_is_ranked_by_its_other_score() -> None:
    # dense top 2: a, c; lexical top 2: b, d. "b" is first by BM25 and, a hair below the
    # dense cut, has a cosine of 0.93: with both scores it beats "a" (no query term)
    assert [h.chunk.id for h in _retriever().retrieve("panel flutter")] == ["b", "a"]
    # reciprocal-rank fusion never sees b's cosine: b (lexical rank 1) ties a (dense rank 1)
    rrf = _retriever(fusion="rrf").retrieve("panel flutter")
    assert [h.chunk.id for h in rrf] == ["a", "b"]


def test_rescored_scores_are_the_weighted_min_max_of_both_scores() -> None:
    r = _retriever()
    vector = [1.0, 0.0]
    dense = r.store.search(vector, k=2)
    lexical = r.store.lexical_search("panel flutter", k=2)
    assert [h.chunk.id for h in dense] == ["a", "c"]
    assert [h.chunk.id for h in lexical] == ["b", "d"]
    cosines = {"a": 0.95, "b": 0.93, "c": 0.94, "d": 0.10}
    bm25 = {h.chunk.id: h.score for h in r.store.lexical_search("panel flutter", k=5)}
    assert set(bm25) == {"b", "d"}  # a and c share no term: no score
    got = {h.chunk.id: h.score for h in r.retrieve("panel flutter", k=4)}
    w_dense, w_lexical = DEFAULT_RESCORED_WEIGHTS
    high = max(bm25.values())  # the lowest BM25 score is a's: 0
    want = {
        cid: w_dense * (cosines[cid] - 0.10) / (0.95 - 0.10) + w_lexical * bm25.get(cid, 0.0) / high
        for cid in cosines
    }
    assert got == pytest.approx(want, abs=1e-6)


def test_async_retrieval_fuses_the_same_way() -> None:
    r = _retriever()
    sync = [(h.chunk.id, h.score) for h in r.retrieve("panel flutter")]
    got = asyncio.run(r.aretrieve("panel flutter"))
    assert [(h.chunk.id, h.score) for h in got] == sync


def test_rescored_fusion_by_hand() -> None:
    a, b, c = (Chunk(t, doc_id=t, id=t) for t in "abc")
    dense = [ScoredChunk(a, 0.9), ScoredChunk(b, 0.5)]
    lexical = [ScoredChunk(c, 8.0), ScoredChunk(a, 2.0)]
    # c's cosine 0.1 from the store; b shares no term with the query
    fused = rescored_fusion(dense, lexical, {"c": 0.1}, {}, weights=(0.5, 0.5))
    # cosines a 1, b 0.5, c 0 (min-max over 0.1..0.9); BM25 a 0.25, b 0 (no term), c 1
    assert [(h.chunk.id, h.score) for h in fused] == [("a", 0.625), ("c", 0.5), ("b", 0.25)]
    assert rescored_fusion([], [], {}, {}) == []
    with pytest.raises(InvalidArgumentError):
        rescored_fusion(dense, lexical, {}, {}, weights=(1.0, math.nan))


def test_fusion_and_weights_are_configurable() -> None:
    assert fusion_weights("rescored") == DEFAULT_RESCORED_WEIGHTS
    assert fusion_weights("rrf") == (1.0, 1.0)
    assert fusion_weights("rescored", lexical=0.2) == (DEFAULT_RESCORED_WEIGHTS[0], 0.2)
    r = build_container({"store": {"backend": "memory"}, "retriever": {"mode": "hybrid"}})
    assert (r.retriever().fusion, r.retriever().weights) == ("rescored", (0.6, 0.4))
    rrf = build_container({"retriever": {"fusion": "rrf", "dense_weight": 2.0}}).retriever()
    assert (rrf.fusion, rrf.weights) == ("rrf", (2.0, 1.0))
    with pytest.raises(ConfigurationError):
        VectorRetriever(_FixedQuery(), InMemoryVectorStore(), fusion="sum")  # type: ignore[arg-type]
