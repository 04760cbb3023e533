"""SQLiteVectorStore: persistent exact search in one SQLite file (standard library only)."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from typing import Any

import numpy as np

from pywrapai_graph.adapters.vectorstores._exact_search import ExactIndex, ExactSearch, Hits
from pywrapai_graph.adapters.vectorstores._identity_copy import IdentityCopy
from pywrapai_graph.adapters.vectorstores._lexical_index import LexicalMirror, LexicalSearch
from pywrapai_graph.adapters.vectorstores._local_files import (
    rows_in,
    sqlite_failure,
    sqlite_manifests,
)
from pywrapai_graph.adapters.vectorstores._matrix_bulk_store import MatrixBulkStore
from pywrapai_graph.adapters.vectorstores._metadata_json import (
    metadata_jsons,
    stored_chunk,
    stored_metadata,
)
from pywrapai_graph.adapters.vectorstores._no_follow import refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores._vector_batches import (
    Matrix,
    PreparedBatch,
    prepare_batch,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["SQLiteVectorStore"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _table_name(name: str) -> str:
    if not is_text(name) or not _IDENTIFIER.fullmatch(name):
        raise InvalidArgumentError(
            f"table_name {name!r} is not a valid identifier: use letters, digits and "
            "underscores, starting with a letter or underscore (at most 63 characters)"
        )
    return name


def _row_bytes(batch: PreparedBatch) -> list[bytes]:
    """Each normalised vector as a float32 BLOB, cut from one buffer of the whole matrix."""
    dim = int(batch.vectors.shape[1])
    raw = np.ascontiguousarray(batch.vectors).tobytes()
    step = 4 * dim
    return [raw[i : i + step] for i in range(0, len(raw), step)]


def _end_read(conn: sqlite3.Connection) -> None:
    """Close a read transaction (SQLite may already have ended it after an error)."""
    if conn.in_transaction:
        conn.execute("COMMIT")


def _while_locked(step: Callable[[], object], patience_s: float = 30.0) -> None:
    """Run ``step``, retrying while the file is locked by another process that is opening it.

    Two processes opening one fresh file race to switch it to WAL; SQLite answers the loser
    ``database is locked`` at once (its busy handler is not used for that switch), so the
    open waits here as long as the connection's own busy timeout would.
    """
    deadline = time.monotonic() + patience_s
    pause = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


class SQLiteVectorStore(LexicalSearch, ExactSearch, MatrixBulkStore):
    """Chunks and float32 vectors in a SQLite table; searches served from memory.

    The table is loaded into an in-memory matrix at the first search or write (opening
    reads no vectors, so manifest lookups and ``len`` stay cheap) and kept in step
    with every write; a write by another process (or another connection) is detected
    through ``PRAGMA data_version`` and the matrix is reloaded before the next operation.
    Vectors are stored L2-normalised as float32 BLOBs; the file uses WAL journaling.
    ``replace_document`` is one transaction (chunks, then the manifest in
    ``<table>__docs``); the in-memory matrix changes only after the commit succeeded.

    Args:
        db_path: the database file (created if missing).
        table_name: a plain SQL identifier; anything else raises ValueError.

    Raises:
        ValueError: invalid table name.
        VectorStoreError: the file is not a SQLite database, or (at the first search or
            write, which load the vectors) the table is inconsistent.
        StorageFullError: the disk is full (on any write).
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "sqlite"

    @property
    def persistent(self) -> bool:
        return True

    @property
    def atomic_documents(self) -> bool:
        return True

    def __init__(
        self, db_path: str | os.PathLike[str] = "vector_store.db", table_name: str = "vector_chunks"
    ) -> None:
        self._table = _table_name(table_name)
        self._docs, self._meta = f"{self._table}__docs", f"{self._table}__meta"
        self._where = f"table {self._table!r}"
        self._path = os.fspath(db_path)
        self._lock = threading.RLock()
        # the lexical index follows the exact index's changes (it watches it), and is
        # rebuilt from the table when the exact index is reloaded
        self._lexical = LexicalMirror(self._all_chunks)
        self._index = ExactIndex(watcher=self._lexical)
        self._identity = IdentityCopy(self._recorded_embedder)
        if self._path not in ("", ":memory:"):  # SQLite opens these by name, following links
            refuse_links(*sqlite_files(self._path))
        try:
            self._conn = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            _while_locked(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._table}" ('
                "id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, text TEXT NOT NULL, "
                "metadata TEXT NOT NULL, dim INTEGER NOT NULL, embedding BLOB NOT NULL)"
            )
            self._conn.execute(
                f'CREATE INDEX IF NOT EXISTS "{self._table}_doc_id" ON "{self._table}" (doc_id)'
            )
            self._conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._docs}" '
                "(doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)"
            )
            self._conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._meta}" '
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error, AttributeError):
                self._conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and "full" not in str(exc):
                raise VectorStoreError(
                    f"cannot open SQLite store at {self._path!r}: {exc}"
                ) from exc
            raise sqlite_failure(self._path, exc) from exc
        # -1: the matrix is not loaded; the first search or write loads it, so an open that
        # only looks up manifests (a re-ingest of unchanged files) never reads the vectors
        self._version = -1

    # ------------------------------------------------------------------ sync
    def _sync(self) -> None:
        """Reload the matrix when another connection has committed since we last looked.

        Only ids and vectors are read, in one pass into a preallocated matrix; texts and
        metadata stay in the file until a search returns them (or a filter needs a key).
        """
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if version == self._version:
            return
        with self._snapshot():  # one snapshot for the count and the rows
            self._index = self._load()
        self._lexical.reset()
        self._version = version

    def _load(self) -> ExactIndex:
        index = ExactIndex(metadata_source=self._all_metadata, watcher=self._lexical)
        # count(*) walks the small doc_id index; the one table scan is the copy below.
        count = self._conn.execute(f'SELECT count(*) FROM "{self._table}"').fetchone()[0]
        first = self._conn.execute(f'SELECT dim FROM "{self._table}" LIMIT 1').fetchone()
        if not count or first is None:
            return index
        dim = int(first[0])
        if dim < 1:
            raise VectorStoreError(f"table {self._table!r} holds vectors of dimension {dim}")
        matrix = np.empty((count, dim), dtype=np.float32)
        flat = matrix.data.cast("B")
        step = 4 * dim
        end = count * step
        ids: list[str] = []
        at = 0
        # Row by row straight into the matrix: measured faster than fetchmany batches joined
        # and copied (no intermediate buffer, no batch lists) — this loop is most of an open.
        for chunk_id, blob in self._conn.execute(f'SELECT id, embedding FROM "{self._table}"'):
            if len(blob) != step or at == end:
                raise VectorStoreError(
                    f"table {self._table!r} holds vectors of different dimensions: "
                    f"{chunk_id!r} has {len(blob) // 4}, the first row {dim}"
                )
            flat[at : at + step] = blob
            ids.append(chunk_id)
            at += step
        index.load(ids, matrix)
        return index

    def _all_metadata(self, rows: int) -> list[dict[str, Any]]:
        """Every row's metadata in the index's row order (read once, when a filter needs it)."""
        by_id = {
            chunk_id: stored_metadata(meta, chunk_id, self._where)
            for chunk_id, meta in self._conn.execute(f'SELECT id, metadata FROM "{self._table}"')
        }
        return [by_id[self._index.id_at(row)] for row in range(rows)]

    def _fetch(self, ids: list[str]) -> dict[str, Chunk]:
        """The stored chunks (without embedding) of ``ids``."""
        statement = f'SELECT id, doc_id, text, metadata FROM "{self._table}" WHERE id IN (?)'
        return {r[0]: stored_chunk(r, self._where) for r in rows_in(self._conn, statement, ids)}

    def _scored_hits(self, hits: Hits) -> list[ScoredChunk]:
        rows, scores = hits
        ids = [self._index.id_at(int(r)) for r in rows]
        chunks = self._fetch(ids)
        return [
            ScoredChunk(chunk=chunks[i], score=min(float(s), 1.0))
            for i, s in zip(ids, scores, strict=True)
            if i in chunks
        ]

    def _doc_ids(self, doc_id: str) -> list[str]:
        rows = self._conn.execute(f'SELECT id FROM "{self._table}" WHERE doc_id = ?', (doc_id,))
        return sorted(r[0] for r in rows)

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A read transaction (unless one is open): the matrix and the rows read agree."""
        conn = self._conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            _end_read(conn)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlite_failure(self._path, exc) from exc

    @contextmanager
    def _write(self) -> Iterator[list[Callable[[], object]]]:
        """One transaction; the callbacks appended to the yielded list run after COMMIT.

        The in-memory matrix is changed only by those callbacks, so a failed write (a full
        disk, say) leaves it equal to the file.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise sqlite_failure(self._path, exc) from exc
            after: list[Callable[[], object]] = []
            try:
                self._sync()
                yield after
                self._conn.execute("COMMIT")
            except BaseException as exc:
                if self._conn.in_transaction:  # SQLite may have rolled back already
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                self._version = -1
                if isinstance(exc, sqlite3.Error):
                    raise sqlite_failure(self._path, exc) from exc
                raise
            self._identity.forget()
            for apply in after:
                apply()

    # ------------------------------------------------------------------ port
    @property
    def dimension(self) -> int | None:
        """Vector dimension of the table, or None while it is empty."""
        with self._lock:
            with self._reading():
                self._sync()
            return self._index.dimension

    def _insert(
        self, conn: sqlite3.Connection, chunks: Sequence[Chunk], vectors: Matrix | None = None
    ) -> PreparedBatch:
        batch = prepare_batch(chunks, self._index.dimension, vectors)
        if batch.ids:
            dim = int(batch.vectors.shape[1])
            conn.executemany(
                f'INSERT OR REPLACE INTO "{self._table}" '
                "(id, doc_id, text, metadata, dim, embedding) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (c.id, c.doc_id, c.text, js, dim, v)
                    for c, js, v in zip(
                        batch.chunks, metadata_jsons(batch.chunks), _row_bytes(batch), strict=True
                    )
                ],
            )
        return batch

    def _forget_docs(self, conn: sqlite3.Connection, doc_ids: set[str]) -> None:
        """Drop the manifests of documents changed outside ``replace_document``."""
        conn.executemany(f'DELETE FROM "{self._docs}" WHERE doc_id = ?', [(d,) for d in doc_ids])

    def _add(self, chunks: Sequence[Chunk]) -> None:
        with self._write() as after:
            batch = self._insert(self._conn, chunks)
            self._forget_docs(self._conn, {c.doc_id for c in batch.chunks})
            after.append(partial(self._index.upsert, batch))

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        with self._write() as after:
            conn = self._conn
            recorded = self._recorded_embedder()
            identity = check_embedder(recorded, manifest.embedder)
            before = self._doc_ids(manifest.doc_id)
            conn.execute(f'DELETE FROM "{self._table}" WHERE doc_id = ?', (manifest.doc_id,))
            batch = self._insert(conn, chunks, vectors)
            conn.execute(
                f'INSERT OR REPLACE INTO "{self._docs}" (doc_id, manifest) VALUES (?, ?)',
                (manifest.doc_id, manifest.to_json()),
            )
            if identity is not None and recorded is None:
                conn.execute(
                    f"INSERT INTO \"{self._meta}\" (key, value) VALUES ('embedder', ?)",
                    (identity.to_json(),),
                )

            after.append(partial(self._index.replace, before, batch))
            return len(before)

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        row = self._conn.execute(
            f"SELECT value FROM \"{self._meta}\" WHERE key = 'embedder'"
        ).fetchone()
        return None if row is None else EmbedderIdentity.from_json(row[0])

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        return self.document_manifests([doc_id]).get(doc_id)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one indexed query per 500 ids."""
        with self._lock, self._reading():
            return sqlite_manifests(self._conn, f'"{self._docs}"', doc_ids)

    def embedder_identity(self) -> EmbedderIdentity | None:
        with self._lock, self._reading():
            return self._recorded_embedder()

    @contextmanager
    def _reading_index(self) -> Iterator[None]:
        """The lock and a read transaction, with the matrix up to date."""
        with self._lock, self._reading(), self._snapshot():
            self._sync()
            yield

    def _searched_identity(self) -> EmbedderIdentity | None:
        return self._identity.at(self._version)  # read again when data_version moved

    def _delete(self, ids: list[str]) -> int:
        with self._write() as after:
            conn = self._conn
            present = [i for i in ids if i in self._index]
            statement = f'DELETE FROM "{self._table}" WHERE id IN (?) RETURNING doc_id'
            self._forget_docs(conn, {r[0] for r in rows_in(conn, statement, present)})
            after.append(partial(self._index.remove, present))
            return len(present)

    def _delete_by_doc(self, doc_id: str) -> int:
        with self._write() as after:
            ids = self._doc_ids(doc_id)
            self._conn.execute(f'DELETE FROM "{self._table}" WHERE doc_id = ?', (doc_id,))
            self._forget_docs(self._conn, {doc_id})
            after.append(partial(self._index.remove, ids))
            return len(ids)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._write() as after:
            for table in (self._table, self._docs, self._meta):
                self._conn.execute(f'DELETE FROM "{table}"')
            after.append(self._index.clear)

    def _all_chunks(self) -> list[Chunk]:
        rows = self._conn.execute(f'SELECT id, doc_id, text, metadata FROM "{self._table}"')
        return [stored_chunk(r, self._where) for r in rows]

    def _before_lexical(self) -> None:
        with self._reading():
            self._sync()

    def __len__(self) -> int:
        with self._lock, self._reading():
            if self._version == -1:  # not loaded: count the rows (the doc_id index)
                row = self._conn.execute(f'SELECT count(*) FROM "{self._table}"').fetchone()
                return int(row[0])
            self._sync()
            return len(self._index)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._reading_index():
            return self._index.count(filter)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteVectorStore(db_path={self._path!r}, table_name={self._table!r})"
