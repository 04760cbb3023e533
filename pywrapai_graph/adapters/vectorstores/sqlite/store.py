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

from pywrapai_graph.adapters.vectorstores.kit import local_files, metadata_json, vector_batches
from pywrapai_graph.adapters.vectorstores.kit.exact_search import ExactIndex, ExactSearch, Hits
from pywrapai_graph.adapters.vectorstores.kit.identity_copy import IdentityCopy
from pywrapai_graph.adapters.vectorstores.kit.matrix_bulk_store import MatrixBulkStore
from pywrapai_graph.adapters.vectorstores.kit.no_follow import refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix, PreparedBatch
from pywrapai_graph.adapters.vectorstores.sqlite.text import TextTables, check_fts5_bm25
from pywrapai_graph.application.fusion import fuse
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["SQLiteVectorStore"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _while_locked(step: Callable[[], object], patience_s: float = 30.0) -> None:
    """Run ``step`` until another process opening the file lets it go: the loser of the race
    to switch a fresh file to WAL gets ``database is locked`` at once (no busy handler)."""
    deadline, pause = time.monotonic() + patience_s, 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


class SQLiteVectorStore(ExactSearch, MatrixBulkStore):
    """Chunks and unit float32 vectors in a SQLite table (WAL); dense search from an
    in-memory matrix, lexical by SQLite's full-text index (FTS5, see ``text``).

    The matrix is loaded at the first dense search or write, changed after each commit, and
    reloaded when ``PRAGMA data_version`` says another connection committed. Each write (its
    full-text rows, a replaced document's manifest) is one transaction.

    Args:
        db_path: the database file (created if missing).
        table_name: a plain SQL identifier.

    Raises:
        ValueError: invalid table name.
        VectorStoreError: the file is not a SQLite database, or (at the first search or
            write, which load the vectors) the table is inconsistent.
        StorageFullError: the disk is full (on any write).
    """

    db_system = "sqlite"

    #: lexical: FTS5's ``bm25()``, k1 1.2 and b 0.75 only
    persistent = atomic_documents = lexical = True

    def __init__(
        self, db_path: str | os.PathLike[str] = "vector_store.db", table_name: str = "vector_chunks"
    ) -> None:
        if not is_text(table_name) or not _IDENTIFIER.fullmatch(table_name):
            raise InvalidArgumentError(
                f"table_name {table_name!r} is not a valid identifier: use letters, digits and "
                "underscores, starting with a letter or underscore (at most 63 characters)"
            )
        self._table = table_name
        self._docs, self._meta = f"{self._table}__docs", f"{self._table}__meta"
        self._where = f"table {self._table!r}"
        self._path = os.fspath(db_path)
        self._lock = threading.RLock()
        self._index = ExactIndex()
        self._text = TextTables(self._table, self._where)
        self._identity = IdentityCopy(self._recorded_embedder)
        if self._path not in ("", ":memory:"):  # SQLite opens these by name, following links
            refuse_links(*sqlite_files(self._path))
        try:
            self._conn = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            _while_locked(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(
                f'CREATE TABLE IF NOT EXISTS "{self._table}" (id TEXT PRIMARY KEY, doc_id TEXT '
                "NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL, dim INTEGER NOT NULL, "
                "embedding BLOB NOT NULL);"
                f'CREATE INDEX IF NOT EXISTS "{self._table}_doc_id" ON "{self._table}" (doc_id);'
                f'CREATE TABLE IF NOT EXISTS "{self._docs}" '
                "(doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL);"
                f'CREATE TABLE IF NOT EXISTS "{self._meta}" '
                "(key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._text.open(self._conn)
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error, AttributeError):
                self._conn.close()
            if isinstance(exc, sqlite3.DatabaseError) and "full" not in str(exc):
                raise VectorStoreError(
                    f"cannot open SQLite store at {self._path!r}: {exc}"
                ) from exc
            raise local_files.sqlite_failure(self._path, exc) from exc
        self._version = -1  # the matrix is not loaded yet

    # ------------------------------------------------------------------ sync
    def _sync(self) -> None:
        """Reload the matrix (ids and vectors only) if another connection has committed since."""
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version:  # read inside a transaction: the count and rows agree
            self._index, self._version = self._load(), version

    def _load(self) -> ExactIndex:
        index = ExactIndex(metadata_source=self._all_metadata)
        t = f'"{self._table}"'
        count, dim = self._conn.execute(
            f"SELECT count(*), (SELECT dim FROM {t} LIMIT 1) FROM {t}"
        ).fetchone()
        if not count:
            return index
        matrix = np.empty((count, max(dim, 0)), dtype=np.float32)
        flat, step, ids = matrix.data.cast("B"), 4 * dim, []
        # row by row straight into the matrix: no intermediate buffer (most of an open)
        for at, (chunk_id, blob) in enumerate(self._conn.execute(f"SELECT id, embedding FROM {t}")):
            if dim < 1 or len(blob) != step or at == count:
                raise VectorStoreError(
                    f"table {self._table!r} holds vectors of different dimensions: "
                    f"{chunk_id!r} has {len(blob) // 4}, the first row {dim}"
                )
            flat[at * step : (at + 1) * step] = blob
            ids.append(chunk_id)
        index.load(ids, matrix)
        return index

    def _all_metadata(self, rows: int) -> list[dict[str, Any]]:
        """Every row's metadata in the index's row order (read once, when a filter needs it)."""
        by_id = {
            chunk_id: metadata_json.stored_metadata(meta, chunk_id, self._where)
            for chunk_id, meta in self._conn.execute(f'SELECT id, metadata FROM "{self._table}"')
        }
        return [by_id[self._index.id_at(row)] for row in range(rows)]

    def _scored_hits(self, hits: Hits) -> list[ScoredChunk]:
        rows, scores = hits
        ids = [self._index.id_at(int(r)) for r in rows]
        statement = f'SELECT id, doc_id, text, metadata FROM "{self._table}" WHERE id IN (?)'
        found = local_files.rows_in(self._conn, statement, ids)
        chunks = {r[0]: metadata_json.stored_chunk(r, self._where) for r in found}
        scored = zip(ids, scores.tolist(), strict=True)
        return [ScoredChunk(chunks[i], min(s, 1.0)) for i, s in scored if i in chunks]

    def _drop_doc(self, doc_id: str) -> list[str]:
        statement = f'DELETE FROM "{self._table}" WHERE doc_id = ? RETURNING id'
        return sorted(r[0] for r in self._conn.execute(statement, (doc_id,)).fetchall())

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """The lock; SQLite's errors as the store's (a write's included)."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise local_files.sqlite_failure(self._path, exc) from exc

    @contextmanager
    def _reading_index(self) -> Iterator[None]:
        """:meth:`_reading` in one read transaction, the matrix up to date (they agree)."""
        with self._reading():
            self._conn.execute("BEGIN")
            try:
                self._sync()
                yield
            finally:
                if self._conn.in_transaction:  # SQLite may have ended it after an error
                    self._conn.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[list[Callable[[], object]]]:
        """One transaction, ending in :meth:`_changed`; the matrix changes only in the callbacks
        appended to the yielded list, run after COMMIT (a failed write leaves it as the file)."""
        with self._reading():
            self._conn.execute("BEGIN IMMEDIATE")
            after: list[Callable[[], object]] = []
            try:
                self._sync()
                yield after
                self._changed()
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # SQLite may have rolled back already
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                self._version = -1
                raise
            self._identity.forget()
            for apply in after:
                apply()

    # ------------------------------------------------------------------ port
    @property
    def dimension(self) -> int | None:
        with self._reading_index():
            return self._index.dimension

    def _insert(self, chunks: Sequence[Chunk], vectors: Matrix | None = None) -> PreparedBatch:
        """Write a batch (an id already stored is replaced) with its terms."""
        conn = self._conn
        batch = vector_batches.prepare_batch(chunks, self._index.dimension, vectors)
        if batch.ids:
            local_files.rows_in(conn, f'DELETE FROM "{self._table}" WHERE id IN (?)', batch.ids)
            dim, jsons = int(batch.vectors.shape[1]), metadata_json.metadata_jsons(batch.chunks)
            made = zip(batch.chunks, jsons, batch.vectors, strict=True)
            conn.executemany(
                f'INSERT INTO "{self._table}" '
                "(id, doc_id, text, metadata, dim, embedding) VALUES (?, ?, ?, ?, ?, ?)",
                [(c.id, c.doc_id, c.text, js, dim, v.tobytes()) for c, js, v in made],
            )
            self._text.index(conn, batch.chunks)
        return batch

    def _changed(self) -> None:
        """Drop the changed documents' manifests, rebuild their full-text rows."""
        self._conn.execute(f'DELETE FROM "{self._docs}" WHERE doc_id IN {self._text.touched}')
        self._text.refresh(self._conn)

    def _add(self, chunks: Sequence[Chunk]) -> None:
        with self._write() as after:
            batch = self._insert(chunks)
            after.append(partial(self._index.upsert, batch))

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        with self._write() as after:
            conn = self._conn
            recorded = self._recorded_embedder()
            identity = check_embedder(recorded, manifest.embedder)
            before = self._drop_doc(manifest.doc_id)
            batch = self._insert(chunks, vectors)
            self._changed()
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

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one indexed query per 500 ids."""
        with self._reading():
            return local_files.sqlite_manifests(self._conn, f'"{self._docs}"', doc_ids)

    def embedder_identity(self) -> EmbedderIdentity | None:
        with self._reading():
            return self._recorded_embedder()

    def _searched_identity(self) -> EmbedderIdentity | None:
        return self._identity.at(self._version)  # read again when data_version moved

    def _delete(self, ids: list[str]) -> int:
        with self._write() as after:
            present = [i for i in ids if i in self._index]
            local_files.rows_in(self._conn, f'DELETE FROM "{self._table}" WHERE id IN (?)', present)
            after.append(partial(self._index.remove, present))
            return len(present)

    def _delete_by_doc(self, doc_id: str) -> int:
        with self._write() as after:
            ids = self._drop_doc(doc_id)
            after.append(partial(self._index.remove, ids))
            return len(ids)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._write() as after:
            self._text.clear(self._conn)
            for table in (self._table, self._docs, self._meta):
                self._conn.execute(f'DELETE FROM "{table}"')
            after.append(self._index.clear)

    # ------------------------------------------------------------------ lexical, retrieve
    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Dense: the in-memory search; lexical: one statement; hybrid: the dense candidates,
        then one statement for the lexical ones, the dense ones' BM25 and the chunks, fused."""
        if query.mode != "dense":
            check_fts5_bm25(query.k1, query.b)
        if query.mode == "lexical":
            with self._reading():
                return self._text.query(self._conn, query.text or "", query.k, query.filter)[0]
        with self._reading_index():
            if len(self._index) == 0:
                return []
            vector = vector_batches.prepare_query(query.vector or [], self._index.dimension)
            rows, cosines = self._index.search_rows(vector, query.depth, query.filter)
            kept = np.minimum(cosines, 1.0) >= query.min_score
            report_identity(self._searched_identity())
            if query.mode == "dense":
                return self._scored_hits((rows[kept], cosines[kept]))
            ids = [self._index.id_at(r) for r in rows[kept].tolist()]
            dense = dict(zip(ids, cosines[kept].tolist(), strict=True))
            lexical, bm25, chunks = self._text.query(
                self._conn, query.text or "", query.depth, query.filter, list(dense)
            )
            hits = [ScoredChunk(chunks[i], min(s, 1.0)) for i, s in dense.items() if i in chunks]
            one_sided = [h.chunk.id for h in lexical if h.chunk.id not in dense]
            cos = self._index.similarities(vector, one_sided) if query.fusion == "rescored" else {}
            fusion, weights, rrf_k = query.fusion, query.weights, query.rrf_k
            return fuse(fusion, hits, lexical, cos, bm25, weights=weights, rrf_k=rrf_k, k=query.k)

    def __len__(self) -> int:
        with self._reading():  # count(*) walks the small doc_id index, loads no vectors
            return int(self._conn.execute(f'SELECT count(*) FROM "{self._table}"').fetchone()[0])

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._reading_index():
            return self._index.count(filter)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteVectorStore(db_path={self._path!r}, table_name={self._table!r})"
