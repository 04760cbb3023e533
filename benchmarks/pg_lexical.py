"""PostgreSQL-served BM25 at scale: worker memory, query latency, ingest cost.

Run: .venv/bin/python -m benchmarks.pg_lexical [--latency 100000,1000000] [FOLDER]
(starts the embedded PostgreSQL of the integration tests, or uses PYWRAPAI_TEST_PG_URL;
FOLDER is a BEIR collection whose texts are recombined into chunks, ../shared/data/cranfield
by default.)

Chunks are 4 sentences drawn (seeded) from the collection's abstracts, so terms follow real
frequencies; their vectors are clustered random unit vectors (the dense side's cost, not its
quality, is measured), queries are the collection's queries, embedded by the offline
``hashing`` embedder for the hybrid retriever. Tables of 3,000, 30,000 and 100,000 chunks are
loaded with ``bulk_load()`` (binary COPY, HNSW built once).

1. Memory: a fresh worker process opens each table, runs one dense search (connections and
   driver warmed), reads its resident set size, then runs 40 lexical and 40 hybrid retrievals
   and reads it again. Target: the growth differs by under 20 MB between 3,000 and 100,000.
2. Latency at 100,000 chunks, median of the queries: lexical and hybrid as ratios to a dense
   query in the same run (store calls, and retriever calls that include the query embedding).
3. Ingest: 20,000 chunks through ``add`` (batches of 100 and of 1,000, binary COPY) into
   a table that writes the lexical data, as a ratio to a table that does not (no postings,
   ``lex_len`` 0, its triggers dropped). Embedding is not included.
4. Hot row: 4 concurrent writers (20-chunk adds) with the statistics as one global row vs
   the per-backend delta rows.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import re
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from benchmarks._data import clustered_vectors
from benchmarks._postgres import postgres_url
from pywrapai_graph import Chunk, Embedder, PGVectorStore, VectorRetriever
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.adapters.vectorstores.postgres import rows as _pg_lexical

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
DIM = 128
SIZES = (3_000, 30_000, 100_000)
INGEST = 20_000
ROUNDS = 40


def sentences(folder: Path) -> tuple[list[str], list[str]]:
    data = load_beir(folder)
    pool = [
        s.strip()
        for d in data.corpus
        for s in re.split(r"(?<=[.!?])\s+", d.text)
        if len(s.split()) > 3
    ]
    return pool, list(data.queries.values())


def make_chunks(pool: list[str], n: int, seed: int, prefix: str) -> list[Chunk]:
    rng = random.Random(seed)
    vectors = clustered_vectors(n, DIM, seed=seed).tolist()
    return [
        Chunk(
            " ".join(rng.choices(pool, k=4)),
            doc_id=f"{prefix}d{i // 10}",
            metadata={"part": i % 7},
            id=f"{prefix}{i}",
            embedding=vectors[i],
        )
        for i in range(n)
    ]


def load(url: str, table: str, chunks: list[Chunk]) -> None:
    """Load with ``bulk_load()``, then VACUUM ANALYZE as autovacuum would at rest (the
    postings' index-only scans need the visibility map)."""
    import psycopg2

    # a bulk load on a loaded machine may outlast the 30 s default statement timeout
    store = PGVectorStore(url, table_name=table, dimension=DIM, statement_timeout_ms=None)
    store.clear()
    with store.bulk_load():
        for start in range(0, len(chunks), 5_000):
            store.add(chunks[start : start + 5_000])
    store.close()
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'VACUUM ANALYZE "{table}", "{table}__terms"')
    conn.close()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _memory_worker(url: str, table: str, queries: list[str], out: Any) -> None:
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    embedder = Embedder(provider="hashing", dimension=DIM)
    lexical = VectorRetriever(embedder, store, mode="lexical", k=10)
    hybrid = VectorRetriever(embedder, store, mode="hybrid", k=10)
    store.search(embedder.embed_one(queries[0]), k=10)
    before = rss_mb()
    for q in queries[:ROUNDS]:
        lexical.retrieve(q)
        hybrid.retrieve(q)
    out.send((before, rss_mb()))
    store.close()


def memory_growth(url: str, table: str, queries: list[str]) -> tuple[float, float]:
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_memory_worker, args=(url, table, queries, theirs))
    process.start()
    before, after = mine.recv()
    process.join()
    return before, after


