"""Ingest 100k x 384 in batches of 1,000: our store vs np.vstack per batch vs one append.

Run: .venv/bin/python -m benchmarks.ingest
The O(n) check: the last tenth of the batches must cost about what the first tenth did.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._data import chunk_batches, unit_vectors
from benchmarks._table import print_table
from pywrapai_graph import Chunk, InMemoryVectorStore
from pywrapai_graph.adapters.vectorstores.kit.exact_search import ExactIndex
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch

N, DIM, BATCH = 100_000, 384, 1000


def main() -> None:
    m = unit_vectors(N, DIM)
    batches = [m[i : i + BATCH] for i in range(0, N, BATCH)]

    start = time.perf_counter()
    np.concatenate(batches)
    t_single = time.perf_counter() - start

    start = time.perf_counter()
    acc = np.empty((0, DIM), np.float32)
    for b in batches:
        acc = np.vstack([acc, b])
    t_vstack = time.perf_counter() - start

    # Our index fed with ready float32 arrays: the storage path alone.
    prepared = []
    for i, b in enumerate(batches):
        ids = [str(i * BATCH + j) for j in range(b.shape[0])]
        prepared.append(PreparedBatch(ids, b, [Chunk("t", doc_id="d", id=x) for x in ids]))
    index = ExactIndex()
    per_batch: list[float] = []
    start = time.perf_counter()
    for p in prepared:
        t0 = time.perf_counter()
        index.upsert(p)
        per_batch.append(time.perf_counter() - t0)
    t_index = time.perf_counter() - start

    # The public path: Chunk objects with list[float] embeddings, validated and normalised.
    chunk_lists = list(chunk_batches(m, BATCH))
    store = InMemoryVectorStore()
    store_batches: list[float] = []
    start = time.perf_counter()
    for chunks in chunk_lists:
        t0 = time.perf_counter()
        store.add(chunks)
        store_batches.append(time.perf_counter() - t0)
    t_store = time.perf_counter() - start

    tenth = len(batches) // 10
    print_table(
        f"Ingest {N:,} x {DIM} in batches of {BATCH:,} (total, ms)",
        [
            ("one single append (np.concatenate) (anchor)", t_single, 1.0),
            ("np.vstack per batch (quadratic)", t_vstack, t_vstack / t_single),
            ("ExactIndex.upsert of float32 batches", t_index, t_index / t_single),
            ("InMemoryVectorStore.add of Chunk lists", t_store, t_store / t_single),
        ],
        unit="ms",
    )
    for label, times in (("ExactIndex", per_batch), ("InMemoryVectorStore", store_batches)):
        first, last = sum(times[:tenth]), sum(times[-tenth:])
        print(f"{label}: last tenth / first tenth of batches = {last / first:.2f} (O(n) ~ 1)")


if __name__ == "__main__":
    main()
