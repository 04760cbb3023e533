"""SQLite store: first search after open (includes loading the matrix), then steady state,
against the in-memory store on the same vectors.

Run: .venv/bin/python -m benchmarks.sqlite_store
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks._data import chunk_batches, unit_vectors
from benchmarks._table import best_of, print_table
from pywrapai_graph import InMemoryVectorStore, SQLiteVectorStore

N, DIM = 100_000, 384


def main() -> None:
    m = unit_vectors(N, DIM)
    q = unit_vectors(1, DIM, seed=3)[0].tolist()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        writer = SQLiteVectorStore(path)
        memory = InMemoryVectorStore()
        batches = list(chunk_batches(m, 1000))
        start = time.perf_counter()
        for batch in batches:
            writer.add(batch)
        t_write = time.perf_counter() - start
        del batches
        for batch in chunk_batches(m, 1000):
            memory.add(batch)
        writer.close()

        start = time.perf_counter()
        reader = SQLiteVectorStore(path)
        first = reader.search(q, k=10)
        t_first = time.perf_counter() - start
        t_steady = best_of(lambda: reader.search(q, k=10), repeat=7, number=5)
        t_memory = best_of(lambda: memory.search(q, k=10), repeat=7, number=5)
        assert [h.chunk.id for h in first] == [h.chunk.id for h in memory.search(q, k=10)]
        reader.close()
    print_table(
        f"SQLiteVectorStore, {N:,} x {DIM} (ms)",
        [
            ("InMemoryVectorStore.search (anchor)", t_memory, 1.0),
            ("SQLite: steady-state search", t_steady, t_steady / t_memory),
            ("SQLite: open + first search (loads the matrix)", t_first, t_first / t_memory),
            ("SQLite: write 100 batches of 1,000", t_write, t_write / t_memory),
        ],
        unit="ms",
    )


if __name__ == "__main__":
    main()
