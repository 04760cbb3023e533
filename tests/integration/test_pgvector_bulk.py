"""pgvector bulk loading: binary COPY, and the HNSW index built once after a load into an
empty table (against the embedded PostgreSQL server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import Chunk, Chunker, Document, Embedder, PGVectorStore
from pywrapai_graph.application.ingest_documents import IngestDocuments
from tests.integration.test_server_stores import name_for

pytestmark = pytest.mark.integration


def indexes(store: PGVectorStore) -> set[str]:
    def work(cur: Any) -> set[str]:
        cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", (store._table,))
        return {r[0] for r in cur.fetchall()}

    return store._run(work)


def chunks(n: int, dim: int, seed: int, text: str = "t") -> list[Chunk]:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return [
        Chunk(f"{text} ünï {i} \u2603", f"d{i % 9}", {"n": i, "tag": ["a", i % 3]}, f"c{i}", row)
        for i, row in enumerate(m.tolist())
    ]


def test_bulk_load_into_an_empty_table_builds_hnsw_once_with_the_same_results(
    pg_url: str, tmp_path: Path
) -> None:
    dim = 16
    data = chunks(1500, dim, seed=1)
    bulk = PGVectorStore(pg_url, table_name=name_for(tmp_path, "bulk"), dimension=dim)
    plain = PGVectorStore(pg_url, table_name=name_for(tmp_path, "plain"), dimension=dim)
    hnsw = f"{bulk._table}_hnsw"
    assert hnsw in indexes(bulk)
    with bulk.bulk_load():
        assert hnsw not in indexes(bulk)  # dropped: the table was empty
        for start in range(0, len(data), 100):
            bulk.add(data[start : start + 100])  # small batches still go through COPY
    assert hnsw in indexes(bulk)
    for start in range(0, len(data), 100):
        plain.add(data[start : start + 100])
    assert indexes(bulk) == {i.replace(plain._table, bulk._table) for i in indexes(plain)}
    assert len(bulk) == len(plain) == 1500
    matrix = np.asarray([c.embedding for c in data], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    for q in matrix[:20]:
        exact = [f"c{i}" for i in np.argsort(matrix @ q)[::-1][:5]]
        assert [h.chunk.id for h in bulk.search(q.tolist(), k=5)] == exact
        assert [h.chunk.id for h in plain.search(q.tolist(), k=5)] == exact
    hit = bulk.search(matrix[7].tolist(), k=1)[0].chunk
    assert (hit.text, hit.doc_id, hit.metadata) == (data[7].text, "d7", {"n": 7, "tag": ["a", 1]})
    bulk.clear()
    plain.clear()
    bulk.close()
    plain.close()


def test_copy_path_upserts_and_a_filled_table_keeps_its_index(pg_url: str, tmp_path: Path) -> None:
    store = PGVectorStore(pg_url, table_name=name_for(tmp_path, "copy"), dimension=8)
    first = chunks(500, 8, seed=2, text="old")
    store.add(first)  # one COPY batch
    again = chunks(500 + 10, 8, seed=3, text="new")
    store.add(again)  # the same ids replaced, ten more added
    assert len(store) == 500 + 10
    assert store.search(again[3].embedding or [], k=1)[0].chunk.text == "new ünï 3 \u2603"
    hnsw = f"{store._table}_hnsw"
    with store.bulk_load():
        assert hnsw in indexes(store)  # not empty: the index is kept
        store.add(chunks(3, 8, seed=4, text="more"))
    assert hnsw in indexes(store)
    assert store.count({"n": 3}) == 1
    store.clear()
    store.close()


def test_ingest_into_an_empty_table_loads_in_bulk_and_keeps_the_indexes(
    pg_url: str, tmp_path: Path
) -> None:
    store = PGVectorStore(pg_url, table_name=name_for(tmp_path, "ingest"), dimension=32)
    before = indexes(store)
    docs = [Document(f"Document {i} talks about topic {i} at some length. " * 20) for i in range(5)]
    report = IngestDocuments(Embedder("hashing", dimension=32), store, Chunker(200, 20))(docs)
    assert len(report.added) == 5
    assert indexes(store) == before
    assert store.search(Embedder("hashing", dimension=32).embed_one("topic 3"), k=1)
    store.clear()
    store.close()
