"""SQLiteVectorStore: persistent exact search in one SQLite file (standard library only)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from pywrapai_graph.adapters.vectorstores._exact_index import (
    ExactIndex,
    check_k,
    metadata_json,
    prepare_batch,
    prepare_query,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter

__all__ = ["SQLiteVectorStore"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_DELETE_BATCH = 500


def _table_name(name: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"table_name {name!r} is not a valid identifier: use letters, digits and "
            "underscores, starting with a letter or underscore (at most 63 characters)"
        )
    return name


class SQLiteVectorStore(BaseVectorStore):
    """Chunks and float32 vectors in a SQLite table; searches served from memory.

    The table is loaded into an in-memory matrix when the store opens and kept in step
    with every write; a write by another process (or another connection) is detected
    through ``PRAGMA data_version`` and the matrix is reloaded before the next operation.
    Vectors are stored L2-normalised as float32 BLOBs; the file uses WAL journaling.

    Args:
        db_path: the database file (created if missing).
        table_name: a plain SQL identifier; anything else raises ValueError.

    Raises:
        ValueError: invalid table name.
        VectorStoreError: the file is not a SQLite database or the table is inconsistent.
    """

    @property
    def persistent(self) -> bool:
        return True

    def __init__(
        self, db_path: str | os.PathLike[str] = "vector_store.db", table_name: str = "vector_chunks"
    ) -> None:
        self._table = _table_name(table_name)
        self._path = os.fspath(db_path)
        self._lock = threading.RLock()
        self._index = ExactIndex()
        try:
            self._conn = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{self._table}" ('
                "id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, text TEXT NOT NULL, "
                "metadata TEXT NOT NULL, dim INTEGER NOT NULL, embedding BLOB NOT NULL)"
            )
            self._conn.execute(
                f'CREATE INDEX IF NOT EXISTS "{self._table}_doc_id" ON "{self._table}" (doc_id)'
            )
        except sqlite3.DatabaseError as exc:
            raise VectorStoreError(f"cannot open SQLite store at {self._path!r}: {exc}") from exc
        self._version = -1
        self._sync()

    # ------------------------------------------------------------------ sync
    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _sync(self) -> None:
        """Reload the matrix when another connection has committed since we last looked."""
        version = self._data_version()
        if version == self._version:
            return
        rows = self._conn.execute(
            f'SELECT id, doc_id, text, metadata, dim, embedding FROM "{self._table}"'
        ).fetchall()
        index = ExactIndex()
        if rows:
            dims = {r[4] for r in rows}
            if len(dims) != 1 or any(len(r[5]) != 4 * r[4] for r in rows):
                raise VectorStoreError(
                    f"table {self._table!r} holds vectors of different dimensions {sorted(dims)}"
                )
            dim = dims.pop()
            vectors = np.frombuffer(b"".join([r[5] for r in rows]), dtype=np.float32)
            index.load(
                [r[0] for r in rows],
                vectors.reshape(len(rows), dim).copy(),
                [(r[2], r[1], json.loads(r[3])) for r in rows],
            )
        self._index = index
        self._version = version

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise VectorStoreError(f"cannot write to {self._path!r}: {exc}") from exc
            try:
                self._sync()
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._version = -1  # the matrix may have moved ahead of the file: reload
                raise

    # ------------------------------------------------------------------ port
    @property
    def dimension(self) -> int | None:
        """Vector dimension of the table, or None while it is empty."""
        with self._lock:
            self._sync()
            return self._index.dimension

    def add(self, chunks: Sequence[Chunk]) -> None:
        with self._write() as conn:
            batch = prepare_batch(chunks, self._index.dimension)
            if not batch.ids:
                return
            dim = int(batch.vectors.shape[1])
            rows = [
                (c.id, c.doc_id, c.text, metadata_json(c), dim, v.tobytes())
                for c, v in zip(batch.chunks, batch.vectors, strict=True)
            ]
            conn.executemany(
                f'INSERT OR REPLACE INTO "{self._table}" '
                "(id, doc_id, text, metadata, dim, embedding) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._index.upsert(batch)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        check_k(k)
        with self._lock:
            self._sync()
            if len(self._index) == 0:
                return []
            query = prepare_query(query_vector, self._index.dimension)
            return self._index.search(query, k, filter)

    def delete(self, ids: Sequence[str]) -> int:
        wanted = list(dict.fromkeys(ids))
        with self._write() as conn:
            present = [i for i in wanted if i in self._index]
            for start in range(0, len(present), _DELETE_BATCH):
                part = present[start : start + _DELETE_BATCH]
                marks = ",".join("?" * len(part))
                conn.execute(f'DELETE FROM "{self._table}" WHERE id IN ({marks})', part)
            return self._index.remove(present)

    def delete_by_doc(self, doc_id: str) -> int:
        with self._write() as conn:
            conn.execute(f'DELETE FROM "{self._table}" WHERE doc_id = ?', (doc_id,))
            return self._index.remove(self._index.ids_of_doc(doc_id))

    def clear(self) -> None:
        with self._write() as conn:
            conn.execute(f'DELETE FROM "{self._table}"')
            self._index.clear()

    def __len__(self) -> int:
        with self._lock:
            self._sync()
            return len(self._index)

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteVectorStore(db_path={self._path!r}, table_name={self._table!r})"
