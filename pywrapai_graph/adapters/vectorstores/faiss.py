"""FAISSVectorStore: a FAISS flat inner-product index plus a safe SQLite metadata file.

Security override of the reference: chunk metadata is never pickled. ``meta_path`` holds a
SQLite database (whatever its file name); a file in any other format is refused without
being executed.

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
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters.vectorstores._exact_index import (
    Matrix,
    MatrixBulkStore,
    PreparedBatch,
    check_k,
    metadata_jsons,
    prepare_batch,
    prepare_query,
    stored_metadata,
)
from pywrapai_graph.adapters.vectorstores._faiss_rescoring import FaissRescoring, Labels
from pywrapai_graph.adapters.vectorstores._folder_integrity import file_sha256 as _sha256
from pywrapai_graph.adapters.vectorstores._lexical_index import LexicalMirror, LexicalSearch
from pywrapai_graph.adapters.vectorstores._local_files import (
    WriteLock,
    fsync_dir,
    os_failure,
    sqlite_failure,
    sqlite_manifests,
)
from pywrapai_graph.adapters.vectorstores._metadata_columns import MetadataColumns
from pywrapai_graph.adapters.vectorstores._no_follow import open_file, refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores._segment_log import Segment, SegmentLog, encode_segment
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.vector_store import check_document, check_embedder, check_ids

__all__ = ["FAISSVectorStore"]

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
#: The log may grow to this many bytes (or the base's size, if larger) before a write folds it in.
COMPACT_BYTES = 256 * 2**20
T = TypeVar("T")


class FAISSVectorStore(LexicalSearch, FaissRescoring, MatrixBulkStore):
    """Exact cosine search with FAISS (``IndexIDMap2`` over ``IndexFlatIP``, unit vectors).

    Args:
        index_path: the base FAISS index file; created on the first add. The segment log
            lives next to it as ``<index>.log``.
        meta_path: the chunk metadata file (SQLite; never a pickle); created on first add.
        dimension: fixed up front, or inferred from the first add.
        threads: FAISS OpenMP threads (process-wide). The default, 1, was measured fastest
            for single-query search on 2 cores (2.2 ms vs 3.5 ms at 20k x 384: see
            ``benchmarks/backends.py``); None keeps FAISS's own default (all cores).
        lock_timeout: seconds a write waits for another process's write to finish.
        compact_bytes: a write compacts (see :meth:`compact`) when the segment log would
            grow past this many bytes and past the base file's size, or when deleted and
            replaced rows take more room in the files than this and than the live rows.
            Geometric, so every row is rewritten O(1) times on average.

    Raises:
        MissingExtraError: ``faiss-cpu`` is not installed.
        VectorStoreError: ``meta_path`` is not our metadata format (e.g. a pickle file),
            one file exists without the other, or the files disagree (a checksum).
        StoreBusyError: (on writes) another process kept the write lock past ``lock_timeout``.
        StorageFullError: (on writes) the disk is full; nothing of the write was kept.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "faiss"

    def __init__(
        self,
        index_path: str | os.PathLike[str],
        meta_path: str | os.PathLike[str],
        dimension: int | None = None,
        *,
        threads: int | None = 1,
        lock_timeout: float = 30.0,
        compact_bytes: int = COMPACT_BYTES,
    ) -> None:
        self._faiss = require("faiss", "faiss", "faiss-cpu")
        if threads is not None:
            self._faiss.omp_set_num_threads(threads)
        self._index_path = Path(index_path)
        self._meta_path = Path(meta_path)
        self._pending = self._index_path.with_name(self._index_path.name + ".pending")
        self._log = SegmentLog(
            self._index_path.with_name(self._index_path.name + ".log"), str(self._index_path)
        )
        self._file_lock = WriteLock(
            self._index_path.with_name(self._index_path.name + ".lock"), lock_timeout
        )
        self._compact_bytes = compact_bytes
        self._lock = threading.RLock()
        self._fixed_dim = dimension
        self._dim = dimension
        self._index: Any = None
        self._generation = -1
        # What the committed files hold (set by _load and by each commit).
        self._has_base = False
        self._base_sha256: str | None = None
        self._segments_read: list[Segment] = []
        self._base_bytes = 0
        self._log_end = 0
        self._file_rows = 0  # rows in the base and the log, deleted ones included
        self._next_label = 0
        # The write in progress: rows added (for its segment), and whether it compacts.
        self._added: list[tuple[Labels, Matrix]] = []
        self._compact_now = False
        # Metadata values by key, aligned with the index rows (row order = label order).
        self._columns = MetadataColumns(self._row_metadata)
        self._capacity = 0
        self._lexical = LexicalMirror(self._all_chunks)
        with self._file_lock:
            self._meta = self._open_meta(lock_timeout)
            try:
                self._remove_orphans()
                self._load()
            except BaseException:
                self._meta.close()
                raise

    # ------------------------------------------------------------------ files
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
            if existed and not self._never_created(conn):
                fmt = conn.execute(
                    "SELECT value FROM meta WHERE key = 'format'"
                    if self._has_meta_table(conn)
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
    def _never_created(conn: sqlite3.Connection) -> bool:
        """Whether the file is what a process killed while creating the store left: empty,
        or (written by a version that created it in steps) only our empty tables."""
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if not set(tables) <= {"meta", "chunks", "documents", "segments"}:
            return False
        return not any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables)

    @staticmethod
    def _has_meta_table(conn: sqlite3.Connection) -> bool:
        row = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        return row is not None

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
            after_commit()
            self._generation += 1
            return result

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Read the index and the metadata of one committed generation.

        Another process's commit reloads the index first; the metadata is read inside a
        read transaction of the same generation, so a search never pairs one generation's
        vectors with another's rows.
        """
        with self._lock:
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
                try:
                    yield
                finally:
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

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return True

    @property
    def atomic_documents(self) -> bool:
        return True

    @property
    def dimension(self) -> int | None:
        """Vector dimension, or None before the first add."""
        return self._dim

    def _upsert(self, batch: PreparedBatch) -> None:
        """Store a validated batch in the index and the metadata (inside a transaction)."""
        if not batch.ids:
            return
        if self._index is None:
            self._dim = int(batch.vectors.shape[1])
            self._index = self._new_index(self._dim)
        elif batch.vectors.shape[1] != self._dim:
            raise InvalidArgumentError(
                f"chunk {batch.ids[0]!r} has dimension {batch.vectors.shape[1]}, but the store "
                f"expects {self._dim}"
            )
        known = self._int_ids("id", batch.ids)
        if known:
            self._remove_int_ids(known)
        count = len(batch.ids)
        labels = np.arange(self._next_label, self._next_label + count, dtype=np.int64)
        self._next_label += count
        self._meta.executemany(
            "INSERT INTO chunks (int_id, id, doc_id, text, metadata) VALUES (?, ?, ?, ?, ?)",
            zip(
                labels.tolist(),
                batch.ids,
                [c.doc_id for c in batch.chunks],
                [c.text for c in batch.chunks],
                metadata_jsons(batch.chunks),
                strict=True,
            ),
        )
        vectors = np.ascontiguousarray(batch.vectors, dtype=np.float32)
        start = int(self._index.ntotal)
        self._index.add_with_ids(vectors, labels)
        self._added.append((labels, vectors))
        if start + count > self._capacity:
            self._capacity = max(start + count, self._capacity + self._capacity // 8, 64)
            self._columns.grow(self._capacity, start)
        self._columns.assign(slice(start, start + count), [c.metadata for c in batch.chunks])

    def _int_ids(self, column: str, values: Sequence[str]) -> list[int]:
        found: list[int] = []
        for start in range(0, len(values), 500):
            part = list(values[start : start + 500])
            marks = ",".join("?" * len(part))
            found += [
                r[0]
                for r in self._meta.execute(
                    f"SELECT int_id FROM chunks WHERE {column} IN ({marks})", part
                )
            ]
        return found

    def _remove_int_ids(self, int_ids: list[int]) -> None:
        """Drop chunks from the index and the metadata, and the manifests of their documents.

        The files keep their rows until the next compaction; the metadata no longer lists
        them, so a load drops them again.
        """
        if self._index is not None:
            wanted = np.unique(np.asarray(int_ids, dtype=np.int64))
            labels = self._labels()
            rows = np.searchsorted(labels, wanted)
            found = rows < labels.size
            found[found] = labels[rows[found]] == wanted[found]
            self._columns.delete(rows[found].astype(np.intp), int(labels.size))
            self._index.remove_ids(wanted)
        for start in range(0, len(int_ids), 500):
            part = int_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            self._meta.execute(
                f"DELETE FROM documents WHERE doc_id IN "
                f"(SELECT doc_id FROM chunks WHERE int_id IN ({marks}))",
                part,
            )
            self._meta.execute(f"DELETE FROM chunks WHERE int_id IN ({marks})", part)

    @property
    def _where(self) -> str:
        return repr(str(self._meta_path))

    def _row_metadata(self, rows: int) -> list[dict[str, Any]]:
        """Every row's metadata in row order (rows are in label order), for a new column."""
        found = [
            stored_metadata(r[0], r[1], self._where)
            for r in self._meta.execute("SELECT metadata, id FROM chunks ORDER BY int_id")
        ]
        if len(found) != rows:
            raise VectorStoreError("the FAISS index and its metadata disagree in size")
        return found

    def _all_chunks(self) -> list[Chunk]:
        try:
            rows = self._meta.execute(
                "SELECT id, doc_id, text, metadata FROM chunks ORDER BY int_id"
            ).fetchall()
        except sqlite3.Error as exc:
            raise sqlite_failure(str(self._meta_path), exc) from exc
        return [
            Chunk(r[2], doc_id=r[1], metadata=stored_metadata(r[3], r[0], self._where), id=r[0])
            for r in rows
        ]

    def _before_lexical(self) -> None:
        with self._snapshot():  # reloads (and so resets the lexical index) after another writer
            pass

    def add(self, chunks: Sequence[Chunk]) -> None:
        with self._lock, self._lexical.writing() as lexical:
            batch = prepare_batch(chunks, self._dim)
            if not batch.ids:
                return

            def work() -> None:
                self._upsert(batch)
                self._meta.executemany(
                    "DELETE FROM documents WHERE doc_id = ?",
                    [(d,) for d in {c.doc_id for c in batch.chunks}],
                )

            self._transaction(work)
            lexical.upsert(batch.chunks)

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        check_document(manifest, chunks)
        with self._lock, self._lexical.writing() as lexical:
            batch = prepare_batch(chunks, self._dim, vectors)

            def work() -> int:
                recorded = self._meta_value("embedder")
                identity = check_embedder(
                    None if recorded is None else EmbedderIdentity.from_json(recorded),
                    manifest.embedder,
                )
                old = self._int_ids("doc_id", [manifest.doc_id])
                if old:
                    self._remove_int_ids(old)
                self._upsert(batch)
                self._meta.execute(
                    "INSERT OR REPLACE INTO documents (doc_id, manifest) VALUES (?, ?)",
                    (manifest.doc_id, manifest.to_json()),
                )
                if identity is not None and recorded is None:
                    self._set_meta("embedder", identity.to_json())
                return len(old)

            lexical.remove_doc(manifest.doc_id)
            lexical.upsert(batch.chunks)
            return self._transaction(work)

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        with self._snapshot():
            row = self._meta.execute(
                "SELECT manifest FROM documents WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        return None if row is None else DocumentManifest.from_json(doc_id, row[0])

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one indexed query per 500 ids."""
        with self._snapshot():
            return sqlite_manifests(self._meta, "documents", doc_ids)

    def embedder_identity(self) -> EmbedderIdentity | None:
        with self._snapshot():
            recorded = self._meta_value("embedder")
        return None if recorded is None else EmbedderIdentity.from_json(recorded)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Top ``k`` by cosine; a filter selects rows through metadata columns first.

        The matching rows become a bitmap that FAISS's own search takes as its selector:
        rows outside it are skipped before their dot product, so a selective filter costs
        a fraction of an unfiltered search and a broad one about the same.
        """
        k = check_k(k, filter)
        with self._snapshot():
            if self._index is None or self._index.ntotal == 0:
                return []
            q = prepare_query(query_vector, self._dim)[None, :]
            if filter:
                return self._filtered(q, k, filter)
            k = min(k, int(self._index.ntotal))
            scores, labels = self._index.search(q, k)
            return self._hits(scores[0], labels[0])

    def _filtered(self, query: Matrix, k: int, filter: MetadataFilter) -> list[ScoredChunk]:
        n = int(self._index.ntotal)
        mask = self._columns.mask(filter, n, self._capacity)
        count = int(np.count_nonzero(mask))
        if count == 0:
            return []
        bitmap = np.packbits(mask, bitorder="little")  # kept alive through the search
        selector = self._faiss.IDSelectorBitmap(n, self._faiss.swig_ptr(bitmap))
        flat = self._faiss.downcast_index(self._index.index)  # searched by row number
        scores, rows = flat.search(
            query, min(k, count), params=self._faiss.SearchParameters(sel=selector)
        )
        found = rows[0] >= 0
        return self._hits(scores[0][found], self._labels()[rows[0][found]])

    def search_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """Search a batch of queries with one FAISS call (one matrix product for a flat
        index); with a filter, each query alone."""
        if filter:
            return super().search_many(query_vectors, k, filter)
        check_k(k)
        with self._snapshot():
            queries = [prepare_query(q, self._dim) for q in query_vectors]
            if not queries:
                return []
            if self._index is None or self._index.ntotal == 0:
                return [[] for _ in queries]
            k = min(k, int(self._index.ntotal))
            scores, labels = self._index.search(np.stack(queries), k)
            return [self._hits(s, lbl) for s, lbl in zip(scores, labels, strict=True)]

    def _hits(self, scores: np.ndarray, labels: np.ndarray) -> list[ScoredChunk]:
        found = [(int(lbl), float(s)) for lbl, s in zip(labels, scores, strict=True) if lbl >= 0]
        if not found:
            return []
        marks = ",".join("?" * len(found))
        rows = {
            r[0]: r
            for r in self._meta.execute(
                f"SELECT int_id, id, doc_id, text, metadata FROM chunks WHERE int_id IN ({marks})",
                [f[0] for f in found],
            )
        }
        return [
            ScoredChunk(
                Chunk(
                    text=rows[i][3],
                    doc_id=rows[i][2],
                    metadata=stored_metadata(rows[i][4], rows[i][1], self._where),
                    id=rows[i][1],
                ),
                min(score, 1.0),
            )
            for i, score in found
            if i in rows
        ]

    def _delete_where(self, column: str, values: list[str]) -> int:
        with self._lock, self._lexical.writing() as lexical:
            if column == "doc_id":
                lexical.remove_doc(values[0])
            else:
                lexical.remove(values)

            def work() -> int:
                int_ids = self._int_ids(column, values)
                if int_ids:
                    self._remove_int_ids(int_ids)
                if column == "doc_id":
                    self._meta.execute("DELETE FROM documents WHERE doc_id = ?", values)
                return len(int_ids)

            return self._transaction(work)

    def delete(self, ids: Sequence[str]) -> int:
        wanted = check_ids(ids)
        if not wanted:
            return 0
        return self._delete_where("id", wanted)

    def delete_by_doc(self, doc_id: str) -> int:
        return self._delete_where("doc_id", [doc_id])

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder (and empty the files)."""

        def work() -> None:
            if self._index is not None:
                self._index.reset()
                self._compact_now = True
            self._columns.clear()
            self._meta.execute("DELETE FROM chunks")
            self._meta.execute("DELETE FROM documents")
            self._meta.execute("DELETE FROM meta WHERE key = 'embedder'")

        with self._lock, self._lexical.writing() as lexical:
            lexical.clear()
            self._transaction(work)

    def __len__(self) -> int:
        with self._snapshot():
            return 0 if self._index is None else int(self._index.ntotal)

    def count(self, filter: MetadataFilter | None = None) -> int:
        if not filter:
            return len(self)
        with self._snapshot():
            if self._index is None:
                return 0
            n = int(self._index.ntotal)
            return int(np.count_nonzero(self._columns.mask(filter, n, self._capacity)))

    def close(self) -> None:
        """Close the metadata database (the files are complete after every write)."""
        with self._lock:
            self._meta.close()

    def __repr__(self) -> str:
        return (
            f"FAISSVectorStore(index_path={str(self._index_path)!r}, "
            f"meta_path={str(self._meta_path)!r}, dimension={self._dim})"
        )
