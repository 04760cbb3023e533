"""The crash-safe files of :class:`FAISSVectorStore`: a FAISS index, its segment log and
its SQLite metadata, kept in step through crashes and other processes' writes.

Files: the base index ``<index>`` (a FAISS file), the segment log ``<index>.log`` and the
metadata. Every write is one metadata transaction under a cross-process file lock
(``<index>.lock``). A write that adds rows appends one segment (its rows' labels and
vectors) to the log, synced, and the metadata commits the segment's offset, length and
SHA-256; deletes only change the metadata (the rows it no longer lists are dropped when the
files are read). So a small write costs what it adds, not the size of the store.
:meth:`FAISSVectorStore.compact` folds the log into the base: the whole index is written to
``<index>.pending`` and synced, the metadata commits its checksum (and forgets the
segments), then the pending file is renamed over the base and the log emptied. The first
write, ``clear()``, and a log that outgrows the base (and ``compact_bytes``) go that way.

A crash at any instant leaves the last committed state recoverable: on open, a pending file
whose checksum the metadata names is renamed into place (the commit happened), any other is
removed (it did not), and log bytes past the last committed segment are cut off. Every byte
read is checked against a checksum the metadata recorded. A second process writing the same
store waits for the lock, then gets :class:`StoreBusyError`; a process that finds the files
changed by another reloads them.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters.vectorstores.faiss.segment_log import (
    Segment,
    SegmentLog,
    encode_segment,
)
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
    WriteLock,
    fsync_dir,
    os_failure,
    sqlite_failure,
)
from pywrapai_graph.adapters.vectorstores.kit.local_files import file_sha256 as _sha256
from pywrapai_graph.adapters.vectorstores.kit.metadata_columns import MetadataColumns
from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file, refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix
from pywrapai_graph.errors import InvalidArgumentError, VectorStoreError

__all__ = ["FaissFiles", "Labels"]

_FORMAT = "pywrapai-faiss-meta/1"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS chunks (int_id INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
    "doc_id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_doc_id ON chunks (doc_id);"
    "CREATE TABLE IF NOT EXISTS documents (doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS segments (seq INTEGER PRIMARY KEY, offset INTEGER NOT NULL, "
    "length INTEGER NOT NULL, rows INTEGER NOT NULL, sha256 TEXT NOT NULL);"
)
T = TypeVar("T")
Labels = npt.NDArray[np.int64]


class FaissFiles:
    """The files half of :class:`FAISSVectorStore` (see the module docstring): opening and
    loading them, following other processes' commits, and committing a write
    (:meth:`_transaction`) or a compaction (:meth:`compact`). The store sets the attributes
    below in its ``__init__``, then opens the metadata (:meth:`_open_meta`) and loads
    (:meth:`_load`) under the file lock."""

    _faiss: Any
    _index_path: Path
    _meta_path: Path
    _pending: Path
    _log: SegmentLog
    _file_lock: WriteLock
    _meta: sqlite3.Connection
    _compact_bytes: int
    _lock: AbstractContextManager[Any]
    _fixed_dim: int | None
    _dim: int | None
    _index: Any
    _generation: int
    # what the committed files hold (set by _load and by each commit)
    _has_base: bool
    _base_sha256: str | None
    _segments_read: list[Segment]
    _base_bytes: int
    _log_end: int
    _file_rows: int  # rows in the base and the log, deleted ones included
    _next_label: int
    _added: list[tuple[Labels, Matrix]]
    _compact_now: bool
    _in_snapshot: bool = False  # this thread (holding _lock) is inside _snapshot
    _columns: MetadataColumns
    _capacity: int
    #: the lexical index: told each change (through ``_on_commit``) once its write commits,
    #: reset when a write fails or another process's commit is loaded
    _lexical: LexicalMirror
    _on_commit: list[Callable[[], object]]

    def _open_meta(self, timeout: float) -> sqlite3.Connection:
        # a link planted at any file of ours is refused now, not at the write that would use it
        refuse_links(
            self._index_path, self._log.path, self._pending, *sqlite_files(self._meta_path)
        )
        existed = self._meta_path.exists()
        if existed:
            with self._meta_path.open("rb") as f:
                header = f.read(16)
            if header and header != b"SQLite format 3\x00":  # (empty: never written to)
                raise VectorStoreError(
                    f"{str(self._meta_path)!r} is not a pywrapai FAISS metadata file (SQLite); "
                    "refusing to read it. Pickle files are never loaded: re-create the store "
                    "from your documents."
                )
        try:
            conn = sqlite3.connect(
                self._meta_path, check_same_thread=False, isolation_level=None, timeout=timeout
            )
        except sqlite3.Error as exc:
            raise sqlite_failure(str(self._meta_path), exc) from exc
        try:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            if existed and not self._never_created(conn, tables):
                fmt = conn.execute(
                    "SELECT value FROM meta WHERE key = 'format'"
                    if "meta" in tables
                    else "SELECT NULL"
                ).fetchone()
                if not fmt or fmt[0] != _FORMAT:
                    raise VectorStoreError(
                        f"{str(self._meta_path)!r} is a SQLite file but not a pywrapai FAISS "
                        "metadata file; refusing to use it"
                    )
            conn.execute("PRAGMA journal_mode=WAL")
            # one transaction: a crash leaves the schema and the format row, or neither
            conn.executescript(
                f"BEGIN IMMEDIATE;{_SCHEMA}"
                f"INSERT OR IGNORE INTO meta (key, value) VALUES ('format', '{_FORMAT}');COMMIT;"
            )
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise sqlite_failure(str(self._meta_path), exc) from exc
            raise
        return conn

    @staticmethod
    def _never_created(conn: sqlite3.Connection, tables: list[str]) -> bool:
        """Whether the file (with these ``tables``) is what a process killed while creating
        the store left: empty, or (written by a version that created it in steps) only our
        empty tables."""
        if not set(tables) <= {"meta", "chunks", "documents", "segments"}:
            return False
        return not any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables)

    def _meta_value(self, key: str) -> str | None:
        row = self._meta.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._meta.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _stored_generation(self) -> int:
        return int(self._meta_value("generation") or 0)

    def _segments(self) -> list[Segment]:
        return [
            Segment(*row)
            for row in self._meta.execute(
                "SELECT offset, length, rows, sha256 FROM segments ORDER BY seq"
            )
        ]

    def _remove_orphans(self) -> None:
        """Temp files of writers that died (this version's and the older ``.faiss-*.tmp``)."""
        for orphan in self._index_path.parent.glob(".faiss-*.tmp"):
            with suppress(OSError):
                orphan.unlink()

    def _load(self) -> None:
        """Load the committed state, finishing or discarding a write a crash interrupted.

        Called with the file lock held.
        """
        stored_dim = self._meta_value("dimension")
        checksum = self._meta_value("index_sha256")
        if stored_dim is not None:
            if self._dim is not None and int(stored_dim) != self._dim:
                raise InvalidArgumentError(
                    f"the store holds dimension {stored_dim}, but dimension={self._dim} was given"
                )
            self._dim = int(stored_dim)
        generation = self._stored_generation()
        self._columns.clear()
        index_ok = self._index_path.exists() and (
            checksum is not None and _sha256(self._index_path) == checksum
        )
        pending_ok = (
            checksum is not None
            and not index_ok
            and self._pending.exists()
            and _sha256(self._pending) == checksum
        )
        if pending_ok:  # the write committed, but its rename was cut short
            os.replace(self._pending, self._index_path)
            fsync_dir(self._index_path.parent)
            index_ok = True
        if self._pending.exists():  # a write that never committed
            self._pending.unlink()
        segments = self._segments()
        self._segments_read = segments
        self._base_sha256 = checksum
        self._log_end = segments[-1].end if segments else 0
        with suppress(VectorStoreError):  # tidiness only: reads and appends stop at _log_end
            self._log.truncate(self._log_end)  # an append that never committed
        self._has_base = checksum is not None
        if checksum is None:
            if self._index_path.exists() or segments:
                raise VectorStoreError(
                    f"index file {str(self._index_path)!r} exists without matching metadata at "
                    f"{str(self._meta_path)!r}"
                )
            self._index = None if self._dim is None else self._new_index(self._dim)
            self._base_bytes = self._file_rows = self._next_label = self._capacity = 0
            self._generation = generation
            return
        if not self._index_path.exists():
            raise VectorStoreError(
                f"index file {str(self._index_path)!r} is missing but its metadata exists"
            )
        if not index_ok:
            raise VectorStoreError(
                "the FAISS index and its metadata disagree (the index file was replaced or "
                "damaged outside this library); re-create the store from your documents"
            )
        try:
            self._index = self._faiss.read_index(str(self._index_path))
        except RuntimeError as exc:
            raise VectorStoreError(
                f"cannot read the FAISS index {str(self._index_path)!r}"
            ) from exc
        self._check_id_map()
        if self._index.d != self._dim:
            raise VectorStoreError("the FAISS index and its metadata disagree in size")
        labels, vectors = self._log.read(segments, int(self._dim or 0))
        if labels.size:
            self._index.add_with_ids(vectors, labels)
        self._base_bytes = self._index_path.stat().st_size
        self._file_rows = int(self._index.ntotal)
        self._drop_deleted_rows()
        self._capacity = int(self._index.ntotal)
        self._generation = generation  # only now: a load that failed is tried (and fails) again

    def _check_id_map(self) -> None:
        """The index just read is one this store writes: flat vectors behind an id map."""
        if not isinstance(self._index, self._faiss.IndexIDMap2):
            kind = type(self._index).__name__
            self._index = None
            raise VectorStoreError(
                f"the FAISS index {str(self._index_path)!r} is an {kind} without the id map "
                "this store writes (IndexIDMap2); it was not written by this library: "
                "re-create the store from your documents"
            )

    def _catch_up(self) -> None:
        """Follow another process's commits (called with the file lock held).

        When they only appended segments and deleted rows (the base is the one we read),
        read just the new segments; otherwise (a compaction, a clear) load everything again.
        """
        segments = self._segments()
        known = len(self._segments_read)
        if (
            self._index is None
            or self._generation < 0  # the last load failed: it left no state to build on
            or self._meta_value("index_sha256") != self._base_sha256
            or segments[:known] != self._segments_read
        ):
            self._reload()
            return
        new = segments[known:]
        labels, vectors = self._log.read(new, int(self._dim or 0))
        self._generation = -1  # until this catch-up is complete
        if labels.size:
            self._index.add_with_ids(vectors, labels)
        self._segments_read = segments
        self._log_end = segments[-1].end if segments else 0
        self._file_rows += int(labels.size)
        self._lexical.reset()
        self._columns.clear()
        self._drop_deleted_rows()
        self._capacity = int(self._index.ntotal)
        self._generation = self._stored_generation()

    def _drop_deleted_rows(self) -> None:
        """Remove the rows the files hold but the metadata no longer lists (deleted ones)."""
        in_files = self._labels().copy()
        live = np.fromiter(
            (r[0] for r in self._meta.execute("SELECT int_id FROM chunks ORDER BY int_id")),
            dtype=np.int64,
        )
        stored_next = int(self._meta_value("next_label") or 0)
        self._next_label = max(stored_next, int(in_files.max()) + 1 if in_files.size else 0)
        if in_files.size and not (np.diff(in_files) > 0).all():
            raise VectorStoreError("the FAISS index holds rows out of order; it was not ours")
        if np.setdiff1d(live, in_files, assume_unique=True).size:
            raise VectorStoreError("the FAISS index and its metadata disagree in size")
        if live.size != in_files.size:
            dead = in_files[~np.isin(in_files, live, assume_unique=True)]
            self._index.remove_ids(dead)
        if self._index.ntotal != live.size:
            raise VectorStoreError("the FAISS index and its metadata disagree in size")

    def _reload(self) -> None:
        """Return to what the files say (after a failed write, or another process's write)."""
        self._index = None
        self._generation = -1  # no generation loaded until the load succeeds
        self._dim = self._fixed_dim
        self._lexical.reset()
        self._load()

    def _new_index(self, dim: int) -> Any:
        return self._faiss.IndexIDMap2(self._faiss.IndexFlatIP(dim))

    def _labels(self) -> Labels:
        """The label of every index row, in row order (a view: valid until the next write)."""
        n = int(self._index.ntotal) if self._index is not None else 0
        if n == 0:
            return np.empty(0, np.int64)
        labels: Labels = self._faiss.rev_swig_ptr(self._index.id_map.data(), n)
        return labels

    def _write_pending(self) -> str:
        """Write the index to the pending file (never through a link), synced; returns its
        checksum, taken from the bytes as they are written."""
        digest = hashlib.sha256()
        try:
            fd = open_file(self._pending, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "wb") as f:

                def write(data: bytes) -> None:
                    digest.update(data)
                    f.write(data)

                self._faiss.write_index(self._index, self._faiss.PyCallbackIOWriter(write))
                f.flush()
                os.fsync(f.fileno())
        except (OSError, RuntimeError) as exc:
            raise os_failure(str(self._index_path), exc) from exc
        return digest.hexdigest()

    def _should_compact(self, log_end: int, file_rows: int) -> bool:
        if self._compact_now or not self._has_base:
            return True
        limit = max(self._base_bytes, self._compact_bytes)
        dead = (file_rows - int(self._index.ntotal)) * 4 * int(self._dim or 0)
        live = int(self._index.ntotal) * 4 * int(self._dim or 0)
        return log_end > limit or dead > max(live, self._compact_bytes)

    def _commit_files(self) -> Callable[[], None]:
        """Write this transaction's rows to the files (inside it); returns the after-COMMIT step.

        Either one segment appended to the log, or (compacting) the whole index to the
        pending file, renamed over the base after the commit.
        """
        added = self._added
        data = (
            encode_segment(
                np.concatenate([labels for labels, _ in added]),
                np.concatenate([vectors for _, vectors in added]),
            )
            if added
            else b""
        )
        file_rows = self._file_rows + sum(labels.size for labels, _ in added)
        self._set_meta("dimension", str(self._dim))
        if not self._should_compact(self._log_end + len(data), file_rows):
            if not data:
                return lambda: None
            segment = self._log.append(self._log_end, data)
            self._meta.execute(
                "INSERT INTO segments (offset, length, rows, sha256) VALUES (?, ?, ?, ?)",
                segment,
            )

            def appended() -> None:
                self._log_end = segment.end
                self._file_rows = file_rows
                self._segments_read.append(segment)

            return appended
        checksum = self._write_pending()
        self._set_meta("index_sha256", checksum)
        self._meta.execute("DELETE FROM segments")

        def compacted() -> None:
            os.replace(self._pending, self._index_path)
            fsync_dir(self._index_path.parent)
            self._has_base = True
            self._base_sha256 = checksum
            self._segments_read = []
            self._base_bytes = self._index_path.stat().st_size
            self._file_rows = int(self._index.ntotal)
            self._log_end = 0
            with suppress(VectorStoreError):  # the next open or append cuts it off anyway
                self._log.truncate(0)

        return compacted

    def _transaction(self, work: Callable[[], T]) -> T:
        """Run ``work()`` (index + metadata changes) and commit it to the files, or nothing."""
        with self._lock, self._file_lock:
            self._added = []
            self._on_commit = []
            try:
                self._meta.execute("BEGIN IMMEDIATE")
                if self._stored_generation() != self._generation:
                    self._catch_up()  # another process wrote since we last looked
                result = work()
                after_commit = self._commit_files() if self._index is not None else lambda: None
                self._set_meta("next_label", str(self._next_label))
                self._set_meta("generation", str(self._generation + 1))
                self._meta.execute("COMMIT")
            except BaseException as exc:
                if self._meta.in_transaction:
                    with suppress(sqlite3.Error):
                        self._meta.execute("ROLLBACK")
                with suppress(OSError):
                    self._pending.unlink()
                self._reload()
                if isinstance(exc, sqlite3.Error):
                    raise sqlite_failure(str(self._meta_path), exc) from exc
                raise
            finally:
                self._added = []
                self._compact_now = False
                told, self._on_commit = self._on_commit, []
            after_commit()
            self._generation += 1
            for tell in told:
                tell()
            return result

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Read the index and the metadata of one committed generation.

        Another process's commit reloads the index first; the metadata is read inside a
        read transaction of the same generation, so a search never pairs one generation's
        vectors with another's rows.
        """
        with self._lock:
            if self._in_snapshot:  # a read within a read (one retrieval's parts): the same
                yield
                return
            try:
                for _ in range(10):
                    if self._stored_generation() != self._generation:
                        with self._file_lock:
                            self._catch_up()
                    self._meta.execute("BEGIN")
                    if self._stored_generation() == self._generation:
                        break
                    self._meta.execute("COMMIT")
                else:
                    raise VectorStoreError(f"{str(self._meta_path)!r} keeps changing; retry")
                self._in_snapshot = True
                try:
                    yield
                finally:
                    self._in_snapshot = False
                    self._meta.execute("COMMIT")
            except sqlite3.Error as exc:
                raise sqlite_failure(str(self._meta_path), exc) from exc

    def compact(self) -> None:
        """Fold the segment log into the base index file and drop deleted rows from disk.

        Writes the whole index once (to ``<index>.pending``, synced, committed by checksum,
        renamed over the base) and empties the log; as crash-safe as any write. Writes do
        this on their own when the log outgrows the base (see ``compact_bytes``); call it
        after a large ingest or many deletes to make the files as small as the data.
        """
        with self._lock:
            self._compact_now = True  # (a store with nothing written has nothing to fold)
            self._transaction(lambda: None)
