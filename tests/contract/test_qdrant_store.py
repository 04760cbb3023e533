"""QdrantVectorStore in process (Qdrant Edge): the contract, Qdrant specifics, and folders of
an earlier release (qdrant-client's local mode) refused unread."""

from __future__ import annotations

import pickle
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import QdrantVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix
from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit
from pywrapai_graph.errors import (
    ConfigurationError,
    InvalidStateError,
    StoreBusyError,
    VectorStoreError,
)
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks
from tests.interrupted import VersionedInterrupts


class TestQdrantLocalPath(VersionedInterrupts, VectorStoreContract):
    lexical_exact = False  # term weights written with the chunk (a sparse vector)
    lexical_fixed_bm25 = True
    engine_fusions = frozenset({"rescored", "weighted"})  # Qdrant's DBSF

    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore("contract", location=str(location / "qdrant"))


class TestQdrantInMemory(VersionedInterrupts, VectorStoreContract):
    lexical_exact = False  # term weights written with the chunk (a sparse vector)
    lexical_fixed_bm25 = True
    engine_fusions = frozenset({"rescored", "weighted"})  # Qdrant's DBSF

    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore("contract", location=":memory:")


def test_local_lock_released_by_close(tmp_path: Path) -> None:
    path = str(tmp_path / "qdrant_data")
    store1 = QdrantVectorStore("docs", location=path)
    store1.add(make_chunks(5, 8))
    # refused before a second client touches the folder (or leaks a handle of its own)
    with pytest.raises(StoreBusyError, match="close that store first"):
        QdrantVectorStore("docs", location=path)
    store1.close()
    store2 = QdrantVectorStore("docs", location=path)
    assert len(store2) == 5
    store2.close()


def test_non_uuid_ids_map_to_stable_uuid5_and_keep_the_original(tmp_path: Path) -> None:
    store = QdrantVectorStore("docs", location=":memory:")
    chunks = make_chunks(3, 8)  # ids "c0", "c1", "c2"
    real_uuid = str(uuid.uuid4())
    chunks[2].id = real_uuid
    store.add(chunks)
    hit = store.search(chunks[0].embedding or [], k=1)[0]
    assert hit.chunk.id == "c0"
    assert store.search(chunks[2].embedding or [], k=1)[0].chunk.id == real_uuid
    store.add([chunks[0]])  # same id again: replaced, not duplicated
    assert len(store) == 3


def test_dimension_up_front_and_bad_arguments(tmp_path: Path) -> None:
    store = QdrantVectorStore("docs", location=":memory:", dimension=8)
    assert store.dimension == 8
    with pytest.raises(ValueError, match="expects 8"):
        store.add(make_chunks(1, 4))
    with pytest.raises(ConfigurationError):
        QdrantVectorStore("docs", location=":memory:", url="http://localhost:6333")
    store.add(make_chunks(2, 8))
    assert store.search([1.0] * 8, k=1, filter={"parity": ["even"]}) == []  # a list: equality
    with pytest.raises(ValueError, match="JSON scalars"):
        store.search([1.0] * 8, k=1, filter={"parity": {"even": 1}})


def test_unreachable_server_is_a_clear_error_without_the_key() -> None:
    with pytest.raises(
        VectorStoreError, match=r"cannot reach Qdrant at 127\.0\.0\.1:1: the connection was refused"
    ) as info:
        QdrantVectorStore("docs", url="https://127.0.0.1:1", api_key="qdrant-SECRET")
    assert "qdrant-SECRET" not in str(info.value)


