"""Batches and queries as the normalised float32 rows every store keeps, checked first."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["Matrix", "PreparedBatch", "prepare_batch", "prepare_query", "query_norm"]

Matrix = npt.NDArray[np.float32]
_FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass(slots=True, eq=False)
class PreparedBatch:
    """A validated batch: unique ids (last one wins), normalised vectors, their chunks."""

    ids: list[str]
    vectors: Matrix
    chunks: list[Chunk]


def prepare_batch(
    chunks: Sequence[Chunk], dimension: int | None, vectors: Matrix | None = None
) -> PreparedBatch:
    """Validate and normalise a batch's vectors (``vectors``, row ``i`` for ``chunks[i]``, or
    else their embeddings) before anything is written.

    Raises:
        ValueError: naming the first bad chunk: embedding missing, wrong dimension,
            NaN/inf (also after float32 conversion), or zero norm.
    """
    rows = list({c.id: i for i, c in enumerate(chunks)}.values())
    unique = [chunks[i] for i in rows]
    if not unique:
        return PreparedBatch([], np.empty((0, dimension or 0), np.float32), [])
    if vectors is None:
        matrix = _as_matrix(unique, dimension)
    else:  # one row per chunk: ``BaseVectorStore`` checked the matrix's shape
        if not vectors.shape[1] or vectors.shape[1] != (dimension or vectors.shape[1]):
            raise InvalidArgumentError(
                f"chunk {unique[0].id!r} has dimension {vectors.shape[1]}, "
                f"but the store expects {dimension or vectors.shape[1]}"
            )
        # One copy: the caller's buffer is never normalised in place.
        matrix = np.array(vectors if len(rows) == len(chunks) else vectors[rows], np.float32)
    _normalise(matrix, lambda row: f"the embedding of chunk {unique[row].id!r}")
    return PreparedBatch([c.id for c in unique], matrix, unique)


def _normalise(matrix: Matrix, whose: Callable[[int], str]) -> None:
    """Scale each row to unit length in place; ``whose(row)`` names a NaN/inf or zero row."""
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise InvalidArgumentError(f"{whose(int(np.argmin(finite)))} has NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    if not (norms > 0).all():
        raise InvalidArgumentError(
            f"{whose(int(np.argmin(norms > 0)))} has zero norm; cosine is undefined"
        )
    matrix /= norms[:, None]


def _as_matrix(chunks: list[Chunk], dimension: int | None) -> Matrix:
    """The embeddings as one (n, dim) float32 matrix, else the first bad chunk is named: no
    embedding, a dimension other than the store's (or the first chunk's), not flat numbers."""
    try:
        with np.errstate(over="ignore"):  # values beyond float32 become inf, reported later
            vectors = np.asarray([c.embedding for c in chunks], dtype=np.float32)
    except (TypeError, ValueError):
        vectors = np.empty(0, np.float32)  # the chunk at fault is found below
    width = vectors.shape[1] if vectors.ndim == 2 else 0
    if width and width == (dimension or width):
        return vectors
    expected = dimension
    for c in chunks:
        if c.embedding is None:
            raise InvalidArgumentError(
                f"chunk {c.id!r} has no embedding; embed chunks before adding them"
            )
        size = len(c.embedding)
        expected = size if expected is None else expected
        if size != expected or size == 0:
            raise InvalidArgumentError(
                f"chunk {c.id!r} has dimension {size}, but the store expects {expected}"
            )
        try:
            row = np.asarray(c.embedding, dtype=np.float32)
        except (TypeError, ValueError):
            row = None
        if row is None or row.shape != (size,):
            raise InvalidArgumentError(
                f"chunk {c.id!r} has an embedding that is not a flat list of {size} numbers"
            )
    raise InvalidArgumentError(f"embeddings are not a flat list of {expected} numbers each")


def query_norm(vector: Sequence[float], dimension: int | None) -> float:
    """The query's Euclidean norm, once it is checked: ``dimension`` numbers, each finite in
    float32, not all zero (``math.hypot`` in C: no array is built to check a query).

    Raises:
        InvalidArgumentError: not numbers, wrong dimension, NaN/inf or zero norm.
    """
    if dimension is not None and len(vector) != dimension:
        raise InvalidArgumentError(
            f"query has dimension {len(vector)}, but the store holds {dimension}"
        )
    try:
        norm = math.hypot(*vector)
    except TypeError:
        raise InvalidArgumentError(
            f"a query vector is a flat list of numbers; this {type(vector).__name__} holds "
            "something else"
        ) from None
    if norm == 0.0:
        raise InvalidArgumentError("the query vector has zero norm; cosine is undefined")
    # NaN and infinities fail the first test; a finite norm past float32's range, the second
    # unless every value is within it
    if not norm <= _FLOAT32_MAX and not (norm < math.inf and max(map(abs, vector)) <= _FLOAT32_MAX):
        raise InvalidArgumentError("the query vector has NaN or infinite values")
    return norm


def prepare_query(vector: Sequence[float], dimension: int | None) -> Matrix:
    """The normalised float32 query (its shape checked by ``BaseVectorStore``).

    Raises:
        InvalidArgumentError: not numbers, wrong dimension, NaN/inf or zero norm.
    """
    norm = query_norm(vector, dimension)
    q = np.array(vector, dtype=np.float64)
    q /= norm
    return q.astype(np.float32)
