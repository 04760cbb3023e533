"""The bulk write path of the stores that take a document's vectors as one float32 matrix."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix
from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.ports import BaseVectorStore

__all__ = ["MatrixBulkStore"]


class MatrixBulkStore(BaseVectorStore):
    """A store whose ``replace_document`` and ``replace_document_vectors`` both end in
    ``_replace``, given the float32 matrix (or None: the chunks' embeddings)."""

    def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        return self._replace(manifest, chunks, None)

    def _replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        return self._replace(manifest, chunks, np.asarray(vectors))

    @abstractmethod
    def _replace(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: Matrix | None
    ) -> int:
        """Make ``chunks`` the whole document; ``vectors`` (row i for chunk i) or None."""
