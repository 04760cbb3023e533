"""InMemoryVectorStore: exact cosine search over a float32 matrix, no extra dependencies."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager

from pywrapai_graph.adapters.vectorstores.kit.exact_search import ExactIndex, ExactSearch, Hits
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import InProcessRetrieval, LexicalMirror
from pywrapai_graph.adapters.vectorstores.kit.matrix_bulk_store import MatrixBulkStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix, prepare_batch
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["InMemoryVectorStore"]


class InMemoryVectorStore(InProcessRetrieval, ExactSearch, MatrixBulkStore):
    """Keeps vectors in process memory; thread-safe; good to ~100k chunks per GB of RAM at 1536d.

    Args:
        dimension: fix the dimension up front (otherwise the first add decides).

    Example:
        >>> store = InMemoryVectorStore()
        >>> store.add([Chunk("Paris is the capital of France.", embedding=[1.0, 0.0])])
        >>> store.search([1.0, 0.1], k=1)[0].chunk.text
        'Paris is the capital of France.'
    """

    db_system = "in_memory"
    atomic_documents = True

    def __init__(self, dimension: int | None = None) -> None:
        self._lock = threading.RLock()
        # the lexical index follows the exact index's changes (it watches it)
        self._lexical = LexicalMirror(self._chunks)
        self._index = ExactIndex(dimension, watcher=self._lexical)
        self._manifests: dict[str, DocumentManifest] = {}
        self._embedder: EmbedderIdentity | None = None

    @property
    def dimension(self) -> int | None:
        return self._index.dimension

    def _add(self, chunks: Sequence[Chunk]) -> None:
        with self._lock:
            batch = prepare_batch(chunks, self._index.dimension)
            self._index.upsert(batch)
            for c in batch.chunks:  # a document changed outside replace_document
                self._manifests.pop(c.doc_id, None)

    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        with self._lock:
            identity = check_embedder(self._embedder, manifest.embedder)
            batch = prepare_batch(chunks, self._index.dimension, vectors)
            before = self._index.ids_of_doc(manifest.doc_id)
            self._index.replace(before, batch)
            self._manifests[manifest.doc_id] = manifest
            self._embedder = identity
            return len(before)

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        with self._lock:
            return self._manifests.get(doc_id)

    def embedder_identity(self) -> EmbedderIdentity | None:
        with self._lock:
            return self._embedder

    def _chunks(self) -> list[Chunk]:
        return self._index.chunks()

    def _reading_index(self) -> AbstractContextManager[object]:
        return self._lock

    def _scored_hits(self, hits: Hits) -> list[ScoredChunk]:
        return self._index.scored(hits)

    def _delete(self, ids: list[str]) -> int:
        with self._lock:
            for i in ids:
                if i in self._index:
                    self._manifests.pop(self._index.doc_of(i), None)
            return self._index.remove(ids)

    def _delete_by_doc(self, doc_id: str) -> int:
        with self._lock:
            self._manifests.pop(doc_id, None)
            return self._index.remove(self._index.ids_of_doc(doc_id))

    def clear(self) -> None:
        with self._lock:
            self._index.clear()
            self._manifests.clear()
            self._embedder = None

    def __len__(self) -> int:
        return len(self._index)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        with self._lock:
            return self._index.count(filter)

    def __repr__(self) -> str:
        return f"InMemoryVectorStore(chunks={len(self)}, dimension={self.dimension})"
