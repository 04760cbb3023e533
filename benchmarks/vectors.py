"""Vectors stay arrays: ingest into the in-memory and SQLite stores, and peak memory.

Run: .venv/bin/python -m benchmarks.vectors

1. In-memory ingest of 100k x 384 as 1,000 documents of 100 chunks through
   ``replace_document_vectors`` (what ``IngestDocuments`` calls) vs the float32 storage path
   alone (``ExactIndex.upsert`` of prepared batches); the old list-of-floats path for reference.
2. SQLite, the same documents vs a raw ``executemany`` of the same rows (one transaction per
   document, BLOBs prepared in advance).
3. Peak memory (RSS, in a fresh process) while adding 100k x 1536 in 1,000-row documents,
   against the raw float32 matrix.
"""

from __future__ import annotations

import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._data import Matrix, unit_vectors
from benchmarks._table import print_table
from pywrapai_graph import Chunk, InMemoryVectorStore, SQLiteVectorStore
from pywrapai_graph.adapters.vectorstores.kit.exact_search import ExactIndex
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_batch
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

N, DIM, DOC = 100_000, 384, 100


def documents(n: int, per_doc: int) -> list[tuple[DocumentManifest, list[Chunk]]]:
    out = []
    identity = EmbedderIdentity("bench", "m", DIM)
    for d in range(n // per_doc):
        chunks = [
            Chunk(f"chunk {d}-{i}", f"d{d}", {"source": f"file{d}.txt"}, f"{d}-{i}")
            for i in range(per_doc)
        ]
        out.append((DocumentManifest(f"d{d}", f"h{d}", per_doc, identity), chunks))
    return out


def timed_docs(store: InMemoryVectorStore | SQLiteVectorStore, m: Matrix) -> float:
    docs = documents(N, DOC)
    start = time.perf_counter()
    for d, (manifest, chunks) in enumerate(docs):
        store.replace_document_vectors(manifest, chunks, m[d * DOC : (d + 1) * DOC].data)
    return time.perf_counter() - start


def in_memory(m: Matrix) -> None:
    docs = documents(N, DOC)
    prepared = [
        prepare_batch(chunks, DIM, m[d * DOC : (d + 1) * DOC]) for d, (_, chunks) in enumerate(docs)
    ]
    index = ExactIndex()
    start = time.perf_counter()
    for p in prepared:
        index.upsert(p)
    t_floor = time.perf_counter() - start
    t_ours = timed_docs(InMemoryVectorStore(), m)
    lists = documents(N, DOC)
    for d, (_, chunks) in enumerate(lists):
        for chunk, row in zip(chunks, m[d * DOC : (d + 1) * DOC].tolist(), strict=True):
            chunk.embedding = row
    store = InMemoryVectorStore()
    start = time.perf_counter()
    for manifest, chunks in lists:
        store.replace_document(manifest, chunks)
    t_lists = time.perf_counter() - start
    print_table(
        f"1. In-memory ingest, {N:,} x {DIM} as {N // DOC:,} documents (s)",
        [
            ("float32 storage path alone (floor)", t_floor, 1.0),
            ("replace_document_vectors (float32 matrix)", t_ours, t_ours / t_floor),
            ("replace_document with list[float] embeddings", t_lists, t_lists / t_floor),
        ],
        unit="s",
    )


def sqlite(m: Matrix) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "raw.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(
            "CREATE TABLE t (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, text TEXT NOT NULL, "
            "metadata TEXT NOT NULL, dim INTEGER NOT NULL, embedding BLOB NOT NULL)"
        )
        conn.execute("CREATE INDEX t_doc ON t (doc_id)")
        rows = [
            [
                (c.id, c.doc_id, c.text, json.dumps(c.metadata), DIM, m[d * DOC + i].tobytes())
                for i, c in enumerate(chunks)
            ]
            for d, (_, chunks) in enumerate(documents(N, DOC))
        ]
        start = time.perf_counter()
        for doc_rows in rows:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO t VALUES (?, ?, ?, ?, ?, ?)", doc_rows)
            conn.execute("COMMIT")
        t_raw = time.perf_counter() - start
        conn.close()
        store = SQLiteVectorStore(Path(tmp) / "ours.db")
        t_ours = timed_docs(store, m)
        store.close()
    print_table(
        f"2. SQLite ingest, {N:,} x {DIM} as {N // DOC:,} documents, one transaction each (s)",
        [
            ("raw executemany of the same rows (floor)", t_raw, 1.0),
            ("SQLiteVectorStore.replace_document_vectors", t_ours, t_ours / t_raw),
        ],
        unit="s",
    )


def _rss_child(mode: str) -> None:
    """Run in a fresh process: add 100k x 1536 and print the peak RSS growth in bytes."""
    n, dim, per = 100_000, 1536, 1000
    store = InMemoryVectorStore()
    identity = EmbedderIdentity("bench", "m", dim)
    rng = np.random.default_rng(0)
    base = _peak_rss()
    for d in range(n // per):
        rows = rng.standard_normal((per, dim), dtype=np.float32)
        chunks = [Chunk("t", f"d{d}", {}, f"{d}-{i}") for i in range(per)]
        manifest = DocumentManifest(f"d{d}", "h", per, identity)
        if mode == "matrix":
            store.replace_document_vectors(manifest, chunks, rows.data)
        else:
            for chunk, row in zip(chunks, rows.tolist(), strict=True):
                chunk.embedding = row
            store.replace_document(manifest, chunks)
        del rows, chunks
    print(_peak_rss() - base)


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (VmHWM; ru_maxrss survives fork+exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory() -> None:
    raw = 100_000 * 1536 * 4
    found = {}
    for mode in ("matrix", "lists"):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.vectors", "--rss", mode],
            check=True,
            capture_output=True,
            text=True,
        )
        found[mode] = int(out.stdout.strip())
    print("\n3. Peak memory while adding 100k x 1536 (RSS growth in a fresh process)")
    print(f"{'case':<52} {'MB':>10} {'ratio':>8}")
    print(f"{'the raw float32 matrix (floor)':<52} {raw / 1e6:>10.0f} {1.0:>7.2f}x")
    for mode, label in (("matrix", "replace_document_vectors"), ("lists", "list[float] path")):
        print(f"{label:<52} {found[mode] / 1e6:>10.0f} {found[mode] / raw:>7.2f}x")


def main() -> None:
    if sys.argv[1:2] == ["--rss"]:
        _rss_child(sys.argv[2])
        return
    m = unit_vectors(N, DIM)
    in_memory(m)
    sqlite(m)
    memory()


if __name__ == "__main__":
    main()
