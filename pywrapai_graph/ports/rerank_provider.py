"""The rerank-provider port: what each rerank adapter (a hosted API, a local model) implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["AsyncRerankProvider", "RerankProvider", "RerankScores"]


@dataclass(frozen=True, slots=True)
class RerankScores:
    """The relevance of each text of one request, in the order the texts were given.

    ``units`` is what the provider bills the request in (Cohere: search units; a local model
    reports the tokens it ran), or None when it reports nothing.
    """

    scores: list[float]
    units: int | None = None
    model: str | None = None


@runtime_checkable
class RerankProvider(Protocol):
    """One provider's rerank API or model.

    Attributes:
        provider: short name, e.g. "cohere".
        default_model: the model used when none is named.
        max_batch: the most texts one request may carry.
    """

    provider: str
    default_model: str
    max_batch: int

    def score(self, query: str, texts: Sequence[str], model: str) -> RerankScores:
        """The relevance of each of at most ``max_batch`` texts to ``query``, one request.

        Raises:
            pywrapai_graph.errors.ProviderError: when the provider fails.
            pywrapai_graph.errors.ResponseFormatError: when its reply cannot be decoded.
        """
        ...

    def close(self) -> None:
        """Release the client's connections."""
        ...


@runtime_checkable
class AsyncRerankProvider(RerankProvider, Protocol):
    """A provider with a native async client (one per event loop)."""

    async def ascore(self, query: str, texts: Sequence[str], model: str) -> RerankScores:
        """Async :meth:`score`."""
        ...

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        ...
