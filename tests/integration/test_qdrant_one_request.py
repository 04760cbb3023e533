"""Each Qdrant retrieval is one engine request: a search filters on the chunks' visibility
flag and reads the embedder identity from its own hits (no record lookup), on a folder
(Qdrant Edge) and on a server (the REST front counts what the clients send), sync and async.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from qdrant_client.models import Filter

from pywrapai_graph import QdrantVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_batch
from pywrapai_graph.adapters.vectorstores.qdrant.points import EMBEDDER, HIDDEN
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.testing.contracts.store_data import WordEmbedder
from tests.integration.qdrant_rest import QdrantRest

_MODES = ("dense", "lexical", "hybrid")
_TEXTS = ["red apples and green pears", "green tea and red wine", "blue sky over red roofs"]


class _Counted:
    """The Edge folder as the store sees it, every call it takes counted by name."""

    def __init__(self, inner: Any, calls: list[str]) -> None:
        self._inner, self._calls = inner, calls

    def __getattr__(self, name: str) -> Any:
        got = getattr(self._inner, name)
        if not callable(got):
            return got

        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(name)
            return got(*args, **kwargs)

        return call


def _filled(store: QdrantVectorStore, mode: str) -> VectorRetriever:
    retriever = VectorRetriever(WordEmbedder(16), store, k=3, min_score=-1.0, mode=mode)  # type: ignore[arg-type]
    docs = [
        Document(text, id=f"{tenant}-{i}", metadata={"tenant": tenant, "n": i})
        for tenant in ("acme", "globex")
        for i, text in enumerate(_TEXTS)
    ]
    retriever.add_documents(docs)
    retriever.add_documents(docs[:2])  # replaced: their first versions are gone or hidden
    return retriever


def _retrievals(retriever: VectorRetriever) -> Iterator[Any]:
    """Sync and async, without and with a filter, and in a scoped view."""
    scoped = retriever.scoped({"tenant": "acme"})
    yield lambda: retriever.retrieve("red")
    yield lambda: retriever.retrieve("red", filter={"n": 1})
    yield lambda: scoped.retrieve("red")
    yield lambda: asyncio.run(retriever.aretrieve("red", filter={"n": 0}))
    yield lambda: asyncio.run(scoped.aretrieve("red"))


@pytest.mark.parametrize("mode", _MODES)
def test_a_folder_retrieval_is_one_query_points(tmp_path: Path, mode: str) -> None:
    calls: list[str] = []
    with QdrantVectorStore("one", path=tmp_path / "q") as store:
        retriever = _filled(store, mode)
        store._client = _Counted(store._client, calls)  # type: ignore[assignment]
        for retrieve in _retrievals(retriever):
            retrieve()  # warm-up: nothing a later retrieval does not do
            calls.clear()
            hits = retrieve()
            assert hits and calls == ["query_points"]


@pytest.mark.parametrize("mode", _MODES)
def test_a_server_retrieval_is_one_request(qdrant_rest: QdrantRest, mode: str) -> None:
    store = QdrantVectorStore(f"one-{mode}", url=qdrant_rest.url)
    try:
        retriever = _filled(store, mode)
        for retrieve in _retrievals(retriever):
            retrieve()
            del qdrant_rest.requests[:]
            hits = retrieve()
            assert hits
            assert qdrant_rest.requests == [("POST", f"/collections/one-{mode}/points/query")]
    finally:
        store.close()


def test_a_replaced_document_shows_its_new_version_only(qdrant_rest: QdrantRest) -> None:
    """A replace writes the new chunks hidden and flips the flags at its commit."""
    store = QdrantVectorStore("flip", url=qdrant_rest.url)
    try:
        retriever = VectorRetriever(WordEmbedder(16), store, k=10, min_score=-1.0)
        retriever.add_documents([Document("red old text", id="d")])
        retriever.add_documents([Document("red new text", id="d")])
        assert [h.chunk.text for h in retriever.retrieve("red")] == ["red new text"]
        assert len(store) == 1
    finally:
        store.close()


def test_store_migrate_flags_and_stamps_the_points_of_release_0_1_0(
    qdrant_rest: QdrantRest,
) -> None:
    """Points of release 0.1.0 have no flag and no embedder stamp: shown, and the retriever
    asks for the embedder (a second request); an open upgrades nothing. ``store migrate``
    hides those of a version a pending record names as not committed (a 0.1.0 writer that
    died mid-replace) and stamps the rest: then a retrieval is one request again."""
    store = QdrantVectorStore("old", url=qdrant_rest.url)
    retriever = VectorRetriever(WordEmbedder(16), store, k=10, min_score=-1.0)
    retriever.add_documents([Document("red committed", id="d")])
    committed = store._records(["d"])["d"]
    store._put_record(replace(committed, pending="v-dead"))
    vector = WordEmbedder(16).embed_one("red unfinished")
    chunk = Chunk("red unfinished", doc_id="d", id="d-x", embedding=vector)
    store._upsert(prepare_batch([chunk], 16), ["v-dead"])
    with qdrant_rest.lock:  # as release 0.1.0 wrote them: no flag, no stamp
        qdrant_rest.engine.delete_payload("old", [HIDDEN, EMBEDDER], points=Filter(must=[]))
    store.close()
    reopened = QdrantVectorStore("old", url=qdrant_rest.url)
    try:
        again = VectorRetriever(WordEmbedder(16), reopened, k=10, min_score=-1.0)
        assert len(again.retrieve("red")) == 2  # not migrated: the unfinished chunk shows
        assert reopened.migrate() == 1
        del qdrant_rest.requests[:]
        assert [h.chunk.text for h in again.retrieve("red")] == ["red committed"]
        assert qdrant_rest.requests == [("POST", "/collections/old/points/query")]
        assert reopened.migrate() == 1  # (the record stays pending until a repair)
    finally:
        reopened.close()
