"""SQLite store: open + first search against the bulk-read floor, steady state, and `ask`.

Run: .venv/bin/python -m benchmarks.sqlite_store

1. 100k x 384: ``SQLiteVectorStore(path)`` + the first search, against the floor of reading
   the same vectors (``SELECT embedding`` + ``np.frombuffer``) and one matrix-vector product,
   measured in the same run (best of 3, warm page cache for both); steady-state search
   against the in-memory store.
2. ``pywrapai-graph ask --show-messages`` on an 85k-chunk store (hashing embedder, no LLM)
   against ``python -c "import numpy, sqlite3"``: :mod:`benchmarks.ask_cli` (also runnable alone).
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks._data import Matrix, unit_vectors
from benchmarks._table import best_of, print_table
from pywrapai_graph import Chunk, SQLiteVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

N, DIM = 100_000, 384


def fill(path: Path, m: Matrix, identity: EmbedderIdentity, per_doc: int = 100) -> None:
    store = SQLiteVectorStore(path)
    for d in range(m.shape[0] // per_doc):
        chunks = [
            Chunk(
                f"Chunk {i} of file {d}: some words here.",
                f"d{d}",
                {"source": f"f{d}.txt"},
                f"{d}-{i}",
            )
            for i in range(per_doc)
        ]
        manifest = DocumentManifest(f"d{d}", f"h{d}", per_doc, identity)
        store.replace_document_vectors(manifest, chunks, m[d * per_doc : (d + 1) * per_doc].data)
    store.close()


def floor(path: Path, q: Matrix) -> None:
    conn = sqlite3.connect(path)
    blobs = b"".join(r[0] for r in conn.execute("SELECT embedding FROM vector_chunks"))
    matrix = np.frombuffer(blobs, dtype=np.float32).reshape(-1, DIM)
    scores = matrix @ q
    np.argpartition(scores, -10)[-10:]
    conn.close()


def open_and_search(path: Path, q: list[float]) -> None:
    store = SQLiteVectorStore(path)
    store.search(q, k=10)
    store.close()


def opening() -> None:
    m = unit_vectors(N, DIM)
    qm = unit_vectors(1, DIM, seed=3)[0]
    q = qm.tolist()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        fill(path, m, EmbedderIdentity("bench", "m", DIM))
        t_floor = best_of(lambda: floor(path, qm), repeat=3)
        t_open = best_of(lambda: open_and_search(path, q), repeat=3)
        reader = SQLiteVectorStore(path)
        t_steady = best_of(lambda: reader.search(q, k=10), repeat=7, number=5)
        reader.close()
    print_table(
        f"1. SQLiteVectorStore, {N:,} x {DIM} (ms)",
        [
            ("floor: SELECT embedding + frombuffer + one matvec", t_floor, 1.0),
            ("open + first search", t_open, t_open / t_floor),
            ("steady-state search", t_steady, t_steady / t_floor),
        ],
        unit="ms",
    )


def main() -> None:
    from benchmarks.ask_cli import ask  # it imports fill() from here

    start = time.perf_counter()
    opening()
    ask()
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
