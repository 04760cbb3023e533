"""The seventh store: its contract subclass, and the backend table making it configurable."""

from __future__ import annotations

from pathlib import Path

from pywrapai_graph.composition.backends import register_backend
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts import VectorStoreContract
from tests.fixtures.dict_store import BACKEND, DictVectorStore


class TestDictVectorStore(VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return DictVectorStore()


def test_one_table_row_makes_the_store_configurable() -> None:
    register_backend(BACKEND)
    container = build_container({"store": {"backend": "dict"}})
    store = container.vector_store()
    assert isinstance(store, DictVectorStore)
    assert container.retriever().store is store
