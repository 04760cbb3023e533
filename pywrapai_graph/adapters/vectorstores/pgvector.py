"""PGVectorStore: PostgreSQL + pgvector, HNSW cosine index, server-side filtering."""

from __future__ import annotations

import contextlib
import io
import json
import re
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import cannot_reach
from pywrapai_graph.adapters.vectorstores._exact_index import (
    PreparedBatch,
    check_k,
    metadata_json,
    prepare_batch,
    prepare_query,
)
from pywrapai_graph.adapters.vectorstores._lexical_index import LexicalMirror, LexicalSearch
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int, is_text
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import ConfigurationError, StorageFullError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.vector_store import check_document, check_embedder, check_ids
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["PGVectorStore"]

_DISK_FULL = "53100"  # SQLSTATE disk_full

T = TypeVar("T")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,50}$")
#: HNSW search breadth for this session: pgvector's default (40) loses recall.
DEFAULT_EF_SEARCH = 200
#: From this many rows a batch goes in with binary COPY instead of an INSERT.
COPY_MIN_ROWS = 500
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)
_JSONB_VERSION = b"\x01"


def copy_payload(batch: PreparedBatch) -> bytes:
    """The batch in PostgreSQL's binary COPY format: (id, doc_id, text, metadata, embedding).

    Text fields are UTF-8, ``jsonb`` is its version byte and the JSON text, and a pgvector
    ``vector`` is (int16 dim, int16 0, dim big-endian float4), cut from one big-endian copy
    of the whole matrix: no Python float per value.
    """
    dim = int(batch.vectors.shape[1])
    raw = np.ascontiguousarray(batch.vectors, dtype=">f4").tobytes()
    step = 4 * dim
    vector_head = struct.pack("!ihh", 4 + step, dim, 0)
    out = io.BytesIO()
    out.write(_COPY_HEADER)
    pack = struct.pack
    for i, chunk in enumerate(batch.chunks):
        out.write(pack("!h", 5))
        for field in (
            chunk.id.encode(),
            chunk.doc_id.encode(),
            chunk.text.encode(),
            _JSONB_VERSION + metadata_json(chunk).encode(),
        ):
            out.write(pack("!i", len(field)))
            out.write(field)
        out.write(vector_head)
        out.write(raw[i * step : (i + 1) * step])
    out.write(_COPY_TRAILER)
    return out.getvalue()


