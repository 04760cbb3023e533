"""FAISSVectorStore: the contract against real FAISS, and its file-safety guarantees."""

from __future__ import annotations

import os
import pickle
import sqlite3
import zlib
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import Chunk, FAISSVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks
from tests.interrupted import Writes, sqlite_open_transaction


def files_in(folder: Path) -> list[str]:
    """The files of a store, but the metadata's WAL companions (there while it is open)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))


class TestFAISSVectorStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return FAISSVectorStore(location / "docs.faiss", location / "docs_meta.pkl")

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Writes
    ) -> AbstractContextManager[None] | None:
        assert isinstance(store, FAISSVectorStore)
        return sqlite_open_transaction(store._meta_path, "chunks", "documents", writes)


def test_pickle_metadata_is_refused_and_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    meta = tmp_path / "docs_meta.pkl"
    meta.write_bytes(pickle.dumps(Exploit()))
    with pytest.raises(VectorStoreError, match="never loaded"):
        FAISSVectorStore(tmp_path / "docs.faiss", meta)
    assert not marker.exists()


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    meta = tmp_path / "other.db"
    sqlite3.connect(meta).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(VectorStoreError, match="not a pywrapai"):
        FAISSVectorStore(tmp_path / "docs.faiss", meta)


def _set_vector(meta: Path, chunk_id: str, blob: bytes, crc: int = 0) -> None:
    """Change one row's vector outside the store (and move the generation, as a write would)."""
    with sqlite3.connect(meta) as conn:
        conn.execute("UPDATE chunks SET vector = ?, crc = ? WHERE id = ?", (blob, crc, chunk_id))
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    conn.close()


def _rows(meta: Path) -> list[list[Any]]:
    with sqlite3.connect(meta) as conn:
        rows = [conn.execute(f"SELECT * FROM {t}").fetchall() for t in ("meta", "chunks")]
    conn.close()
    return rows


def test_a_damaged_vector_is_refused_on_every_call_and_nothing_is_written(tmp_path: Path) -> None:
    from pywrapai_graph.errors import StoreDamagedError

    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(10, 8))
    assert len(store) == 10  # the index is built
    writer = FAISSVectorStore(index, meta)
    writer.add(make_chunks(4, 8, seed=1, prefix="x"))  # rows the open store has not read
    writer.close()
    _set_vector(meta, "x3", b"\x00" * 7)  # cut short
    before = _rows(meta)
    for call in (
        lambda: store.search([1.0] * 8, k=3),
        lambda: len(store),
        lambda: store.add(make_chunks(2, 8, seed=5, prefix="x")),
        lambda: store.search([1.0] * 8, k=3),  # again: never an empty or partial answer
    ):
        with pytest.raises(StoreDamagedError, match="damaged"):
            call()
    store.close()
    assert _rows(meta) == before
    fresh = FAISSVectorStore(index, meta)
    with pytest.raises(StoreDamagedError, match="damaged"):
        fresh.search([1.0] * 8, k=3)
    fresh.close()
    repaired = np.ones(8, "<f4").tobytes()
    _set_vector(meta, "x3", repaired, zlib.crc32(repaired))  # repaired: served again
    fresh = FAISSVectorStore(index, meta)
    assert len(fresh) == 14 and fresh.search([1.0] * 8, k=1)[0].chunk.id == "x3"
    fresh.close()


def test_a_store_of_the_older_layout_is_refused_with_what_to_do(tmp_path: Path) -> None:
    meta = tmp_path / "a.meta"
    with sqlite3.connect(meta) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('format', 'pywrapai-faiss-meta/1')")
    conn.close()
    with pytest.raises(VectorStoreError, match=r"older layout.*Re-create the store"):
        FAISSVectorStore(tmp_path / "a.faiss", meta)


def test_dimension_given_and_conflicting(tmp_path: Path) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=8)
    with pytest.raises(ValueError, match="expects 8"):
        store.add(make_chunks(2, 4))
    store.add(make_chunks(2, 8))
    store.close()
    with pytest.raises(ValueError, match="dimension"):
        FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=16)


def test_one_file_and_its_lock_and_no_index_file(tmp_path: Path) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", threads=1)
    for i in range(3):
        store.add(make_chunks(5, 8, seed=i, prefix=f"b{i}-"))
    store.delete(["b0-1"])
    names = ["a.faiss.lock", "a.meta"]  # the vectors live in the metadata file
    assert files_in(tmp_path) == names
    assert len(store) == 14
    store.compact()
    assert files_in(tmp_path) == names and len(store) == 14
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # SQLite's WAL files too


