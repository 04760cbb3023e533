"""What every SDK embedding adapter shares: its clients and their closing, and one request's
path (the SDK call, its errors translated, a reply it cannot decode reported)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._provider_errors import decoding
from pywrapai_graph.ports.embedding_provider import AsyncEmbeddingProvider, EmbeddingBatch

__all__ = ["SDKEmbeddings"]


class _Closable(Protocol):
    def close(self) -> Any: ...


SyncClient = TypeVar("SyncClient", bound=_Closable)
AsyncClient = TypeVar("AsyncClient")


class SDKEmbeddings(AsyncEmbeddingProvider, Generic[SyncClient, AsyncClient]):
    """Base of the embedding adapters over an SDK; subclasses build the clients.

    Parameterised with the SDK's own client classes, so the SDK call each subclass writes
    once (:meth:`_embed`, on either client) is type-checked against both.
    """

    #: a server takes several requests at once (the client is thread-safe)
    concurrent_requests = True
    _client: SyncClient
    _aclients: PerLoop[AsyncClient]
    #: the API key, masked in every error and in the scrubbed copies of SDK exceptions
    _secret: str | None = None

    def __repr__(self) -> str:  # no key, no URL
        return f"{type(self).__name__}()"

    @abstractmethod
    def _errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions translated into ours."""

    @abstractmethod
    def _embed(self, client: SyncClient | AsyncClient, texts: list[str], model: str) -> Any:
        """The SDK's embedding call on ``client``: its reply (an awaitable of it on the
        async client)."""

    @staticmethod
    @abstractmethod
    def _batch(raw: Any, model: str) -> EmbeddingBatch:
        """The batch a reply carries."""

    def close(self) -> None:
        """Release the client's connections."""
        self._client.close()

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        await self._aclients.aclose()

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding(self.provider, lambda: None, [self._secret]), self._errors():
            return self._batch(self._embed(self._client, list(texts), model), model)

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding(self.provider, lambda: None, [self._secret]), self._errors():
            raw = await self._embed(self._aclients.get(), list(texts), model)
            return self._batch(raw, model)
