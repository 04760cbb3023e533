"""FAISSVectorStore: the contract against real FAISS, and its file-safety guarantees."""

from __future__ import annotations

import os
import pickle
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pytest

from pywrapai_graph import Chunk, FAISSVectorStore
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
    names = ["a.faiss", "a.faiss.lock", "a.faiss.log", "a.meta"]  # base, lock, segment log, meta
    assert files_in(tmp_path) == names
    assert len(store) == 14
    store.compact()
    assert files_in(tmp_path) == names
    assert (tmp_path / "a.faiss.log").stat().st_size == 0
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == names  # SQLite's WAL files too


@pytest.mark.parametrize("write", ["append", "compact"])
def test_failed_write_leaves_files_and_memory_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    store = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta", dimension=8)
    store.add(make_chunks(4, 8))
    import faiss

    def broken_write(*args: object) -> None:
        raise OSError("disk full")

    if write == "compact":  # the whole index is written
        monkeypatch.setattr(faiss, "write_index", broken_write)
        monkeypatch.setattr(FAISSVectorStore, "_should_compact", lambda *a: True)
    else:  # a segment is appended to the log
        monkeypatch.setattr(os, "fsync", broken_write)
    with pytest.raises(VectorStoreError, match="disk full"):
        store.add(make_chunks(3, 8, seed=2, prefix="new"))
    monkeypatch.undo()
    assert len(store) == 4
    assert store.dimension == 8
    assert (tmp_path / "a.faiss.log").stat().st_size == 0 if write == "append" else True
    store.close()
    reopened = FAISSVectorStore(tmp_path / "a.faiss", tmp_path / "a.meta")
    assert len(reopened) == 4
    reopened.add(make_chunks(3, 8, seed=2, prefix="new"))  # and it writes again
    assert len(reopened) == 7
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

    store.add(make_chunks(3, 8, seed=2, prefix="new"))  # a segment in the log
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.compact()  # writes the whole index: pending, commit, rename
    monkeypatch.undo()
    store.close()
    assert (tmp_path / "a.faiss.pending").exists()
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 7  # the committed write, rolled forward
    assert not (tmp_path / "a.faiss.pending").exists()
    assert (tmp_path / "a.faiss.log").stat().st_size == 0  # its segment is in the base now
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
    assert files_in(tmp_path) == ["a.faiss", "a.faiss.lock", "a.meta"]
    reopened.close()


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


def test_an_append_cut_short_before_its_commit_is_cut_off_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss.segment_log import SegmentLog

    index, meta, log = tmp_path / "a.faiss", tmp_path / "a.meta", tmp_path / "a.faiss.log"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(4, 8))
    store.add(make_chunks(2, 8, seed=1, prefix="x"))
    committed = log.stat().st_size
    real_append = SegmentLog.append

    def append_then_die(self: SegmentLog, offset: int, data: bytes) -> object:
        real_append(self, offset, data)
        raise KeyboardInterrupt  # the process dies after the append, before the commit

    monkeypatch.setattr(SegmentLog, "append", append_then_die)
    with pytest.raises(KeyboardInterrupt):
        store.add(make_chunks(3, 8, seed=2, prefix="new"))
    monkeypatch.undo()
    store.close()
    with log.open("ab") as f:  # and a torn write beyond it
        f.write(b"\x00" * 100)
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 6
    assert log.stat().st_size == committed
    reopened.add(make_chunks(3, 8, seed=2, prefix="new"))
    reopened.close()
    again = FAISSVectorStore(index, meta)
    assert len(again) == 9
    again.close()


def test_a_tampered_or_truncated_segment_is_refused(tmp_path: Path) -> None:
    index, meta, log = tmp_path / "a.faiss", tmp_path / "a.meta", tmp_path / "a.faiss.log"
    store = FAISSVectorStore(index, meta)
    store.add(make_chunks(4, 8))
    store.add(make_chunks(2, 8, seed=1, prefix="x"))
    store.close()
    original = log.read_bytes()
    data = bytearray(original)
    data[-3] ^= 0x40  # one vector value changed
    log.write_bytes(bytes(data))
    with pytest.raises(VectorStoreError, match="disagree"):
        FAISSVectorStore(index, meta)
    log.write_bytes(original[:-10])
    with pytest.raises(VectorStoreError, match="shorter"):
        FAISSVectorStore(index, meta)
    log.unlink()
    with pytest.raises(VectorStoreError, match="missing"):
        FAISSVectorStore(index, meta)
    log.write_bytes(original)
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 6
    reopened.close()