def test_failed_write_leaves_the_file_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=8)
    store.add(make_chunks(4, 8))
    real = FAISSVectorStore._set_meta

    def broken(self: FAISSVectorStore, key: str, value: str) -> None:
        if key == "generation":  # after the rows and the index took the new chunks
            raise OSError("disk full")
        real(self, key, value)

    monkeypatch.setattr(FAISSVectorStore, "_set_meta", broken)
    with pytest.raises(OSError, match="disk full"):
        store.add(make_chunks(3, 8, seed=2, prefix="new"))
    monkeypatch.undo()
    assert len(store) == 4
    assert {h.chunk.id for h in store.search([1.0] * 8, k=10)} == {f"c{i}" for i in range(4)}
    assert store.dimension == 8
    store.close()
    reopened = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta")
    assert len(reopened) == 4
    reopened.add(make_chunks(3, 8, seed=2, prefix="new"))  # and it writes again
    assert len(reopened) == 7
    reopened.close()


# ---------------------------------------------------------------------------- crash windows
def test_a_write_that_dies_before_its_commit_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(4, 8))
    real = FAISSVectorStore._set_meta

    def die(self: FAISSVectorStore, key: str, value: str) -> None:
        if key == "generation":
            raise KeyboardInterrupt  # the process dies with its rows written, uncommitted
        real(self, key, value)

    monkeypatch.setattr(FAISSVectorStore, "_set_meta", die)
    chunks = [Chunk(c.text, "d", c.metadata, c.id, c.embedding) for c in make_chunks(3, 8)]
    manifest = DocumentManifest("d", "h", 3, EmbedderIdentity("t", "m", 8))
    with pytest.raises(KeyboardInterrupt):
        store.replace_document(manifest, chunks)
    monkeypatch.undo()
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 4 and reopened.document_manifest("d") is None
    reopened.close()
    store.close()


def test_a_second_writer_waits_then_gets_a_clear_error(tmp_path: Path) -> None:
    from pywrapai_graph.adapters.vectorstores.kit.local_files import WriteLock
    from pywrapai_graph.errors import StoreBusyError

    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta, lock_timeout=0.2)
    store.add(make_chunks(2, 8))
    with (
        WriteLock(tmp_path / "a.faiss.lock", timeout=1.0),
        pytest.raises(StoreBusyError, match="another process is writing"),
    ):
        store.add(make_chunks(2, 8, seed=1, prefix="x"))
    store.add(make_chunks(2, 8, seed=1, prefix="x"))  # free again
    assert len(store) == 4
    store.close()


def test_another_process_write_is_seen_by_an_open_store(tmp_path: Path) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    reader = FAISSVectorStore(index, meta)
    writer = FAISSVectorStore(index, meta)
    chunks = make_chunks(5, 8)
    writer.add(chunks)
    assert len(reader) == 5
    assert reader.search(chunks[3].embedding or [], k=1)[0].chunk.id == chunks[3].id
    reader.add(make_chunks(2, 8, seed=9, prefix="r"))  # builds on the writer's state
    assert len(writer) == 7
    reader.close()
    writer.close()


@pytest.mark.parametrize("existing", [200, 5_000])
def test_adding_one_chunk_writes_a_few_pages_whatever_the_store_holds(
    tmp_path: Path, existing: int
) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    wal = tmp_path / "a.meta-wal"
    dim = 64
    store = FAISSVectorStore(index, meta)
    for start in range(0, existing, 1000):
        store.add(make_chunks(min(1000, existing - start), dim, seed=start, prefix=f"b{start}-"))
    (page,) = store._meta.execute("PRAGMA page_size").fetchone()
    for i in range(3):
        before = wal.stat().st_size
        store._meta.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL: what the add writes
        store.add(make_chunks(1, dim, seed=10_000 + i, prefix=f"one{i}-"))
        assert wal.stat().st_size <= 16 * (page + 24) or before == 0  # a few pages, not the store
    store.delete([f"b0-{i}" for i in range(100)])
    left = existing + 3 - 100
    store.close()
    size = meta.stat().st_size
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == left
    reopened.compact()
    assert meta.stat().st_size < size  # the deleted rows' room given back
    assert len(reopened) == left
    reopened.close()


_Kept = dict[str, tuple[str, dict[str, object], np.ndarray]]
_FILTERS: list[dict[str, object]] = [
    {"v": 1},
    {"v": True},
    {"v": 1.0},
    {"v": None},
    {"v": ["a", 1]},
    {"v": 0, "extra": 1},
    {"doc": "d1"},
    {"missing": 1},
    {"extra": 2},
]


