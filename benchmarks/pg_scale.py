"""One retrieval on PostgreSQL at scale: p50 of a hybrid query at 100,000 chunks and more.

Run: nice -n 10 .venv/bin/python -m benchmarks.pg_scale [--sizes 100000,300000] [--queries N]
     [--reuse] [FOLDER]
(starts the embedded PostgreSQL of the integration tests, or uses PYWRAPAI_TEST_PG_URL;
FOLDER is a BEIR collection, ../shared/data/cranfield by default.)

Chunks are 3 sentences drawn (seeded) from the collection's abstracts (about 60 words, terms at
real frequencies), 10 to a document, with clustered unit vectors of dimension 384 (the dense
side's cost, not its quality, is measured). Each table is loaded through the store's own bulk
path: ``bulk_load()`` (binary COPY of the chunks and their postings, the HNSW index built once
at the end) with ``add`` in batches of 10,000, then VACUUM ANALYZE as autovacuum would at rest.
The index is built as an operator builds one that large (:data:`BUILD`: the same index, the
graph in memory, parallel workers), before ``bulk_load`` would with its smaller memory, which
then finds it built. Each of the collection's queries (the first N) is then asked once (after 5
warm-up queries) with ``store.retrieve``: its text and the vector of a stored chunk's neighbour,
k=10, 100 candidates a side; the median and 90th percentile are printed per mode. ``--reuse``
skips the load of a table that already holds its chunks (a run before, on the same server).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._data import clustered_vectors
from benchmarks._postgres import postgres_url
from benchmarks.pg_lexical import DEFAULT, sentences
from pywrapai_graph import Chunk, PGVectorStore
from pywrapai_graph.ports.store_query import StoreQuery

DIM = 384
BATCH = 10_000
#: An operator's session for a large HNSW build: at 1M chunks of dimension 384 the graph
#: (about 2 GB) spills past the store's 256MB and the build crawls.
BUILD = ("SET maintenance_work_mem = '3GB'", "SET max_parallel_maintenance_workers = 2")


def build_index(url: str, table: str) -> None:
    """The store's HNSW index on ``table``, built in one session of :data:`BUILD`."""
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        for setting in BUILD:
            cur.execute(setting)
        cur.execute(
            f'CREATE INDEX IF NOT EXISTS "{table}_hnsw" ON "{table}" '
            "USING hnsw (embedding vector_cosine_ops)"
        )
    conn.close()


def load(url: str, table: str, pool: list[str], n: int) -> float:
    """Seconds to load ``n`` chunks into an empty ``table`` (and VACUUM ANALYZE it)."""
    import psycopg2

    rng = random.Random(n)
    store = PGVectorStore(url, table_name=table, dimension=DIM, statement_timeout_ms=None)
    store.clear()
    started = time.perf_counter()
    with store.bulk_load():
        for start in range(0, n, BATCH):
            vectors = clustered_vectors(min(BATCH, n - start), DIM, seed=start)
            store.add(
                [
                    Chunk(
                        " ".join(rng.choices(pool, k=3)),
                        doc_id=f"d{(start + i) // 10}",
                        metadata={"part": (start + i) % 7},
                        id=f"c{start + i}",
                        embedding=row,
                    )
                    for i, row in enumerate(vectors)
                ]
            )
        build_index(url, table)
    store.close()
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'VACUUM ANALYZE "{table}", "{table}__terms", "{table}__doclen"')
    conn.close()
    return time.perf_counter() - started


def held(url: str, table: str) -> int:
    """How many chunks ``table`` holds."""
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    try:
        return len(store)
    finally:
        store.close()


def latencies(url: str, table: str, queries: list[str]) -> dict[str, list[float]]:
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    probes = clustered_vectors(len(queries), DIM, seed=987_654)
    times: dict[str, list[float]] = {"dense": [], "lexical": [], "hybrid": []}
    for i, text in enumerate([*queries[:5], *queries]):
        for mode, found in times.items():
            query = StoreQuery(mode, 10, vector=probes[i % len(probes)], text=text)  # type: ignore[arg-type]
            begun = time.perf_counter()
            store.retrieve(query)
            if i >= 5:
                found.append((time.perf_counter() - begun) * 1e3)
    store.close()
    return times


def main(argv: list[str]) -> None:
    sizes, count = [100_000], None
    if argv[:1] == ["--sizes"]:
        sizes, argv = [int(n) for n in argv[1].split(",")], argv[2:]
    if argv[:1] == ["--queries"]:
        count, argv = int(argv[1]), argv[2:]
    reuse = argv[:1] == ["--reuse"]
    argv = argv[1:] if reuse else argv
    pool, queries = sentences(Path(argv[0]) if argv else DEFAULT)
    queries = queries[:count]
    with postgres_url() as url:
        for n in sizes:
            table = f"bench_scale_{n}"
            if not (reuse and held(url, table) == n):
                seconds = load(url, table, pool, n)
                print(f"\n{n:,} chunks of dimension {DIM} loaded in {seconds:.0f} s", flush=True)
            print(f"{len(queries)} queries, load average {os.getloadavg()}")
            for mode, ms in latencies(url, table, queries).items():
                p90 = float(np.percentile(ms, 90))
                print(f"{mode:<8} p50 {statistics.median(ms):8.1f} ms   p90 {p90:8.1f} ms")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
