"""VectorRetriever: embeds documents into a vector store and retrieves by query."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from pywrapai_graph.application.chunker import chunk_id
from pywrapai_graph.domain import Chunk, Document, ScoredChunk
from pywrapai_graph.ports import (
    BaseRetriever,
    BaseVectorStore,
    EmbeddingModel,
    MetadataFilter,
    TextSplitter,
)

__all__ = ["ProgressCallback", "VectorRetriever"]

_log = logging.getLogger(__name__)

#: Called after each stored batch with (chunks done, chunks in total).
ProgressCallback = Callable[[int, int], None]


class VectorRetriever(BaseRetriever):
    """Connects an embedder to a vector store.

    Args:
        embedder: turns texts into vectors (``Embedder``, ``HashingEmbedder``, ...).
        store: any :class:`BaseVectorStore`.
        k: default number of chunks to retrieve.
        min_score: minimum cosine similarity a hit needs (0.0 keeps every non-negative hit).

    Raises:
        ValueError: k < 1 or min_score outside [-1, 1].
    """

    def __init__(
        self,
        embedder: EmbeddingModel,
        store: BaseVectorStore,
        k: int = 4,
        min_score: float = 0.0,
        *,
        batch_size: int = 256,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        if not -1.0 <= min_score <= 1.0:
            raise ValueError(f"min_score is a cosine similarity in [-1, 1], got {min_score}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.embedder = embedder
        self.store = store
        self.k = k
        self.min_score = min_score
        self.batch_size = batch_size

    def _chunks(self, docs: Sequence[Document], chunker: TextSplitter | None) -> list[Chunk]:
        chunks: list[Chunk] = []
        for doc in docs:
            if not isinstance(doc, Document):
                raise TypeError(f"add_documents() takes Document objects, got {type(doc).__name__}")
            if chunker is not None:
                chunks.extend(chunker.split(doc))
            elif doc.text.strip():
                chunks.append(
                    Chunk(
                        doc.text, doc_id=doc.id, metadata=dict(doc.metadata), id=chunk_id(doc.id, 0)
                    )
                )
        return chunks

    def add_documents(
        self,
        docs: Sequence[Document],
        chunker: TextSplitter | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> int:
        """Chunk, embed (one batched call per batch) and store ``docs``.

        With ``chunker=None`` each non-blank document becomes exactly one chunk. Re-adding a
        document replaces its chunks (ids derive from the document id). Batches already
        stored stay stored if a later batch fails.

        Returns:
            The number of chunks added.
        """
        chunks = self._chunks(docs, chunker)
        total = len(chunks)
        for start in range(0, total, self.batch_size):
            batch = chunks[start : start + self.batch_size]
            vectors = self.embedder.embed([c.text for c in batch])
            if len(vectors) != len(batch):
                raise ValueError(
                    f"the embedder returned {len(vectors)} vectors for {len(batch)} texts"
                )
            for chunk, vector in zip(batch, vectors, strict=True):
                chunk.embedding = vector
            self.store.add(batch)
            if progress is not None:
                progress(start + len(batch), total)
        _log.debug("added %d chunks from %d documents", total, len(docs))
        return total

    def retrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Up to ``k`` (default: the constructor's) chunks scoring at least ``min_score``."""
        wanted = self.k if k is None else k
        vector = self.embedder.embed_one(query)
        hits = self.store.search(vector, k=wanted, filter=filter)
        return [h for h in hits if h.score >= self.min_score]

    def __repr__(self) -> str:
        return f"VectorRetriever(store={self.store!r}, k={self.k}, min_score={self.min_score})"
