"""What every SDK embedding adapter shares: its clients and their closing, and one request's
path (the SDK call, its errors translated, a reply it cannot decode reported)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters._per_loop import AsyncClient, SDKClients, SyncClient
from pywrapai_graph.adapters._provider_errors import decoding
from pywrapai_graph.ports.embedding_provider import AsyncEmbeddingProvider, EmbeddingBatch

__all__ = ["SDKEmbeddings"]


class SDKEmbeddings(SDKClients[SyncClient, AsyncClient], AsyncEmbeddingProvider):
    """Base of the embedding adapters over an SDK: a subclass builds the clients and writes
    its SDK call once, for either client (:meth:`_embed`: an awaitable on the async one)."""

    #: a server takes several requests at once (the client is thread-safe)
    concurrent_requests = True

    def __repr__(self) -> str:  # no key, no URL
        return f"{type(self).__name__}()"

    @abstractmethod
    def _embed(self, client: SyncClient | AsyncClient, texts: list[str], model: str) -> Any: ...

    @staticmethod
    @abstractmethod
    def _batch(raw: Any, model: str) -> EmbeddingBatch: ...

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding(self.provider, lambda: None, [self._secret]), self._errors():
            return self._batch(self._embed(self._client, list(texts), model), model)

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding(self.provider, lambda: None, [self._secret]), self._errors():
            raw = await self._embed(self._aclient, list(texts), model)
            return self._batch(raw, model)
