"""``document_manifests`` costs one round trip per batch of ids, not one per document.

Counted where the requests go: SQL statements on the connection (FAISS's metadata file,
PostgreSQL), HTTP requests on the wire (a Chroma server behind a counting proxy, Qdrant's
REST front). Each test also runs the port's per-id default on the same store, which makes
one round trip per document, so the counts can tell the two apart; and the answers agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import ChromaVectorStore, FAISSVectorStore, PGVectorStore, QdrantVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import document_chunks, manifest_for
from tests.integration.qdrant_rest import QdrantRest
from tests.integration.servers import CountingProxy
from tests.integration.test_server_stores import idle_connection, name_for

DIM = 8
STORED = 12  # documents written; the rest of the ids asked for are absent
BATCH = 256  # what ingest asks for at once
# ids the per-id default is run on over the wire: present and absent ones, and far more
# requests than the one a batch makes (each costs a round trip to a real server)
CONTROL = 32


def fill(store: BaseVectorStore) -> dict[str, DocumentManifest]:
    written = {}
    for i in range(STORED):
        chunks = document_chunks(f"doc-{i}", 1, DIM, f"v{i}")
        written[f"doc-{i}"] = manifest_for(f"doc-{i}", chunks, DIM)
        store.replace_document(written[f"doc-{i}"], chunks)
    return written


def batch(n: int = BATCH) -> list[str]:
    return [f"doc-{i}" for i in range(n)]


def per_id(store: BaseVectorStore, ids: list[str]) -> dict[str, DocumentManifest]:
    """The port's default: one ``document_manifest`` per id."""
    return BaseVectorStore.document_manifests(store, ids)


def test_faiss_one_in_query_per_500_ids(tmp_path: Path) -> None:
    store = FAISSVectorStore(tmp_path / "i.faiss", tmp_path / "m.db")
    written = fill(store)
    statements: list[str] = []
    store._meta.set_trace_callback(statements.append)

    def lookups() -> int:
        found = sum("FROM documents" in s for s in statements)
        statements.clear()
        return found

    assert store.document_manifests(batch()) == written
    assert lookups() == 1
    assert store.document_manifests(batch(600)) == written
    assert lookups() == 2  # 500 + 100 ids
    assert per_id(store, batch()) == written
    assert lookups() == BATCH
    store._meta.set_trace_callback(None)
    store.close()


@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[PGVectorStore]:
    store = PGVectorStore(pg_url, table_name=name_for(tmp_path, "m"), dimension=DIM, pool_size=1)
    yield store
    store.close()


def test_pgvector_one_query_per_batch(pg_store: PGVectorStore) -> None:
    written = fill(pg_store)
    statements: list[str] = []
    conn = idle_connection(pg_store)

    class Tracing(type(conn.cursor())):  # type: ignore[misc]
        def execute(self, query: object, vars: object = None) -> object:
            statements.append(query.as_string(conn) if hasattr(query, "as_string") else str(query))
            return super().execute(query, vars)

    conn.cursor_factory = Tracing

    def lookups() -> int:
        found = sum("__docs" in s for s in statements)
        statements.clear()
        return found

    assert pg_store.document_manifests(batch(1000)) == written
    assert lookups() == 1
    assert per_id(pg_store, batch()) == written
    assert lookups() == BATCH


@pytest.fixture
def chroma_proxy(chroma_url: str) -> Iterator[CountingProxy]:
    proxy = CountingProxy(chroma_url)
    proxy.start()
    yield proxy
    proxy.stop()


def _wire_test(store: Any, requests: list[tuple[str, str]]) -> None:
    written = fill(store)
    requests.clear()
    assert store.document_manifests(batch()) == written
    assert len(requests) == 1, requests
    requests.clear()
    assert per_id(store, batch(CONTROL)) == written
    assert len(requests) == CONTROL
    requests.clear()
    assert store.document_manifests(batch(1000)) == written
    assert len(requests) == 2  # 500 ids a request
    store.close()


def test_chroma_server_one_request_per_batch(chroma_proxy: CountingProxy, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{chroma_proxy.server.server_address[1]}"
    store = ChromaVectorStore(url=url, collection=name_for(tmp_path, "m"))
    _wire_test(store, chroma_proxy.requests)


def test_qdrant_server_one_request_per_batch(qdrant_rest: QdrantRest, tmp_path: Path) -> None:
    collection = name_for(tmp_path, "m")
    _wire_test(QdrantVectorStore(collection, url=qdrant_rest.url), qdrant_rest.requests)
    # the first lookup after an open checks that the records collection exists (a store
    # sends no request that fails); each lookup after that is one retrieve
    store = QdrantVectorStore(collection, url=qdrant_rest.url)
    qdrant_rest.requests.clear()
    assert len(store.document_manifests(batch())) == STORED
    assert [p.rsplit("/", 1)[-1] for _, p in qdrant_rest.requests] == ["exists", "points"]
    qdrant_rest.requests.clear()
    for _ in range(3):
        assert len(store.document_manifests(batch())) == STORED
    assert [p.rsplit("/", 1)[-1] for _, p in qdrant_rest.requests] == ["points"] * 3
    # another process clears the store: the next lookup finds no records, not an error
    other = QdrantVectorStore(collection, url=qdrant_rest.url)
    other.clear()
    other.close()
    assert store.document_manifests(batch()) == {}
    assert store.document_manifest("doc-1") is None
    fresh = document_chunks("doc-1", 1, DIM, "again")
    store.replace_document(manifest_for("doc-1", fresh, DIM), fresh)
    assert store.document_manifests(batch()) == {"doc-1": manifest_for("doc-1", fresh, DIM)}
    store.close()
