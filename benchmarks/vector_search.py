"""Exact search: our in-memory store vs the numpy floor vs FAISS IndexFlatIP, same vectors.

Run: .venv/bin/python -m benchmarks.vector_search  (needs the ``bench`` extra for FAISS)
"""

from __future__ import annotations

import numpy as np

from benchmarks._data import chunk_batches, unit_vectors
from benchmarks._table import best_of, print_table
from pywrapai_graph import InMemoryVectorStore

K = 10


def floor_one(m: np.ndarray, q: np.ndarray) -> np.ndarray:
    scores = m @ q
    part = np.argpartition(scores, scores.shape[0] - K)[-K:]
    return part[np.argsort(scores[part])[::-1]]


def floor_batch(m: np.ndarray, qs: np.ndarray) -> list[np.ndarray]:
    scores = qs @ m.T
    out = []
    for row in scores:
        part = np.argpartition(row, row.shape[0] - K)[-K:]
        out.append(part[np.argsort(row[part])[::-1]])
    return out


def run(n: int, dim: int) -> None:
    import faiss

    m = unit_vectors(n, dim)
    queries = unit_vectors(32, dim, seed=1)
    q1 = queries[0]
    store = InMemoryVectorStore()
    for batch in chunk_batches(m, 5000):
        store.add(batch)
    index = faiss.IndexFlatIP(dim)
    index.add(m)

    # sanity: the three agree on the top ids
    ours = [int(h.chunk.id) for h in store.search(q1.tolist(), k=K)]
    _, faiss_ids = index.search(q1[None, :], K)
    assert ours == floor_one(m, q1).tolist() == faiss_ids[0].tolist()

    q1_list = q1.tolist()
    q_lists = queries.tolist()
    t_floor = best_of(lambda: floor_one(m, q1), repeat=7, number=5)
    t_ours = best_of(lambda: store.search(q1_list, k=K), repeat=7, number=5)
    t_faiss = best_of(lambda: index.search(q1[None, :], K), repeat=7, number=5)
    tb_floor = best_of(lambda: floor_batch(m, queries), repeat=5)
    tb_ours = best_of(lambda: store.search_many(q_lists, k=K), repeat=5)
    tb_faiss = best_of(lambda: index.search(queries, K), repeat=5)
    faiss.cvar.distance_compute_blas_threshold = 20
    tb_faiss_tuned = best_of(lambda: index.search(queries, K), repeat=5)
    faiss.cvar.distance_compute_blas_threshold = 128000
    print_table(
        f"Exact top-{K} search, {n:,} x {dim} float32 (best of rounds; ms)",
        [
            ("1 query: numpy matvec + argpartition (floor)", t_floor, 1.0),
            ("1 query: InMemoryVectorStore.search", t_ours, t_ours / t_floor),
            ("1 query: FAISS IndexFlatIP (defaults)", t_faiss, t_faiss / t_floor),
            ("32 queries: numpy matmul + argpartition (floor)", tb_floor, 1.0),
            ("32 queries: InMemoryVectorStore.search_many", tb_ours, tb_ours / tb_floor),
            ("32 queries: FAISS IndexFlatIP (defaults)", tb_faiss, tb_faiss / tb_floor),
            ("32 queries: FAISS, blas_threshold=20", tb_faiss_tuned, tb_faiss_tuned / tb_floor),
        ],
        unit="ms",
    )


def main() -> None:
    run(100_000, 384)
    run(100_000, 1536)


if __name__ == "__main__":
    main()
