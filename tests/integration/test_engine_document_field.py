"""The document field of the engines' lexical search (Qdrant; issue 27 item 1), and Chroma's
refusal of lexical search (dense only since issue 34).

A chunk of document D scores ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(D)``, D being the
concatenation of its chunks, with document statistics the engine holds. Checked against the
formula written out plainly (the contract's ``reference_bm25``): exactly after one write, closely
(running length totals) after later ones; across processes on the Qdrant server path. On
Qdrant one ``query_points`` adds the two scores (every chunk holds its document's sparse
vector, one carrier per document counted by the document IDF).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph import ChromaVectorStore, Embedder, QdrantVectorStore
from pywrapai_graph.adapters.vectorstores.qdrant.points import (
    CARRIER,
    DOCUMENT_SPARSE,
    SPARSE,
)
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT
from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import UnsupportedOperationError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.lexical_search import (
    QUERIES,
    lexical_corpus,
    reference_bm25,
)
from tests.integration.test_many_workers import Worker
from tests.integration.test_server_stores import name_for

Ranking = list[tuple[str, float]]


def fielded_reference(chunks: list[Chunk], query: str, weight: float = DOCUMENT_WEIGHT) -> Ranking:
    """Every chunk holding a query term, by chunk BM25 + weight · its document's BM25."""
    return reference_bm25(chunks, query, len(chunks), document_weight=weight)


def _ranking(store: BaseVectorStore, query: str, k: int = 10) -> Ranking:
    return [(h.chunk.id, h.score) for h in store.lexical_search(query, k)]


def _assert_exact(got: Ranking, want: Ranking) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-6)


def _assert_close(got: Ranking, want: Ranking) -> None:
    """Same best hit, 8 of the top 10, shared scores within 5% (avgdl: running totals)."""
    reference = dict(want)
    assert got[0][0] == want[0][0], (got, want)
    assert len({i for i, _ in got} & {i for i, _ in want[:10]}) >= 8, (got, want)
    for chunk_id, score in got:
        if chunk_id in reference:
            assert score == pytest.approx(reference[chunk_id], rel=0.05), (got, want)


