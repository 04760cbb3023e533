"""QdrantVectorStore in process (Qdrant Edge): the contract, Qdrant specifics, and folders of
the previous release (qdrant-client's local mode, sealed) moved onto Edge by
``pywrapai-graph store migrate``."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import QdrantVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix
from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit
from pywrapai_graph.adapters.vectorstores.qdrant.store import migrate_folder
from pywrapai_graph.composition.cli import main
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


# ------------------------------------------------------------------ folders of earlier releases
FIXTURE = Path(__file__).parents[1] / "fixtures"


def _sealed_copy(tmp_path: Path) -> Path:
    """A copy of a folder as the previous release wrote it (qdrant-client's local mode,
    sealed; ``tests/fixtures/write_sealed_qdrant.py``)."""
    folder = tmp_path / "qdrant"
    shutil.copytree(FIXTURE / "sealed_qdrant", folder)
    return folder


def _answers(store: QdrantVectorStore) -> dict[str, Any]:
    """What the fixture writer recorded of the old store, asked of ``store``."""
    from pywrapai_graph.testing.contracts.lexical_search import lexical_corpus
    from tests.fixtures.write_sealed_qdrant import answers

    corpus = lexical_corpus(n=30, dim=8)
    for c in corpus:
        c.metadata["doc"] = c.doc_id
    found: dict[str, Any] = json.loads(json.dumps(answers(store, corpus)))
    return found


def _same(got: Any, want: Any) -> None:
    """Equal, scores within float32 rounding."""
    if isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys()
        for key in want:
            _same(got[key], want[key])
    else:
        assert got == want


def _cli_migrate(folder: Path) -> str:
    """``pywrapai-graph store migrate`` on a Qdrant folder; its output."""
    out, err = io.StringIO(), io.StringIO()
    env = {"PYWRAPAI_STORE__BACKEND": "qdrant", "PYWRAPAI_STORE__PATH": str(folder)}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder.parent)
        for key, value in env.items():
            mp.setenv(key, value)
        mp.setenv("PYWRAPAI_STORE__COLLECTION", "docs")
        assert main(["store", "migrate"], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def _migrated_like(got: dict[str, Any], want: dict[str, Any]) -> None:
    """The old store's answers, lexical scores within 5%: ``migrate`` weighs every chunk
    with the mean lengths of the whole collection, the old release with those of when it
    wrote each document."""
    _same({**got, "lexical": []}, {**want, "lexical": []})
    for hits, old in zip(got["lexical"], want["lexical"], strict=True):
        assert [h[0] for h in hits[:3]] == [h[0] for h in old[:3]]
        assert [h[4] for h in hits] == pytest.approx([h[4] for h in old], rel=0.05)


def test_a_folder_of_the_previous_release_is_refused_until_migrated(tmp_path: Path) -> None:
    folder = _sealed_copy(tmp_path)
    want = json.loads((FIXTURE / "sealed_qdrant.json").read_text())
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(InvalidStateError, match="pywrapai-graph store migrate"):
        QdrantVectorStore("docs", location=str(folder))
    assert {p: p.read_bytes() for p in before} == before  # opening moved nothing
    assert "moved onto Qdrant Edge" in _cli_migrate(folder)
    store = QdrantVectorStore("docs", location=str(folder))
    try:
        _migrated_like(_answers(store), want)  # same ids, documents, manifests, hits
    finally:
        store.close()
    assert sorted(p.name for p in folder.iterdir()) == [".pywrapai.lock", "edge"]
    assert "moved" not in _cli_migrate(folder)  # once
    store = QdrantVectorStore("docs", location=str(folder))  # now an Edge folder
    try:
        _migrated_like(_answers(store), want)
        store.add(make_chunks(2, 8, prefix="new-"))
        assert len(store) == want["len"] + 2
    finally:
        store.close()


def test_a_migration_cut_short_leaves_the_old_folder_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pywrapai_graph.adapters.vectorstores.qdrant import folder as _qdrant_folder

    folder = _sealed_copy(tmp_path)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    def fail(*_: object) -> None:
        raise OSError("killed mid-migration")

    with monkeypatch.context() as patched:
        patched.setattr(_qdrant_folder, "_copy", fail)
        with pytest.raises(OSError, match="killed"):
            migrate_folder(folder)
    assert {p: p.read_bytes() for p in before} == before  # the old files untouched
    assert not (folder / "edge").exists()
    assert migrate_folder(folder)  # (a staging copy was left)
    store = QdrantVectorStore("docs", location=str(folder))
    try:
        assert len(store) == 30
    finally:
        store.close()


def test_a_planted_pickle_in_an_old_folder_is_never_unpickled(tmp_path: Path) -> None:
    folder, marker = _sealed_copy(tmp_path), tmp_path / "pwned"
    _plant(folder, marker)
    with pytest.raises(VectorStoreError, match="changed since pywrapai-graph last wrote it"):
        migrate_folder(folder)
    assert not marker.exists()
    assert not (folder / "edge").exists()


def test_a_folder_we_did_not_write_is_refused(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient, models

    folder, marker = tmp_path / "foreign", tmp_path / "pwned"
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", models.VectorParams(size=2, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=1, vector=[1.0, 0.0], payload={})])
    client.close()
    _plant(folder, marker)
    with pytest.raises(VectorStoreError, match="not written by pywrapai-graph"):
        migrate_folder(folder)
    out, err = io.StringIO(), io.StringIO()
    env = {"PYWRAPAI_STORE__BACKEND": "qdrant", "PYWRAPAI_STORE__PATH": str(folder)}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        for key, value in env.items():
            mp.setenv(key, value)
        assert main(["store", "migrate"], out=out, err=err) == 1
    assert "not written by pywrapai-graph" in err.getvalue()
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


def _interrupted_write(folder: Path) -> Path:
    """What a writer of the previous release killed mid-write left: the sealed files copied
    aside, the live ones changed, a journal and a new collection's file added."""
    rollback = folder / ".pywrapai-rollback"
    for name in ("meta.json", "collection/docs/storage.sqlite"):
        (rollback / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / name, rollback / name)
    with sqlite3.connect(folder / "collection" / "docs" / "storage.sqlite") as conn:
        conn.execute("DELETE FROM points")
    conn.close()
    (folder / "collection" / "docs" / "storage.sqlite-journal").write_bytes(b"half")
    (folder / "collection" / "new").mkdir()
    (folder / "collection" / "new" / "storage.sqlite").write_bytes(b"half")
    return rollback


def test_an_interrupted_write_of_the_previous_release_is_undone_first(tmp_path: Path) -> None:
    folder = _sealed_copy(tmp_path)
    _interrupted_write(folder)
    assert migrate_folder(folder)
    store = QdrantVectorStore("docs", location=str(folder))
    try:
        assert len(store) == 30  # as the last seal left it
    finally:
        store.close()
    assert sorted(p.name for p in folder.iterdir()) == [".pywrapai.lock", "edge"]


def test_a_planted_copy_is_not_put_back(tmp_path: Path) -> None:
    """The copy kept to undo a write is checked against the record before it is used."""
    folder, marker = _sealed_copy(tmp_path), tmp_path / "pwned"
    rollback = _interrupted_write(folder)
    _plant(rollback, marker)
    with pytest.raises(VectorStoreError, match="does not match the folder's record"):
        migrate_folder(folder)
    assert not marker.exists()


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
