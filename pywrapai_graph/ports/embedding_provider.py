"""The embedding-provider port: what each embedding API adapter implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["AsyncEmbeddingProvider", "EmbeddingBatch", "EmbeddingProvider"]


@dataclass(frozen=True, slots=True)
class EmbeddingBatch:
    """Vectors for one request, the token count when the provider reports one, and how many
    texts the model truncated (local models with a fixed maximum length).

    ``vectors`` is a list of lists (what an HTTP API's JSON gives) or, for providers that
    compute them locally, a 2-D float32 ``memoryview`` (row-major, one row per text) so the
    vectors reach a store's bulk path without a Python float per value.
    """

    vectors: list[list[float]] | memoryview
    input_tokens: int | None = None
    model: str | None = None
    truncated: int = 0


@runtime_checkable
class EmbeddingProvider(Protocol):
    """One provider's embedding API.

    Attributes:
        provider: short name, e.g. "openai".
        default_model: the model used when none is named.
        max_batch: the most texts one request may carry.
    """

    provider: str
    default_model: str
    max_batch: int

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        """Embed at most ``max_batch`` texts in one request.

        Raises:
            pywrapai_graph.errors.ProviderError: when the provider fails.
        """
        ...

    def close(self) -> None:
        """Release the client's connections."""
        ...


@runtime_checkable
class AsyncEmbeddingProvider(EmbeddingProvider, Protocol):
    """A provider with a native async client (one per event loop)."""

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        """Async :meth:`embed_batch`."""
        ...

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        ...
