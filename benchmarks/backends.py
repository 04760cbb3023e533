"""Every backend at 20k x 384: add throughput, single-query latency, recall@10 (ANN ones),
next to the in-memory store in the same run.

Run: .venv/bin/python -m benchmarks.backends   (starts an embedded PostgreSQL + pgvector)
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks._data import chunk_batches, clustered_vectors, unit_vectors
from benchmarks._table import best_of
from pywrapai_graph import (
    ChromaVectorStore,
    FAISSVectorStore,
    InMemoryVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.ports import BaseVectorStore

N, DIM, BATCH, K, QUERIES = 20_000, 384, 1000, 10, 50


def main() -> None:
    import sys

    random = "--random" in sys.argv  # worst case for HNSW: structureless Gaussian noise
    run(unit_vectors if random else clustered_vectors, "random" if random else "clustered")


def run(make_vectors: Callable[..., object], label: str) -> None:
    from tests.integration.servers import EmbeddedPostgres

    m = make_vectors(N, DIM)
    batches = list(chunk_batches(m, BATCH))  # type: ignore[arg-type]
    queries = make_vectors(QUERIES, DIM, seed=9).tolist()  # type: ignore[attr-defined]
    pg = EmbeddedPostgres()
    url = pg.start()
    tmp = Path(tempfile.mkdtemp())
    makers: dict[str, Callable[[], BaseVectorStore]] = {
        "InMemoryVectorStore": InMemoryVectorStore,
        "SQLiteVectorStore": lambda: SQLiteVectorStore(tmp / "s.db"),
        "FAISSVectorStore (threads=1)": lambda: FAISSVectorStore(
            tmp / "a.faiss", tmp / "a.meta", threads=1
        ),
        "FAISSVectorStore (threads=2)": lambda: FAISSVectorStore(
            tmp / "b.faiss", tmp / "b.meta", threads=2
        ),
        "ChromaVectorStore (embedded)": lambda: ChromaVectorStore(
            path=str(tmp / "c"), collection="bench"
        ),
        "PGVectorStore (HNSW)": lambda: PGVectorStore(url, table_name="bench", dimension=DIM),
        "QdrantVectorStore (local)": lambda: QdrantVectorStore("bench", location=str(tmp / "q")),
    }
    rows = []
    truth: list[set[str]] | None = None
    anchor_add = anchor_query = 0.0
    try:
        for name, make in makers.items():
            store = make()
            start = time.perf_counter()
            for b in batches:
                store.add(b)
            t_add = time.perf_counter() - start
            t_query = best_of(partial(store.search, queries[0], k=K), repeat=5, number=5)
            found = [{h.chunk.id for h in store.search(q, k=K)} for q in queries]
            if truth is None:
                truth, anchor_add, anchor_query = found, t_add, t_query
            recall = sum(len(f & t) for f, t in zip(found, truth, strict=True)) / (K * QUERIES)
            rows.append(
                (
                    name,
                    N / t_add,
                    t_add / anchor_add,
                    t_query * 1000,
                    t_query / anchor_query,
                    recall,
                )
            )
            store.close()
    finally:
        pg.stop()
    print(
        f"\nBackends at {N:,} x {DIM}, {label} vectors (batches of {BATCH:,}; "
        "latency = best of 5x5 single queries)"
    )
    print(
        f"{'backend':<30} {'adds/s':>10} {'add x':>8} {'query ms':>9} "
        f"{'query x':>8} {'recall@10':>9}"
    )
    for name, rate, add_ratio, q_ms, q_ratio, recall in rows:
        print(
            f"{name:<30} {rate:>10,.0f} {add_ratio:>7.1f}x {q_ms:>9.2f} "
            f"{q_ratio:>7.1f}x {recall:>9.3f}"
        )


if __name__ == "__main__":
    main()
