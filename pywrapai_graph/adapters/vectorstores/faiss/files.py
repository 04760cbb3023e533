"""The one file of :class:`FAISSVectorStore`: SQLite rows of chunks, vectors (float32, CRC-32)
and manifests, written in one transaction under ``<index>.lock``. The FAISS index is each
process's cache; labels are never reused, so following a commit drops gone labels and adds
rows above the top one."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar
from zlib import crc32

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.local_files import WriteLock, sqlite_failure
from pywrapai_graph.adapters.vectorstores.kit.metadata_columns import MetadataColumns
from pywrapai_graph.adapters.vectorstores.kit.no_follow import refuse_links, sqlite_files
from pywrapai_graph.errors import InvalidArgumentError, StoreDamagedError, VectorStoreError

__all__ = ["Labels", "StoreFile", "open_meta"]

FORMAT = "pywrapai-faiss-meta/2"
_OLD_FORMAT = "pywrapai-faiss-meta/1"
_SCHEMA = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE chunks (int_id INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
    "doc_id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL, vector BLOB NOT NULL, "
    "crc INTEGER NOT NULL)",
    "CREATE INDEX chunks_doc_id ON chunks (doc_id)",
    "CREATE TABLE documents (doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)",
    f"INSERT INTO meta (key, value) VALUES ('format', '{FORMAT}')",
]
#: tables a first open (this version's or an older one's) may have left empty when killed
_OURS = {"meta", "chunks", "documents", "segments", "sqlite_sequence"}
Labels = npt.NDArray[np.int64]
T = TypeVar("T")


def open_meta(
    meta_path: Path, index_path: Path, lock: Path, timeout: float, dimension: int | None
) -> sqlite3.Connection:
    """Open (creating it in one transaction if new) the store's database.

    Raises:
        VectorStoreError: the file is not ours (a pickle, another SQLite database, the older
            layout) or a link was planted at one of the store's paths.
        InvalidArgumentError: it holds vectors of another ``dimension``.
    """
    refuse_links(index_path, lock, *sqlite_files(meta_path))
    if meta_path.exists():
        with meta_path.open("rb") as f:
            header = f.read(16)
        if header and header != b"SQLite format 3\x00":  # (empty: never written to)
            raise VectorStoreError(
                f"{str(meta_path)!r} is not a pywrapai FAISS metadata file (SQLite); refusing "
                "to read it. Pickle files are never loaded: re-create the store from your "
                "documents."
            )
    try:
        conn = sqlite3.connect(
            meta_path, check_same_thread=False, isolation_level=None, timeout=timeout
        )
    except sqlite3.Error as exc:
        raise sqlite_failure(str(meta_path), exc) from exc
    try:
        conn.execute("PRAGMA page_size=16384")  # (new files): 4 KiB pages read vectors 3x slower
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")  # one transaction: the whole schema, or none of it
        _create_or_check(conn, meta_path, index_path)
        stored = conn.execute("SELECT value FROM meta WHERE key = 'dimension'").fetchone()
        if stored and dimension is not None and int(stored[0]) != dimension:
            raise InvalidArgumentError(
                f"the store holds dimension {stored[0]}, but dimension={dimension} was given"
            )
        conn.execute("COMMIT")
    except BaseException as exc:
        conn.close()
        if isinstance(exc, sqlite3.Error):
            raise sqlite_failure(str(meta_path), exc) from exc
        raise
    return conn


def _create_or_check(conn: sqlite3.Connection, meta_path: Path, index_path: Path) -> None:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    if set(tables) <= _OURS and not any(
        conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables
    ):  # new, or what a killed first open left (empty; an older version's empty tables)
        for table in set(tables) - {"sqlite_sequence"}:
            conn.execute(f"DROP TABLE {table}")
        for statement in _SCHEMA:
            conn.execute(statement)
        return
    row = conn.execute(
        "SELECT value FROM meta WHERE key = 'format'" if "meta" in tables else "SELECT NULL"
    ).fetchone()
    if row and row[0] == _OLD_FORMAT:
        raise VectorStoreError(
            f"{str(meta_path)!r} is a FAISS store of the older layout (its vectors in "
            f"{str(index_path)!r} and {str(index_path)!r}.log); this version keeps them in the "
            "metadata file. Re-create the store from your documents at new paths (for "
            "instance `pywrapai-graph ingest`), then delete the old files."
        )
    if not row or row[0] != FORMAT:
        raise VectorStoreError(
            f"{str(meta_path)!r} is a SQLite file but not a pywrapai FAISS metadata file; "
            "refusing to use it"
        )


def _vectors_of(rows: list[Any], dim: int, where: str) -> tuple[Labels, npt.NDArray[np.float32]]:
    """The labels and vectors of ``(int_id, vector, crc)`` rows (a vector failing its size or
    CRC-32: StoreDamagedError)."""
    if not all(isinstance(b, bytes) and len(b) == 4 * dim and crc32(b) == c for _, b, c in rows):
        raise StoreDamagedError(
            f"the FAISS store {where} is damaged: a row's vector is not {dim} float32 values "
            "with its CRC-32 (changed outside this library); re-create it from your documents"
        )
    labels = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
    return labels, matrix.astype(np.float32, copy=False)


class StoreFile:
    """:class:`FAISSVectorStore`'s file: :meth:`_snapshot` reads, :meth:`_transaction` writes."""

    _in_snapshot: bool = False  # this thread (holding _lock) is inside _snapshot
    _columns: MetadataColumns  # the store's metadata columns and lexical index, reset
    _lexical: LexicalMirror  # by another process's write

    def __init__(
        self, index_path: Path, meta_path: Path, dimension: int | None, lock_timeout: float
    ) -> None:
        self._faiss: Any = require("faiss", "faiss", "faiss-cpu")
        self._meta_path = meta_path
        self._where = repr(str(meta_path))
        lock = index_path.with_name(index_path.name + ".lock")
        self._file_lock = WriteLock(lock, lock_timeout)
        self._lock: AbstractContextManager[Any] = threading.RLock()
        self._fixed_dim = self._dim = dimension
        self._index: Any = None
        self._generation = -1  # the committed generation the index holds (-1: none yet)
        self._capacity = 0  # rows the metadata columns have room for
        self._on_commit: list[Callable[[], object]] = []  # told once a transaction commits
        self._meta = open_meta(meta_path, index_path, lock, lock_timeout, dimension)

    def _meta_value(self, key: str) -> str | None:
        row = self._meta.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._meta.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _follow(self) -> None:
        """Bring the index to the generation this transaction (read or write) sees."""
        generation = int(self._meta_value("generation") or 0)
        if generation == self._generation:
            return
        self._generation = -1  # until this is complete: a failure is met again next time
        self._columns.clear()
        self._lexical.reset()
        stored = self._meta_value("dimension")
        self._dim = self._fixed_dim if stored is None else int(stored)
        if self._index is None and self._dim is not None:
            self._index = self._new_index(self._dim)
        if self._index is not None:
            held = self._labels().copy()
            top = int(held[-1]) if held.size else -1
            statement = "SELECT int_id, vector, crc FROM chunks WHERE int_id > ? ORDER BY int_id"
            rows = self._meta.execute(statement, (top,)).fetchall()
            (count,) = self._meta.execute("SELECT count(*) FROM chunks").fetchone()
            if count != held.size + len(rows):  # rows held were deleted: read the ids
                ids = self._meta.execute("SELECT int_id FROM chunks INDEXED BY chunks_doc_id")
                live = np.fromiter((r[0] for r in ids), dtype=np.int64)
                self._index.remove_ids(held[~np.isin(held, live)])
            if rows:
                labels, vectors = _vectors_of(rows, self._dim or 0, self._where)
                self._index.add_with_ids(vectors, labels)
            if self._index.ntotal != count:
                raise StoreDamagedError(f"the FAISS store {self._where} changed under this one")
        self._capacity = 0 if self._index is None else int(self._index.ntotal)
        self._generation = generation

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Read the index and the rows of one committed generation (one read transaction)."""
        with self._lock:
            if self._in_snapshot:  # a read within a read (one retrieval's parts): the same
                yield
                return
            try:
                self._meta.execute("BEGIN")
                try:
                    self._follow()
                    self._in_snapshot = True
                    yield
                finally:
                    self._in_snapshot = False
                    self._meta.execute("COMMIT")
            except sqlite3.Error as exc:
                raise sqlite_failure(str(self._meta_path), exc) from exc

    def _transaction(self, work: Callable[[], T]) -> T:
        """Run ``work()`` (index and row changes) in one write transaction: all or nothing."""
        with self._lock, self._file_lock:
            try:
                self._meta.execute("BEGIN IMMEDIATE")
                self._follow()  # another process may have written since we last looked
                result = work()
                if self._dim is not None:
                    self._set_meta("dimension", str(self._dim))
                self._set_meta("generation", str(self._generation + 1))
                self._meta.execute("COMMIT")
            except BaseException as exc:
                if self._meta.in_transaction:
                    with suppress(sqlite3.Error):
                        self._meta.execute("ROLLBACK")
                self._index, self._generation = None, -1  # rebuilt from the file
                if isinstance(exc, sqlite3.Error):
                    raise sqlite_failure(str(self._meta_path), exc) from exc
                raise
            finally:
                told, self._on_commit = self._on_commit, []
            self._generation += 1
            for tell in told:
                tell()
            return result

    def _new_index(self, dim: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dim))

    def _labels(self) -> Labels:
        """The label of every index row, in row order (a view: valid until the next write)."""
        if self._index is None or self._index.ntotal == 0:
            return np.empty(0, np.int64)
        return self._faiss.rev_swig_ptr(self._index.id_map.data(), self._index.ntotal)  # type: ignore[no-any-return]