class _OpensAFile:
    """Unpickling this creates ``path``: the payload an attacker would plant."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def _plant(folder: Path, marker: Path) -> None:
    database = folder / "collection" / "docs" / "storage.sqlite"
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE points SET point = ?", (pickle.dumps(_OpensAFile(marker)),))
    conn.close()


def test_nothing_in_a_folder_is_ever_unpickled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine reads its own files (binary segments, JSON): no pickle on any path."""
    folder = tmp_path / "qdrant"
    calls: list[str] = []

    def refuse(*_: object, **__: object) -> None:
        calls.append("unpickled")
        raise AssertionError("a store unpickled something")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    store = QdrantVectorStore("docs", location=str(folder))
    chunks = make_chunks(6, 8)
    store.add(chunks)
    store.close()
    store = QdrantVectorStore("docs", location=str(folder))
    assert store.search(chunks[0].embedding or [], k=1)[0].chunk.id == chunks[0].id
    assert store.lexical_search(chunks[0].text, k=1)
    store.close()
    assert calls == []


def test_a_folder_of_an_earlier_release_is_refused_unread(tmp_path: Path) -> None:
    """qdrant-client's local mode (earlier releases) unpickles its points: such a folder is
    refused, naming what to do, and nothing of it is read or changed."""
    from qdrant_client import QdrantClient, models

    folder, marker = tmp_path / "old", tmp_path / "pwned"
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={})])
    client.close()
    _plant(folder, marker)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(InvalidStateError, match=r"earlier release.*new folder"):
        QdrantVectorStore("docs", location=str(folder))
    assert {p: p.read_bytes() for p in before} == before
    assert not marker.exists()


def test_writes_survive_reopening(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    store = QdrantVectorStore("docs", location=str(folder), dimension=8)
    store.close()
    store = QdrantVectorStore("docs", location=str(folder))
    chunks = make_chunks(6, 8)
    store.add(chunks)
    assert store.delete(["c0"]) == 1
    removed = store.delete_by_doc(chunks[1].doc_id)
    store.close()
    store = QdrantVectorStore("docs", location=str(folder))
    assert len(store) == 5 - removed
    store.clear()
    store.close()
    assert len(QdrantVectorStore("docs", location=str(folder))) == 0


def test_a_link_in_the_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "qdrant"
    QdrantVectorStore("docs", location=str(folder), dimension=8).close()
    (folder / "edge" / "link").symlink_to(tmp_path)
    with pytest.raises(VectorStoreError, match="symbolic link"):
        QdrantVectorStore("docs", location=str(folder))


def test_the_batch_request_gives_the_hits_of_single_queries() -> None:
    """``query_batch_points`` (what ``search_many`` sends): the requests it builds and the
    results it reads match one ``query_points`` each."""
    store = QdrantVectorStore("batch", location=":memory:")
    chunks = make_chunks(30, 8, docs=3)
    store.add(chunks)
    queries = [np.asarray(c.embedding, dtype=np.float32) for c in chunks[:4]]
    for where in (None, {"parity": "odd"}, {"doc": "doc-2", "parity": "even"}):
        selector = store._selector(where)
        batched = store._query_many(queries, 5, selector)
        single = [store._query(q, 5, selector) for q in queries]
        assert [[(h.chunk.id, v) for h, v in r] for r in batched] == [
            [(h.chunk.id, v) for h, v in r] for r in single
        ]
        assert all(len(r) == 5 for r in batched)
    store.close()


class _CountedQdrant(QdrantVectorStore):
    """A real in-process Qdrant store that counts the engine queries a search makes."""

    queries = 0

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        type(self).queries += 1
        return super()._query(query, n, selector)


def test_a_filtered_search_is_one_engine_query() -> None:
    """The engine filters exactly, so the base class keeps every hit it returns: one loop
    (the visible-versions one, which asks again only for uncommitted copies) and one query."""
    store = _CountedQdrant("counted")
    chunks = make_chunks(40, 8, docs=4)
    for c in chunks:
        c.metadata["flag"] = True if c.metadata["n"] % 3 == 0 else 1
    store.add(chunks)
    _CountedQdrant.queries = 0
    hits = store.search(chunks[0].embedding or [], k=5, filter={"flag": True})
    assert len(hits) == 5 and all(h.chunk.metadata["flag"] is True for h in hits)
    assert _CountedQdrant.queries == 1
    store.close()
