"""A full disk: StorageFullError naming the path, and the store in memory equals the store on disk.

The small filesystem is a tmpfs of a few MB mounted for the test (root only: CI runs as root);
elsewhere the tests skip, saying why. Stores that write documents through versions are
filled with whole documents (``replace_document``): after the error each one is complete or
absent, in the process and after a reopen.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph import (
    ChromaVectorStore,
    FAISSVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.errors import StorageFullError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.faults.small_disk import (
    DIM,
    ext4,
    fill_then_free,
    tmpfs,
)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB filesystem of its own."""
    with tmpfs(tmp_path / "small", "size=2m") as mount:
        yield mount


def fill_until_full(store: BaseVectorStore) -> tuple[StorageFullError, int]:
    """Add batches until the disk is full; returns the error and the chunks added before."""
    added = 0
    for i in range(200):
        batch = make_chunks(200, DIM, seed=i, prefix=f"b{i}-")
        try:
            store.add(batch)
        except StorageFullError as exc:
            return exc, added
        added += len(batch)
    raise AssertionError("the disk never filled up")


def visible_ids(store: BaseVectorStore) -> set[str]:
    return {h.chunk.id for h in store.search([1.0] * DIM, k=100_000)}


def test_sqlite_full_disk(small_fs: Path) -> None:
    path = small_fs / "store.db"
    ballast = small_fs / "ballast"
    # freed later: room for the WAL frames of a delete and an add, the text tables' included
    ballast.write_bytes(b"\0" * 700_000)
    store = SQLiteVectorStore(path)
    error, added = fill_until_full(store)
    assert isinstance(error, VectorStoreError)
    assert error.path == str(path)
    assert str(path) in str(error) and "full" in str(error)
    assert "rollback" not in str(error)
    in_memory = visible_ids(store)
    assert len(store) == added == len(in_memory)  # nothing of the failed batch, nowhere
    reopened = SQLiteVectorStore(path)
    assert visible_ids(reopened) == in_memory
    reopened.close()
    ballast.unlink()  # space freed: the same store writes again
    store.delete([f"b0-{i}" for i in range(200)])
    store.add(make_chunks(5, DIM, seed=999, prefix="after-"))
    assert len(store) == added - 200 + 5
    store.close()


def test_faiss_full_disk(small_fs: Path) -> None:
    index, meta = small_fs / "store.faiss", small_fs / "store.meta"
    store = FAISSVectorStore(index, meta)
    error, added = fill_until_full(store)
    assert error.path in (str(index), str(meta))
    assert "full" in str(error)
    in_memory = visible_ids(store)
    assert len(store) == added == len(in_memory)
    assert not (small_fs / "store.faiss.pending").exists()
    reopened = FAISSVectorStore(index, meta)
    assert visible_ids(reopened) == in_memory
    reopened.close()
    store.close()


def test_ingest_on_a_full_disk_says_so(small_fs: Path, tmp_path: Path) -> None:
    import io

    from pywrapai_graph.composition.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(40):
        words = " ".join(uuid.uuid5(uuid.NAMESPACE_OID, f"{i}-{j}").hex for j in range(400))
        (docs / f"d{i}.txt").write_text(words)
    config = tmp_path / "pywrapai.yaml"
    config.write_text(f"store:\n  backend: sqlite\n  path: {small_fs / 'kb.db'}\n")
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config), "ingest", str(docs)], out=out, err=err)
    assert code == 1
    assert "is full" in err.getvalue() and str(small_fs / "kb.db") in err.getvalue()
    stored = out.getvalue().count("ingested ")
    store = SQLiteVectorStore(small_fs / "kb.db")
    assert len({h.chunk.doc_id for h in store.search([1.0] * 384, k=100_000)}) == stored
    store.close()


def test_qdrant_folder_full_disk(tmp_path: Path) -> None:
    with ext4(tmp_path / "small", 48) as small:
        folder, ballast = small / "qdrant", small / "ballast"
        ballast.write_bytes(b"\1" * 24_000_000)
        error, written, visible = fill_then_free(
            lambda: QdrantVectorStore("docs", location=str(folder)), ballast.unlink
        )
    assert error.path == str(folder) and "full" in str(error)
    # refused before the engine wrote (a full disk under its mapped files would end the
    # process): every document written before is there, in the process and reopened
    assert visible == written and len(written) >= 3


def test_chroma_embedded_full_disk(tmp_path: Path) -> None:
    from chromadb.api.shared_system_client import SharedSystemClient

    with tmpfs(tmp_path / "small", "size=8m") as small:
        folder, ballast = small / "chroma", small / "ballast"
        ballast.write_bytes(b"\0" * 1_500_000)
        # chromadb caches one client per folder in the process: a reopen must forget it
        error, _, _ = fill_then_free(
            lambda: ChromaVectorStore(path=folder),
            ballast.unlink,
            SharedSystemClient.clear_system_cache,
        )
        assert error.path == str(folder) and "full" in str(error)
