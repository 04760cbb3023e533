"""Scoped views stay inside their scope on the embedded stores (see tests/scope_properties)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pywrapai_graph import (
    FAISSVectorStore,
    InMemoryVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.ports import BaseVectorStore
from tests.scope_properties import check_scoped_reads, check_scoped_writes, fill_corpus

STORES: dict[str, Callable[[Path], BaseVectorStore]] = {
    "memory": lambda path: InMemoryVectorStore(),
    "sqlite": lambda path: SQLiteVectorStore(path / "store.db"),
    "faiss": lambda path: FAISSVectorStore(path / "docs.faiss", path / "docs_meta.pkl"),
    "qdrant-local": lambda path: QdrantVectorStore("scope", location=str(path / "qdrant")),
}


@pytest.fixture(scope="module", params=sorted(STORES))
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BaseVectorStore]:
    store = STORES[request.param](tmp_path_factory.mktemp(request.param))
    fill_corpus(store)
    yield store
    store.close()


def test_a_scoped_read_never_leaves_its_scope(filled: BaseVectorStore) -> None:
    check_scoped_reads(filled, examples=40)


def test_a_scoped_write_never_leaves_its_scope(filled: BaseVectorStore) -> None:
    check_scoped_writes(filled, examples=20)
