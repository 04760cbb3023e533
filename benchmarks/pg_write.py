"""One large PostgreSQL write: ``PGVectorStore.add`` against a raw COPY floor, same run.

Run: .venv/bin/python -m benchmarks.pg_write [--chunks 5000] [--words 60] [--rounds 3]
(starts the embedded PostgreSQL of the integration tests, or uses PYWRAPAI_TEST_PG_URL)

Each round writes the same chunks (``--words`` words drawn from a Zipf-like vocabulary of
30,000 made-up words, 50 chunks per document, 384-dimensional unit vectors) into fresh,
empty tables, one case after the other:

1. ``COPY, no HNSW``: the rows (with the terms ``add`` sends beside each chunk) in binary
   COPY into a table with only its primary key;
2. ``COPY + HNSW``: the same into a table with the store's HNSW index: the floor;
3. ``add``: one ``PGVectorStore.add`` of all chunks (its postings, statistics, triggers,
   doc_id and GIN indexes, the client's text analysis, in one transaction).

The payload of 1 and 2 is encoded before the clock starts (the server's cost alone). It
prints each case's median over the rounds, in chunks/s and as a share of the floor.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
import uuid
from collections.abc import Callable

import numpy as np

from benchmarks._postgres import postgres_url
from pywrapai_graph import Chunk, PGVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_batch
from pywrapai_graph.adapters.vectorstores.postgres.rows import copy_payload, lexical_terms

DIM = 384
_COLUMNS = "(id, doc_id, text, metadata, embedding, lex_len, lex_doc, terms, dterms)"


def make_chunks(n: int, words: int, seed: int = 0) -> list[Chunk]:
    rng = np.random.default_rng(seed)
    syllables = ["ka", "to", "ri", "mu", "sen", "lo", "va", "pex", "dor", "ni", "quo", "zu"]
    syllables += ["bel", "tra", "fi", "gon"]
    made = {"".join(rng.choice(syllables, size=rng.integers(2, 5))) for _ in range(30_000)}
    vocab = sorted(made)
    p = 1 / np.arange(1, len(vocab) + 1)
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    rows = m.tolist()
    return [
        Chunk(
            " ".join(rng.choice(vocab, size=words, p=p / p.sum())),
            f"d{i // 50}",
            {"source": f"f{i // 50}.txt"},
            f"c{i}",
            rows[i],
        )
        for i in range(n)
    ]


def raw_copy(url: str, chunks: list[Chunk], *, hnsw: bool) -> float:
    """Seconds to COPY the chunks' rows into a fresh table (with the HNSW index or not)."""
    import psycopg2
    from psycopg2 import sql

    batch = prepare_batch(chunks, DIM)
    payload = copy_payload(batch, lexical_terms(batch.chunks, {}))
    table = sql.Identifier(f"floor_{uuid.uuid4().hex[:8]}")
    conn = psycopg2.connect(url)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cur.execute(
            sql.SQL(
                "CREATE TABLE {t} (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, text TEXT NOT NULL, "
                "metadata JSONB NOT NULL, embedding vector({d}) NOT NULL, lex_len INT, "
                "lex_doc INT, terms TEXT, dterms TEXT)"
            ).format(t=table, d=sql.Literal(DIM))
        )
        if hnsw:
            cur.execute(
                sql.SQL("CREATE INDEX ON {t} USING hnsw (embedding vector_cosine_ops)").format(
                    t=table
                )
            )
        start = time.perf_counter()
        copy = sql.SQL(f"COPY {{t}} {_COLUMNS} FROM STDIN WITH (FORMAT binary)").format(t=table)
        cur.copy_expert(copy.as_string(cur), io.BytesIO(payload))
        took = time.perf_counter() - start
        cur.execute(sql.SQL("DROP TABLE {t}").format(t=table))
    conn.close()
    return took


def store_add(url: str, chunks: list[Chunk]) -> float:
    """Seconds for one ``add`` of all chunks into a fresh store."""
    store = PGVectorStore(  # no deadline: a release that sends it as one statement finishes too
        url, table_name=f"add_{uuid.uuid4().hex[:8]}", dimension=DIM, statement_timeout_ms=None
    )
    start = time.perf_counter()
    store.add(chunks)
    took = time.perf_counter() - start
    store.clear()
    store.close()
    return took


def run(url: str, n: int, words: int, rounds: int) -> None:
    chunks = make_chunks(n, words)
    cases: dict[str, Callable[[], float]] = {
        "COPY, no HNSW": lambda: raw_copy(url, chunks, hnsw=False),
        "COPY + HNSW (floor)": lambda: raw_copy(url, chunks, hnsw=True),
        "add": lambda: store_add(url, chunks),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):  # paired: each round runs every case once
        for name, case in cases.items():
            times[name].append(case())
    floor = statistics.median(times["COPY + HNSW (floor)"])
    print(f"\n{n:,} chunks x {words} words, dim {DIM}, median of {rounds} rounds")
    print(f"{'case':<22} {'seconds':>8} {'chunks/s':>9} {'vs floor':>9}")
    for name, seen in times.items():
        t = statistics.median(seen)
        print(f"{name:<22} {t:>8.2f} {n / t:>9,.0f} {floor / t:>8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5000)
    parser.add_argument("--words", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with postgres_url() as url:
        run(url, args.chunks, args.words, args.rounds)


if __name__ == "__main__":
    main()
