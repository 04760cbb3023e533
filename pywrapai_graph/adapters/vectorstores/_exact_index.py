"""ExactIndex: the exact cosine search shared by the in-memory and SQLite stores.

Rows are L2-normalised once at insert and kept in one float32 matrix that grows by doubling
(amortised O(1) per row, never a copy of the whole matrix per add). A search is one
matrix-vector product over the used rows plus ``argpartition`` for the top k.
Not thread-safe on its own: the stores that use it hold a lock.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.vector_store import check_vectors

__all__ = [
    "ExactIndex",
    "MatrixBulkStore",
    "PreparedBatch",
    "check_k",
    "matches_filter",
    "metadata_json",
    "prepare_batch",
    "prepare_query",
]

Matrix = npt.NDArray[np.float32]


def metadata_json(chunk: Chunk) -> str:
    """The chunk's metadata as JSON, for stores that persist it.

    Raises:
        ValueError: naming the chunk, when the metadata is not JSON-serialisable.
    """
    try:
        return json.dumps(chunk.metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"chunk {chunk.id!r} has metadata that is not JSON-serialisable ({exc}); "
            "use str, int, float, bool, None, lists and dicts"
        ) from None


def matches_filter(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """True when ``metadata`` has every key of ``filter`` with an equal value."""
    if not filter:
        return True
    return all(key in metadata and metadata[key] == value for key, value in filter.items())


class MatrixBulkStore(BaseVectorStore):
    """A store whose document writes take the vectors as a float32 matrix (the bulk path).

    ``replace_document`` (list embeddings) and ``replace_document_vectors`` (a float32
    ``memoryview``) both end in ``_replace``, which gets the matrix or None.
    """

    def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        return self._replace(manifest, chunks, None)

    def replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        check_vectors(chunks, vectors)
        return self._replace(manifest, chunks, np.asarray(vectors))

    @abstractmethod
    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        """Make ``chunks`` the whole document; ``vectors`` (row i for chunk i) or None."""


class PreparedBatch:
    """A validated batch: unique ids (last one wins), normalised vectors, their chunks."""

    __slots__ = ("chunks", "ids", "vectors")

    def __init__(self, ids: list[str], vectors: Matrix, chunks: list[Chunk]) -> None:
        self.ids = ids
        self.vectors = vectors
        self.chunks = chunks


def prepare_batch(
    chunks: Sequence[Chunk], dimension: int | None, vectors: Matrix | None = None
) -> PreparedBatch:
    """Validate and normalise a batch before anything is written.

    With ``vectors`` (row ``i`` for ``chunks[i]``) the chunks' ``embedding`` is ignored and no
    Python float is built; otherwise the embeddings are converted once.

    Raises:
        ValueError: naming the first bad chunk: embedding missing, wrong dimension,
            NaN/inf (also after float32 conversion), or zero norm.
    """
    if isinstance(chunks, Chunk):
        raise TypeError("add() takes a list of chunks, not a single Chunk")
    latest: dict[str, int] = {}
    for i, c in enumerate(chunks):
        if not isinstance(c, Chunk):
            raise TypeError(f"expected Chunk objects, got {type(c).__name__}")
        latest[c.id] = i  # an id repeated in one batch: the last one wins (upsert)
    rows = list(latest.values())
    unique = [chunks[i] for i in rows]
    if not unique:
        return PreparedBatch([], np.empty((0, dimension or 0), np.float32), [])
    if vectors is None:
        matrix = _as_matrix(unique, _embedding_dimension(unique, dimension))
    else:
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ValueError(f"{vectors.shape[0]} vectors were given for {len(chunks)} chunks")
        expected = dimension if dimension is not None else int(vectors.shape[1])
        if vectors.shape[1] != expected or expected == 0:
            raise ValueError(
                f"chunk {unique[0].id!r} has dimension {vectors.shape[1]}, "
                f"but the store expects {expected}"
            )
        # One copy: the caller's buffer is never normalised in place.
        matrix = np.array(vectors if len(rows) == len(chunks) else vectors[rows], np.float32)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = unique[int(np.argmin(finite))]
        raise ValueError(f"chunk {bad.id!r} has NaN or infinite values in its embedding")
    norms = np.linalg.norm(matrix, axis=1)
    if not (norms > 0).all():
        bad = unique[int(np.argmin(norms > 0))]
        raise ValueError(f"chunk {bad.id!r} has a zero-norm embedding; cosine is undefined")
    matrix /= norms[:, None]
    return PreparedBatch([c.id for c in unique], matrix, unique)


def _embedding_dimension(chunks: list[Chunk], dimension: int | None) -> int:
    """The chunks' common embedding size (the store's when it has one)."""
    expected = dimension
    for c in chunks:
        if c.embedding is None:
            raise ValueError(f"chunk {c.id!r} has no embedding; embed chunks before adding them")
        size = len(c.embedding)
        expected = size if expected is None else expected
        if size != expected or size == 0:
            raise ValueError(
                f"chunk {c.id!r} has dimension {size}, but the store expects {expected}"
            )
    return expected or 0


def _as_matrix(chunks: list[Chunk], dim: int) -> Matrix:
    """The embeddings as one (n, dim) float32 matrix; a nested or non-numeric one is refused."""
    try:
        with np.errstate(over="ignore"):  # values beyond float32 become inf, reported later
            vectors = np.asarray([c.embedding for c in chunks], dtype=np.float32)
    except (TypeError, ValueError):
        vectors = None
    if vectors is None or vectors.shape != (len(chunks), dim):
        for c in chunks:
            try:
                row = np.asarray(c.embedding, dtype=np.float32)
            except (TypeError, ValueError):
                row = None
            if row is None or row.shape != (dim,):
                raise ValueError(
                    f"chunk {c.id!r} has an embedding that is not a flat list of {dim} numbers"
                )
        raise ValueError(f"embeddings are not a flat list of {dim} numbers each")
    return vectors


def prepare_query(vector: Sequence[float], dimension: int | None) -> Matrix:
    """The normalised float32 query.

    Raises:
        ValueError: wrong dimension, NaN/inf or zero norm.
    """
    with np.errstate(over="ignore"):
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dimension is not None and q.shape[0] != dimension:
        raise ValueError(f"query has dimension {q.shape[0]}, but the store holds {dimension}")
    if not np.isfinite(q).all():
        raise ValueError("query vector has NaN or infinite values")
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        raise ValueError("query vector has zero norm; cosine similarity is undefined")
    return q / np.float32(norm)


def check_k(k: int) -> None:
    """Raises ValueError unless ``k`` is a positive int."""
    given: object = k
    if isinstance(given, bool) or not isinstance(given, int | np.integer) or given < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")


class ExactIndex:
    """Normalised rows, id ↔ row maps, exact top-k cosine search."""

    def __init__(self, dimension: int | None = None) -> None:
        self._fixed_dim = dimension
        self._reset()

    def _reset(self) -> None:
        dimension = self._dim = self._fixed_dim
        self._matrix: Matrix = np.empty((0, dimension or 0), dtype=np.float32)
        self._n = 0
        self._ids: list[str] = []
        # (text, doc_id, metadata) per row: our own copy, so callers' later edits do not leak in
        self._records: list[tuple[str, str, dict[str, Any]]] = []
        self._rows: dict[str, int] = {}
        self._by_doc: dict[str, set[str]] = {}

    @property
    def dimension(self) -> int | None:
        """Vector dimension, fixed by the first insert (or given)."""
        return self._dim

    @property
    def capacity(self) -> int:
        """Rows allocated (grown geometrically, by an eighth)."""
        return int(self._matrix.shape[0])

    @property
    def matrix(self) -> Matrix:
        """The used rows (a view, no copy: valid until the next write)."""
        return self._matrix[: self._n]

    def __len__(self) -> int:
        return self._n

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._rows

    def ids_of_doc(self, doc_id: str) -> list[str]:
        """Ids of the chunks of one document."""
        return sorted(self._by_doc.get(doc_id, ()))

    def doc_of(self, chunk_id: str) -> str:
        """The document of a stored chunk."""
        return self._records[self._rows[chunk_id]][1]

    def _reserve(self, extra: int) -> None:
        needed = self._n + extra
        if needed <= self._matrix.shape[0]:
            return
        capacity = max(needed, self._matrix.shape[0] + self._matrix.shape[0] // 8, 64)
        if self._matrix.flags.owndata and self._matrix.base is None:
            # realloc: a large matrix is moved by remapping its pages, never copied, so
            # memory while adding stays about the size of the data (a copy would double it).
            # Safe: the index hands out no views that outlive a call.
            self._matrix.resize((capacity, self._dim or 0), refcheck=False)
            return
        grown = np.empty((capacity, self._dim or 0), dtype=np.float32)
        grown[: self._n] = self._matrix[: self._n]
        self._matrix = grown

    def upsert(self, batch: PreparedBatch) -> None:
        """Insert new ids, overwrite existing ones (the batch must be validated)."""
        if not batch.ids:
            return
        if self._dim is None:
            self._dim = int(batch.vectors.shape[1])
            self._matrix = np.empty((0, self._dim), dtype=np.float32)
        self._reserve(len(batch.ids))
        rows_of = self._rows
        if not any(chunk_id in rows_of for chunk_id in batch.ids):
            self._append(batch)
            return
        rows = np.empty(len(batch.ids), dtype=np.intp)
        for i, (chunk_id, chunk) in enumerate(zip(batch.ids, batch.chunks, strict=True)):
            record = (chunk.text, chunk.doc_id, dict(chunk.metadata))
            row = rows_of.get(chunk_id)
            if row is None:
                row = self._n
                self._n += 1
                rows_of[chunk_id] = row
                self._ids.append(chunk_id)
                self._records.append(record)
            else:
                self._forget_doc(row)
                self._records[row] = record
            rows[i] = row
            self._by_doc.setdefault(chunk.doc_id, set()).add(chunk_id)
        self._matrix[rows] = batch.vectors

    def _append(self, batch: PreparedBatch) -> None:
        """Only new ids: one slice assignment and bulk list/dict updates."""
        start, count = self._n, len(batch.ids)
        self._matrix[start : start + count] = batch.vectors
        self._ids.extend(batch.ids)
        self._records.extend((c.text, c.doc_id, dict(c.metadata)) for c in batch.chunks)
        self._rows.update(zip(batch.ids, range(start, start + count), strict=True))
        by_doc = self._by_doc
        for chunk_id, chunk in zip(batch.ids, batch.chunks, strict=True):
            members = by_doc.get(chunk.doc_id)
            if members is None:
                members = by_doc[chunk.doc_id] = set()
            members.add(chunk_id)
        self._n += count

    def load(
        self,
        ids: list[str],
        vectors: Matrix,
        records: list[tuple[str, str, dict[str, Any]]],
    ) -> None:
        """Fill an empty index in one step (vectors already normalised, ids unique).

        The matrix is adopted as is (no copy): the caller must not keep using it.
        """
        if self._n:
            raise RuntimeError("load() needs an empty index")
        self._dim = int(vectors.shape[1])
        self._matrix = vectors
        self._n = len(ids)
        self._ids = list(ids)
        self._records = records
        self._rows = {chunk_id: row for row, chunk_id in enumerate(ids)}
        for chunk_id, (_, doc_id, _) in zip(ids, records, strict=True):
            self._by_doc.setdefault(doc_id, set()).add(chunk_id)

    def _forget_doc(self, row: int) -> None:
        doc_id = self._records[row][1]
        members = self._by_doc.get(doc_id)
        if members is not None:
            members.discard(self._ids[row])
            if not members:
                del self._by_doc[doc_id]

    def remove(self, ids: Sequence[str]) -> int:
        """Delete by id (swap with the last row: O(1) each); returns how many were removed."""
        removed = 0
        for chunk_id in ids:
            row = self._rows.get(chunk_id)
            if row is None:
                continue
            self._forget_doc(row)
            del self._rows[chunk_id]
            last = self._n - 1
            if row != last:
                self._matrix[row] = self._matrix[last]
                self._ids[row] = self._ids[last]
                self._records[row] = self._records[last]
                self._rows[self._ids[row]] = row
            self._ids.pop()
            self._records.pop()
            self._n -= 1
            removed += 1
        return removed

    def chunk_at(self, row: int) -> Chunk:
        """A fresh Chunk (without embedding) for one row."""
        text, doc_id, metadata = self._records[row]
        return Chunk(text=text, doc_id=doc_id, metadata=dict(metadata), id=self._ids[row])

    def count(self, filter: Mapping[str, Any] | None = None) -> int:
        """How many rows match ``filter`` (all without one)."""
        if not filter:
            return self._n
        return sum(1 for r in self._records if matches_filter(r[2], filter))

    def chunks(self) -> list[Chunk]:
        """Every stored chunk (without embeddings)."""
        return [self.chunk_at(row) for row in range(self._n)]

    def clear(self) -> None:
        """Remove everything; an inferred dimension is forgotten, a fixed one kept."""
        self._reset()

    def search(
        self, query: Matrix, k: int, filter: Mapping[str, Any] | None = None
    ) -> list[ScoredChunk]:
        """Top ``k`` rows by cosine similarity to the normalised ``query``, best first."""
        n = self._n
        if n == 0:
            return []
        scores = self._matrix[:n] @ query
        if filter:
            mask = np.fromiter(
                (matches_filter(r[2], filter) for r in self._records), dtype=bool, count=n
            )
            candidates = int(mask.sum())
            if candidates == 0:
                return []
            scores = np.where(mask, scores, np.float32(-np.inf))
            k = min(k, candidates)
        return self._top(scores, k)

    def _top(self, scores: npt.NDArray[np.float32], k: int) -> list[ScoredChunk]:
        n = scores.shape[0]
        if k >= n:
            order = np.argsort(scores)[::-1]
        else:
            part = np.argpartition(scores, n - k)[n - k :]
            order = part[np.argsort(scores[part])[::-1]]
        return self._hits(scores, order)

    def _hits(
        self, scores: npt.NDArray[np.float32], order: npt.NDArray[np.intp]
    ) -> list[ScoredChunk]:
        return [
            ScoredChunk(chunk=self.chunk_at(int(i)), score=min(float(scores[i]), 1.0))
            for i in order
            if scores[i] != -np.inf
        ]

    def search_many(self, queries: Matrix, k: int) -> list[list[ScoredChunk]]:
        """Top ``k`` for each row of the normalised ``queries`` matrix.

        One matrix product and one row-wise ``argpartition`` for the whole batch.
        """
        n = self._n
        if n == 0:
            return [[] for _ in range(queries.shape[0])]
        all_scores = queries @ self._matrix[:n].T
        if k >= n:
            return [self._top(row, k) for row in all_scores]
        parts = np.argpartition(all_scores, n - k, axis=1)[:, n - k :]
        results = []
        for row, part in zip(all_scores, parts, strict=True):
            results.append(self._hits(row, part[np.argsort(row[part])[::-1]]))
        return results
