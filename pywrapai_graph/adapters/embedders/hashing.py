"""The offline hashing embedder as an embedding provider (``Embedder(provider="hashing")``)."""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.ports.embedding_provider import AsyncEmbeddingProvider, EmbeddingBatch
from pywrapai_graph.ports.offload import offload

__all__ = ["HashingEmbeddings"]


class HashingEmbeddings(AsyncEmbeddingProvider):
    """Feature hashing of words and character n-grams: offline, deterministic, lexical."""

    provider = "hashing"
    max_batch = 4096
    #: computed in pure Python (it holds the GIL): ingest embeds it on the calling thread
    pure_python = True

    def __init__(self, *, dimension: int = 384, ngram: int = 3) -> None:
        self._hasher = FeatureHashingEmbedder(dimension, ngram)
        self.dimension = dimension
        self.default_model = self._hasher.model

    def __repr__(self) -> str:
        return f"HashingEmbeddings(dimension={self._hasher.dimension})"

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        return EmbeddingBatch(self._hasher.matrix(texts).data, None, self._hasher.model)

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        return await offload(self.embed_batch, texts, model)
