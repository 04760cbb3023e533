"""QdrantVectorStore in local mode (in-process engine): the contract and Qdrant specifics."""

from __future__ import annotations

import gc
import uuid
from pathlib import Path

import pytest

from pywrapai_graph import QdrantVectorStore
from pywrapai_graph.errors import ConfigurationError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks


class TestQdrantLocalPath(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore("contract", location=str(location / "qdrant"))


class TestQdrantInMemory(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore("contract", location=":memory:")


# qdrant-client leaks the lock file handle of the client that failed to open: not ours.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_local_lock_released_by_close(tmp_path: Path) -> None:
    path = str(tmp_path / "qdrant_data")
    store1 = QdrantVectorStore("docs", location=path)
    store1.add(make_chunks(5, 8))
    with pytest.raises(VectorStoreError, match="close"):
        QdrantVectorStore("docs", location=path)
    gc.collect()  # collect the leaked handle here, under this test's warning filter
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
    with pytest.raises(ValueError, match="str, int, float or bool"):
        store.search([1.0] * 8, k=1, filter={"parity": ["even"]})


def test_unreachable_server_is_a_clear_error_without_the_key() -> None:
    with pytest.raises(
        VectorStoreError, match=r"Qdrant at 'https://127\.0\.0\.1:1' failed"
    ) as info:
        QdrantVectorStore("docs", url="https://127.0.0.1:1", api_key="qdrant-SECRET")
    assert "qdrant-SECRET" not in str(info.value)
