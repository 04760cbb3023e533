"""Chroma is dense only (issue 34 item 5): chromadb 1.5.9 serves no ranked text index outside
Chroma Cloud, so lexical and hybrid retrieval are refused with a typed error naming the stores
that have them — by the store, by a retriever at construction, by the settings before any
store is built — and a dense retrieval is one ``query`` on the wire."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import ChromaVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import lexical_corpus
from tests.integration.servers import CountingProxy
from tests.integration.test_server_stores import name_for

NAMES_THE_OTHERS = r"PostgreSQL \(pgvector\), SQLite, Qdrant, in-memory and FAISS"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChromaVectorStore]:
    made = ChromaVectorStore(path=str(tmp_path / "chroma"), collection="dense")
    yield made
    made.close()


def _embedded(chunks: list[Chunk]) -> list[Chunk]:
    vectors = FeatureHashingEmbedder().embed([c.text for c in chunks])
    return [
        Chunk(c.text, doc_id=c.doc_id, metadata=c.metadata, id=c.id, embedding=v)
        for c, v in zip(chunks, vectors, strict=True)
    ]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_lexical_or_hybrid_retriever_over_chroma_fails_at_construction(
    store: ChromaVectorStore, mode: str
) -> None:
    with pytest.raises(UnsupportedOperationError, match=NAMES_THE_OTHERS) as caught:
        VectorRetriever(FeatureHashingEmbedder(), store, mode=mode)  # type: ignore[arg-type]
    assert f"mode={mode!r}" in str(caught.value)
    assert VectorRetriever(FeatureHashingEmbedder(), store).mode == "dense"


def test_the_store_refuses_a_lexical_or_hybrid_store_query(store: ChromaVectorStore) -> None:
    store.add(_embedded(lexical_corpus()))
    vector = FeatureHashingEmbedder().embed(["shock waves"])[0]
    assert store.native_retrieval
    for asked in (
        StoreQuery("lexical", 3, text="shock waves"),
        StoreQuery("hybrid", 3, vector, "shock waves"),
    ):
        with pytest.raises(UnsupportedOperationError, match=NAMES_THE_OTHERS):
            store.retrieve(asked)
        with pytest.raises(UnsupportedOperationError, match=NAMES_THE_OTHERS):
            asyncio.run(store.aretrieve(asked))
    dense = store.retrieve(StoreQuery("dense", 3, vector))
    assert [h.chunk.id for h in dense] == [h.chunk.id for h in store.search(vector, 3)]


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_settings_refuse_a_lexical_mode_on_chroma_before_building_anything(
    mode: str, tmp_path: Path
) -> None:
    where = tmp_path / "never-made"
    config = {"store": {"backend": "chroma", "path": str(where)}, "retriever": {"mode": mode}}
    with pytest.raises(UnsupportedOperationError, match=NAMES_THE_OTHERS) as caught:
        load_settings(config)
    assert "store.backend 'chroma'" in str(caught.value)
    assert not where.exists()
    assert load_settings({**config, "retriever": {"mode": "dense"}}).retriever.mode == "dense"
    assert (
        load_settings({"store": {"backend": "memory"}, "retriever": {"mode": mode}}).retriever.mode
        == mode
    )


def test_a_collection_written_with_the_old_lexical_postings_still_serves_dense(
    tmp_path: Path,
) -> None:
    """A collection an earlier release wrote carries BM25 postings in its metadata (terms,
    document carriers, a collection mark, length records): ignored, never in a chunk's
    metadata, and written over as documents are replaced."""
    corpus = _embedded(lexical_corpus())
    old = ChromaVectorStore(path=str(tmp_path / "c"), collection="old")
    old.add(corpus)
    ids = old._collection.get(include=[])["ids"]
    postings: Any = [
        {
            "pywrapai_terms": ["shock", "wave"],
            "pywrapai_doc_terms": ["shock"],
            "pywrapai_doc_tf": json.dumps({"shock": 2}),
            "pywrapai_doc_len": 7,
        }
        for _ in ids
    ]
    old._collection.update(ids=ids, metadatas=postings)
    old._collection.modify(metadata={"pywrapai_lexical": 2})
    old._put("e:lengths", {"tokens": 700, "chunks": 60, "pending": ""})
    old.close()
    store = ChromaVectorStore(path=str(tmp_path / "c"), collection="old")
    try:
        vector = corpus[7].embedding
        assert vector is not None
        hits = store.search(vector, k=5, filter={"part": corpus[7].metadata["part"]})
        assert hits[0].chunk.id == corpus[7].id
        assert hits[0].chunk.metadata == corpus[7].metadata  # no pywrapai_* key leaks
        assert all(not k.startswith("pywrapai") for h in hits for k in h.chunk.metadata)
        assert len(store) == len(corpus)
        store.delete_by_doc(corpus[7].doc_id)
        assert corpus[7].id not in {h.chunk.id for h in store.search(vector, k=5)}
    finally:
        store.close()


@pytest.fixture
def chroma_proxy(chroma_url: str) -> Iterator[CountingProxy]:
    proxy = CountingProxy(chroma_url)
    proxy.start()
    yield proxy
    proxy.stop()


def test_a_dense_retrieval_is_one_query_on_the_wire(
    chroma_proxy: CountingProxy, tmp_path: Path
) -> None:
    """Sync and async, with a filter and through a scope: the chunks' ``query`` alone (its ``where`` keeps the
    shown chunks, its hits carry the embedder identity); no count first, no records read."""
    url = f"http://127.0.0.1:{chroma_proxy.server.server_address[1]}"
    store = ChromaVectorStore(url=url, collection=name_for(tmp_path, "d"))
    retriever = VectorRetriever(FeatureHashingEmbedder(), store, k=3)
    retriever.add_documents(
        [Document("Shock waves on a cone.", id="doc-a"), Document("Heat transfer.", id="doc-b")]
    )
    part = {"topic": "none"}  # no chunk has it: the engine answers with no hits

    async def both() -> None:
        await retriever.aretrieve("shock")  # the async client fetches both collections
        chroma_proxy.requests.clear()
        assert (await retriever.aretrieve("shock"))[0].chunk.doc_id == "doc-a"
        await retriever.aretrieve("shock", filter=part)
        await store.aclose()

    asyncio.run(both())
    assert [p.rsplit("/", 1)[-1] for _, p in chroma_proxy.requests] == ["query", "query"]
    chroma_proxy.requests.clear()
    assert retriever.retrieve("shock")[0].chunk.doc_id == "doc-a"
    assert retriever.retrieve("shock", filter=part) == []
    assert retriever.scoped(part).retrieve("shock") == []  # a tenant scope is its filter
    assert [p.rsplit("/", 1)[-1] for _, p in chroma_proxy.requests] == ["query"] * 3
    store.close()


def test_chunks_written_while_no_embedder_was_recorded_are_one_query_too(
    chroma_proxy: CountingProxy, tmp_path: Path
) -> None:
    """Their stamp says no embedder was recorded when they were written: the query itself
    reports that, and no record is read for the retriever's embedder check."""
    url = f"http://127.0.0.1:{chroma_proxy.server.server_address[1]}"
    store = ChromaVectorStore(url=url, collection=name_for(tmp_path, "p"))
    store.add(_embedded(lexical_corpus()))  # a plain add: no embedder recorded
    retriever = VectorRetriever(FeatureHashingEmbedder(), store, k=3)
    chroma_proxy.requests.clear()
    assert len(retriever.retrieve("shock waves")) == 3
    assert [p.rsplit("/", 1)[-1] for _, p in chroma_proxy.requests] == ["query"]
    store.close()


def test_eval_over_the_configured_chroma_store_refuses_hybrid_before_opening_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYWRAPAI_EMBEDDER__PROVIDER", "hashing")
    (tmp_path / "pywrapai.yaml").write_text("store:\n  backend: chroma\n")
    folder = str(tmp_path / "never-read")  # the settings are refused before any folder
    out, err = io.StringIO(), io.StringIO()
    assert main(["eval", folder, "--reuse-store", "--mode", "dense,hybrid"], out, err) == 2
    assert "eval --reuse-store hybrid" in err.getvalue()
    assert re.search(NAMES_THE_OTHERS, err.getvalue()) and out.getvalue() == ""
    assert not (tmp_path / ".pywrapai" / "chroma").exists()  # the store was never opened
