"""PGVectorStore: PostgreSQL + pgvector, HNSW cosine index, server-side filtering."""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import cannot_reach, reason_of, refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores._exact_index import (
    PreparedBatch,
    check_k,
    prepare_batch,
    prepare_query,
)
from pywrapai_graph.adapters.vectorstores._lexical_index import check_bm25
from pywrapai_graph.adapters.vectorstores._pg_deadline import NEVER, Watch, watch
from pywrapai_graph.adapters.vectorstores._pg_grants import grant_statements
from pywrapai_graph.adapters.vectorstores._pg_lexical import (
    QUERY_SETTINGS,
    bm25_query,
    lexical_tables,
    query_terms,
)
from pywrapai_graph.adapters.vectorstores._pg_rescoring import PGRescoring
from pywrapai_graph.adapters.vectorstores._pg_rows import metadata_predicate, write_chunks
from pywrapai_graph.adapters.vectorstores._pg_schema import (
    check_schema,
    in_transaction,
    init_schema,
    missing_right,
)
from pywrapai_graph.adapters.vectorstores._pg_text import from_pg
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int, is_text
from pywrapai_graph.domain.manifest import (
    DocumentManifest,
    EmbedderIdentity,
    manifests_from_json,
)
from pywrapai_graph.errors import (
    ConfigurationError,
    StorageFullError,
    StoreBusyError,
    StoreTimeoutError,
    VectorStoreError,
)
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.vector_store import check_document, check_embedder, check_ids
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["PGVectorStore"]

_DISK_FULL = "53100"  # SQLSTATE disk_full
_NO_PRIVILEGE = "42501"  # insufficient_privilege
_CANCELED = "57014"  # query_canceled (statement_timeout)
#: Server connections a store opens at most (threads and the async offload share them).
DEFAULT_POOL_SIZE = 4
#: How long a call waits for a pooled connection before StoreBusyError: a service sheds load
#: in seconds rather than queueing callers behind a stuck server until their clients give up.
DEFAULT_POOL_TIMEOUT_MS = 5_000
#: The server cancels a statement running longer; 30 s is far beyond any search or
#: document write, and short enough for a request to fail while its client still waits.
DEFAULT_STATEMENT_TIMEOUT_MS = 30_000
#: The client gives up this long after statement_timeout when the server has not answered
#: (a stopped or unreachable server cancels nothing) and closes the connection.
CLIENT_GRACE_S = 2.0
#: libpq connection options unless the DSN sets them: a bounded connect, and keepalives
#: that find a dead peer on an idle pooled connection in about a minute.
_CONNECT_OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

T = TypeVar("T")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,50}$")
#: HNSW search breadth for this session: pgvector's default (40) loses recall.
DEFAULT_EF_SEARCH = 200
#: From this many rows a batch goes in with binary COPY instead of an INSERT.
COPY_MIN_ROWS = 500


def _scored(row: Sequence[Any]) -> ScoredChunk:
    """A hit from a row of ``id, doc_id, text, metadata, score``."""
    chunk = Chunk(text=from_pg(row[2]), doc_id=row[1], metadata=dict(row[3]), id=row[0])
    return ScoredChunk(chunk, min(float(row[4]), 1.0))


