"""FAISSVectorStore: the contract against real FAISS, and its file-safety guarantees."""

from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path

import pytest

from pywrapai_graph import FAISSVectorStore
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.hostile_inputs import HostileInputContract
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks


class TestFAISSVectorStore(VectorStoreContract, HostileInputContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return FAISSVectorStore(location / "docs.faiss", location / "docs_meta.pkl")


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


def test_tampered_or_mismatched_files_are_detected(tmp_path: Path) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(10, 8))
    store.close()
    # another store's index (or a crash between the two writes) leaves them disagreeing
    other = FAISSVectorStore(tmp_path / "b.faiss", tmp_path / "b.meta")
    other.add(make_chunks(3, 8, seed=4))
    other.close()
    os.replace(tmp_path / "b.faiss", index)
    with pytest.raises(VectorStoreError, match="disagree"):
        FAISSVectorStore(index, meta)


def test_one_file_without_the_other_is_an_error(tmp_path: Path) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(3, 8))
    store.close()
    index.unlink()
    with pytest.raises(VectorStoreError, match="missing"):
        FAISSVectorStore(index, meta)


def test_dimension_given_and_conflicting(tmp_path: Path) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=8)
    with pytest.raises(ValueError, match="expects 8"):
        store.add(make_chunks(2, 4))
    store.add(make_chunks(2, 8))
    store.close()
    with pytest.raises(ValueError, match="dimension"):
        FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=16)


def test_no_temp_files_left_behind(tmp_path: Path) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", threads=1)
    for i in range(3):
        store.add(make_chunks(5, 8, seed=i, prefix=f"b{i}-"))
    store.delete(["b0-1"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.faiss", "a.faiss.lock", "a.meta"]
    assert len(store) == 14


def test_failed_write_leaves_files_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=8)
    store.add(make_chunks(4, 8))
    import faiss

    def broken_write(index: object, path: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(faiss, "write_index", broken_write)
    with pytest.raises(VectorStoreError, match="disk full"):
        store.add(make_chunks(3, 8, seed=2, prefix="new"))
    monkeypatch.undo()
    assert len(store) == 4
    assert store.dimension == 8
    store.close()
    reopened = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta")
    assert len(reopened) == 4
    reopened.close()


# ---------------------------------------------------------------------------- crash windows
def test_a_commit_whose_rename_was_cut_short_is_finished_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(4, 8))

    def crash(src: object, dst: object) -> None:
        raise KeyboardInterrupt  # the process dies right after the metadata committed

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.add(make_chunks(3, 8, seed=2, prefix="new"))
    monkeypatch.undo()
    store.close()
    assert (tmp_path / "a.faiss.pending").exists()
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 7  # the committed write, rolled forward
    assert not (tmp_path / "a.faiss.pending").exists()
    reopened.close()


def test_an_uncommitted_pending_file_and_old_temp_files_are_removed(tmp_path: Path) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(4, 8))
    store.close()
    (tmp_path / "a.faiss.pending").write_bytes(b"half a write")
    (tmp_path / ".faiss-k2j3.tmp").write_bytes(b"left by an older version")
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.faiss", "a.faiss.lock", "a.meta"]
    reopened.close()


def test_a_second_writer_waits_then_gets_a_clear_error(tmp_path: Path) -> None:
    from pywrapai_graph.adapters.vectorstores._local_files import WriteLock
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
