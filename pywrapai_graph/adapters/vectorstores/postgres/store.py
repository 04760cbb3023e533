"""PGVectorStore: PostgreSQL + pgvector, HNSW cosine index, server-side filtering."""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    prepare_batch,
    prepare_query,
    query_norm,
)
from pywrapai_graph.adapters.vectorstores.postgres import bm25, rows, schema
from pywrapai_graph.adapters.vectorstores.postgres.connection import (
    DEFAULT_EF_SEARCH,
    PGConnection,
    T,
)
from pywrapai_graph.adapters.vectorstores.postgres.rows import Pacer
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity, manifests_from_json
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["PGVectorStore"]

DEFAULT_POOL_SIZE = 4
#: A service sheds load in seconds rather than queueing callers behind a stuck server.
DEFAULT_POOL_TIMEOUT_MS = 5_000
#: Far beyond any search or document write, short enough to fail while the client waits.
DEFAULT_STATEMENT_TIMEOUT_MS = 30_000


class PGVectorStore(PGConnection, BaseVectorStore):
    """Chunks in a PostgreSQL table with a ``vector(dimension)`` column.

    It creates the ``vector`` extension and its tables when missing (``schema``): chunks with
    an HNSW index, and the postings PostgreSQL computes BM25 from. A retrieval is one statement
    (``bm25``); a write one transaction of paced slices (``rows.Pacer``). A dropped connection
    is re-established once before an error is raised.

    Args:
        connection_string: a libpq URL or DSN; its password never appears in errors or reprs.
        table_name: a plain identifier (letters, digits, underscores).
        dimension: must match the embedding model, and an existing table.
        ef_search: HNSW search breadth for this store's session.
        pool_size: server connections shared by threads and the async offload; callers
            wait for one in arrival order.
        pool_timeout_ms: how long a call waits for a pooled connection before
            :class:`StoreBusyError` (None: as long as its deadline allows).
        statement_timeout_ms: each call's deadline from when it is made, queueing included
            (and each statement's of a large write); :class:`StoreTimeoutError` says whether
            the write was rolled back. None: no deadline.
        create_schema: create the extension, tables and indexes when missing (DDL rights).
            False for a DML-only role: run ``pywrapai-graph store init`` (or
            :meth:`init_schema`) once as the owner.

    Raises:
        ConfigurationError: invalid table name, or a dimension that disagrees with the table.
        MissingExtraError: ``psycopg2-binary``/``pgvector`` are not installed.
        VectorStoreError: the server cannot be reached or refuses the setup.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "postgresql"
    #: lexical: BM25 computed by PostgreSQL; not exact: HNSW
    persistent = atomic_documents = lexical = True
    exact = False

    def __init__(
        self,
        connection_string: str,
        table_name: str = "vector_chunks",
        dimension: int = 1536,
        *,
        ef_search: int = DEFAULT_EF_SEARCH,
        pool_size: int = DEFAULT_POOL_SIZE,
        pool_timeout_ms: int | None = DEFAULT_POOL_TIMEOUT_MS,
        statement_timeout_ms: int | None = DEFAULT_STATEMENT_TIMEOUT_MS,
        create_schema: bool = True,
    ) -> None:
        self._ef_search = ef_search
        self._prepare(
            connection_string,
            table_name,
            dimension,
            pool_size,
            statement_timeout_ms,
            pool_timeout_ms,
        )
        self._lock = threading.RLock()
        self._bulk = 0
        self._owns_schema = create_schema

        def opened(cur: Any) -> bool:
            created = schema.open_schema(
                cur.connection, self._sql, table_name, dimension, create=create_schema
            )
            # the extension may be newer than this connection (made by us or by another
            # process racing us): adapt vectors on it too
            self._register(cur.connection)
            return created

        # no deadline: DDL may wait for another's lock
        operation = "CREATE" if create_schema else "SELECT"
        self._created = self._run(opened, operation, transaction=False, deadline=False)

    @classmethod
    def init_schema(cls, connection_string: str, table_name: str, dimension: int) -> bool:
        """Create the extension, tables and indexes, as the owner; False if they were there.

        Raises:
            ConfigurationError: another dimension, or a schema version newer than this release.
            VectorStoreError: the server cannot be reached, or a right is missing (named).
        """
        store = cls(
            connection_string, table_name, dimension, pool_size=1, statement_timeout_ms=None
        )
        store.close()
        return store._created

    @property
    def pool_size(self) -> int:
        """The most server connections this store opens at once."""
        return self._pool_size

    @property
    def dimension(self) -> int:
        """The table's vector dimension."""
        return self._dim

    @classmethod
    def grant_statements(
        cls,
        connection_string: str,
        table_name: str = "vector_chunks",
        *,
        reader: str | None = None,
        writer: str | None = None,
    ) -> list[str]:
        """The GRANT statements (with ``--`` comments) giving ``reader`` read-only and
        ``writer`` read-write use of an existing store, for the owner to run.

        Raises:
            InvalidArgumentError: neither role named.
            VectorStoreError: the server cannot be reached, or the table does not exist.
        """
        store = cls.__new__(cls)  # not opened: the dimension is the table's
        store._prepare(connection_string, table_name, 1, 1, None)
        try:  # an owner's one-off command, no deadline
            return store._run(
                lambda cur: schema.grant_statements(
                    cur.connection, store._sql, table_name, reader, writer
                ),
                transaction=False,
                deadline=False,
            )
        finally:
            store._pool.closeall()

    def _write(self, operation: str, work: Callable[[Any, Pacer], T]) -> T:
        """``work(cursor, pacer)`` as one transaction of paced statements (:class:`Pacer`)."""

        def paced(cur: Any) -> T:
            seconds = None if self._timeout_ms is None else self._timeout_ms / 1000
            pace = Pacer(cur.connection, seconds)
            result = work(cur, pace)
            pace.statement()  # for the statements left and the COMMIT
            return result

        with self._lock:
            return self._run(paced, operation)

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many chunks fast: on an empty table the HNSW index is dropped and built once on
        exit (searches meanwhile scan exactly). Nested calls join the outer."""
        with self._lock:
            # a DML-only role (create_schema=False) may not drop and rebuild the index
            rebuild = self._owns_schema and self._bulk == 0 and self.count() == 0
            if rebuild:
                drop = self._sql.SQL("DROP INDEX IF EXISTS {i}").format(i=self._ident("_hnsw"))
                self._run(lambda cur: cur.execute(drop))
            self._bulk += 1
        try:
            yield
        finally:
            with self._lock:
                self._bulk -= 1
                if rebuild:
                    self._run(self._build_hnsw, "CREATE", deadline=False)

    def _build_hnsw(self, cur: Any) -> None:
        cur.execute("SET LOCAL maintenance_work_mem = '256MB'")
        cur.execute("SET LOCAL statement_timeout = 0")  # an index build takes what it takes
        cur.execute(self._sql.SQL(schema.HNSW).format(**rows.names(self._sql, self._table)))

    def _lock_document(self, cur: Any, doc_id: str) -> None:
        """Writers of one document take turns: under READ COMMITTED a replace's DELETE does
        not see a concurrent replace's rows, so both versions would stay."""
        key = hashlib.blake2b(f"{self._table}\x00{doc_id}".encode(), digest_size=8).digest()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(key, signed=True),))

    def _forget(self, cur: Any, doc_ids: Sequence[str]) -> None:
        """Drop the manifests of documents changed outside ``replace_document``."""
        cur.execute(
            self._sql.SQL("DELETE FROM {d} WHERE doc_id = ANY(%s)").format(d=self._ident("__docs")),
            (sorted(set(doc_ids)),),
        )

    def _add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._dim)

        def work(cur: Any, pace: Pacer) -> None:
            rows.write_chunks(cur, self._sql, self._table, batch, pace)
            self._forget(cur, [c.doc_id for c in batch.chunks])

        if batch.ids:
            self._write("INSERT", work)

    def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        batch = prepare_batch(chunks, self._dim)
        sql = self._sql

        def work(cur: Any, pace: Pacer) -> int:
            self._lock_document(cur, manifest.doc_id)
            # the first writer's identity wins, even against a concurrent first writer
            if manifest.embedder.dimension:
                cur.execute(
                    sql.SQL(
                        "INSERT INTO {i} (key, value) VALUES ('embedder', %s) "
                        "ON CONFLICT (key) DO NOTHING"
                    ).format(i=self._ident("__info")),
                    (manifest.embedder.to_json(),),
                )
            check_embedder(self._recorded(cur), manifest.embedder)
            cur.execute(
                sql.SQL(
                    "INSERT INTO {d} (doc_id, manifest) VALUES (%s, %s) "
                    "ON CONFLICT (doc_id) DO UPDATE SET manifest = EXCLUDED.manifest"
                ).format(d=self._ident("__docs")),
                (manifest.doc_id, manifest.to_json()),
            )
            removed = rows.delete_document(cur, sql, self._table, manifest.doc_id, pace)
            rows.write_chunks(cur, sql, self._table, batch, pace)
            return removed

        return self._write("INSERT", work)

    def _recorded(self, cur: Any) -> EmbedderIdentity | None:
        cur.execute(self._sql.SQL("SELECT " + bm25.EMBEDDER).format(i=self._ident("__info")))
        value = cur.fetchone()[0]
        return None if value is None else EmbedderIdentity.from_json(value)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one query (``doc_id = ANY(...)``)."""
        if not doc_ids:
            return {}
        statement = self._sql.SQL("SELECT doc_id, manifest FROM {d} WHERE doc_id = ANY(%s)").format(
            d=self._ident("__docs")
        )
        return dict(manifests_from_json(self._rows(statement, [list(doc_ids)])))

    def embedder_identity(self) -> EmbedderIdentity | None:
        return self._run(self._recorded, transaction=False)

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return self._retrieve(StoreQuery("dense", k, vector=query_vector, filter=filter))

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """The whole retrieval in one statement in autocommit (``bm25.statement``)."""
        keep, given = rows.metadata_predicate(self._sql, query.filter)
        shape = keep.as_string(None) if given else None  # the predicate's text: SQL alone
        sql = bm25.statement(self._sql, self._table, query.mode, query.fusion, shape)
        vector = None  # one SQL literal, written once however often the statement names it
        if query.vector is not None:
            asked: Any = query.vector  # pgvector's cosine scales it, unless its
            if not 1e-6 < query_norm(asked, self._dim) < 1e6:  # float32 sums would overflow
                asked = prepare_query(asked, self._dim)
            vector = self._pg.extensions.AsIs(rows.vector_literal(asked))
        found = self._rows(sql, bm25.statement_params(query, given, vector))
        if query.mode != "dense":
            return bm25.search_hits(found, clamp=False)
        return [h for h in bm25.search_hits(found) if h.score >= query.min_score]

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """One statement for the batch: each query's nearest rows by a LATERAL join (HNSW)."""
        queries = [prepare_query(q, self._dim) for q in query_vectors]
        if not queries:
            return []
        keep, filter_params = rows.metadata_predicate(self._sql, filter)
        statement = self._sql.SQL(
            "SELECT q.i, h.id, h.doc_id, h.text, h.metadata, h.score "
            "FROM unnest(%(q)s::vector[]) WITH ORDINALITY AS q(v, i) CROSS JOIN LATERAL ("
            "SELECT id, doc_id, text, metadata, 1 - (embedding <=> q.v) AS score FROM {t} "
            "WHERE {w} ORDER BY embedding <=> q.v LIMIT %(k)s) h"
        ).format(t=self._ident(), w=keep)
        params = {**filter_params, "q": queries, "k": k}

        out: list[list[ScoredChunk]] = [[] for _ in queries]
        for r in self._rows(statement, params):
            out[int(r[0]) - 1].append(bm25.scored_row(r[1:]))
        for hits in out:
            hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
        return out

    def _count(self, filter: MetadataFilter | None = None) -> int:
        keep, params = rows.metadata_predicate(self._sql, filter)
        statement = self._sql.SQL("SELECT count(*) FROM {t} WHERE {w}").format(
            t=self._ident(), w=keep
        )
        return int(self._rows(statement, params)[0][0])

    def _delete(self, ids: list[str]) -> int:
        def work(cur: Any, pace: Pacer) -> int:
            docs = rows.delete_rows(cur, self._sql, self._table, ids, pace)
            self._forget(cur, docs)
            return len(docs)

        return self._write("DELETE", work) if ids else 0

    def _delete_by_doc(self, doc_id: str) -> int:
        def work(cur: Any, pace: Pacer) -> int:
            self._lock_document(cur, doc_id)
            removed = rows.delete_document(cur, self._sql, self._table, doc_id, pace)
            self._forget(cur, [doc_id])
            return removed

        return self._write("DELETE", work)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        statement = self._sql.SQL("TRUNCATE {}").format(
            self._sql.SQL(", ").join(map(self._sql.Identifier, rows.store_tables(self._table)))
        )
        with self._lock:
            self._run(lambda cur: cur.execute(statement), "TRUNCATE")

    def __len__(self) -> int:
        return self.count()

    def close(self) -> None:
        """Close every pooled connection."""
        with self._lock:
            if not self._pool.closed:
                self._pool.closeall()

    def __repr__(self) -> str:
        return (
            f"PGVectorStore(connection={self._location()!r}, table_name={self._table!r}, "
            f"dimension={self._dim})"
        )