@pytest.fixture(params=["qdrant", "qdrant_server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseVectorStore]:
    made: BaseVectorStore
    if request.param == "qdrant":
        made = QdrantVectorStore("fielded")
    else:  # the server path (REST), see qdrant_rest
        url = request.getfixturevalue("qdrant_rest_url")
        made = QdrantVectorStore(name_for(tmp_path, "f"), url=url)
    yield made
    made.close()


def test_chunks_score_with_their_document_as_designed(store: BaseVectorStore) -> None:
    corpus = lexical_corpus(dim=8)  # 60 chunks over 6 documents, written in one batch
    store.add(corpus)
    for query in QUERIES:
        _assert_exact(_ranking(store, query), fielded_reference(corpus, query)[:10])


def test_a_chunk_of_a_document_about_the_query_outranks_the_same_chunk_elsewhere(
    store: BaseVectorStore,
) -> None:
    shared = "Shock waves on a cone at supersonic speed."
    chunks = [
        Chunk(shared, doc_id="on", id="on-1"),
        Chunk("The shock stands off the cone; supersonic flow turns.", doc_id="on", id="on-2"),
        Chunk(shared, doc_id="off", id="off-1"),
        Chunk("Buckling of thin shells under pressure loads.", doc_id="off", id="off-2"),
        Chunk("Turbulent jets from a nozzle entrain air.", doc_id="other", id="other-1"),
    ]
    store.add([_embedded(c, i) for i, c in enumerate(chunks)])
    query = "supersonic shock waves on a cone"
    got = [i for i, _ in _ranking(store, query)]
    assert got.index("on-1") < got.index("off-1")  # the same chunk score, a better document
    _assert_exact(_ranking(store, query), fielded_reference(chunks, query))


def test_one_chunk_per_document_ranks_as_chunks_alone(store: BaseVectorStore) -> None:
    corpus = [
        Chunk(c.text, doc_id=c.id, metadata=c.metadata, id=c.id, embedding=c.embedding)
        for c in lexical_corpus(dim=8)
    ]
    store.add(corpus)
    for query in QUERIES:
        alone = fielded_reference(corpus, query, weight=0.0)[:10]
        _assert_exact(_ranking(store, query), [(i, (1 + DOCUMENT_WEIGHT) * s) for i, s in alone])


def test_the_field_follows_adds_and_deletes_of_some_chunks(store: BaseVectorStore) -> None:
    corpus = lexical_corpus(dim=8)
    store.add(corpus)
    # lex-000 and lex-001 are the first chunks (the carriers) of doc-0 and doc-1
    store.delete(["lex-000", "lex-001", "lex-013"])
    assert _carriers(store) == 6
    extra = _embedded(Chunk("Heat transfer in laminar layers.", doc_id="doc-1", id="x"), 9)
    store.add([extra])
    live = [c for c in corpus if c.id not in ("lex-000", "lex-001", "lex-013")] + [extra]
    for query in QUERIES:
        _assert_close(_ranking(store, query), fielded_reference(live, query))
    assert _carriers(store) == 6  # one per document


def _embedded(chunk: Chunk, seed: int) -> Chunk:
    vector = [math.cos(seed + i) for i in range(8)]
    return Chunk(
        chunk.text, doc_id=chunk.doc_id, metadata=chunk.metadata, id=chunk.id, embedding=vector
    )


def _carriers(store: BaseVectorStore) -> int:
    assert isinstance(store, QdrantVectorStore)
    points, _ = store._client.scroll(store._collection, limit=1000, with_vectors=True)
    assert all(DOCUMENT_SPARSE in (p.vector or {}) for p in points)  # on every chunk
    return sum(bool((p.payload or {}).get(CARRIER)) for p in points)


# ---------------------------------------------------------------------- written before


def test_a_server_collection_without_the_field_is_refused_at_open_and_left_as_is(
    qdrant_rest_url: str, tmp_path: Path
) -> None:
    """Qdrant cannot add a sparse vector to a collection, and no release wrote one without the
    document field (it predates 0.1.0): such a collection is refused when the store opens,
    with what to do, and nothing is written to it."""
    from qdrant_client import QdrantClient, models

    name = name_for(tmp_path, "old")
    raw = QdrantClient(url=qdrant_rest_url, check_compatibility=False)
    raw.create_collection(
        name,
        vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE),
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    with pytest.raises(VectorStoreError, match="delete it or use another collection name"):
        QdrantVectorStore(name, url=qdrant_rest_url)
    assert raw.count(name).count == 0
    assert set(raw.get_collection(name).config.params.sparse_vectors or {}) == {SPARSE}
    raw.close()


# ---------------------------------------------------------------------- other processes


def test_another_process_replacing_or_deleting_changes_document_statistics(
    qdrant_rest_url: str, tmp_path: Path
) -> None:
    kind, url, name = "qdrant_server", qdrant_rest_url, name_for(tmp_path, "f")
    store: BaseVectorStore = QdrantVectorStore(name, url=url)
    embedder = Embedder(provider="hashing")
    corpus = lexical_corpus()
    vectors = embedder.embed([c.text for c in corpus])
    corpus = [
        Chunk(c.text, doc_id=c.doc_id, metadata=c.metadata, id=c.id, embedding=v)
        for c, v in zip(corpus, vectors, strict=True)
    ]
    store.add(corpus)
    other = Worker((kind, f"{url}#{name}"))
    try:
        assert other.opened == ("ok", None), other.opened
        query = QUERIES[0]
        _assert_exact(_ranking(store, query), fielded_reference(corpus, query)[:10])
        other.ask("delete", "doc-2")  # its terms leave the document statistics
        live = [c for c in corpus if c.doc_id != "doc-2"]
        _assert_close(_ranking(store, query), fielded_reference(live, query))
        text = "Heat heat transfer: laminar boundary layers on heated plates."
        other.ask("ingest", [("doc-3", text)], {})  # a replace: doc-3 is one chunk now
        got = store.lexical_search(query, 10)
        live = [c for c in live if c.doc_id != "doc-3"]
        replaced = next(h.chunk for h in got if h.chunk.doc_id == "doc-3")
        assert replaced.text == text
        _assert_close(
            [(h.chunk.id, h.score) for h in got], fielded_reference([*live, replaced], query)
        )
    finally:
        other.stop()
        store.close()


# ---------------------------------------------------------------------- Chroma: dense only


def test_chroma_refuses_lexical_search_naming_the_stores_that_have_it(tmp_path: Path) -> None:
    """chromadb serves no ranked text index outside Chroma Cloud: no document field, no
    lexical search, and the refusal says where to go."""
    store = ChromaVectorStore(path=str(tmp_path / "chroma"), collection="fielded")
    try:
        store.add(lexical_corpus(dim=8))
        assert not store.lexical
        with pytest.raises(UnsupportedOperationError, match=r"PostgreSQL.*SQLite, Qdrant"):
            store.lexical_search(QUERIES[0], 10)
    finally:
        store.close()
