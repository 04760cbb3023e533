"""FAISS that appends: 100k x 384 added in batches of 1,000 through FAISSVectorStore.

Run: .venv/bin/python -m benchmarks.faiss_add

All in one run, on the same vectors:
- the floor: raw FAISS ``add_with_ids`` of the same batches (``IndexIDMap2`` over
  ``IndexFlatIP``) plus one final ``write_index``;
- a second floor for a store that keeps texts and metadata: the same, plus the chunk rows
  (text, metadata JSON) inserted into SQLite with one commit per batch;
- the store: each batch is one document written with ``replace_document_vectors`` (the
  path ingest takes), durable when the call returns (segment appended and synced, metadata
  committed); then the same followed by one ``compact()``;
- the old scheme, for comparison: raw FAISS that rewrites, syncs and hashes the whole index
  after every batch (what every ``add`` did before the segment log).
Also the time of the last ten batches over the first ten (1.0 = no growth with the store's size).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._data import unit_vectors
from pywrapai_graph import Chunk, FAISSVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

N, DIM, BATCH = 100_000, 384, 1_000


def raw_faiss(m: np.ndarray, path: Path, *, rewrite_each_batch: bool) -> tuple[float, list[float]]:
    import faiss

    index = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    times = []
    start = time.perf_counter()
    for s in range(0, N, BATCH):
        t = time.perf_counter()
        index.add_with_ids(m[s : s + BATCH], np.arange(s, s + BATCH, dtype=np.int64))
        if rewrite_each_batch:
            faiss.write_index(index, str(path))
            with path.open("rb") as f:
                os.fsync(f.fileno())
                hashlib.sha256(f.read()).hexdigest()
        times.append(time.perf_counter() - t)
    if not rewrite_each_batch:
        faiss.write_index(index, str(path))
    return time.perf_counter() - start, times


def raw_faiss_and_sqlite(m: np.ndarray, folder: Path) -> tuple[float, list[float]]:
    """The floor for a store that also keeps text and metadata: raw FAISS plus the same rows
    (text, metadata JSON) into SQLite, one committed transaction per batch, one final write."""
    import faiss

    index = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    conn = sqlite3.connect(folder / "floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE chunks (int_id INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
        "doc_id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL)"
    )
    docs = documents()
    times = []
    start = time.perf_counter()
    for d, (_, chunks) in enumerate(docs):
        t = time.perf_counter()
        s = d * BATCH
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?, ?, ?)",
            [(s + i, c.id, c.doc_id, c.text, json.dumps(c.metadata)) for i, c in enumerate(chunks)],
        )
        conn.execute("COMMIT")
        index.add_with_ids(m[s : s + BATCH], np.arange(s, s + BATCH, dtype=np.int64))
        times.append(time.perf_counter() - t)
    faiss.write_index(index, str(folder / "floor.faiss"))
    total = time.perf_counter() - start
    conn.close()
    return total, times


def documents() -> list[tuple[DocumentManifest, list[Chunk]]]:
    identity = EmbedderIdentity("bench", "m", DIM)
    out = []
    for d in range(N // BATCH):
        chunks = [
            Chunk(f"chunk {row}", f"d{d}", {"source": f"f{d}.txt"}, f"c{row}")
            for row in range(d * BATCH, (d + 1) * BATCH)
        ]
        out.append((DocumentManifest(f"d{d}", f"h{d}", BATCH, identity), chunks))
    return out


def through_store(m: np.ndarray, folder: Path, *, compact: bool) -> tuple[float, list[float]]:
    docs = documents()
    store = FAISSVectorStore(folder / "s.faiss", folder / "s.meta")
    times = []
    start = time.perf_counter()
    for d, (manifest, chunks) in enumerate(docs):
        t = time.perf_counter()
        store.replace_document_vectors(manifest, chunks, m[d * BATCH : (d + 1) * BATCH].data)
        times.append(time.perf_counter() - t)
    if compact:
        store.compact()
    total = time.perf_counter() - start
    assert len(store) == N
    store.close()
    return total, times


def growth(times: list[float]) -> float:
    return statistics.median(times[-10:]) / statistics.median(times[:10])


def main() -> None:
    m = unit_vectors(N, DIM)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        raw, raw_times = raw_faiss(m, folder / "raw.faiss", rewrite_each_batch=False)
        (folder / "raw.faiss").unlink()
        floor, floor_times = raw_faiss_and_sqlite(m, folder)
        store, store_times = through_store(m, folder / "a", compact=False)
        compacted, _ = through_store(m, folder / "b", compact=True)
        old, old_times = raw_faiss(m, folder / "old.faiss", rewrite_each_batch=True)
    print(f"\nFAISS add, {N:,} x {DIM} in batches of {BATCH:,} (s)")
    print(f"{'case':<66} {'s':>8} {'ratio':>8} {'last/first':>11}")
    rows = [
        ("raw FAISS add_with_ids + one final write_index (floor)", raw, raw_times),
        ("  + the same chunk rows into SQLite, one commit per batch", floor, floor_times),
        ("FAISSVectorStore, each batch durable (segment log)", store, store_times),
        ("FAISSVectorStore, then one compact()", compacted, store_times),
        ("old scheme: rewrite + fsync + SHA-256 the index every batch", old, old_times),
    ]
    for label, seconds, times in rows:
        print(f"{label:<66} {seconds:>8.2f} {seconds / raw:>7.2f}x {growth(times):>10.2f}x")


if __name__ == "__main__":
    main()