def _brute_force(kept: _Kept, q: np.ndarray, flt: dict[str, object], k: int) -> list[str]:
    from pywrapai_graph.ports.store_inputs import matches_filter

    q = q / np.linalg.norm(q)
    scored = [(float(v @ q), cid) for cid, (_, m, v) in kept.items() if matches_filter(m, flt)]
    return [cid for _, cid in sorted(scored, reverse=True)[:k]]


def _check_against_brute_force(
    store: FAISSVectorStore, kept: _Kept, rng: np.random.Generator
) -> None:
    assert len(store) == len(kept)
    for flt in _FILTERS:
        q = rng.standard_normal(8).astype(np.float32)
        for k in (1, 5, 1000):
            got = store.search(q.tolist(), k=k, filter=flt)
            assert [h.chunk.id for h in got] == _brute_force(kept, q, flt, k), (flt, k)
        assert store.count(flt) == len(_brute_force(kept, q, flt, 10**6))


def test_deletes_and_replacements_survive_reopen_and_compaction(tmp_path: Path) -> None:
    from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    identity = EmbedderIdentity("t", "m", 8)
    rng = np.random.default_rng(3)
    values: list[object] = [1, True, 1.0, None, "x", ["a", 1], 0, False]
    kept: _Kept = {}

    def write_doc(store: FAISSVectorStore, doc: str, n: int, version: int) -> None:
        chunks = []
        for i in range(n):
            metadata = {"v": values[int(rng.integers(len(values)))], "doc": doc}
            if i % 3 == 0:
                metadata["extra"] = version
            chunks.append(Chunk(f"{doc} {i}", doc, metadata, f"{doc}-{version}-{i}"))
        vectors = rng.standard_normal((n, 8)).astype(np.float32)
        manifest = DocumentManifest(doc, f"h{version}", n, identity)
        store.replace_document_vectors(manifest, chunks, vectors.data)
        for key in [k for k, c in kept.items() if c[0] == doc]:
            del kept[key]
        for c, v in zip(chunks, vectors, strict=True):
            kept[c.id] = (doc, dict(c.metadata), v / np.linalg.norm(v))

    store = FAISSVectorStore(index, meta)
    for d in range(6):
        write_doc(store, f"d{d}", 20 + d, 1)
    _check_against_brute_force(store, kept, rng)
    write_doc(store, "d1", 7, 2)  # replaced: new rows in the log, old ones deleted
    write_doc(store, "d6", 9, 1)
    store.delete([k for k in kept if k.endswith("-3")][:4])
    for key in [k for k in kept if k.endswith("-3")][:4]:
        del kept[key]
    store.delete_by_doc("d4")
    for key in [k for k, c in kept.items() if c[0] == "d4"]:
        del kept[key]
    _check_against_brute_force(store, kept, rng)
    store.close()
    store = FAISSVectorStore(index, meta)
    _check_against_brute_force(
        store, kept, rng
    )  # the files, read back: deleted rows dropped, columns rebuilt
    write_doc(store, "d2", 5, 3)
    _check_against_brute_force(store, kept, rng)
    store.compact()
    _check_against_brute_force(store, kept, rng)
    store.close()
    store = FAISSVectorStore(index, meta)
    _check_against_brute_force(store, kept, rng)
    store.clear()
    assert len(store) == 0 and store.search([1.0] * 8, k=3, filter={"v": 1}) == []
    store.close()


def test_an_open_store_reads_only_the_rows_another_writer_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss import files

    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    writer = FAISSVectorStore(index, meta)
    writer.add(make_chunks(50, 8))
    reader = FAISSVectorStore(index, meta)
    assert reader.count({"parity": "even"}) == 25  # builds a column, to be kept right
    read: list[int] = []
    real = files._vectors_of

    def counting(rows: list[object], dim: int, where: str) -> object:
        read.append(len(rows))
        return real(rows, dim, where)

    monkeypatch.setattr(files, "_vectors_of", counting)
    new = make_chunks(5, 8, seed=3, prefix="n")
    writer.add(new)
    writer.delete(["c0", "c1"])
    assert reader.search(new[2].embedding or [], k=1)[0].chunk.id == "n2"
    assert len(reader) == 53
    assert reader.count({"parity": "even"}) == 24 + 3
    assert read == [5]  # only the new rows' vectors
    reader.add(make_chunks(2, 8, seed=4, prefix="r"))  # the reader writes on top of it
    assert len(writer) == 55 and read == [5, 2]
    writer.compact()
    assert len(reader) == 55 and read == [5, 2]  # a compaction moves no row
    reader.close()
    writer.close()