def median_ms(fn: Callable[[str], object], queries: list[str]) -> float:
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def latency(url: str, table: str, queries: list[str]) -> list[tuple[str, float]]:
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    embedder = Embedder(provider="hashing", dimension=DIM)
    vectors = {q: embedder.embed_one(q) for q in queries}
    retrievers = {
        m: VectorRetriever(embedder, store, mode=m, k=10) for m in ("dense", "lexical", "hybrid")
    }
    for q in queries[:5]:  # warm the caches
        store.lexical_search(q, 10)
        store.search(vectors[q], 10)
    rows = [
        ("store.search (dense, HNSW)", median_ms(lambda q: store.search(vectors[q], 10), queries)),
        (
            "store.lexical_search (BM25 in PostgreSQL)",
            median_ms(lambda q: store.lexical_search(q, 10), queries),
        ),
        (
            "store.lexical_search with a metadata filter",
            median_ms(lambda q: store.lexical_search(q, 10, {"part": 3}), queries),
        ),
    ]
    rows += [
        (f"VectorRetriever {m} (query embedded)", median_ms(retrievers[m].retrieve, queries))
        for m in ("dense", "lexical", "hybrid")
    ]
    for fusion in ("rrf", "weighted"):  # hybrid above: the default, rescored
        hybrid = VectorRetriever(embedder, store, mode="hybrid", k=10, fusion=fusion)
        rows.append((f"VectorRetriever hybrid, {fusion}", median_ms(hybrid.retrieve, queries)))
    store.close()
    return rows


def latency_only(url: str, folder: Path, sizes: list[int]) -> None:
    """Load each size (a table already holding it is kept) and print the query latencies."""
    pool, queries = sentences(folder)
    for n in sizes:
        table = f"bench_lex_{n}"
        store = PGVectorStore(url, table_name=table, dimension=DIM)
        loaded = store.count() == n
        store.close()
        if not loaded:
            start = time.perf_counter()
            load(url, table, make_chunks(pool, n, seed=n, prefix=f"s{n}-"))
            print(f"loaded {n:,} chunks in {time.perf_counter() - start:.0f} s")
        print(
            f"\nquery latency at {n:,} chunks (median of {len(queries)} queries, k=10), "
            f"load average {os.getloadavg()}"
        )
        for label, ms in latency(url, table, queries):
            print(f"{label:<52} {ms:>8.2f} ms")


def without_lexical(url: str, table: str) -> None:
    """Make ``table`` keep no lexical statistics: drop its triggers."""
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        for trigger in ("ins", "upd", "del"):
            cur.execute(f'DROP TRIGGER IF EXISTS "{table}__bm25_{trigger}" ON "{table}"')
    conn.close()


@contextmanager
def no_analysis() -> Iterator[None]:
    """The store's writes send empty lexical fields (what writing no lexical data costs)."""
    names = vars(_pg_lexical)
    saved = names["analyze"]
    names["analyze"] = lambda text: []
    try:
        yield
    finally:
        names["analyze"] = saved


def ingest_seconds(url: str, table: str, chunks: list[Chunk], batch: int, lexical: bool) -> float:
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    store.clear()
    if not lexical:
        without_lexical(url, table)
    start = time.perf_counter()
    with nullcontext() if lexical else no_analysis():
        for i in range(0, len(chunks), batch):
            store.add(chunks[i : i + batch])
    elapsed = time.perf_counter() - start
    store.clear()
    store.close()
    return elapsed


def drop(url: str, table: str) -> None:
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        for suffix in ("", "__docs", "__info", "__terms", "__doclen", "__bm25"):
            cur.execute(f'DROP TABLE IF EXISTS "{table}{suffix}" CASCADE')
        cur.execute("DELETE FROM pywrapai_schema WHERE table_name = %s", (table,))
    conn.close()


