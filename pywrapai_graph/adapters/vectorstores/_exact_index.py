"""The shared kit of the vector stores: batch validation and normalisation, queries, k,
metadata JSON and filters, and the float32 bulk path (the exact search is ExactIndex, in
``_matrix_index``)."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import (
    MAX_K,
    check_filter,
    check_k,
    matches_filter,
    same_value,
)
from pywrapai_graph.ports.vector_store import check_vectors

__all__ = [
    "MAX_K",
    "MatrixBulkStore",
    "PreparedBatch",
    "check_filter",
    "check_k",
    "matches_filter",
    "metadata_json",
    "metadata_jsons",
    "prepare_batch",
    "prepare_query",
    "same_value",
    "stored_metadata",
]

Matrix = npt.NDArray[np.float32]


#: One encoder for every chunk (``json.dumps`` with options builds a new one per call).
_METADATA_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True)


def _row_encoder() -> Callable[[Any], str]:
    """``_METADATA_ENCODER.encode`` without its per-call set-up: the same C encoder with the
    same options (so the same text, byte for byte), made once. No circular-reference
    bookkeeping: checked metadata is flat (scalars and lists of scalars)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: the encoder itself
        return _METADATA_ENCODER.encode
    encoder = _METADATA_ENCODER
    pieces = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )
    return lambda value: "".join(pieces(value, 0))


_encode_row = _row_encoder()
#: Values whose equal values have the same JSON text (not float: 0.0 == -0.0).
_SAME_TEXT = frozenset({str, int, bool, type(None)})


def metadata_jsons(chunks: Sequence[Chunk]) -> list[str]:
    """Each chunk's metadata as :func:`metadata_json` writes it, for a whole batch.

    A document's chunks carry copies of its metadata: a run of equal metadata (same keys in
    the same order, equal values of the same plain types) is encoded once.

    Raises:
        InvalidArgumentError: as :func:`metadata_json`.
    """
    out: list[str] = []
    last: object = None
    last_types: tuple[type, ...] = ()
    encoded = ""
    try:
        for c in chunks:
            metadata = c.metadata
            if metadata is not last and not (
                last_types
                and metadata == last
                and tuple(map(type, metadata.values())) == last_types
            ):
                encoded = _encode_row(metadata)
                last = metadata
                types = tuple(map(type, metadata.values()))
                last_types = types if _SAME_TEXT.issuperset(types) else ()
            out.append(encoded)
    except (TypeError, ValueError):
        for c in chunks:
            metadata_json(c)  # raises, naming the chunk
        raise
    return out


def stored_metadata(text: object, chunk_id: object, where: str) -> dict[str, Any]:
    """A stored row's metadata JSON as a dict.

    Raises:
        VectorStoreError: the row holds something else (a row changed outside this library):
            naming the chunk and ``where`` it is, and what to do.
    """
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        raise VectorStoreError(
            f"chunk {chunk_id!r} in {where} has metadata that is not a JSON object (the row "
            "was changed outside this library); delete the chunk (store.delete([id])) and "
            "add it again"
        )
    return value


def metadata_json(chunk: Chunk) -> str:
    """The chunk's metadata as JSON, for stores that persist it.

    Raises:
        ValueError: naming the chunk, when the metadata is not JSON-serialisable.
    """
    try:
        return _METADATA_ENCODER.encode(chunk.metadata)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(
            f"chunk {chunk.id!r} has metadata that is not JSON-serialisable ({exc}); "
            "use str, int, float, bool, None and flat lists of them"
        ) from None


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
    """Validate and normalise a batch's vectors before anything is written.

    The chunks themselves (types, Unicode, metadata values) were checked once already, by
    the port's guard around the public method that calls this (``add``,
    ``replace_document``, ``replace_document_vectors``: see ``ports.checked_methods``).

    With ``vectors`` (row ``i`` for ``chunks[i]``) the chunks' ``embedding`` is ignored and no
    Python float is built; otherwise the embeddings are converted once.

    Raises:
        ValueError: naming the first bad chunk: embedding missing, wrong dimension,
            NaN/inf (also after float32 conversion), or zero norm.
    """
    if isinstance(chunks, Chunk):
        raise ArgumentTypeError("add() takes a list of chunks, not a single Chunk")
    # An id repeated in one batch: the last one wins (upsert).
    latest = {c.id: i for i, c in enumerate(chunks)}
    if len(latest) == len(chunks):
        rows, unique = list(range(len(chunks))), list(chunks)
    else:
        rows = list(latest.values())
        unique = [chunks[i] for i in rows]
    if not unique:
        return PreparedBatch([], np.empty((0, dimension or 0), np.float32), [])
    if vectors is None:
        matrix = _as_matrix(unique, _embedding_dimension(unique, dimension))
    else:
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise InvalidArgumentError(
                f"{vectors.shape[0]} vectors were given for {len(chunks)} chunks"
            )
        expected = dimension if dimension is not None else int(vectors.shape[1])
        if vectors.shape[1] != expected or expected == 0:
            raise InvalidArgumentError(
                f"chunk {unique[0].id!r} has dimension {vectors.shape[1]}, "
                f"but the store expects {expected}"
            )
        # One copy: the caller's buffer is never normalised in place.
        matrix = np.array(vectors if len(rows) == len(chunks) else vectors[rows], np.float32)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = unique[int(np.argmin(finite))]
        raise InvalidArgumentError(f"chunk {bad.id!r} has NaN or infinite values in its embedding")
    norms = np.linalg.norm(matrix, axis=1)
    if not (norms > 0).all():
        bad = unique[int(np.argmin(norms > 0))]
        raise InvalidArgumentError(
            f"chunk {bad.id!r} has a zero-norm embedding; cosine is undefined"
        )
    matrix /= norms[:, None]
    return PreparedBatch([c.id for c in unique], matrix, unique)


def _embedding_dimension(chunks: list[Chunk], dimension: int | None) -> int:
    """The chunks' common embedding size (the store's when it has one)."""
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
                raise InvalidArgumentError(
                    f"chunk {c.id!r} has an embedding that is not a flat list of {dim} numbers"
                )
        raise InvalidArgumentError(f"embeddings are not a flat list of {dim} numbers each")
    return vectors


def prepare_query(vector: Sequence[float], dimension: int | None) -> Matrix:
    """The normalised float32 query.

    Raises:
        InvalidArgumentError: not a flat list of numbers (a string, a nested list), wrong
            dimension, NaN/inf or zero norm.
    """
    try:
        with np.errstate(over="ignore"):
            q = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"a query vector is a flat list of numbers; this {type(vector).__name__} holds "
            "something else"
        ) from None
    if q.ndim != 1:
        raise InvalidArgumentError(
            f"a query vector is a flat list of numbers, got shape {q.shape}; search_many() "
            "takes many vectors"
        )
    if dimension is not None and q.shape[0] != dimension:
        raise InvalidArgumentError(
            f"query has dimension {q.shape[0]}, but the store holds {dimension}"
        )
    if not np.isfinite(q).all():
        raise InvalidArgumentError("query vector has NaN or infinite values")
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        raise InvalidArgumentError("query vector has zero norm; cosine similarity is undefined")
    return q / np.float32(norm)
