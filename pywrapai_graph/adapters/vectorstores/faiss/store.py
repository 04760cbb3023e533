"""FAISSVectorStore: a FAISS flat inner-product index over a safe SQLite file (:mod:`.files`).

Security override of the reference: chunk metadata is never pickled. ``meta_path`` holds a
SQLite database whatever its name; a file in any other format is refused, never executed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any
from zlib import crc32

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters.vectorstores.faiss.files import StoreFile, open_meta
from pywrapai_graph.adapters.vectorstores.kit.identity_copy import IdentityCopy
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import InProcessRetrieval, LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
    WriteLock,
    rows_in,
    sqlite_failure,
    sqlite_manifests,
)
from pywrapai_graph.adapters.vectorstores.kit.matrix_bulk_store import MatrixBulkStore
from pywrapai_graph.adapters.vectorstores.kit.metadata_columns import MetadataColumns
from pywrapai_graph.adapters.vectorstores.kit.metadata_json import (
    metadata_jsons,
    stored_chunk,
    stored_metadata,
)
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    Matrix,
    PreparedBatch,
    prepare_batch,
    prepare_query,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import InvalidArgumentError, StoreDamagedError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["FAISSVectorStore"]


class FAISSVectorStore(InProcessRetrieval, MatrixBulkStore, StoreFile):
    """Exact cosine search with FAISS (``IndexIDMap2`` over ``IndexFlatIP``, unit vectors).

    Args:
        index_path: names the cross-process write lock ``<index>.lock``. The index itself
            is kept in memory, built from ``meta_path`` on first use.
        meta_path: the store's file (SQLite; never a pickle): chunks, vectors, manifests.
        dimension: fixed up front, or inferred from the first add.
        threads: FAISS OpenMP threads (process-wide); 1, fastest for one query on 2 cores
            (2.2 vs 3.5 ms at 20k x 384, ``benchmarks/backends.py``); None: all cores.
        lock_timeout: seconds a write waits for another process's write to finish.

    Raises:
        MissingExtraError: ``faiss-cpu`` is not installed.
        VectorStoreError: ``meta_path`` is not our format (e.g. a pickle file), or holds a
            store of the older layout (the message says how to re-create it).
        StoreDamagedError: a stored vector fails its size or CRC-32 check.
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
    ) -> None:
        self._faiss = require("faiss", "faiss", "faiss-cpu")
        if threads is not None:
            self._faiss.omp_set_num_threads(threads)
        self._index_path = Path(index_path)
        self._meta_path = Path(meta_path)
        self._where = repr(str(self._meta_path))
        lock = self._index_path.with_name(self._index_path.name + ".lock")
        self._file_lock = WriteLock(lock, lock_timeout)
        self._lock = threading.RLock()
        self._fixed_dim = dimension
        self._dim = dimension
        self._index: Any = None
        self._generation = -1  # the committed generation the index holds (-1: none yet)
        self._capacity = 0  # rows the metadata columns have room for
        self._identity = IdentityCopy(self._recorded_embedder)  # read again per generation
        # Metadata values by key, aligned with the index rows (row order = label order).
        self._columns = MetadataColumns(self._row_metadata)
        # the lexical index is told each change once its transaction commits (_on_commit)
        self._lexical = LexicalMirror(self._all_chunks)
        self._on_commit: list[Callable[[], object]] = []
        self._meta = open_meta(self._meta_path, self._index_path, lock, lock_timeout, dimension)

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
        with self._snapshot():
            return self._dim

    def _upsert(self, batch: PreparedBatch) -> None:
        """Store a validated batch in the index and the rows (inside a transaction)."""
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
        last = self._meta.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'")
        first = int((last.fetchone() or (0,))[0]) + 1  # labels are never reused
        labels = np.arange(first, first + count, dtype=np.int64)
        vectors = np.ascontiguousarray(batch.vectors, dtype="<f4")
        blobs = [row.tobytes() for row in vectors]
        self._meta.executemany(
            "INSERT INTO chunks (int_id, id, doc_id, text, metadata, vector, crc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            zip(
                labels.tolist(),
                batch.ids,
                [c.doc_id for c in batch.chunks],
                [c.text for c in batch.chunks],
                metadata_jsons(batch.chunks),
                blobs,
                map(crc32, blobs),
                strict=True,
            ),
        )
        start = int(self._index.ntotal)
        self._index.add_with_ids(vectors, labels)
        self._on_commit.append(partial(self._lexical.upsert, batch.chunks))
        if start + count > self._capacity:
            self._capacity = max(start + count, self._capacity + self._capacity // 8, 64)
            self._columns.grow(self._capacity, start)
        self._columns.assign(slice(start, start + count), [c.metadata for c in batch.chunks])

    def _int_ids(self, column: str, values: Sequence[str]) -> list[int]:
        statement = f"SELECT int_id FROM chunks WHERE {column} IN (?)"
        return [r[0] for r in rows_in(self._meta, statement, values)]

    def _remove_int_ids(self, int_ids: list[int]) -> None:
        """Drop chunks from the index and the rows, and the manifests of their documents."""
        if self._index is not None:
            wanted = np.unique(np.asarray(int_ids, dtype=np.int64))
            labels = self._labels()
            rows = np.searchsorted(labels, wanted)
            found = rows < labels.size
            found[found] = labels[rows[found]] == wanted[found]
            self._columns.delete(rows[found].astype(np.intp), int(labels.size))
            self._index.remove_ids(wanted)
        rows_in(
            self._meta,
            "DELETE FROM documents WHERE doc_id IN (SELECT doc_id FROM chunks WHERE int_id IN (?))",
            int_ids,
        )
        gone = rows_in(self._meta, "DELETE FROM chunks WHERE int_id IN (?) RETURNING id", int_ids)
        self._on_commit.append(partial(self._lexical.remove, [r[0] for r in gone]))

    def _row_metadata(self, rows: int) -> list[dict[str, Any]]:
        """Every row's metadata in row order (rows are in label order), for a new column."""
        found = [
            stored_metadata(r[0], r[1], self._where)
            for r in self._meta.execute("SELECT metadata, id FROM chunks ORDER BY int_id")
        ]
        if len(found) != rows:
            raise StoreDamagedError(f"the FAISS store {self._where} changed under this one")
        return found

    def _all_chunks(self) -> list[Chunk]:
        try:
            rows = self._meta.execute(
                "SELECT id, doc_id, text, metadata FROM chunks ORDER BY int_id"
            ).fetchall()
        except sqlite3.Error as exc:
            raise sqlite_failure(str(self._meta_path), exc) from exc
        return [stored_chunk(r, self._where) for r in rows]

    def _before_lexical(self) -> None:
        with self._snapshot():  # resets the lexical index after another process's write
            pass

    def _reading(self) -> AbstractContextManager[None]:
        return self._snapshot()  # one generation for the whole retrieval

    def _add(self, chunks: Sequence[Chunk]) -> None:
        with self._lock:
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

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        with self._lock:
            batch = prepare_batch(chunks, self._dim, vectors)

            def work() -> int:
                recorded = self._recorded_embedder()
                identity = check_embedder(recorded, manifest.embedder)
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

            return self._transaction(work)

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        return self.document_manifests([doc_id]).get(doc_id)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one, in one indexed query per 500 ids."""
        with self._snapshot():
            return sqlite_manifests(self._meta, "documents", doc_ids)

    def embedder_identity(self) -> EmbedderIdentity | None:
        with self._snapshot():
            return self._identity.at(self._generation)

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        recorded = self._meta_value("embedder")
        return None if recorded is None else EmbedderIdentity.from_json(recorded)

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Top ``k`` by cosine; a filter selects rows through metadata columns first.

        The matching rows become a bitmap that FAISS's own search takes as its selector:
        rows outside it are skipped before their dot product, so a selective filter costs
        a fraction of an unfiltered search and a broad one about the same.
        """
        with self._snapshot():
            if self._index is None or self._index.ntotal == 0:
                return []
            report_identity(self._identity.at(self._generation))  # this snapshot's
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

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        """Cosines of the stored vectors of ``ids`` (read back from the flat index)."""
        with self._snapshot():
            if self._index is None or self._index.ntotal == 0 or not ids:
                return {}
            q = prepare_query(query_vector, self._dim)
            statement = "SELECT id, int_id FROM chunks WHERE id IN (?)"
            labels = dict(rows_in(self._meta, statement, ids))
            found = [i for i in ids if i in labels]
            if not found:
                return {}
            rows = np.searchsorted(self._labels(), [labels[i] for i in found])
            flat = self._faiss.downcast_index(self._index.index)
            scores = flat.reconstruct_batch(rows.astype(np.int64)) @ q
        return {i: min(float(x), 1.0) for i, x in zip(found, scores, strict=True)}

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """Search a batch of queries with one FAISS call (one matrix product for a flat
        index); with a filter, each query alone."""
        if filter:
            return super()._search_many(query_vectors, k, filter)
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
        statement = "SELECT int_id, id, doc_id, text, metadata FROM chunks WHERE int_id IN (?)"
        rows = {r[0]: r[1:] for r in rows_in(self._meta, statement, [f[0] for f in found])}
        return [
            ScoredChunk(stored_chunk(rows[i], self._where), min(score, 1.0))
            for i, score in found
            if i in rows
        ]

    def _delete_where(self, column: str, values: list[str]) -> int:
        with self._lock:

            def work() -> int:
                int_ids = self._int_ids(column, values)
                if int_ids:
                    self._remove_int_ids(int_ids)
                if column == "doc_id":
                    self._meta.execute("DELETE FROM documents WHERE doc_id = ?", values)
                return len(int_ids)

            return self._transaction(work)

    def _delete(self, ids: list[str]) -> int:
        return self._delete_where("id", ids) if ids else 0

    def _delete_by_doc(self, doc_id: str) -> int:
        return self._delete_where("doc_id", [doc_id])

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""

        def work() -> None:
            if self._index is not None:
                self._index.reset()
            self._columns.clear()
            self._meta.execute("DELETE FROM chunks")
            self._meta.execute("DELETE FROM documents")
            self._meta.execute("DELETE FROM meta WHERE key = 'embedder'")
            self._on_commit.append(self._lexical.clear)

        self._transaction(work)

    def compact(self) -> None:
        """Give deleted rows' room back to the disk (``VACUUM``); crash-safe like any write."""
        with self._lock, self._file_lock:
            try:
                self._meta.execute("VACUUM")
                self._meta.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                raise sqlite_failure(str(self._meta_path), exc) from exc

    def __len__(self) -> int:
        return self._count(None)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._snapshot():
            n = 0 if self._index is None else int(self._index.ntotal)
            if not filter or n == 0:
                return n
            return int(np.count_nonzero(self._columns.mask(filter, n, self._capacity)))

    def close(self) -> None:
        """Close the database (the file is complete after every write)."""
        with self._lock:
            self._meta.close()

    def __repr__(self) -> str:
        return (
            f"FAISSVectorStore(index_path={str(self._index_path)!r}, "
            f"meta_path={str(self._meta_path)!r}, dimension={self._dim})"
        )