def concurrent_writers_seconds(url: str, chunks: list[Chunk], slots: int) -> float:
    """4 threads (4 server connections) adding 20-chunk batches into a fresh table whose
    statistics have ``slots`` delta rows (1: a single global row every write updates)."""
    table = f"bench_lex_slots_{slots}"
    drop(url, table)
    default = _pg_lexical.STATS_SLOTS
    _pg_lexical.STATS_SLOTS = slots
    try:
        store = PGVectorStore(url, table_name=table, dimension=DIM, pool_size=4)
    finally:
        _pg_lexical.STATS_SLOTS = default
    parts = [chunks[i::4] for i in range(4)]

    def write(part: list[Chunk]) -> None:
        for i in range(0, len(part), 20):
            store.add(part[i : i + 20])

    threads = [threading.Thread(target=write, args=(part,)) for part in parts]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    store.close()
    drop(url, table)
    return elapsed


def run(url: str, folder: Path) -> None:
    pool, queries = sentences(folder)
    print(f"{len(pool):,} sentences, {len(queries)} queries; load average {os.getloadavg()}")
    growth: dict[int, tuple[float, float]] = {}
    for n in SIZES:
        table = f"bench_lex_{n}"
        start = time.perf_counter()
        load(url, table, make_chunks(pool, n, seed=n, prefix=f"s{n}-"))
        print(f"loaded {n:,} chunks in {time.perf_counter() - start:.0f} s")
        growth[n] = memory_growth(url, table, queries)
    print(f"\nworker RSS, {ROUNDS} lexical + {ROUNDS} hybrid retrievals after one dense search")
    print(f"{'chunks':>10} {'before MB':>10} {'after MB':>10} {'growth MB':>10}")
    for n, (before, after) in growth.items():
        print(f"{n:>10,} {before:>10.1f} {after:>10.1f} {after - before:>10.1f}")
    spread = max(a - b for b, a in growth.values()) - min(a - b for b, a in growth.values())
    print(f"growth differs by {spread:.1f} MB across sizes (target < 20 MB)")

    rows = latency(url, f"bench_lex_{SIZES[-1]}", queries)
    dense_store, dense_retriever = rows[0][1], rows[3][1]
    print(f"\nquery latency at {SIZES[-1]:,} chunks (median of {len(queries)} queries, k=10)")
    print(f"{'case':<52} {'ms':>8} {'vs dense':>9}")
    for i, (label, ms) in enumerate(rows):
        anchor = dense_store if i < 3 else dense_retriever
        print(f"{label:<52} {ms:>8.2f} {ms / anchor:>8.2f}x")

    chunks = make_chunks(pool, INGEST, seed=1, prefix="i-")
    print(f"\ningest of {INGEST:,} chunks (embedding excluded), lexical data written vs not")
    print(f"{'case':<52} {'chunks/s':>9} {'ratio':>8}")
    for batch in (100, 1_000):
        bare = ingest_seconds(url, "bench_lex_ingest_bare", chunks, batch, lexical=False)
        full = ingest_seconds(url, "bench_lex_ingest_full", chunks, batch, lexical=True)
        for label, seconds in (("no lexical data", bare), ("lexical data", full)):
            case = f"add, batches of {batch:,} (binary COPY), {label}"
            print(f"{case:<52} {INGEST / seconds:>9,.0f} {bare / seconds:>7.2f}x")
    writers = chunks[:8_000]
    print(f"\n4 concurrent writers, {len(writers):,} chunks in 20-chunk adds (statistics rows)")
    print(f"{'case':<52} {'chunks/s':>9} {'ratio':>8}")
    single = concurrent_writers_seconds(url, writers, 1)
    spread = concurrent_writers_seconds(url, writers, _pg_lexical.STATS_SLOTS)
    for label, seconds in (
        ("one global statistics row", single),
        (f"{_pg_lexical.STATS_SLOTS} per-backend delta rows", spread),
    ):
        print(f"{label:<52} {len(writers) / seconds:>9,.0f} {single / seconds:>7.2f}x")
    print(f"\nload average at the end {os.getloadavg()}")


def main(argv: list[str]) -> None:
    latency_sizes = None
    if argv[:1] == ["--latency"]:  # --latency 100000[,1000000]: the query latencies alone
        latency_sizes, argv = [int(n) for n in argv[1].split(",")], argv[2:]
    with postgres_url() as url:
        folder = Path(argv[0]) if argv else DEFAULT
        if latency_sizes:
            latency_only(url, folder, latency_sizes)
        else:
            run(url, folder)


if __name__ == "__main__":
    main(sys.argv[1:])