class PGVectorStore(PGRescoring, BaseVectorStore):
    """Chunks in a PostgreSQL table with a ``vector(dimension)`` column.

    On first use it runs ``CREATE EXTENSION IF NOT EXISTS vector`` and creates the table with
    an HNSW index (``vector_cosine_ops``), a ``doc_id`` index and a GIN index on the JSONB
    metadata. Lexical (BM25) search is computed by PostgreSQL from each chunk's analysed
    terms and statistics written in the chunk's own transaction (``_pg_lexical``); a table
    written by an older release is upgraded on open (or by ``pywrapai-graph store init``).
    The table name is validated and always passed as an identifier, never formatted into SQL.
    Each batch is one statement for its chunks (``execute_values``, or binary COPY) and one
    for their postings. A dropped connection is re-established once before an error is raised.

    Args:
        connection_string: a libpq URL or DSN; its password never appears in errors or reprs.
        table_name: a plain identifier (letters, digits, underscores).
        dimension: must match the embedding model, and an existing table.
        ef_search: HNSW search breadth for this store's session.
        pool_size: server connections (a ``psycopg2.pool`` pool) shared by threads and by the
            async offload; a caller waits while all are in use.
        pool_timeout_ms: how long a call waits for a pooled connection before
            :class:`StoreBusyError` (None: as long as it takes).
        statement_timeout_ms: the server cancels a statement running longer, and the client
            closes a connection whose server has not answered 2 s after that (a stopped or
            unreachable server): both raise :class:`StoreTimeoutError` naming the setting.
            None leaves the server's default and sets no client deadline.
        create_schema: create the extension, table and indexes when missing (needs DDL
            rights). False for a role with only SELECT/INSERT/UPDATE/DELETE: the schema must
            exist (``pywrapai-graph store init`` or :meth:`init_schema`, run once as the owner).

    Raises:
        ConfigurationError: invalid table name, or a dimension that disagrees with the table.
        MissingExtraError: ``psycopg2-binary``/``pgvector`` are not installed.
        VectorStoreError: the server cannot be reached or refuses the setup.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "postgresql"

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
        self._prepare(connection_string, table_name, dimension, pool_size, statement_timeout_ms)
        if pool_timeout_ms is not None and not is_positive_int(pool_timeout_ms):
            raise ConfigurationError(
                f"pool_timeout_ms must be a positive int or None, got {pool_timeout_ms!r}"
            )
        self._pool_timeout: float | None = (
            None if pool_timeout_ms is None else pool_timeout_ms / 1000
        )
        self._ef_search = ef_search
        self._lock = threading.RLock()
        self._bulk = 0
        self._owns_schema = create_schema
        dim = dimension
        with self._connection(deadline=False) as conn:  # DDL may wait for another's lock
            if create_schema:
                self._guarded(lambda: init_schema(conn, self._sql, self._table, dim), "CREATE")
                self._register(conn)  # the extension may be new: adapt vectors on this one too
            else:
                self._guarded(lambda: check_schema(conn, self._sql, self._table, dim), "SELECT")

    # ------------------------------------------------------------------ connection
    def _prepare(
        self,
        dsn: str,
        table_name: str,
        dimension: int,
        pool_size: int,
        statement_timeout_ms: int | None,
    ) -> None:
        """Validate the arguments, load the driver and open the pool."""
        if not is_text(table_name) or not _IDENTIFIER.fullmatch(table_name):
            raise ConfigurationError(
                f"table_name {table_name!r} is not a valid identifier: use letters, digits and "
                "underscores, starting with a letter or underscore (at most 51 characters)"
            )
        if not is_positive_int(dimension):
            raise ConfigurationError(f"dimension must be a positive int, got {dimension!r}")
        refuse_unencoded_userinfo(dsn, "PostgreSQL connection string")
        if not is_positive_int(pool_size):
            raise ConfigurationError(f"pool_size must be a positive int, got {pool_size!r}")
        if statement_timeout_ms is not None and not is_positive_int(statement_timeout_ms):
            raise ConfigurationError(
                f"statement_timeout_ms must be a positive int, got {statement_timeout_ms!r}"
            )
        self._pg = require("psycopg2", "pgvector", "psycopg2-binary")
        self._pool_mod = require("psycopg2.pool", "pgvector", "psycopg2-binary")
        self._sql = require("psycopg2.sql", "pgvector", "psycopg2-binary")
        self._extras = require("psycopg2.extras", "pgvector", "psycopg2-binary")
        self._register = require("pgvector.psycopg2", "pgvector", "pgvector").register_vector
        self._dsn = dsn
        self._table = table_name
        self._dim = dimension
        self._ef_search = DEFAULT_EF_SEARCH
        self._pool_size = pool_size
        self._timeout_ms = statement_timeout_ms
        self._pool_timeout = None  # init_schema's one connection waits as long as it takes
        # the pool never blocks: the semaphore makes a thread wait for a free connection
        self._slots = threading.BoundedSemaphore(pool_size)
        self._configured: weakref.WeakSet[Any] = weakref.WeakSet()
        self._pool = self._open_pool()

    def _secrets(self) -> list[str]:
        """The DSN and the password inside it, whatever the form (URL or key=value)."""
        secrets = [self._dsn]
        with contextlib.suppress(Exception):  # an unparsable DSN fails in connect, redacted
            password = self._pg.extensions.parse_dsn(self._dsn).get("password")
            if password:
                secrets.append(password)
        return secrets

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets())

    def _location(self) -> str:
        """The DSN without its password, for messages and the repr."""
        return redact(self._dsn, self._secrets()[1:])

    def _server(self) -> tuple[str, dict[str, Any]]:
        """``host:port`` for messages (never the user or password), and connect() options."""
        params: dict[str, str] = {}
        with contextlib.suppress(Exception):
            params = self._pg.extensions.parse_dsn(self._dsn)
        host = params.get("host") or "localhost"
        where = f"{host}:{params.get('port') or 5432}" if "," not in host else host
        # libpq waits forever by default; the DSN's own values win over ours
        options: dict[str, Any] = {k: v for k, v in _CONNECT_OPTIONS.items() if k not in params}
        if self._timeout_ms is not None:  # added to the DSN's own server options, if any
            given = params.get("options", "")
            options["options"] = f"{given} -c statement_timeout={self._timeout_ms}".strip()
        return where, options

    def _open_pool(self) -> Any:
        _, options = self._server()
        options["application_name"] = f"pywrapai-graph:{self._table}"
        try:  # psycopg2 keeps at most minconn idle connections: keep them all
            return self._pool_mod.ThreadedConnectionPool(
                self._pool_size, self._pool_size, self._dsn, **options
            )
        except self._pg.Error as exc:
            raise self._unreachable(exc) from scrubbed(exc, self._secrets())

    def _unreachable(self, exc: BaseException) -> VectorStoreError:
        if isinstance(exc, self._pg.OperationalError):  # no session: DNS, refused, auth
            message = self._redact(cannot_reach("PostgreSQL", self._server()[0], exc))
            if reason_of(exc) == "timeout":  # connect_timeout: the server did not answer
                return StoreTimeoutError(message)
            return VectorStoreError(message)
        return VectorStoreError(
            f"invalid PostgreSQL connection string {self._location()!r}: "
            f"{self._redact(str(exc).strip())}"
        )

    def _call_deadline(self) -> float | None:
        """Seconds the client waits for one unit of work (None: no deadline)."""
        return None if self._timeout_ms is None else self._timeout_ms / 1000 + CLIENT_GRACE_S

    @contextlib.contextmanager
    def _connection(self, *, deadline: bool = True) -> Iterator[Any]:
        """A pooled connection for one unit of work, under the client-side deadline.

        Raises:
            StoreBusyError: every connection stayed in use past the pool timeout.
            StoreTimeoutError: the server did not answer within the deadline.
        """
        if not self._slots.acquire(timeout=self._pool_timeout):
            raise self._busy()
        try:
            with self._session(self._call_deadline() if deadline else None) as conn:
                yield conn
        finally:
            self._slots.release()

    @contextlib.contextmanager
    def _session(self, seconds: float | None) -> Iterator[Any]:
        armed: Watch = NEVER
        try:
            conn = self._pool.getconn()
        except self._pg.Error as exc:
            raise self._unreachable(exc) from scrubbed(exc, self._secrets())
        broken = False
        try:
            with watch(conn, seconds) as armed:
                try:
                    self._configure(conn)
                except self._pg.Error as exc:
                    broken = True
                    failure = self._too_slow(seconds) if armed.fired else self._unreachable(exc)
                    raise failure from scrubbed(exc, self._secrets())
                yield conn
        except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
            broken = True
            if armed.fired:
                raise self._too_slow(seconds) from scrubbed(exc, self._secrets())
            raise
        finally:
            self._pool.putconn(conn, close=broken or bool(conn.closed))

    def _configure(self, conn: Any) -> None:
        """Session settings, once per pooled connection."""
        if conn in self._configured:
            return
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SET hnsw.ef_search = %s", (self._ef_search,))
            with contextlib.suppress(self._pg.Error):
                # pgvector >= 0.8: filtered HNSW scans keep going until k rows match
                cur.execute("SET hnsw.iterative_scan = relaxed_order")
        with contextlib.suppress(self._pg.ProgrammingError):  # no vector type yet: init adds it
            self._register(conn)
        self._configured.add(conn)

    def _busy(self) -> StoreBusyError:
        return StoreBusyError(
            f"all {self._pool_size} connections of table {self._table!r} to PostgreSQL at "
            f"{self._server()[0]} stayed in use for {self._pool_timeout:g} s "
            "(store.pool_timeout_ms): the server may be slow or stuck (look at its "
            "pg_stat_activity), or the load is more than store.pool_size connections serve; "
            "nothing was done, retry later"
        )

    def _too_slow(self, seconds: float | None) -> StoreTimeoutError:
        return StoreTimeoutError(
            f"PostgreSQL at {self._server()[0]} did not answer within {seconds:g} s "
            f"(store.statement_timeout_ms = {self._timeout_ms} ms, plus {CLIENT_GRACE_S:g} s): "
            "the connection was closed. Check that the server is up, reachable and not "
            "overloaded; a write that timed out may have been applied (retry it)"
        )

    def _ident(self, suffix: str = "") -> Any:
        return self._sql.Identifier(self._table + suffix)

    def _guarded(self, work: Callable[[], T], operation: str) -> T:
        """``work()``, with a missing right reported as the right and how to grant it."""
        try:
            return work()
        except self._pg.Error as exc:
            if getattr(exc, "pgcode", None) == _NO_PRIVILEGE:
                raise VectorStoreError(
                    f"PostgreSQL refused {operation} on {self._table!r}: "
                    f"{missing_right(exc, self._table, operation)}"
                ) from scrubbed(exc, self._secrets())
            raise VectorStoreError(
                f"PostgreSQL error setting up table {self._table!r}: "
                f"{self._redact(str(exc).strip())}"
            ) from scrubbed(exc, self._secrets())

    def _read(self, work: Callable[[Any], T]) -> T:
        """Run ``work(cursor)``, ONE statement, in autocommit: one round trip, no BEGIN and
        COMMIT around it (a read of several statements that must agree uses :meth:`_run`)."""
        return self._run(work, transaction=False)

    def _run(
        self,
        work: Callable[[Any], T],
        operation: str = "SELECT",
        *,
        transaction: bool = True,
        deadline: bool = True,
    ) -> T:
        """Run ``work(cursor)`` in a transaction on a pooled connection; a dropped connection
        is replaced once before an error is raised. ``deadline=False``: maintenance (an index
        build) that may outlast the client deadline; its work lifts statement_timeout."""
        for attempt in (1, 2):
            try:
                with self._connection(deadline=deadline) as conn, conn.cursor() as cur:
                    if not transaction:
                        return work(cur)
                    return in_transaction(conn, cur, lambda: work(cur))
            except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
                if attempt == 2 or isinstance(exc, self._pg.errors.QueryCanceled):
                    raise self._failure(exc, operation) from scrubbed(exc, self._secrets())
            except self._pg.Error as exc:
                raise self._failure(exc, operation) from scrubbed(exc, self._secrets())
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, exc: BaseException, operation: str) -> VectorStoreError:
        code = getattr(exc, "pgcode", None)
        if code == _DISK_FULL:  # the server names the file it could not extend
            said = self._redact(str(getattr(getattr(exc, "diag", None), "message_primary", "")))
            file = re.search(r'"([^"]+)"', said)
            return StorageFullError(
                f"the PostgreSQL server's disk is full (table {self._table!r}"
                + (f"; the server said: {said}" if said else "")
                + "); the transaction was rolled back. Free space on the server (the "
                "tablespace holding that file) and run it again.",
                path=file.group(1) if file else self._location(),
            )
        if code == _NO_PRIVILEGE:
            return VectorStoreError(
                f"PostgreSQL refused {operation} on {self._table!r}: "
                f"{missing_right(exc, self._table, operation)}"
            )
        if code == _CANCELED and self._timeout_ms is not None:
            return StoreTimeoutError(
                f"a statement on table {self._table!r} ran longer than statement_timeout "
                f"({self._timeout_ms} ms) and was cancelled; raise store.statement_timeout_ms "
                "or narrow the query"
            )
        if isinstance(exc, self._pg.OperationalError | self._pg.InterfaceError):
            return VectorStoreError(
                f"lost the PostgreSQL connection to {self._location()!r}: "
                f"{self._redact(str(exc).strip())}"
            )
        return VectorStoreError(
            f"PostgreSQL error on table {self._table!r}: {self._redact(str(exc).strip())}"
        )

    @classmethod
    def init_schema(cls, connection_string: str, table_name: str, dimension: int) -> bool:
        """Create the extension, table, indexes and schema-version row; run once as the owner.

        Idempotent: a second run changes nothing and returns False.

        Raises:
            ConfigurationError: another dimension, or a schema version newer than this release.
            VectorStoreError: the server cannot be reached, or a right is missing (named).
        """
        store = cls.__new__(cls)
        store._prepare(connection_string, table_name, dimension, 1, None)
        try:
            with store._connection(deadline=False) as conn:
                return store._guarded(
                    lambda: init_schema(conn, store._sql, table_name, dimension), "CREATE"
                )
        finally:
            store._pool.closeall()

    @property
    def pool_size(self) -> int:
        """The most server connections this store opens at once."""
        return self._pool_size

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return True

    @property
    def exact(self) -> bool:
        return False  # HNSW

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
        """The GRANT statements giving ``reader`` read-only and ``writer`` read-write use of
        an existing store (its tables, read from the server), for the owner to run; lines
        starting with ``--`` say what each group is for. Changes nothing.

        Raises:
            InvalidArgumentError: neither role named.
            VectorStoreError: the server cannot be reached, or the table does not exist.
        """
        return cls._administer(
            connection_string,
            table_name,
            1,
            lambda conn, sql: grant_statements(conn, sql, table_name, reader, writer),
            "SELECT",
        )

    @classmethod
    def _administer(
        cls,
        connection_string: str,
        table_name: str,
        dimension: int,
        work: Callable[[Any, Any], T],
        operation: str,
    ) -> T:
        """``work(connection, psycopg2.sql)`` on one connection of a store not opened."""
        store = cls.__new__(cls)
        store._prepare(connection_string, table_name, dimension, 1, None)
        try:
            with store._connection(deadline=False) as conn:  # an owner's one-off command
                return store._guarded(lambda: work(conn, store._sql), operation)
        finally:
            store._pool.closeall()

    @property
    def atomic_documents(self) -> bool:
        return True

    def _insert(self, cur: Any, batch: PreparedBatch) -> None:
        if batch.ids:
            copy = bool(self._bulk) or len(batch.ids) >= COPY_MIN_ROWS
            write_chunks(cur, self._sql, self._extras, self._table, batch, copy=copy)

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many chunks fast: every write inside sends its rows with binary COPY, and when
        the table is empty on entry its HNSW index is dropped and built once on exit (building
        the graph over loaded rows is far faster than inserting into a live one); the indexes
        are the same afterwards. Searches meanwhile scan exactly. Nested calls join the outer.
        """
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
        cur.execute(
            self._sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
            ).format(i=self._ident("_hnsw"), t=self._ident())
        )

    def _lock_document(self, cur: Any, doc_id: str) -> None:
        """Writers of one document take turns (until their commit): under READ COMMITTED a
        replace's DELETE does not see the rows a concurrent replace is inserting, so both
        versions' chunks would stay."""
        key = hashlib.blake2b(f"{self._table}\x00{doc_id}".encode(), digest_size=8).digest()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(key, signed=True),))

    def _forget(self, cur: Any, doc_ids: list[str]) -> None:
        """Drop the manifests of documents changed outside ``replace_document``."""
        cur.execute(
            self._sql.SQL("DELETE FROM {d} WHERE doc_id = ANY(%s)").format(d=self._ident("__docs")),
            (doc_ids,),
        )

    def add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._dim)
        if not batch.ids:
            return

        def work(cur: Any) -> None:
            self._insert(cur, batch)
            self._forget(cur, sorted({c.doc_id for c in batch.chunks}))

        with self._lock:
            self._run(work, "INSERT")

    def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        check_document(manifest, chunks)
        batch = prepare_batch(chunks, self._dim)
        sql = self._sql
        info = self._ident("__info")

        def work(cur: Any) -> int:
            self._lock_document(cur, manifest.doc_id)
            # the first writer's identity wins, even against a concurrent first writer
            if manifest.embedder.dimension:
                cur.execute(
                    sql.SQL(
                        "INSERT INTO {i} (key, value) VALUES ('embedder', %s) "
                        "ON CONFLICT (key) DO NOTHING"
                    ).format(i=info),
                    (manifest.embedder.to_json(),),
                )
            check_embedder(self._recorded(cur), manifest.embedder)
            cur.execute(
                sql.SQL("DELETE FROM {t} WHERE doc_id = %s").format(t=self._ident()),
                (manifest.doc_id,),
            )
            removed = int(cur.rowcount)
            self._insert(cur, batch)
            cur.execute(
                sql.SQL(
                    "INSERT INTO {d} (doc_id, manifest) VALUES (%s, %s) "
                    "ON CONFLICT (doc_id) DO UPDATE SET manifest = EXCLUDED.manifest"
                ).format(d=self._ident("__docs")),
                (manifest.doc_id, manifest.to_json()),
            )
            return removed

        with self._lock:
            return self._run(work, "INSERT")

    def _recorded(self, cur: Any) -> EmbedderIdentity | None:
        cur.execute(
            self._sql.SQL("SELECT value FROM {i} WHERE key = 'embedder'").format(
                i=self._ident("__info")
            )
        )
        row = cur.fetchone()
        return None if row is None else EmbedderIdentity.from_json(row[0])

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        statement = self._sql.SQL("SELECT manifest FROM {d} WHERE doc_id = %s").format(
            d=self._ident("__docs")
        )

        def work(cur: Any) -> DocumentManifest | None:
            cur.execute(statement, (doc_id,))
            row = cur.fetchone()
            return None if row is None else DocumentManifest.from_json(doc_id, row[0])

        return self._read(work)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one query (``doc_id = ANY(...)``)."""
        if not doc_ids:
            return {}
        statement = self._sql.SQL("SELECT doc_id, manifest FROM {d} WHERE doc_id = ANY(%s)").format(
            d=self._ident("__docs")
        )

        def work(cur: Any) -> dict[str, DocumentManifest]:
            cur.execute(statement, (list(doc_ids),))
            return dict(manifests_from_json(cur.fetchall()))

        return self._read(work)

    def embedder_identity(self) -> EmbedderIdentity | None:
        return self._read(self._recorded)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        k = check_k(k, filter)
        query = prepare_query(query_vector, self._dim)
        sql = self._sql
        where, filter_params = self._where(filter)
        statement = sql.SQL(
            "SELECT id, doc_id, text, metadata, 1 - (embedding <=> %s) AS score FROM {t} "
            "{w} ORDER BY embedding <=> %s LIMIT %s"
        ).format(t=self._ident(), w=where)
        params: list[Any] = [query, *filter_params, query, k]

        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        hits = [_scored(r) for r in self._read(work)]
        hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
        return hits

    def _where(self, filter: MetadataFilter | None) -> tuple[Any, list[str]]:
        """The WHERE clause of ``filter`` and its parameters (none without a filter)."""
        keep, params = self._predicate(filter)
        return (self._sql.SQL("WHERE ") + keep if params else self._sql.SQL("")), params

    def _predicate(self, filter: MetadataFilter | None) -> tuple[Any, list[str]]:
        return metadata_predicate(self._sql, filter)

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available, computed by PostgreSQL."""
        return True

    def lexical_search(
        self,
        query: str,
        k: int = 4,
        filter: MetadataFilter | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> list[ScoredChunk]:
        """The ``k`` chunks whose text best matches ``query`` by BM25, best first: one
        statement whose cost follows the postings of the query's terms (``_pg_lexical``)."""
        k = check_k(k, filter)
        check_bm25(k1, b)
        terms, counts = query_terms(query)
        if not terms:
            return []
        keep, filter_params = self._predicate(filter)
        statement = self._sql.SQL(QUERY_SETTINGS) + bm25_query(
            self._sql, self._table, keep if filter_params else None
        )
        params: list[Any] = [counts, terms, terms, k1, k1, b, b, *filter_params, k]

        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        return [
            ScoredChunk(
                Chunk(from_pg(r[2]), doc_id=r[1], metadata=dict(r[3]), id=r[0]), float(r[4])
            )
            for r in self._read(work)
        ]

    def search_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """One statement for the batch: each query's nearest rows through a LATERAL join
        (the HNSW index serves each query as it serves :meth:`search`)."""
        k = check_k(k, filter)
        queries = [prepare_query(q, self._dim) for q in query_vectors]
        if not queries:
            return []
        sql = self._sql
        where, filter_params = self._where(filter)
        statement = sql.SQL(
            "SELECT q.i, h.id, h.doc_id, h.text, h.metadata, h.score "
            "FROM unnest(%s::vector[]) WITH ORDINALITY AS q(v, i) CROSS JOIN LATERAL ("
            "SELECT id, doc_id, text, metadata, 1 - (embedding <=> q.v) AS score FROM {t} "
            "{w} ORDER BY embedding <=> q.v LIMIT %s) h"
        ).format(t=self._ident(), w=where)
        params: list[Any] = [queries, *filter_params, k]

        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        out: list[list[ScoredChunk]] = [[] for _ in queries]
        for r in self._read(work):
            out[int(r[0]) - 1].append(_scored(r[1:]))
        for hits in out:
            hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
        return out

    def count(self, filter: MetadataFilter | None = None) -> int:
        where, params = self._where(filter)
        statement = self._sql.SQL("SELECT count(*) FROM {t} {w}").format(t=self._ident(), w=where)

        def work(cur: Any) -> int:
            cur.execute(statement, params)
            return int(cur.fetchone()[0])

        return self._read(work)

    def delete(self, ids: Sequence[str]) -> int:
        wanted = check_ids(ids)
        if not wanted:
            return 0
        statement = self._sql.SQL("DELETE FROM {t} WHERE id = ANY(%s) RETURNING doc_id").format(
            t=self._ident()
        )

        def work(cur: Any) -> int:
            cur.execute(statement, (wanted,))
            docs = [r[0] for r in cur.fetchall()]
            self._forget(cur, sorted(set(docs)))
            return len(docs)

        with self._lock:
            return self._run(work, "DELETE")

    def delete_by_doc(self, doc_id: str) -> int:
        statement = self._sql.SQL("DELETE FROM {t} WHERE doc_id = %s").format(t=self._ident())

        def work(cur: Any) -> int:
            self._lock_document(cur, doc_id)
            cur.execute(statement, (doc_id,))
            removed = int(cur.rowcount)
            self._forget(cur, [doc_id])
            return removed

        with self._lock:
            return self._run(work, "DELETE")

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        statement = self._sql.SQL("TRUNCATE {t}, {d}, {i}, {p}, {s}").format(
            t=self._ident(),
            d=self._ident("__docs"),
            i=self._ident("__info"),
            p=self._sql.Identifier(lexical_tables(self._table)[0]),
            s=self._sql.Identifier(lexical_tables(self._table)[1]),
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
