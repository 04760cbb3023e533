"""BM25, fusion and the retriever's lexical and hybrid modes, against hand-computed numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from pywrapai_graph import Document, FeatureHashingEmbedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.application.fusion import reciprocal_rank_fusion, weighted_score_fusion
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import ConfigurationError, UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter


def test_analyzer_lowercases_drops_stop_words_and_stems() -> None:
    assert analyze("The Boundary-layer FLOWS over heated plates_and 3 wings!") == [
        "boundari",
        "layer",
        "flow",
        "heat",
        "plate",
        "3",
        "wing",
    ]
    assert analyze("flow flows flowing") == ["flow"] * 3
    assert analyze("it is what it was") == []


def _store(*texts: str) -> InMemoryVectorStore:
    store = InMemoryVectorStore()
    embed = FeatureHashingEmbedder(16).vectors
    store.add(
        [
            Chunk(t, doc_id=f"d{i}", id=f"d{i}", metadata={"i": i}, embedding=v)
            for i, (t, v) in enumerate(zip(texts, embed(texts), strict=True), start=1)
        ]
    )
    return store


def test_bm25_scores_equal_a_hand_computed_example() -> None:
    store = _store("cat sat mat", "cat cat dog", "dog runs fast park")
    # N = 3 chunks; lengths 3, 3, 4 -> avgdl = 10/3; k1 = 1.2, b = 0.75. One chunk per
    # document: the document field scores the same BM25, so every score is (1 + W) · BM25.
    w = 1 + DOCUMENT_WEIGHT
    norm3 = 1.2 * (1 - 0.75 + 0.75 * 3 / (10 / 3))  # = 1.11
    norm4 = 1.2 * (1 - 0.75 + 0.75 * 4 / (10 / 3))  # = 1.38
    idf_cat = idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # ln 1.6
    idf_park = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # ln(8/3)
    hits = store.lexical_search("cat", k=5)
    assert [h.chunk.id for h in hits] == ["d2", "d1"]
    assert hits[0].score == pytest.approx(w * idf_cat * 2 * 2.2 / (2 + norm3))  # 3 * 0.66496
    assert hits[1].score == pytest.approx(w * idf_cat * 1 * 2.2 / (1 + norm3))  # 3 * 0.49005
    assert hits[0].score == pytest.approx(3 * 0.664957, abs=1e-5)
    hits = store.lexical_search("Dogs in the park", k=5)  # "dogs" stems to "dog"
    assert [h.chunk.id for h in hits] == ["d3", "d2"]
    assert hits[0].score == pytest.approx(w * (idf_dog + idf_park) * 2.2 / (1 + norm4))
    assert hits[1].score == pytest.approx(w * idf_dog * 2.2 / (1 + norm3))
    # b = 0: no length normalisation; k1 = 0: term frequency ignored
    flat = store.lexical_search("cat", k=5, k1=0.0, b=0.0)
    assert [h.score for h in flat] == pytest.approx([w * idf_cat, w * idf_cat])
    assert [h.chunk.id for h in flat] == ["d1", "d2"]  # a tie goes to the smaller id


def test_bm25_filter_and_no_match() -> None:
    store = _store("cat sat mat", "cat cat dog", "dog runs fast park")
    assert [h.chunk.id for h in store.lexical_search("cat", filter={"i": 1})] == ["d1"]
    assert store.lexical_search("zebra") == []
    assert store.lexical_search("the of and") == []


def _hits(*ids: str) -> list[ScoredChunk]:
    return [ScoredChunk(Chunk(i, id=i), 10.0 - n) for n, i in enumerate(ids)]


def test_rrf_on_a_hand_computed_example() -> None:
    dense, lexical = _hits("a", "b", "c"), _hits("c", "a", "d")
    fused = reciprocal_rank_fusion([dense, lexical])
    assert [h.chunk.id for h in fused] == ["a", "c", "b", "d"]
    assert [h.score for h in fused] == pytest.approx(
        [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63]
    )
    weighted = reciprocal_rank_fusion([dense, lexical], weights=[0.0, 1.0], rrf_k=0, k=2)
    assert [(h.chunk.id, h.score) for h in weighted] == [("c", 1.0), ("a", 0.5)]
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([dense, lexical], weights=[1.0])


def test_weighted_score_fusion_on_a_hand_computed_example() -> None:
    dense = [ScoredChunk(Chunk(i, id=i), s) for i, s in (("a", 0.9), ("b", 0.5), ("c", 0.1))]
    lexical = [ScoredChunk(Chunk(i, id=i), s) for i, s in (("c", 12.0), ("a", 4.0))]
    fused = weighted_score_fusion([dense, lexical], weights=[0.5, 0.5])
    # dense scaled: a 1, b 0.5, c 0; lexical scaled: c 1, a 0
    assert [h.chunk.id for h in fused] == ["a", "c", "b"]
    assert [h.score for h in fused] == pytest.approx([0.5, 0.5, 0.25])


DOCS = [
    Document("Refunds reach your card within five business days.", {"lang": "en"}, "refund"),
    Document(
        "Standard shipping takes three days; express shipping one day.", {"lang": "en"}, "ship"
    ),
    Document("Les remboursements arrivent en cinq jours ouvrés.", {"lang": "fr"}, "refund-fr"),
    Document("Our warehouse in Lyon ships every weekday.", {"lang": "en"}, "warehouse"),
]


def _retriever(mode: str, **kw: object) -> VectorRetriever:
    r = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), k=3, mode=mode, **kw)  # type: ignore[arg-type]
    r.add_documents(DOCS)
    return r


def test_lexical_mode_ranks_by_bm25_and_filters() -> None:
    r = _retriever("lexical")
    hits = r.retrieve("how many days does shipping take")
    assert hits[0].chunk.doc_id == "ship"
    assert hits[0].score > 1.0  # a BM25 score, not a cosine
    assert [h.chunk.doc_id for h in r.retrieve("ships shipping", filter={"lang": "fr"})] == []


def test_hybrid_mode_fuses_both_sides_and_filters_both() -> None:
    r = _retriever("hybrid", candidates=4, fusion="rrf")
    dense = [h for h in r.store.search(r.embedder.embed_one("refunds"), k=4) if h.score >= 0]
    lexical = r.store.lexical_search("refunds", k=4)
    expected = reciprocal_rank_fusion([dense, lexical], k=3)
    got = r.retrieve("refunds")
    assert [(h.chunk.id, h.score) for h in got] == [(h.chunk.id, h.score) for h in expected]
    assert got[0].chunk.doc_id == "refund"
    only_fr = r.retrieve("refunds or remboursements", filter={"lang": "fr"})
    assert {h.chunk.doc_id for h in only_fr} == {"refund-fr"}
    weighted = _retriever("hybrid", fusion="weighted", weights=(0.0, 1.0))
    assert weighted.retrieve("warehouse Lyon")[0].chunk.doc_id == "warehouse"


def test_lexical_side_follows_re_added_documents() -> None:
    r = _retriever("lexical")
    assert r.retrieve("warehouse")[0].chunk.doc_id == "warehouse"
    r.add_documents([Document("Closed for inventory.", {"lang": "en"}, "warehouse")])
    assert r.retrieve("warehouse") == []
    assert r.retrieve("inventory")[0].chunk.doc_id == "warehouse"


class _DenseOnly(BaseVectorStore):
    def __init__(self) -> None:
        self._inner = InMemoryVectorStore()

    def add(self, chunks: Sequence[Chunk]) -> None:
        self._inner.add(chunks)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return self._inner.search(query_vector, k, filter)

    def delete(self, ids: Sequence[str]) -> int:
        return self._inner.delete(ids)

    def delete_by_doc(self, doc_id: str) -> int:
        return self._inner.delete_by_doc(doc_id)

    def clear(self) -> None:
        self._inner.clear()

    def __len__(self) -> int:
        return len(self._inner)


def test_modes_are_checked_up_front() -> None:
    store = _DenseOnly()
    assert not store.lexical
    with pytest.raises(UnsupportedOperationError, match="has no lexical search"):
        store.lexical_search("x")
    with pytest.raises(UnsupportedOperationError, match=r"mode='hybrid' needs.* SQLite, Qdrant"):
        VectorRetriever(FeatureHashingEmbedder(), store, mode="hybrid")
    VectorRetriever(FeatureHashingEmbedder(), store)  # dense works on any store
    for bad in ({"mode": "sparse"}, {"fusion": "max"}, {"k1": -1.0}, {"b": 2.0}, {"rrf_k": -1}):
        with pytest.raises(ConfigurationError):
            VectorRetriever(FeatureHashingEmbedder(), InMemoryVectorStore(), **bad)


def test_config_sets_the_retrieval_mode() -> None:
    container = build_container(
        {
            "store": {"backend": "memory"},
            "retriever": {"mode": "hybrid", "k1": 0.9, "b": 0.4, "fusion": "weighted"},
        }
    )
    retriever = container.retriever()
    assert (retriever.mode, retriever.k1, retriever.b, retriever.fusion) == (
        "hybrid",
        0.9,
        0.4,
        "weighted",
    )
    with pytest.raises(ConfigurationError, match=r"retriever\.mode"):
        build_container({"retriever": {"mode": "fuzzy"}})


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_tenant_scopes_apply_to_the_lexical_side(mode: str) -> None:
    base = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), k=5, mode=mode)  # type: ignore[arg-type]
    acme, globex = base.scoped({"tenant": "acme"}), base.scoped({"tenant": "globex"})
    acme.add_documents([Document("Acme refunds take five business days.", id="policy")])
    globex.add_documents([Document("Globex refunds take thirty days.", id="policy")])
    assert {h.chunk.metadata["tenant"] for h in acme.retrieve("refunds days")} == {"acme"}
    assert [h.chunk.text for h in globex.retrieve("refunds thirty")] == [
        "Globex refunds take thirty days."
    ]
    assert len(base.retrieve("refunds")) == 2  # the unscoped retriever sees both tenants
