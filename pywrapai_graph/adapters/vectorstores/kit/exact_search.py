"""Exact cosine search over one float32 matrix of normalised rows (in-memory and SQLite stores):
a matrix product and an ``argpartition``; :class:`MetadataColumns` select a filter's rows."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters.vectorstores.kit.lexical_index import LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.metadata_columns import (
    MetadataColumns,
    MetadataSource,
)
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    Matrix,
    PreparedBatch,
    prepare_query,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import InvalidStateError
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity

__all__ = ["ExactIndex", "ExactSearch", "Hits"]

Rows = npt.NDArray[np.intp]
Scores = npt.NDArray[np.float32]
#: (rows, scores), best first.
Hits = tuple[Rows, Scores]
Record = tuple[str, str, dict[str, Any]]


class ExactIndex:
    """Normalised rows, id ↔ row maps, exact top-k cosine search (not thread-safe).

    Args:
        dimension: fix the dimension up front (otherwise the first insert decides).
        metadata_source: every row's metadata for a new filter column (then no records kept).
        watcher: the store's lexical index, told each change (``reset`` if one failed).
    """

    def __init__(
        self,
        dimension: int | None = None,
        *,
        metadata_source: MetadataSource | None = None,
        watcher: LexicalMirror | None = None,
    ) -> None:
        self._fixed_dim = dimension
        self._keeps_records = metadata_source is None
        self._columns = MetadataColumns(metadata_source or self._record_metadata)
        self._watcher = watcher or LexicalMirror(list)  # never built: told changes cost nothing
        self.clear()

    def clear(self) -> None:
        """Remove everything; an inferred dimension is forgotten, a fixed one kept."""
        dimension = self._dim = self._fixed_dim
        self._matrix: Matrix = np.empty((0, dimension or 0), dtype=np.float32)
        self._n = 0
        self._ids: list[str] = []
        self._records: list[Record] = []  # our copies: callers' later edits do not leak in
        self._row_map: dict[str, int] | None = {}  # None: built when first needed
        self._by_doc: dict[str, set[str]] = {}
        self._columns.clear()
        self._watcher.clear()

    @property
    def _rows(self) -> dict[str, int]:
        """The id -> row map (built on first use after :meth:`load`)."""
        rows = self._row_map
        if rows is None:
            rows = self._row_map = dict(zip(self._ids, range(self._n), strict=True))
        return rows

    def _record_metadata(self, rows: int) -> list[dict[str, Any]]:
        return [record[2] for record in self._records[:rows]]

    @property
    def dimension(self) -> int | None:
        """Vector dimension, fixed by the first insert (or given)."""
        return self._dim

    @property
    def capacity(self) -> int:
        """Rows allocated (grown geometrically, by an eighth)."""
        return int(self._matrix.shape[0])

    def __len__(self) -> int:
        return self._n

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._rows

    def id_at(self, row: int) -> str:
        """The chunk id stored at ``row``."""
        return self._ids[row]

    def ids_of_doc(self, doc_id: str) -> list[str]:
        """Ids of the chunks of one document (records mode)."""
        return sorted(self._by_doc.get(doc_id, ()))

    def doc_of(self, chunk_id: str) -> str:
        """The document of a stored chunk (records mode)."""
        return self._records[self._rows[chunk_id]][1]

    def _reserve(self, extra: int) -> None:
        needed = self._n + extra
        if needed <= self._matrix.shape[0]:
            return
        capacity = max(needed, self._matrix.shape[0] + self._matrix.shape[0] // 8, 64)
        if self._matrix.flags.owndata and self._matrix.base is None:
            # realloc remaps a large matrix, never copies it (no view outlives a call)
            self._matrix.resize((capacity, self._dim or 0), refcheck=False)
        else:
            grown = np.empty((capacity, self._dim or 0), dtype=np.float32)
            grown[: self._n] = self._matrix[: self._n]
            self._matrix = grown
        self._columns.grow(capacity, self._n)

    def upsert(self, batch: PreparedBatch) -> None:
        """Insert new ids, overwrite existing ones (the batch must be validated)."""
        if not batch.ids:
            return
        try:
            self._upsert(batch)
        except BaseException:
            self._watcher.reset()
            raise
        self._watcher.upsert(batch.chunks)

    def _upsert(self, batch: PreparedBatch) -> None:
        if self._dim is None:
            self._dim = int(batch.vectors.shape[1])
            self._matrix = np.empty((0, self._dim), dtype=np.float32)
        self._reserve(len(batch.ids))
        rows_of = self._rows
        if not any(chunk_id in rows_of for chunk_id in batch.ids):
            self._append(batch)
            return
        rows = np.empty(len(batch.ids), dtype=np.intp)
        keep = self._keeps_records
        for i, (chunk_id, chunk) in enumerate(zip(batch.ids, batch.chunks, strict=True)):
            row = rows_of.get(chunk_id)
            if row is None:
                row = rows_of[chunk_id] = self._n
                self._n += 1
                self._ids.append(chunk_id)
                if keep:
                    self._records.append(_record(chunk))
            elif keep:
                self._forget_doc(row)
                self._records[row] = _record(chunk)
            rows[i] = row
            if keep:
                self._by_doc.setdefault(chunk.doc_id, set()).add(chunk_id)
        self._matrix[rows] = batch.vectors
        self._columns.assign(rows, [c.metadata for c in batch.chunks])

    def replace(self, before: Sequence[str], batch: PreparedBatch) -> None:
        """A document rewritten: its ids ``before`` not in ``batch`` removed, then upserted."""
        kept = set(batch.ids)
        self.remove([i for i in before if i not in kept])
        self.upsert(batch)

    def _append(self, batch: PreparedBatch) -> None:
        """Only new ids: one slice assignment and bulk list/dict updates."""
        start, count = self._n, len(batch.ids)
        self._matrix[start : start + count] = batch.vectors
        self._ids.extend(batch.ids)
        self._rows.update(zip(batch.ids, range(start, start + count), strict=True))
        if self._keeps_records:
            self._records.extend(_record(c) for c in batch.chunks)
            for chunk_id, chunk in zip(batch.ids, batch.chunks, strict=True):
                self._by_doc.setdefault(chunk.doc_id, set()).add(chunk_id)
        self._n += count
        self._columns.assign(slice(start, start + count), [c.metadata for c in batch.chunks])

    def load(self, ids: list[str], vectors: Matrix) -> None:
        """Fill an empty index without records, adopting normalised ``vectors`` (not a copy)."""
        if self._n:
            raise InvalidStateError("load() needs an empty index")
        self._dim = int(vectors.shape[1])
        self._matrix = vectors
        self._n = len(ids)
        self._ids = ids
        self._row_map = None

    def _forget_doc(self, row: int) -> None:
        doc_id = self._records[row][1]
        members = self._by_doc.get(doc_id)
        if members is not None:
            members.discard(self._ids[row])
            if not members:
                del self._by_doc[doc_id]

    def remove(self, ids: Sequence[str]) -> int:
        """Delete by id (swap with the last row: O(1) each); returns how many were removed."""
        before, keep = self._n, self._keeps_records
        try:
            for chunk_id in ids:
                row = self._rows.pop(chunk_id, None)
                if row is None:
                    continue
                if keep:
                    self._forget_doc(row)
                last = self._n - 1
                if row != last:
                    self._matrix[row] = self._matrix[last]
                    self._ids[row] = self._ids[last]
                    if keep:
                        self._records[row] = self._records[last]
                    self._rows[self._ids[row]] = row
                    self._columns.move(row, last)
                self._ids.pop()
                if keep:
                    self._records.pop()
                self._n -= 1
        except BaseException:
            self._watcher.reset()
            raise
        self._watcher.remove(ids)
        return before - self._n

    def chunk_at(self, row: int) -> Chunk:
        """A fresh Chunk (without embedding) for one row (records mode)."""
        text, doc_id, metadata = self._records[row]
        return Chunk(text=text, doc_id=doc_id, metadata=dict(metadata), id=self._ids[row])

    def chunks(self) -> list[Chunk]:
        """Every stored chunk (without embeddings; records mode)."""
        return [self.chunk_at(row) for row in range(self._n)]

    def count(self, filter: Mapping[str, Any] | None = None) -> int:
        """How many rows match ``filter`` (all without one)."""
        if not filter:
            return self._n
        return int(np.count_nonzero(self._columns.mask(filter, self._n, self.capacity)))

    # ------------------------------------------------------------------ search
    def search_rows(self, query: Matrix, k: int, filter: Mapping[str, Any] | None = None) -> Hits:
        """The top ``k`` rows by cosine to the normalised ``query`` that ``filter`` selects."""
        n = self._n
        if not filter:
            return _top(self._matrix[:n] @ query, k)
        return _masked_top(self._matrix[:n], query, self._columns.mask(filter, n, self.capacity), k)

    def search_many_rows(self, queries: Matrix, k: int) -> list[Hits]:
        """Top ``k`` of each query row: one matrix product, one (faster) partition per row."""
        n = self._n
        if n == 0:
            return [_NO_HITS for _ in range(queries.shape[0])]
        return [_top(row, k) for row in queries @ self._matrix[:n].T]

    def similarities(self, query: Matrix, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of the normalised ``query`` to each stored row of ``ids``."""
        rows = self._rows
        found = [i for i in ids if i in rows]
        scores = self._matrix[[rows[i] for i in found]] @ query
        return {i: min(float(s), 1.0) for i, s in zip(found, scores, strict=True)}

    def scored(self, hits: Hits) -> list[ScoredChunk]:
        """Hit rows as :class:`ScoredChunk` objects (records mode)."""
        rows, scores = hits
        return [
            ScoredChunk(chunk=self.chunk_at(int(r)), score=min(float(s), 1.0))
            for r, s in zip(rows, scores, strict=True)
        ]