class PGVectorStore(LexicalSearch, BaseVectorStore):
    """Chunks in a PostgreSQL table with a ``vector(dimension)`` column.

    On first use it runs ``CREATE EXTENSION IF NOT EXISTS vector`` and creates the table with
    an HNSW index (``vector_cosine_ops``), a ``doc_id`` index and a GIN index on the JSONB
    metadata. The table name is validated and always passed as an identifier, never
    formatted into SQL. Each batch is one round trip (``execute_values``). A dropped
    connection is re-established once before an error is raised.

    Args:
        connection_string: a libpq URL or DSN; its password never appears in errors or reprs.
        table_name: a plain identifier (letters, digits, underscores).
        dimension: must match the embedding model, and an existing table.
        ef_search: HNSW search breadth for this store's session.

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
    ) -> None:
        if not is_text(table_name) or not _IDENTIFIER.fullmatch(table_name):
            raise ConfigurationError(
                f"table_name {table_name!r} is not a valid identifier: use letters, digits and "
                "underscores, starting with a letter or underscore (at most 51 characters)"
            )
        if not is_positive_int(dimension):
            raise ConfigurationError(f"dimension must be a positive int, got {dimension!r}")
        self._pg = require("psycopg2", "pgvector", "psycopg2-binary")
        self._sql = require("psycopg2.sql", "pgvector", "psycopg2-binary")
        self._extras = require("psycopg2.extras", "pgvector", "psycopg2-binary")
        self._register = require("pgvector.psycopg2", "pgvector", "pgvector").register_vector
        self._dsn = connection_string
        self._table = table_name
        self._dim = dimension
        self._ef_search = ef_search
        self._lock = threading.RLock()
        self._lexical = LexicalMirror(self._all_chunks)
        self._conn: Any = None
        self._bulk = 0
        with self._lock:
            self._connect()
            self._setup()

    # ------------------------------------------------------------------ connection
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
        # libpq waits forever by default; a connect_timeout in the DSN wins over ours
        options = {} if "connect_timeout" in params else {"connect_timeout": 10}
        return where, options

    def _connect(self) -> None:
        where, options = self._server()
        try:
            self._conn = self._pg.connect(self._dsn, **options)
        except self._pg.OperationalError as exc:  # no session: DNS, refused, timeout, TLS, auth
            raise VectorStoreError(
                self._redact(cannot_reach("PostgreSQL", where, exc))
            ) from scrubbed(exc, self._secrets())
        except self._pg.Error as exc:  # e.g. an unparsable DSN
            raise VectorStoreError(
                f"invalid PostgreSQL connection string {self._location()!r}: "
                f"{self._redact(str(exc).strip())}"
            ) from scrubbed(exc, self._secrets())
        try:
            self._conn.autocommit = True
            with self._conn.cursor() as cur:
                cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
                cur.execute("SET hnsw.ef_search = %s", (self._ef_search,))
                with contextlib.suppress(self._pg.Error):
                    # pgvector >= 0.8: filtered HNSW scans keep going until k rows match
                    cur.execute("SET hnsw.iterative_scan = relaxed_order")
            self._register(self._conn)
        except self._pg.Error as exc:
            raise VectorStoreError(
                f"cannot connect to PostgreSQL at {self._location()!r}: "
                f"{self._redact(str(exc).strip())}"
            ) from scrubbed(exc, self._secrets())

    def _ident(self, suffix: str = "") -> Any:
        return self._sql.Identifier(self._table + suffix)

    def _setup(self) -> None:
        sql = self._sql
        with self._conn.cursor() as cur:
            cur.execute(
                "SELECT atttypmod FROM pg_attribute "
                "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
                (self._sql.Identifier(self._table).as_string(self._conn),),
            )
            row = cur.fetchone()
            if row is not None and row[0] != self._dim:
                raise ConfigurationError(
                    f"table {self._table!r} stores vectors of dimension {row[0]}, but "
                    f"dimension={self._dim} was given; use another table or the matching model"
                )
            cur.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {t} (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, "
                    "text TEXT NOT NULL, metadata JSONB NOT NULL DEFAULT '{{}}', "
                    "embedding vector({d}) NOT NULL)"
                ).format(t=self._ident(), d=sql.Literal(self._dim))
            )
            cur.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
                ).format(i=self._ident("_hnsw"), t=self._ident())
            )
            cur.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (doc_id)").format(
                    i=self._ident("_doc"), t=self._ident()
                )
            )
            cur.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (metadata)").format(
                    i=self._ident("_meta"), t=self._ident()
                )
            )
            cur.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {d} "
                    "(doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)"
                ).format(d=self._ident("__docs"))
            )
            cur.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {i} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                ).format(i=self._ident("__info"))
            )

    def _run(self, work: Callable[[Any], T]) -> T:
        """Run ``work(cursor)`` in a transaction; reconnect once if the connection dropped."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        self._connect()
                    with self._conn.cursor() as cur:
                        cur.execute("BEGIN")
                        try:
                            result = work(cur)
                            cur.execute("COMMIT")
                        except BaseException:
                            if not self._conn.closed:
                                cur.execute("ROLLBACK")
                            raise
                        return result
                except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
                    self._conn = None
                    if attempt == 2:
                        raise VectorStoreError(
                            f"lost the PostgreSQL connection to {self._location()!r}: "
                            f"{self._redact(str(exc).strip())}"
                        ) from scrubbed(exc, self._secrets())
                except self._pg.Error as exc:
                    if getattr(exc, "pgcode", None) == _DISK_FULL:
                        raise StorageFullError(
                            f"the PostgreSQL server's disk is full (table {self._table!r}); "
                            "the transaction was rolled back. Free space on the server and "
                            "run it again.",
                            path=self._location(),
                        ) from scrubbed(exc, self._secrets())
                    raise VectorStoreError(
                        f"PostgreSQL error on table {self._table!r}: "
                        f"{self._redact(str(exc).strip())}"
                    ) from scrubbed(exc, self._secrets())
        raise AssertionError("unreachable")  # pragma: no cover

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

    def _all_chunks(self) -> list[Chunk]:
        statement = self._sql.SQL("SELECT id, doc_id, text, metadata FROM {t}").format(
            t=self._ident()
        )

        def work(cur: Any) -> list[Chunk]:
            cur.execute(statement)
            return [Chunk(r[2], doc_id=r[1], metadata=dict(r[3]), id=r[0]) for r in cur]

        return self._run(work)

    @property
    def atomic_documents(self) -> bool:
        return True

    def _insert(self, cur: Any, batch: PreparedBatch) -> None:
        if not batch.ids:
            return
        if self._bulk or len(batch.ids) >= COPY_MIN_ROWS:
            self._copy(cur, batch)
            return
        rows = [
            (c.id, c.doc_id, c.text, metadata_json(c), v)
            for c, v in zip(batch.chunks, batch.vectors, strict=True)
        ]
        query = self._sql.SQL(
            "INSERT INTO {t} (id, doc_id, text, metadata, embedding) VALUES %s "
            "ON CONFLICT (id) DO UPDATE SET doc_id = EXCLUDED.doc_id, text = EXCLUDED.text, "
            "metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding"
        ).format(t=self._ident())
        self._extras.execute_values(
            cur, query, rows, template="(%s, %s, %s, %s::jsonb, %s)", page_size=len(rows)
        )

    def _copy(self, cur: Any, batch: PreparedBatch) -> None:
        """Binary COPY into a session temp table, then one upserting INSERT from it."""
        sql = self._sql
        staging = sql.Identifier(f"{self._table}__load")
        cur.execute(
            sql.SQL(
                "CREATE TEMP TABLE IF NOT EXISTS {s} (LIKE {t} INCLUDING DEFAULTS) "
                "ON COMMIT DELETE ROWS"
            ).format(s=staging, t=self._ident())
        )
        cur.copy_expert(
            sql.SQL(
                "COPY {s} (id, doc_id, text, metadata, embedding) FROM STDIN WITH (FORMAT binary)"
            )
            .format(s=staging)
            .as_string(cur),
            io.BytesIO(copy_payload(batch)),
        )
        cur.execute(
            sql.SQL(
                "INSERT INTO {t} (id, doc_id, text, metadata, embedding) "
                "SELECT id, doc_id, text, metadata, embedding FROM {s} "
                "ON CONFLICT (id) DO UPDATE SET doc_id = EXCLUDED.doc_id, "
                "text = EXCLUDED.text, metadata = EXCLUDED.metadata, "
                "embedding = EXCLUDED.embedding"
            ).format(t=self._ident(), s=staging)
        )

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many chunks fast: every write inside sends its rows with binary COPY, and when
        the table is empty on entry its HNSW index is dropped and built once on exit (building
        the graph over loaded rows is far faster than inserting into a live one); the indexes
        are the same afterwards. Searches meanwhile scan exactly. Nested calls join the outer.
        """
        with self._lock:
            rebuild = self._bulk == 0 and self.count() == 0
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
                    self._run(self._build_hnsw)

    def _build_hnsw(self, cur: Any) -> None:
        cur.execute("SET LOCAL maintenance_work_mem = '256MB'")
        cur.execute(
            self._sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
            ).format(i=self._ident("_hnsw"), t=self._ident())
        )

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

        with self._lock, self._lexical.writing() as lexical:
            self._run(work)
            lexical.upsert(batch.chunks)

    def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        check_document(manifest, chunks)
        batch = prepare_batch(chunks, self._dim)
        sql = self._sql
        info = self._ident("__info")

        def work(cur: Any) -> int:
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

        with self._lock, self._lexical.writing() as lexical:
            lexical.remove_doc(manifest.doc_id)
            lexical.upsert(batch.chunks)
            return self._run(work)

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

        return self._run(work)

    def embedder_identity(self) -> EmbedderIdentity | None:
        return self._run(self._recorded)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        k = check_k(k, filter)
        query = prepare_query(query_vector, self._dim)
        sql = self._sql
        where = sql.SQL("WHERE metadata @> %s::jsonb") if filter else sql.SQL("")
        statement = sql.SQL(
            "SELECT id, doc_id, text, metadata, 1 - (embedding <=> %s) AS score FROM {t} "
            "{w} ORDER BY embedding <=> %s LIMIT %s"
        ).format(t=self._ident(), w=where)
        params: list[Any] = [query]
        if filter:
            params.append(json.dumps(dict(filter)))
        params += [query, k]

        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        rows = self._run(work)
        hits = [
            ScoredChunk(
                Chunk(text=r[2], doc_id=r[1], metadata=dict(r[3]), id=r[0]), min(float(r[4]), 1.0)
            )
            for r in rows
        ]
        hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
        return hits

    def count(self, filter: MetadataFilter | None = None) -> int:
        where = self._sql.SQL("WHERE metadata @> %s::jsonb") if filter else self._sql.SQL("")
        statement = self._sql.SQL("SELECT count(*) FROM {t} {w}").format(t=self._ident(), w=where)
        params = [json.dumps(dict(filter))] if filter else []

        def work(cur: Any) -> int:
            cur.execute(statement, params)
            return int(cur.fetchone()[0])

        return self._run(work)

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

        with self._lock, self._lexical.writing() as lexical:
            lexical.remove(wanted)
            return self._run(work)

    def delete_by_doc(self, doc_id: str) -> int:
        statement = self._sql.SQL("DELETE FROM {t} WHERE doc_id = %s").format(t=self._ident())

        def work(cur: Any) -> int:
            cur.execute(statement, (doc_id,))
            removed = int(cur.rowcount)
            self._forget(cur, [doc_id])
            return removed

        with self._lock, self._lexical.writing() as lexical:
            lexical.remove_doc(doc_id)
            return self._run(work)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        statement = self._sql.SQL("TRUNCATE {t}, {d}, {i}").format(
            t=self._ident(), d=self._ident("__docs"), i=self._ident("__info")
        )
        with self._lock, self._lexical.writing() as lexical:
            lexical.clear()
            self._run(lambda cur: cur.execute(statement))

    def __len__(self) -> int:
        return self.count()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return (
            f"PGVectorStore(connection={self._location()!r}, table_name={self._table!r}, "
            f"dimension={self._dim})"
        )