def _file_state(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


@pytest.mark.parametrize("existing", [200, 5_000])
def test_adding_one_chunk_appends_a_few_bytes_and_leaves_the_base_alone(
    tmp_path: Path, existing: int
) -> None:
    index, meta, log = tmp_path / "a.faiss", tmp_path / "a.meta", tmp_path / "a.faiss.log"
    dim = 64
    store = FAISSVectorStore(index, meta)
    for start in range(0, existing, 1000):
        store.add(make_chunks(min(1000, existing - start), dim, seed=start, prefix=f"b{start}-"))
    base, log_size = _file_state(index), log.stat().st_size if log.exists() else 0
    for i in range(3):
        store.add(make_chunks(1, dim, seed=10_000 + i, prefix=f"one{i}-"))
        grown = log.stat().st_size - log_size
        assert grown <= 64 + 12 * dim  # header + label + vector: O(1), whatever the store holds
        log_size += grown
        assert _file_state(index) == base  # the base was not rewritten (same inode, mtime)
    store.delete(["one0-0"])  # deletes write nothing to the index files
    store.delete([f"b0-{i}" for i in range(100)])
    assert log.stat().st_size == log_size and _file_state(index) == base
    left = existing + 3 - 1 - 100
    assert len(store) == left
    store.close()
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == left
    reopened.compact()
    assert log.stat().st_size == 0
    # the deleted rows are gone from disk too
    assert index.stat().st_size <= base[2] + log_size - 101 * 4 * dim
    assert len(reopened) == left
    reopened.close()


def test_compaction_happens_on_its_own_when_the_log_outgrows_the_base(tmp_path: Path) -> None:
    index, meta, log = tmp_path / "a.faiss", tmp_path / "a.meta", tmp_path / "a.faiss.log"
    store = FAISSVectorStore(index, meta, compact_bytes=0)
    store.add(make_chunks(10, 8))  # the first write makes the base
    sizes = []
    for i in range(12):
        store.add(make_chunks(3, 8, seed=i + 1, prefix=f"x{i}-"))
        sizes.append(log.stat().st_size)
        assert log.stat().st_size <= index.stat().st_size + 200
    assert 0 in sizes  # folded into the base at least once
    assert sizes[-1] > 0 or len(set(sizes)) > 1
    store.close()
    reopened = FAISSVectorStore(index, meta)
    assert len(reopened) == 10 + 36
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


def test_an_open_store_reads_only_what_another_writer_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pywrapai_graph.adapters.vectorstores.kit.local_files import file_sha256

    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    writer = FAISSVectorStore(index, meta)
    writer.add(make_chunks(50, 8))
    reader = FAISSVectorStore(index, meta)
    assert reader.count({"parity": "even"}) == 25  # builds a column, to be kept right
    hashed: list[object] = []

    def counting(path: Path) -> str:
        hashed.append(path)
        return file_sha256(path)

    monkeypatch.setattr("pywrapai_graph.adapters.vectorstores.faiss.files._sha256", counting)
    new = make_chunks(5, 8, seed=3, prefix="n")
    writer.add(new)
    writer.delete(["c0", "c1"])
    assert reader.search(new[2].embedding or [], k=1)[0].chunk.id == "n2"
    assert len(reader) == 53
    assert reader.count({"parity": "even"}) == 24 + 3
    assert hashed == []  # the base was neither re-read nor re-hashed: only the new segment
    reader.add(make_chunks(2, 8, seed=4, prefix="r"))  # the reader writes on top of it
    assert len(writer) == 55 and hashed == []
    writer.compact()
    assert len(reader) == 55
    assert hashed  # a new base: read again, and verified
    reader.close()
    writer.close()