class ExactSearch(BaseVectorStore):
    """``search`` and ``search_many`` over a store's :class:`ExactIndex` (``_index``)."""

    _index: ExactIndex

    @abstractmethod
    def _reading_index(self) -> AbstractContextManager[object]:
        """Hold the store's read locks, with ``_index`` up to date, for one search."""

    @abstractmethod
    def _scored_hits(self, hits: Hits) -> list[ScoredChunk]:
        """The chunks of hit rows, with their scores, best first."""

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        with self._reading_index():
            if len(self._index) == 0:
                return []
            query = prepare_query(query_vector, self._index.dimension)
            hits = self._scored_hits(self._index.search_rows(query, k, filter))
            report_identity(self._searched_identity())
            return hits

    def _searched_identity(self) -> EmbedderIdentity | None:
        """The recorded embedder, as of the state a search just read (its lock held)."""
        return self.embedder_identity()

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        with self._reading_index():
            if len(self._index) == 0:
                return {}
            query = prepare_query(query_vector, self._index.dimension)
            return self._index.similarities(query, ids)

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """Search a batch of queries with one matrix product (with a filter: each alone)."""
        if filter:
            return super()._search_many(query_vectors, k, filter)
        with self._reading_index():
            queries = [prepare_query(q, self._index.dimension) for q in query_vectors]
            return [
                self._scored_hits(hits)
                for hits in self._index.search_many_rows(np.stack(queries), k)
            ]


_NO_HITS: Hits = (np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float32))


def _masked_top(matrix: Matrix, query: Matrix, mask: npt.NDArray[np.bool_], k: int) -> Hits:
    """The top ``k`` rows of ``matrix`` among those ``mask`` selects, best first: a broad
    mask (over a quarter of the rows) scores every row, which beats gathering the matches."""
    count = int(np.count_nonzero(mask))
    if 4 * count > matrix.shape[0]:
        masked = np.where(mask, matrix @ query, np.float32(-np.inf))
        return _top(masked.astype(np.float32, copy=False), min(k, count))
    candidates = np.flatnonzero(mask)
    rows, scores = _top(matrix[candidates] @ query, k)
    return candidates[rows], scores


def _record(chunk: Chunk) -> Record:
    return (chunk.text, chunk.doc_id, dict(chunk.metadata))


def _top(scores: Scores, k: int) -> Hits:
    n = scores.shape[0]
    if k >= n:
        order = np.argsort(scores)[::-1]
    else:
        part = np.argpartition(scores, n - k)[n - k :]
        order = part[np.argsort(scores[part])[::-1]]
    return order.astype(np.intp, copy=False), scores[order]
