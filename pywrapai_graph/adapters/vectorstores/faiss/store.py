"""FAISSVectorStore: a FAISS flat inner-product index over a SQLite file (:mod:`.files`);
unlike the reference, metadata is never pickled (another format is refused, never executed)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Any
from zlib import crc32

import numpy as np

from pywrapai_graph.adapters.vectorstores.faiss.files import StoreFile
from pywrapai_graph.adapters.vectorstores.kit.identity_copy import IdentityCopy
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import InProcessRetrieval, LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
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
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["FAISSVectorStore"]


class FAISSVectorStore(InProcessRetrieval, MatrixBulkStore, StoreFile):
    """Exact cosine search with FAISS (``IndexIDMap2`` over ``IndexFlatIP``, unit vectors).

    Args:
        index_path: names the cross-process write lock ``<index>.lock`` (the index itself is
            kept in memory, built from ``meta_path``).
        meta_path: the store's file (SQLite; never a pickle): chunks, vectors, manifests.
        dimension: fixed up front, or inferred from the first add.
        threads: FAISS OpenMP threads, process-wide (1: fastest per query; None: all cores).
        lock_timeout: seconds a write waits for another process's write to finish.

    Raises:
        MissingExtraError: ``faiss-cpu`` is not installed.
        VectorStoreError: ``meta_path`` is not our format (a pickle, an older layout).
        StoreDamagedError: a stored vector fails its size or CRC-32 check.
        StoreBusyError: (on writes) another process kept the write lock past ``lock_timeout``.
        StorageFullError: (on writes) the disk is full; nothing of the write was kept.
    """

    db_system = "faiss"
    persistent = atomic_documents = True

    def __init__(
        self,
        index_path: str | os.PathLike[str],
        meta_path: str | os.PathLike[str],
        dimension: int | None = None,
        *,
        threads: int | None = 1,
        lock_timeout: float = 30.0,
    ) -> None:
        self._index_path = Path(index_path)
        StoreFile.__init__(self, self._index_path, Path(meta_path), dimension, lock_timeout)
        if threads is not None:
            self._faiss.omp_set_num_threads(threads)
        self._identity = IdentityCopy(self._recorded_embedder)  # read again per generation
        self._columns = MetadataColumns(self._row_metadata)
        self._lexical = LexicalMirror(self._all_chunks)

    # ------------------------------------------------------------------ port
    @property
    def dimension(self) -> int | None:
        with self._snapshot():
            return self._dim

    def _upsert(self, batch: PreparedBatch) -> None:
        """Store a validated batch (in a transaction), dropping its documents' manifests."""
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
        self._remove("id", batch.ids)
        docs = {c.doc_id for c in batch.chunks}
        rows_in(self._meta, "DELETE FROM documents WHERE doc_id IN (?)", sorted(docs))
        count = len(batch.ids)
        last = self._meta.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'")
        first = int((last.fetchone() or (0,))[0]) + 1  # labels are never reused
        labels = np.arange(first, first + count, dtype=np.int64)
        vectors = np.ascontiguousarray(batch.vectors, dtype="<f4")
        blobs = [row.tobytes() for row in vectors]
        made = zip(labels.tolist(), batch.chunks, metadata_jsons(batch.chunks), blobs, strict=True)
        self._meta.executemany(
            "INSERT INTO chunks (int_id, id, doc_id, text, metadata, vector, crc) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(i, c.id, c.doc_id, c.text, m, v, crc32(v)) for i, c, m, v in made],
        )
        start = int(self._index.ntotal)
        self._index.add_with_ids(vectors, labels)
        self._on_commit.append(partial(self._lexical.upsert, batch.chunks))
        if start + count > self._capacity:
            self._capacity = max(start + count, self._capacity + self._capacity // 8, 64)
            self._columns.grow(self._capacity, start)
        self._columns.assign(slice(start, start + count), [c.metadata for c in batch.chunks])

    def _remove(self, column: str, values: Sequence[str]) -> int:
        """Drop the chunks whose ``column`` is in ``values``, and their documents' manifests."""
        statement = f"SELECT int_id FROM chunks WHERE {column} IN (?)"
        int_ids = [r[0] for r in rows_in(self._meta, statement, values)]
        if not int_ids:
            return 0
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
        return len(int_ids)

    def _row_metadata(self, _rows: int) -> list[dict[str, Any]]:
        """Every row's metadata in row (label) order, in the snapshot :meth:`_follow` checked."""
        rows = self._meta.execute("SELECT metadata, id FROM chunks ORDER BY int_id")
        return [stored_metadata(r[0], r[1], self._where) for r in rows]

    def _all_chunks(self) -> list[Chunk]:
        rows = self._meta.execute("SELECT id, doc_id, text, metadata FROM chunks ORDER BY int_id")
        return [stored_chunk(r, self._where) for r in rows]

    def _before_lexical(self) -> None:
        with self._snapshot():  # follows another process's write: the index is built in it
            self._lexical.index()

    def _reading(self) -> AbstractContextManager[None]:
        return self._snapshot()  # one generation for the whole retrieval

    def _add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._dim)  # the dimension checked again by _upsert
        if batch.ids:
            self._transaction(partial(self._upsert, batch))

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        batch = prepare_batch(chunks, self._dim, vectors)

        def work() -> int:
            recorded = self._recorded_embedder()
            identity = check_embedder(recorded, manifest.embedder)
            before = self._remove("doc_id", [manifest.doc_id])
            self._upsert(batch)
            self._meta.execute(
                "INSERT OR REPLACE INTO documents (doc_id, manifest) VALUES (?, ?)",
                (manifest.doc_id, manifest.to_json()),
            )
            if identity is not None and recorded is None:
                self._set_meta("embedder", identity.to_json())
            return before

        return self._transaction(work)

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
        return self._search_many([query_vector], k, filter)[0]

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """Top ``k`` by cosine in one FAISS search; a filter is a bitmap of rows FAISS skips."""
        with self._snapshot():
            queries = [prepare_query(q, self._dim) for q in query_vectors]
            n = 0 if self._index is None else int(self._index.ntotal)
            mask = self._columns.mask(filter, n, self._capacity) if filter and n else None
            k = min(k, n if mask is None else int(np.count_nonzero(mask)))
            if not queries or k == 0:
                return [[] for _ in queries]
            report_identity(self._identity.at(self._generation))  # this snapshot's
            params = None
            if mask is not None:
                bitmap = np.packbits(mask, bitorder="little")  # kept alive through the search
                selector = self._faiss.IDSelectorBitmap(n, self._faiss.swig_ptr(bitmap))
                params = self._faiss.SearchParameters(sel=selector)
            flat = self._faiss.downcast_index(self._index.index)
            scores, rows = flat.search(np.stack(queries), k, params=params)
            labels, pairs = self._labels(), zip(scores, rows, strict=True)
            return [self._hits(s[r >= 0], labels[r[r >= 0]]) for s, r in pairs]

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        """Cosines of the stored vectors of ``ids`` (read back from the flat index)."""
        with self._snapshot():
            if self._index is None or self._index.ntotal == 0 or not ids:
                return {}
            q = prepare_query(query_vector, self._dim)
            statement = "SELECT id, int_id FROM chunks WHERE id IN (?)"
            labels = dict(rows_in(self._meta, statement, ids))
            if not labels:
                return {}
            rows = np.searchsorted(self._labels(), list(labels.values()))
            flat = self._faiss.downcast_index(self._index.index)
            scores = flat.reconstruct_batch(rows.astype(np.int64)) @ q
        return {i: min(float(x), 1.0) for i, x in zip(labels, scores, strict=True)}

    def _hits(self, scores: np.ndarray, labels: np.ndarray) -> list[ScoredChunk]:
        statement = "SELECT int_id, id, doc_id, text, metadata FROM chunks WHERE int_id IN (?)"
        rows = {r[0]: r[1:] for r in rows_in(self._meta, statement, labels.tolist())}
        pairs = zip(labels.tolist(), scores.tolist(), strict=True)
        return [ScoredChunk(stored_chunk(rows[i], self._where), min(s, 1.0)) for i, s in pairs]

    def _delete(self, ids: list[str]) -> int:
        return self._transaction(partial(self._remove, "id", ids)) if ids else 0

    def _delete_by_doc(self, doc_id: str) -> int:
        def work() -> int:  # a document without chunks may have a manifest
            self._meta.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
            return self._remove("doc_id", [doc_id])

        return self._transaction(work)

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
