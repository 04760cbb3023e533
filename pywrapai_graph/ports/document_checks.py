"""The checks of a document write (``replace_document``): chunks of one document, a vector
matrix with a row per chunk, and the one embedder a store's vectors come from."""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import ArgumentTypeError, EmbedderMismatchError, InvalidArgumentError

__all__ = ["check_document", "check_embedder", "check_vectors"]


def check_document(manifest: DocumentManifest, chunks: Sequence[Chunk]) -> None:
    """Raises ValueError unless every chunk belongs to the manifest's document."""
    if isinstance(chunks, Chunk):
        raise ArgumentTypeError("replace_document() takes a list of chunks, not a single Chunk")
    for c in chunks:
        if not isinstance(c, Chunk):
            raise ArgumentTypeError(f"expected Chunk objects, got {type(c).__name__}")
        if c.doc_id != manifest.doc_id:
            raise InvalidArgumentError(
                f"chunk {c.id!r} belongs to document {c.doc_id!r}, not {manifest.doc_id!r}"
            )
    if len({c.id for c in chunks}) != manifest.chunk_count:
        raise InvalidArgumentError(
            f"document {manifest.doc_id!r}: the manifest counts {manifest.chunk_count} chunks, "
            f"{len({c.id for c in chunks})} distinct ones were given"
        )


def check_vectors(chunks: Sequence[Chunk], vectors: memoryview) -> None:
    """Raises ValueError unless ``vectors`` is a float32 matrix with one row per chunk."""
    given: object = vectors  # callers outside mypy may pass an array
    if not isinstance(given, memoryview) or given.ndim != 2 or given.format != "f":
        raise InvalidArgumentError("vectors must be a 2-D float32 memoryview, one row per chunk")
    if vectors.shape is None or vectors.shape[0] != len(chunks):
        rows = vectors.shape[0] if vectors.shape else 0
        raise InvalidArgumentError(f"{rows} vectors were given for {len(chunks)} chunks")


def check_embedder(
    recorded: EmbedderIdentity | None, given: EmbedderIdentity
) -> EmbedderIdentity | None:
    """The identity a store should hold after a write by ``given``.

    A dimension of 0 means "not known yet" (a document without chunks) and is never recorded.

    Raises:
        EmbedderMismatchError: a store filled by ``recorded`` meets another embedder.
    """
    if recorded is None:
        return given if given.dimension else None
    same_model = (recorded.provider, recorded.model) == (given.provider, given.model)
    if not same_model or given.dimension not in (0, recorded.dimension):
        raise EmbedderMismatchError(
            f"this store holds vectors from {recorded}, but the embedder in use is {given}; "
            "vectors of different models do not compare. Configure the store's embedder, or "
            "clear the store (store.clear(), or `pywrapai-graph store clear`) and ingest again"
        )
    return recorded
