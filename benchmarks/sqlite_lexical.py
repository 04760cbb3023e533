"""SQLite store, lexical search at ~25k chunks: ``add`` rate, the first query of a fresh
process, and a query's p50 once warm.

Run: .venv/bin/python -m benchmarks.sqlite_lexical [FOLDER] [COPIES]
(FOLDER: the Cranfield folder, as for ``benchmarks.retrieval_quality``.)

The corpus is Cranfield split by ``Chunker(500, 50)``, ``COPIES`` times (default 9, about
25,000 chunks; each copy its own documents), with random unit vectors (dense search is not
measured). ``add`` takes 500 chunks a call. The first query is measured in a new process
(open the store, one lexical search); the p50 over Cranfield's 225 queries (k 10) in this
process after one warm-up pass (wall clock, and this process's CPU time, steadier on a
shared machine). To compare two versions of the library, run this with each
on ``PYTHONPATH``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.retrieval_quality import DEFAULT
from pywrapai_graph import Chunk, SQLiteVectorStore
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.application.chunker import Chunker

BATCH, DIM = 500, 384
FIRST = """
import sys, time
start = time.perf_counter()
from pywrapai_graph import SQLiteVectorStore
store = SQLiteVectorStore(sys.argv[1])
store.lexical_search(sys.argv[2], k=10)
print(time.perf_counter() - start)
"""


def corpus(folder: Path, copies: int) -> tuple[list[Chunk], list[str]]:
    data = load_beir(folder)
    split = [c for d in data.corpus for c in Chunker(500, 50).split(d)]
    rng = np.random.default_rng(0)
    chunks = []
    for copy in range(copies):
        vectors = rng.standard_normal((len(split), DIM)).astype(np.float32)
        for c, v in zip(split, vectors, strict=True):
            chunks.append(
                Chunk(c.text, f"{copy}-{c.doc_id}", dict(c.metadata), f"{copy}-{c.id}", v.tolist())
            )
    return chunks, list(data.queries.values())


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else DEFAULT
    copies = int(argv[1]) if len(argv) > 1 else 9
    chunks, queries = corpus(folder, copies)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.db"
        store = SQLiteVectorStore(path)
        start = time.perf_counter()
        for i in range(0, len(chunks), BATCH):
            store.add(chunks[i : i + BATCH])
        rate = len(chunks) / (time.perf_counter() - start)
        store.close()
        first = [
            float(subprocess.check_output([sys.executable, "-c", FIRST, str(path), q]))
            for q in queries[:3]
        ]
        store = SQLiteVectorStore(path)
        for q in queries:
            store.lexical_search(q, k=10)
        times, cpu = [], []
        for q in queries:
            start, used = time.perf_counter(), time.process_time()
            store.lexical_search(q, k=10)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - used)
        store.close()
    print(f"{len(chunks)} chunks: add {rate:,.0f} chunks/s (batches of {BATCH})")
    print(
        f"first query in a fresh process (open + search), 3 runs: {[round(t, 3) for t in first]} s"
    )
    print(
        f"lexical query, warm: p50 {1000 * float(np.median(times)):.1f} ms, "
        f"p90 {1000 * float(np.percentile(times, 90)):.1f} ms; CPU p50 "
        f"{1000 * float(np.median(cpu)):.1f} ms ({len(times)} queries, k 10)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
