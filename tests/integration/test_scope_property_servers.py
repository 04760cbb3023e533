"""Scoped views stay inside their scope on PostgreSQL, Chroma (server and embedded)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph import ChromaVectorStore, PGVectorStore
from pywrapai_graph.ports import BaseVectorStore
from tests.scope_properties import DIM, check_scoped_reads, check_scoped_writes, fill_corpus


def _store(kind: str, request: pytest.FixtureRequest, path: Path) -> BaseVectorStore:
    name = f"scope_{uuid.uuid4().hex[:12]}"
    if kind == "pgvector":
        return PGVectorStore(request.getfixturevalue("pg_url"), table_name=name, dimension=DIM)
    if kind == "chroma-server":
        return ChromaVectorStore(url=request.getfixturevalue("chroma_url"), collection=name)
    return ChromaVectorStore(path=str(path / "chroma"), collection=name)


@pytest.fixture(scope="module", params=["chroma-embedded", "chroma-server", "pgvector"])
def filled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BaseVectorStore]:
    store = _store(request.param, request, tmp_path_factory.mktemp(request.param))
    fill_corpus(store)
    yield store
    store.close()


def test_a_scoped_read_never_leaves_its_scope(filled: BaseVectorStore) -> None:
    check_scoped_reads(filled, examples=30)


def test_a_scoped_write_never_leaves_its_scope(filled: BaseVectorStore) -> None:
    check_scoped_writes(filled, examples=15)
