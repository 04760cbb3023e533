"""What the Embedder and RerankModel facades share: the adapter of a provider, the use case
that calls it (with its model and its TokenTracker), and their closing."""

from __future__ import annotations

from typing import Self

from pywrapai_graph.application.embed_texts import EmbedTexts
from pywrapai_graph.application.rerank_hits import RerankHits
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.ports.embedding_provider import AsyncEmbeddingProvider, EmbeddingProvider
from pywrapai_graph.ports.rerank_provider import AsyncRerankProvider, RerankProvider

__all__ = ["ProviderFacade"]


class ProviderFacade:
    """Base of the facades over one provider's adapter (``_adapter``) and the use case that
    calls it (``_use_case``)."""

    _adapter: EmbeddingProvider | RerankProvider
    _use_case: EmbedTexts | RerankHits

    @property
    def provider(self) -> str:
        """The provider name."""
        return self._adapter.provider

    @property
    def model(self) -> str:
        """The model every request names."""
        return self._use_case.model

    @property
    def tokens(self) -> TokenTracker:
        """Usage and cost of every request."""
        return self._use_case.tracker

    def close(self) -> None:
        """Release the provider client's connections."""
        self._adapter.close()

    async def aclose(self) -> None:
        """Release the provider's async client of the running loop."""
        if isinstance(self._adapter, AsyncEmbeddingProvider | AsyncRerankProvider):
            await self._adapter.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r})"
