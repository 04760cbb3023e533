"""The reranker port: a query and retrieved hits in, the same hits re-ordered by relevance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pywrapai_graph.domain import ScoredChunk

__all__ = ["Reranker"]


@runtime_checkable
class Reranker(Protocol):
    """Re-orders retrieved hits by their relevance to the query (a second, finer stage).

    ``VectorRetriever(..., reranker=...)`` retrieves ``rerank_candidates`` hits in its mode,
    hands them to :meth:`rerank` and returns the top ``k``. ``RerankModel`` (a hosted rerank
    API or a local cross-encoder) is the library's implementation; any object with these two
    methods is one too.

    Raises:
        pywrapai_graph.errors.ProviderError: when the reranking provider fails.
    """

    def rerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` (None: all) most relevant of ``hits``, best first, each scored by the
        reranker (its relevance replaces the retrieval score)."""
        ...

    async def arerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`rerank`; never blocks the event loop."""
        ...
