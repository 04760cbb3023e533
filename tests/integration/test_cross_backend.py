"""Every backend, the same data: the same top hits with the same cosine scores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pywrapai_graph import (
    ChromaVectorStore,
    FAISSVectorStore,
    InMemoryVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import make_chunks

DIM = 32


@pytest.fixture
def backends(tmp_path: Path, pg_url: str, chroma_url: str) -> Iterator[dict[str, BaseVectorStore]]:
    stores: dict[str, BaseVectorStore] = {
        "in_memory": InMemoryVectorStore(),
        "sqlite": SQLiteVectorStore(tmp_path / "s.db"),
        "faiss": FAISSVectorStore(tmp_path / "f.faiss", tmp_path / "f.meta"),
        "chroma": ChromaVectorStore(path=str(tmp_path / "chroma"), collection="cross"),
        "chroma_server": ChromaVectorStore(
            url=chroma_url, collection=f"cross_{tmp_path.name[-20:]}"
        ),
        "pgvector": PGVectorStore(
            pg_url, table_name=f"cross_{abs(hash(tmp_path)) % 10**8}", dimension=DIM
        ),
        "qdrant": QdrantVectorStore("cross", location=str(tmp_path / "qdrant")),
    }
    yield stores
    for store in stores.values():
        store.close()


def test_same_top5_ids_and_scores_on_every_backend(backends: dict[str, BaseVectorStore]) -> None:
    chunks = make_chunks(1000, DIM, seed=11, docs=50)
    for store in backends.values():
        for start in range(0, 1000, 250):
            store.add(chunks[start : start + 250])
    queries = np.random.default_rng(5).standard_normal((20, DIM)).tolist()
    reference = backends["in_memory"]
    for q in queries:
        expected = reference.search(q, k=5)
        for name, store in backends.items():
            got = store.search(q, k=5)
            assert len(got) == 5, name
            for rank, (e, g) in enumerate(zip(expected, got, strict=True)):
                assert g.score == pytest.approx(e.score, abs=1e-3), (name, rank)
                if g.chunk.id != e.chunk.id:  # only a tie may swap two ids
                    assert abs(g.score - e.score) < 1e-5, (name, rank)
            assert len(store) == 1000, name


def test_hnsw_recall_at_10_with_default_parameters(tmp_path: Path, pg_url: str) -> None:
    n, dim, n_queries = 5000, 64, 50
    chunks = make_chunks(n, dim, seed=3)
    exact = InMemoryVectorStore()
    exact.add(chunks)
    hnsw: dict[str, BaseVectorStore] = {
        "chroma": ChromaVectorStore(path=str(tmp_path / "c"), collection="recall"),
        "pgvector": PGVectorStore(
            pg_url, table_name=f"recall_{abs(hash(tmp_path)) % 10**8}", dimension=dim
        ),
    }
    queries = np.random.default_rng(8).standard_normal((n_queries, dim)).tolist()
    truth = [{h.chunk.id for h in exact.search(q, k=10)} for q in queries]
    for name, store in hnsw.items():
        for start in range(0, n, 1000):
            store.add(chunks[start : start + 1000])
        found = sum(
            len({h.chunk.id for h in store.search(q, k=10)} & t)
            for q, t in zip(queries, truth, strict=True)
        )
        recall = found / (10 * n_queries)
        print(f"recall@10 {name}: {recall:.3f}")
        assert recall >= 0.98, (name, recall)
        store.close()
