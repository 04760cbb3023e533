"""pgvector bulk load: 20k x 384 into an empty table, rows/s, with the same indexes and recall.

Run: .venv/bin/python -m benchmarks.pgvector_load  (starts the embedded PostgreSQL of the
integration tests, or uses PYWRAPAI_TEST_PG_URL)

Rows, measured in the same run, each into a fresh table that ends with the same indexes
(HNSW cosine, doc_id, GIN metadata):
1. ``add`` of 1,000-row batches, binary ``COPY`` into the live HNSW index;
2. the same adds inside ``bulk_load()``: COPY, and the HNSW index built once at the end.
Recall@10 over 50 queries against exact numpy cosine is printed for each.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from benchmarks._data import clustered_vectors
from pywrapai_graph import Chunk, PGVectorStore

N, DIM, BATCH = 20_000, 384, 1000


def batches(m: np.ndarray) -> list[list[Chunk]]:
    rows = m.tolist()
    return [
        [
            Chunk(f"chunk {i}", f"d{i // 100}", {"source": f"f{i // 100}.txt"}, f"c{i}", rows[i])
            for i in range(start, min(start + BATCH, N))
        ]
        for start in range(0, N, BATCH)
    ]


def recall(store: PGVectorStore, m: np.ndarray, queries: np.ndarray) -> float:
    exact = np.argsort(queries @ m.T, axis=1)[:, ::-1][:, :10]
    found = 0
    for q, truth in zip(queries, exact, strict=True):
        hits = {h.chunk.id for h in store.search(q.tolist(), k=10)}
        found += len(hits & {f"c{i}" for i in truth})
    return found / (10 * len(queries))


def timed(
    url: str, name: str, m: np.ndarray, load: Callable[[PGVectorStore], None]
) -> tuple[float, float]:
    store = PGVectorStore(url, table_name=name, dimension=DIM)
    store.clear()
    start = time.perf_counter()
    load(store)
    elapsed = time.perf_counter() - start
    r = recall(store, m, m[:50] + 0.01)
    store.clear()
    store.close()
    return elapsed, r


def run(url: str) -> None:
    m = clustered_vectors(N, DIM)
    data = batches(m)

    def plain(store: PGVectorStore) -> None:
        for b in data:
            store.add(b)

    def bulk(store: PGVectorStore) -> None:
        with store.bulk_load():
            for b in data:
                store.add(b)

    t_copy, r_copy = timed(url, "bench_copy", m, plain)
    t_bulk, r_bulk = timed(url, "bench_bulk", m, bulk)
    print(f"\npgvector: {N:,} x {DIM} into an empty table, batches of {BATCH:,}")
    print(f"{'case':<58} {'rows/s':>9} {'speed-up':>9} {'recall@10':>10}")
    for label, t, r in (
        ("binary COPY into the live HNSW index", t_copy, r_copy),
        ("bulk_load(): binary COPY, HNSW built after", t_bulk, r_bulk),
    ):
        print(f"{label:<58} {N / t:>9,.0f} {t_copy / t:>8.1f}x {r:>10.3f}")


def main() -> None:
    url = os.environ.get("PYWRAPAI_TEST_PG_URL")
    if url:
        run(url)
        return
    from tests.integration.servers import EmbeddedPostgres

    server = EmbeddedPostgres()
    try:
        run(server.start())
    finally:
        server.stop()


if __name__ == "__main__":
    main()
