"""``document_manifests`` (one round trip per batch) against the per-id lookups it replaced.

Run: .venv/bin/python -m benchmarks.manifest_lookups   (starts an embedded PostgreSQL and a
Chroma server, and the Qdrant REST front of the tests)

Each store holds ``DOCS`` one-chunk documents; a re-ingest asks for their manifests
``WINDOW`` ids at a time (what ``IngestDocuments`` does). Per store, in the same run: the
port's default (one ``document_manifest`` per id: what every store but SQLite did before)
and the store's batch lookup; best of ``RUNS``, and their ratio.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks._table import best_of
from pywrapai_graph import (
    ChromaVectorStore,
    FAISSVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import document_chunks, manifest_for

DOCS, WINDOW, DIM, RUNS = 512, 256, 8, 3


def fill(store: BaseVectorStore) -> list[str]:
    ids = [f"doc-{i}" for i in range(DOCS)]
    for doc_id in ids:
        chunks = document_chunks(doc_id, 1, DIM, doc_id)
        store.replace_document(manifest_for(doc_id, chunks, DIM), chunks)
    return ids


def windows(lookup: Callable[[list[str]], object], ids: list[str]) -> Callable[[], None]:
    def run() -> None:
        for start in range(0, len(ids), WINDOW):
            lookup(ids[start : start + WINDOW])

    return run


def main() -> None:
    from tests.integration.qdrant_rest import QdrantRest
    from tests.integration.servers import ChromaServer, EmbeddedPostgres

    tmp = Path(tempfile.mkdtemp())
    pg, chroma, qdrant = EmbeddedPostgres(), ChromaServer(), QdrantRest()
    pg_url, chroma_url, qdrant_url = pg.start(), chroma.start(), qdrant.start()
    makers: dict[str, Callable[[], BaseVectorStore]] = {
        "SQLite (batch before this change too)": lambda: SQLiteVectorStore(tmp / "s.db"),
        "FAISS": lambda: FAISSVectorStore(tmp / "f.faiss", tmp / "f.meta"),
        "pgvector": lambda: PGVectorStore(pg_url, table_name="bench", dimension=DIM),
        "Chroma embedded": lambda: ChromaVectorStore(path=str(tmp / "c"), collection="bench"),
        "Chroma server": lambda: ChromaVectorStore(url=chroma_url, collection="bench"),
        "Qdrant local": lambda: QdrantVectorStore("bench", location=str(tmp / "q")),
        "Qdrant server (REST front)": lambda: QdrantVectorStore("bench", url=qdrant_url),
    }
    print(f"\n{DOCS} documents' manifests, {WINDOW} ids a lookup, best of {RUNS}")
    print(f"{'store':<40} {'per id ms':>10} {'batch ms':>10} {'ratio':>8}")
    try:
        for name, make in makers.items():
            store = make()
            try:
                ids = fill(store)
                assert store.document_manifests(ids) == BaseVectorStore.document_manifests(
                    store, ids
                )
                per_id = partial(BaseVectorStore.document_manifests, store)
                one_by_one = best_of(windows(per_id, ids), repeat=RUNS)
                batched = best_of(windows(store.document_manifests, ids), repeat=RUNS)
            finally:
                store.close()
            ratio = one_by_one / batched
            print(f"{name:<40} {one_by_one * 1e3:>10.1f} {batched * 1e3:>10.1f} {ratio:>7.1f}x")
    finally:
        qdrant.stop()
        chroma.stop()
        pg.stop()


if __name__ == "__main__":
    main()
