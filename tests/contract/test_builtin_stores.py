"""The vector-store contract run against the built-in backends."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from pywrapai_graph import InMemoryVectorStore, SQLiteVectorStore
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract
from tests.interrupted import Writes, sqlite_open_transaction


class TestInMemoryVectorStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return InMemoryVectorStore()


class TestSQLiteVectorStore(VectorStoreContract):
    lexical_fixed_bm25 = True  # FTS5's bm25(): k1 1.2, b 0.75

    def new_store(self, location: Path) -> BaseVectorStore:
        return SQLiteVectorStore(location / "store.db", table_name="contract_chunks")

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Writes
    ) -> AbstractContextManager[None] | None:
        assert isinstance(store, SQLiteVectorStore)
        return sqlite_open_transaction(
            store._path, '"contract_chunks"', '"contract_chunks__docs"', writes
        )


class SyncOnlyStore(BaseVectorStore):
    """A user's store written with sync methods only: its async side comes from the base."""

    def __init__(self) -> None:
        self._inner = InMemoryVectorStore()

    def add(self, chunks: Sequence[Chunk]) -> None:
        self._inner.add(chunks)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return self._inner.search(query_vector, k, filter)

    def delete(self, ids: Sequence[str]) -> int:
        return self._inner.delete(ids)

    def delete_by_doc(self, doc_id: str) -> int:
        return self._inner.delete_by_doc(doc_id)

    def clear(self) -> None:
        self._inner.clear()

    def __len__(self) -> int:
        return len(self._inner)


class TestSyncOnlyStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return SyncOnlyStore()
