"""A Qdrant folder (``location=``): our store on Qdrant Edge vs qdrant-client's local mode.

Run: .venv/bin/python -m benchmarks.qdrant_folder

The anchor (1.00x) is qdrant-client's local mode used bare, on a folder of its own: the engine
``location=`` folders ran on before this release (points pickled into SQLite), without our
seal, records or lexical terms, so it is a floor for what that store cost. Against it, in
the same run, the whole ``QdrantVectorStore`` on a folder, now Qdrant Edge in process: the
same 1,000 x 384 clustered vectors written in batches of 500 (with the chunk's text and a
``parity`` key), the folder closed and opened again, one search, and one search filtered on
``parity``. Each row's ratio is ours / qdrant-client's (below 1: faster).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._data import chunk_batches, clustered_vectors
from benchmarks._table import best_of, print_table
from pywrapai_graph import QdrantVectorStore

N, DIM = 1_000, 384
FILTER = {"parity": "even"}


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ours(folder: Path) -> dict[str, float]:
    store = QdrantVectorStore("bench", location=str(folder))
    batches = list(chunk_batches(clustered_vectors(N, DIM), 500))
    for batch in batches:
        for chunk in batch:
            chunk.metadata = {"parity": "even" if int(chunk.id) % 2 == 0 else "odd"}

    def write() -> None:
        for batch in batches:
            store.add(batch)

    took = {"write": _timed(write)}
    store.close()
    holder: list[QdrantVectorStore] = []
    took["open"] = _timed(lambda: holder.append(QdrantVectorStore("bench", location=str(folder))))
    store = holder[0]
    query = clustered_vectors(1, DIM, seed=7)[0].tolist()
    took["search"] = best_of(lambda: store.search(query, 10))
    took["filtered search"] = best_of(lambda: store.search(query, 10, FILTER))
    store.close()
    return took


def bare_local_mode(folder: Path) -> dict[str, float]:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(folder))
    params = models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    client.create_collection("bench", vectors_config=params)
    points: list[list[Any]] = [
        [
            models.PointStruct(
                id=int(c.id),
                vector=c.embedding or [],
                payload={"text": c.text, "parity": "even" if int(c.id) % 2 == 0 else "odd"},
            )
            for c in batch
        ]
        for batch in chunk_batches(clustered_vectors(N, DIM), 500)
    ]
    took = {"write": _timed(lambda: [client.upsert("bench", b) for b in points])}
    client.close()
    holder: list[QdrantClient] = []
    took["open"] = _timed(lambda: holder.append(QdrantClient(path=str(folder))))
    client = holder[0]
    query = clustered_vectors(1, DIM, seed=7)[0].tolist()
    match = models.Filter(
        must=[models.FieldCondition(key="parity", match=models.MatchValue(value="even"))]
    )
    took["search"] = best_of(lambda: client.query_points("bench", query=query, limit=10))
    took["filtered search"] = best_of(
        lambda: client.query_points("bench", query=query, limit=10, query_filter=match)
    )
    client.close()
    return took


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        floor = bare_local_mode(Path(tmp) / "local")
        edge = ours(Path(tmp) / "edge")
    rows = []
    for case in floor:
        rows.append((f"qdrant-client local mode: {case}", floor[case], 1.0))
        rows.append(
            (f"QdrantVectorStore on Qdrant Edge: {case}", edge[case], edge[case] / floor[case])
        )
    print_table(f"A Qdrant folder, {N:,} x {DIM} (cosine)", rows, unit="ms")


if __name__ == "__main__":
    main()
