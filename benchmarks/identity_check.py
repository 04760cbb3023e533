"""The embedder-identity check of every dense query: its cost per backend, as a ratio to a
dense query in the same run.

Run: OPENBLAS_NUM_THREADS=1 .venv/bin/python -m benchmarks.identity_check
(starts an embedded PostgreSQL and a Chroma server, or uses PYWRAPAI_TEST_PG_URL /
PYWRAPAI_TEST_CHROMA_URL; Qdrant server only with PYWRAPAI_TEST_QDRANT_URL or Docker.)

Each store holds 5,000 chunks of clustered 128-d vectors and a recorded embedder (one
``replace_document``). For 30 queries, k=10: the median over the queries of each one's
best of 5 rounds (the cases take turns on each query):

* ``dense``: ``store.search`` (the anchor). The built-in stores read the identity inside it:
  PostgreSQL's statement selects it, Chroma and Qdrant fetch the embedder record with the
  records every search looks up, SQLite and FAISS re-read it only after a commit.
* ``checked``: what the retriever does at every query: the search inside an identity probe,
  then the comparison (``check_embedder``).
* ``asked``: the search, then ``store.embedder_identity()``: a check that asks the store
  separately (one more round trip on a server): what the probe avoids.
* ``lookup``: the part of the search that carries the identity, with and without it
  (PostgreSQL: the statement without the identity column; Chroma, Qdrant: the record lookup
  without the embedder record); the difference is the identity's own cost.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks._data import chunk_batches, clustered_vectors
from pywrapai_graph import (
    ChromaVectorStore,
    Chunk,
    FAISSVectorStore,
    InMemoryVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_query
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.identity_probe import identity_probe
from pywrapai_graph.ports.vector_store import check_embedder

N, DIM, K, QUERIES, ROUNDS = 5_000, 128, 10, 30, 5
MINE = EmbedderIdentity("bench", "fixed", DIM)


def per_query(fns: list[Callable[[Any], object]], queries: list[Any]) -> list[float]:
    """For each function, the median over the queries of each query's best time (seconds)
    over ``ROUNDS``; the functions take turns on each query, so a load that changes during
    the run (a shared machine) weighs on all of them alike."""
    best = [[float("inf")] * len(queries) for _ in fns]
    for _ in range(ROUNDS):
        for i, q in enumerate(queries):
            for times, fn in zip(best, fns, strict=True):
                start = time.perf_counter()
                fn(q)
                times[i] = min(times[i], time.perf_counter() - start)
    return [statistics.median(times) for times in best]


def fill(store: BaseVectorStore, matrix: Any) -> None:
    for batch in chunk_batches(matrix[:-1]):
        store.add(batch)
    last = Chunk("the last one", "last", {}, "last", embedding=[float(x) for x in matrix[-1]])
    store.replace_document(DocumentManifest("last", "h", 1, MINE), [last])
    assert store.embedder_identity() == MINE


def checked(store: BaseVectorStore) -> Callable[[Any], object]:
    def run(q: Any) -> object:
        with identity_probe() as probe:
            hits = store.search(q, k=K)
        check_embedder(probe.identity if probe.seen else store.embedder_identity(), MINE)
        return hits

    return run


def lookups(store: BaseVectorStore) -> tuple[Callable[[Any], object], Callable[[Any], object]]:
    """(the identity-carrying part of a search, the same without the identity)."""
    if isinstance(store, PGVectorStore):
        info, table = f'"{store._table}__info"', f'"{store._table}"'
        base = (
            "SELECT id, doc_id, text, metadata, 1 - (embedding <=> %s) AS score{} "
            f"FROM {table} ORDER BY embedding <=> %s LIMIT {K}"
        )
        with_it = base.format(f", (SELECT value FROM {info} WHERE key = 'embedder')")
        without = base.format("")

        def sql(statement: str) -> Callable[[Any], object]:
            return lambda q: store._rows(statement, [prepare_query(q, DIM)] * 2)

        return sql(with_it), sql(without)
    docs = [f"d{i}" for i in range(K)] + ["last"]
    return (
        lambda q: store._search_records(docs),  # type: ignore[attr-defined]
        lambda q: store._records(docs),  # type: ignore[attr-defined]
    )


@contextmanager
def stores(folder: Path) -> Iterator[list[tuple[str, BaseVectorStore]]]:
    from pywrapai_graph.testing.servers import ServerUnavailable, server_url

    with ExitStack() as stack:
        made: list[tuple[str, BaseVectorStore]] = [
            ("in-memory", InMemoryVectorStore()),
            ("sqlite", SQLiteVectorStore(folder / "s.db")),
            ("faiss", FAISSVectorStore(str(folder / "f.faiss"), str(folder / "f.json"))),
            (
                "chroma embedded",
                ChromaVectorStore(path=str(folder / "chroma"), collection="identity_b"),
            ),
            ("qdrant local", QdrantVectorStore("identity_b", path=str(folder / "qdrant"))),
        ]
        pg = stack.enter_context(server_url("postgres"))
        made.append(("postgres", PGVectorStore(pg, table_name="identity_bench", dimension=DIM)))
        chroma = stack.enter_context(server_url("chroma"))
        made.append(("chroma server", ChromaVectorStore(url=chroma, collection="identity_b")))
        try:
            qdrant = stack.enter_context(server_url("qdrant"))
            made.append(("qdrant server", QdrantVectorStore("identity_b", url=qdrant)))
        except ServerUnavailable as exc:
            print(f"(qdrant server skipped: {exc})")
        try:
            yield made
        finally:
            for _, store in made:
                store.close()


def measure(name: str, store: BaseVectorStore, queries: list[Any]) -> str:
    """One backend's row."""

    def dense_query(q: Any) -> object:
        return store.search(q, k=K)

    def asked_query(q: Any) -> object:
        return store.search(q, k=K), store.embedder_identity()

    fns = [dense_query, checked(store), asked_query]
    if name.startswith(("postgres", "chroma", "qdrant")):
        fns += lookups(store)
    dense, check, asked, *lookup = per_query(fns, queries)
    row = f"{name:<16} {dense * 1e6:>9.0f} {check * 1e6:>8.0f} {check / dense:>5.2f}x"
    row += f" {asked * 1e6:>8.0f} {asked / dense:>5.2f}x"
    if lookup:
        row += f" {lookup[0] * 1e6:>9.0f} / {lookup[1] * 1e6:<9.0f}"
    return row


def main() -> None:
    matrix = clustered_vectors(N, DIM)
    queries = [[float(x) for x in row] for row in clustered_vectors(QUERIES, DIM, seed=7)]
    print(f"{N} chunks x {DIM}d, k={K}: median per query (µs) and ratio to the dense query")
    print(f"{'backend':<16} {'dense':>9} {'checked':>15} {'asked':>15} {'lookup with/without':>24}")
    with tempfile.TemporaryDirectory() as tmp, stores(Path(tmp)) as made:
        for name, store in made:
            store.clear()
            fill(store, matrix)
            print(measure(name, store, queries), flush=True)


if __name__ == "__main__":
    main()
