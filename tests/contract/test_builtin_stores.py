"""The vector-store contract run against the built-in backends."""

from __future__ import annotations

from pathlib import Path

from pywrapai_graph import InMemoryVectorStore, SQLiteVectorStore
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract


class TestInMemoryVectorStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return InMemoryVectorStore()


class TestSQLiteVectorStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return SQLiteVectorStore(location / "store.db", table_name="contract_chunks")
