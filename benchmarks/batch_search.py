"""Batch search on the engine stores: 32 queries as one ``search_many`` vs 32 ``search`` calls.

Run: .venv/bin/python -m benchmarks.batch_search  (starts the embedded PostgreSQL and Chroma
server of the integration tests, or uses PYWRAPAI_TEST_PG_URL / PYWRAPAI_TEST_CHROMA_URL;
a Qdrant server is used when PYWRAPAI_TEST_QDRANT_URL is set)

Each store holds the same 10,000 x 384 clustered vectors (10 chunks per document, a
``parity`` metadata key). For each store, in the same run: 32 single searches (the anchor,
1.00x), the same 32 queries as one ``search_many`` (one engine request: Chroma ``query``
with 32 embeddings, Qdrant ``query_batch_points``, pgvector one ``LATERAL`` statement), and
both again with a filter. The results of the batch are checked equal to the singles first.
On the Chroma server, the async side as well: 32 concurrent ``asearch`` on one loop
(``AsyncHttpClient``) vs one ``asearch_many``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks._data import chunk_batches, clustered_vectors
from benchmarks._table import best_of, print_table
from pywrapai_graph import ChromaVectorStore, PGVectorStore, QdrantVectorStore, ScoredChunk
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter

N, DIM, Q, K = 10_000, 384, 32, 10
FILTER = {"parity": "even"}


def fill(store: BaseVectorStore) -> None:
    for batch in chunk_batches(clustered_vectors(N, DIM), 1000):
        for chunk in batch:
            chunk.metadata = {"parity": "even" if int(chunk.id) % 2 == 0 else "odd"}
        store.add(batch)


def ids(results: list[list[ScoredChunk]]) -> list[list[str]]:
    return [[h.chunk.id for h in r] for r in results]


def rows_for(name: str, store: BaseVectorStore) -> list[tuple[str, float, float]]:
    queries = clustered_vectors(Q, DIM, seed=7).tolist()
    rows: list[tuple[str, float, float]] = []
    for label, where in (("", None), (" + filter", FILTER)):

        def singles(where: MetadataFilter | None = where) -> list[list[ScoredChunk]]:
            return [store.search(q, K, where) for q in queries]

        def batch(where: MetadataFilter | None = where) -> list[list[ScoredChunk]]:
            return store.search_many(queries, K, where)

        assert ids(batch()) == ids(singles())
        t_single = best_of(singles)
        t_batch = best_of(batch)
        rows.append((f"{name}: {Q} x search{label}", t_single, 1.0))
        rows.append((f"{name}: search_many{label}", t_batch, t_batch / t_single))
    return rows


def async_rows(name: str, store: BaseVectorStore) -> list[tuple[str, float, float]]:
    queries = clustered_vectors(Q, DIM, seed=7).tolist()

    async def measure() -> tuple[float, float]:
        async def gathered() -> object:
            return await asyncio.gather(*(store.asearch(q, K) for q in queries))

        async def batched() -> object:
            return await store.asearch_many(queries, K)

        loop = asyncio.get_running_loop()
        times: list[float] = []
        for make in (gathered, batched):
            await make()  # the loop's async client is built here, not timed
            best = float("inf")
            for _ in range(5):
                start = loop.time()
                await make()
                best = min(best, loop.time() - start)
            times.append(best)
        return times[0], times[1]

    t_gather, t_batch = asyncio.run(measure())
    return [
        (f"{name}: {Q} concurrent asearch, one loop", t_gather, 1.0),
        (f"{name}: asearch_many", t_batch, t_batch / t_gather),
    ]


@contextlib.contextmanager
def server(env: str, start: Callable[[], tuple[str, Callable[[], None]]]) -> Iterator[str]:
    url = os.environ.get(env)
    if url:
        yield url
        return
    url, stop = start()
    try:
        yield url
    finally:
        stop()


def embedded_pg() -> tuple[str, Callable[[], None]]:
    from tests.integration.servers import EmbeddedPostgres

    pg = EmbeddedPostgres()
    return pg.start(), pg.stop


def embedded_chroma() -> tuple[str, Callable[[], None]]:
    from tests.integration.servers import ChromaServer

    chroma = ChromaServer()
    return chroma.start(), chroma.stop


def main() -> None:
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        with (
            server("PYWRAPAI_TEST_PG_URL", embedded_pg) as pg_url,
            PGVectorStore(pg_url, table_name="batch_bench", dimension=DIM) as pg,
        ):
            pg.clear()
            fill(pg)
            rows += rows_for("pgvector (HNSW)", pg)
        with (
            server("PYWRAPAI_TEST_CHROMA_URL", embedded_chroma) as chroma_url,
            ChromaVectorStore(url=chroma_url, collection="batch-bench") as chroma,
        ):
            chroma.clear()
            fill(chroma)
            rows += rows_for("Chroma server", chroma)
            rows += async_rows("Chroma server", chroma)
        with ChromaVectorStore(path=Path(tmp) / "chroma", collection="bench") as embedded:
            fill(embedded)
            rows += rows_for("Chroma embedded", embedded)
        with QdrantVectorStore("bench", path=Path(tmp) / "qdrant") as local:
            fill(local)
            rows += rows_for("Qdrant local", local)
        qdrant_url = os.environ.get("PYWRAPAI_TEST_QDRANT_URL")
        if qdrant_url:
            with QdrantVectorStore("batch_bench", url=qdrant_url) as remote:
                remote.clear()
                fill(remote)
                rows += rows_for("Qdrant server", remote)
                rows += async_rows("Qdrant server", remote)
    print_table(
        f"{Q} queries, top-{K}, {N:,} x {DIM} (best of 5; ratio to the singles of that store)",
        rows,
        unit="ms",
    )


if __name__ == "__main__":
    main()
