"""The vector-store contract against real servers: PostgreSQL+pgvector, Chroma, Qdrant."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import ChromaVectorStore, PGVectorStore, QdrantVectorStore
from pywrapai_graph.errors import ConfigurationError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks
from tests.interrupted import VersionedInterrupts, Writes, pg_open_transaction


def name_for(location: Path, prefix: str) -> str:
    return f"{prefix}_{hashlib.sha1(str(location).encode()).hexdigest()[:12]}"


class TestPGVectorStore(VectorStoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, pg_url: str) -> None:
        self.url = pg_url

    def new_store(self, location: Path) -> BaseVectorStore:
        return PGVectorStore(self.url, table_name=name_for(location, "t"), dimension=self.dim)

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Writes
    ) -> AbstractContextManager[None] | None:
        assert isinstance(store, PGVectorStore)
        return pg_open_transaction(self.url, store._table, writes)


class TestChromaEmbedded(VersionedInterrupts, VectorStoreContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return ChromaVectorStore(path=str(location / "chroma"), collection="contract")


class TestChromaServer(VersionedInterrupts, VectorStoreContract):
    @pytest.fixture(autouse=True)
    def _server(self, chroma_url: str) -> None:
        self.url = chroma_url

    def new_store(self, location: Path) -> BaseVectorStore:
        return ChromaVectorStore(url=self.url, collection=name_for(location, "c"))


class TestQdrantServer(VersionedInterrupts, VectorStoreContract):
    lexical_exact = False  # term weights written with the chunk (a sparse vector)
    lexical_fixed_bm25 = True
    engine_fusions = frozenset({"rescored", "weighted"})  # Qdrant's DBSF

    @pytest.fixture(autouse=True)
    def _server(self, qdrant_url: str) -> None:
        self.url = qdrant_url

    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore(name_for(location, "q"), url=self.url)


# ---------------------------------------------------------------------------- pgvector specifics
@pytest.fixture
def pg_store(pg_url: str, tmp_path: Path) -> Iterator[PGVectorStore]:
    store = PGVectorStore(pg_url, table_name=name_for(tmp_path, "s"), dimension=8)
    yield store
    store.close()


@pytest.mark.parametrize("name", ['x"; DROP TABLE y; --', "1abc", "a-b", "", "x" * 60, "a.b"])
def test_pg_hostile_table_names_refused(pg_url: str, name: str) -> None:
    with pytest.raises(ConfigurationError, match="not a valid identifier"):
        PGVectorStore(pg_url, table_name=name, dimension=8)


def test_pg_dimension_mismatch_with_existing_table(pg_url: str, pg_store: PGVectorStore) -> None:
    pg_store.add(make_chunks(2, 8))
    with pytest.raises(ConfigurationError, match="dimension 8"):
        PGVectorStore(pg_url, table_name=pg_store._table, dimension=16)


def test_pg_creates_extension_table_and_hnsw_index(pg_url: str, pg_store: PGVectorStore) -> None:
    import psycopg2

    with psycopg2.connect(pg_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE tablename = %s", (pg_store._table,))
        defs = " ".join(r[0] for r in cur.fetchall())
    conn.close()
    assert "hnsw (embedding vector_cosine_ops)" in defs
    assert "gin (metadata)" in defs


def idle_connection(store: PGVectorStore) -> Any:
    """The one idle pooled connection of a store made with pool_size=1."""
    store.count()
    [slot] = store._pool.slots
    return slot.conn


@pytest.fixture
def pg_store1(pg_url: str, tmp_path: Path) -> Iterator[PGVectorStore]:
    store = PGVectorStore(pg_url, table_name=name_for(tmp_path, "s"), dimension=8, pool_size=1)
    yield store
    store.close()


def test_pg_one_round_trip_per_batch(pg_store1: PGVectorStore) -> None:
    pg_store = pg_store1
    statements: list[str] = []
    conn = idle_connection(pg_store)

    class Tracing(type(conn.cursor())):  # type: ignore[misc]
        def execute(self, query: object, vars: object = None) -> object:
            statements.append(str(query))
            return super().execute(query, vars)

        def copy_expert(self, query: object, file: object, *args: object) -> object:
            statements.append(str(query))
            return super().copy_expert(query, file, *args)

    conn.cursor_factory = Tracing
    pg_store.add(make_chunks(500, 8))
    assert len([s for s in statements if s.startswith("COPY")]) == 1  # chunks and their terms
    inserts = [s for s in statements if "INSERT INTO" in s]
    assert len(inserts) == 2 and "__terms" in inserts[1]  # the upsert, then the postings
    assert len(pg_store) == 500


def test_pg_reconnects_once_after_a_dropped_connection(
    pg_url: str, pg_store1: PGVectorStore
) -> None:
    import psycopg2

    pg_store = pg_store1
    chunks = make_chunks(5, 8)
    pg_store.add(chunks)
    pid = idle_connection(pg_store).get_backend_pid()
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
    admin.close()
    assert pg_store.search(chunks[0].embedding or [], k=1)[0].chunk.id == chunks[0].id


def test_pg_unreachable_server_hides_password() -> None:
    with pytest.raises(VectorStoreError) as info:
        PGVectorStore("postgresql://user:s3cret-pw@127.0.0.1:1/db", table_name="t", dimension=8)
    assert "s3cret-pw" not in str(info.value)
    assert "cannot reach PostgreSQL at 127.0.0.1:1: the connection was refused" in str(info.value)


def test_pg_filter_runs_on_the_server(pg_store: PGVectorStore) -> None:
    chunks = make_chunks(40, 8, docs=4)
    pg_store.add(chunks)
    hits = pg_store.search(chunks[0].embedding or [], k=40, filter={"doc": "doc-2"})
    assert {h.chunk.id for h in hits} == {c.id for c in chunks if c.doc_id == "doc-2"}


# ---------------------------------------------------------------------------- chroma specifics
@pytest.mark.parametrize("name", ["ab", "-abc", "abc-", "a..b", "192.168.0.1", "x y z", "a" * 600])
def test_chroma_collection_names_validated(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid Chroma collection name"):
        ChromaVectorStore(path=str(tmp_path), collection=name)


def test_chroma_needs_exactly_one_location(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        ChromaVectorStore(collection="docs")
    with pytest.raises(ConfigurationError, match="exactly one"):
        ChromaVectorStore(path=str(tmp_path), url="http://localhost:8000", collection="docs")


def test_chroma_uses_cosine_space_and_no_default_embedder(tmp_path: Path) -> None:
    store = ChromaVectorStore(path=str(tmp_path), collection="docs")
    store.add(make_chunks(3, 8))
    config = store._collection.configuration_json
    assert config["hnsw"]["space"] == "cosine"
    assert config["hnsw"]["ef_search"] == 400
    assert store._collection._embedding_function is None


def test_a_qdrant_server_collection_the_store_did_not_make_is_refused_at_open(
    qdrant_rest_url: str, tmp_path: Path
) -> None:
    """No release made a collection without the sparse vectors of lexical search (Qdrant cannot
    add one to a collection): such a collection is refused at open, naming what to do."""
    from qdrant_client import QdrantClient, models

    name = name_for(tmp_path, "foreign")
    raw = QdrantClient(url=qdrant_rest_url, check_compatibility=False)
    raw.create_collection(  # the dense vector alone
        name, vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    with pytest.raises(VectorStoreError, match=r"sparse vectors.*delete it or use another"):
        QdrantVectorStore(name, url=qdrant_rest_url)
    assert raw.count(name).count == 0  # nothing written to it
    raw.close()
