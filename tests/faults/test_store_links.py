"""A symbolic link planted where a store keeps a file is refused, never followed.

Each test plants a link to a "victim" file outside the store (a file the service could
write) at one of the names a store opens, opens the store and writes to it: the store raises
a VectorStoreError naming the path, and the victim's bytes are unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore

VICTIM = b"precious bytes the service may write, never a store's\n" * 20


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_bytes(VICTIM)
    return path


def _chunk(i: int = 0) -> Chunk:
    vector = np.zeros(4, np.float32)
    vector[i % 4] = 1.0
    return Chunk(id=f"c{i}", doc_id="d", text=f"text {i}", embedding=vector.tolist())


def _use(make: Callable[[], BaseVectorStore]) -> None:
    store = make()
    try:
        store.add([_chunk(0), _chunk(1)])
    finally:
        store.close()


def _assert_refused(make: Callable[[], BaseVectorStore], link: Path, victim: Path) -> None:
    with pytest.raises(VectorStoreError, match="symbolic link") as info:
        _use(make)
    assert link.name in str(info.value)  # the path, or the folder and the name in it
    assert victim.read_bytes() == VICTIM
    assert link.is_symlink()


@pytest.mark.parametrize("suffix", [".lock"])
def test_faiss_refuses_a_link_beside_its_index(suffix: str, tmp_path: Path, victim: Path) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore

    index = tmp_path / "store" / "index.faiss"
    index.parent.mkdir()
    link = index.with_name(index.name + suffix)
    link.symlink_to(victim)
    _assert_refused(
        lambda: FAISSVectorStore(index, tmp_path / "store" / "meta.db", dimension=4), link, victim
    )


def test_faiss_lock_link_planted_after_the_first_write_is_refused(
    tmp_path: Path, victim: Path
) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore

    index, meta = tmp_path / "index.faiss", tmp_path / "meta.db"
    _use(lambda: FAISSVectorStore(index, meta, dimension=4))
    lock = index.with_name("index.faiss.lock")
    lock.unlink()
    lock.symlink_to(victim)
    _assert_refused(lambda: FAISSVectorStore(index, meta, dimension=4), lock, victim)


@pytest.mark.parametrize("name", ["meta.db", "meta.db-wal", "meta.db-journal", "index.faiss"])
def test_faiss_refuses_a_link_at_its_metadata_or_index(
    name: str, tmp_path: Path, victim: Path
) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore

    link = tmp_path / name
    link.symlink_to(victim)
    _assert_refused(
        lambda: FAISSVectorStore(tmp_path / "index.faiss", tmp_path / "meta.db", dimension=4),
        link,
        victim,
    )


@pytest.mark.parametrize("name", ["store.db", "store.db-wal", "store.db-shm"])
def test_sqlite_refuses_a_link_at_its_database_files(
    name: str, tmp_path: Path, victim: Path
) -> None:
    from pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore

    link = tmp_path / name
    link.symlink_to(victim)
    _assert_refused(lambda: SQLiteVectorStore(tmp_path / "store.db"), link, victim)


@pytest.mark.parametrize("name", ["pywrapai.open.lock", "chroma.sqlite3"])
def test_embedded_chroma_refuses_a_link_in_its_folder(
    name: str, tmp_path: Path, victim: Path
) -> None:
    from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore

    folder = tmp_path / "chroma"
    folder.mkdir()
    link = folder / name
    link.symlink_to(victim)
    _assert_refused(lambda: ChromaVectorStore(path=folder), link, victim)


@pytest.mark.parametrize("name", [".pywrapai.lock", "edge"])
def test_a_qdrant_folder_refuses_a_link_in_it(name: str, tmp_path: Path, victim: Path) -> None:
    from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore

    folder = tmp_path / "qdrant"
    folder.mkdir()
    link = folder / name
    link.symlink_to(victim)
    _assert_refused(lambda: QdrantVectorStore("docs", path=folder), link, victim)


def test_a_fifo_where_the_faiss_lock_goes_is_refused_without_blocking(tmp_path: Path) -> None:
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore

    os.mkfifo(tmp_path / "index.faiss.lock")
    with pytest.raises(VectorStoreError, match="not a regular file"):
        _use(lambda: FAISSVectorStore(tmp_path / "index.faiss", tmp_path / "meta.db", dimension=4))
