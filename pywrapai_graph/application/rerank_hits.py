"""RerankHits: re-order retrieved hits through a rerank provider, accounting for each request.

The use case behind ``RerankModel``: it checks its inputs, splits the hits into
provider-sized requests, checks that every request scored every text, records one
``CallRecord(kind="rerank")`` per request (priced from the provider's billed units) and
returns the hits best first, each scored by the reranker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pywrapai_graph.application.observability.model_calls import observe_rerank
from pywrapai_graph.application.observability.observation import Observation
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import ScoredChunk, TokenUsage
from pywrapai_graph.domain.checks import check_unicode, is_positive_int
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ProviderError
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.rerank_provider import (
    AsyncRerankProvider,
    RerankProvider,
    RerankScores,
)
from pywrapai_graph.ports.reranker import Reranker
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["RerankHits"]


def _check(query: object, hits: object, k: object) -> list[ScoredChunk]:
    if not isinstance(query, str):
        raise ArgumentTypeError(f"the rerank query is a {type(query).__name__}, not a str")
    check_unicode(query, "the rerank query")
    if k is not None and not (isinstance(k, int) and is_positive_int(k)):
        raise InvalidArgumentError(f"k must be a positive int or None, got {k!r}")
    if isinstance(hits, str | bytes) or not isinstance(hits, Sequence):
        raise ArgumentTypeError(
            f"rerank() takes a list of ScoredChunk hits, not a {type(hits).__name__}"
        )
    items = list(hits)
    for i, hit in enumerate(items):
        if not isinstance(hit, ScoredChunk):
            raise ArgumentTypeError(
                f"hit {i} to rerank is a {type(hit).__name__}, not a ScoredChunk"
            )
    return items


def _ordered(hits: list[ScoredChunk], scores: list[float], k: int | None) -> list[ScoredChunk]:
    """The hits by descending score; equal scores keep the retrieval order."""
    order = sorted(range(len(hits)), key=lambda i: -scores[i])
    return [ScoredChunk(hits[i].chunk, scores[i]) for i in order[:k]]


class RerankHits(Reranker):
    """Reranks hits through ``provider``, at most ``provider.max_batch`` texts per request.

    Args:
        provider: the rerank adapter.
        model: the model every request names.
        tracker: receives one usage record per request.
        hooks: observability hooks told about every request (``on_llm_call``).
    """

    def __init__(
        self,
        provider: RerankProvider,
        model: str,
        tracker: TokenTracker,
        *,
        hooks: tuple[Hooks, ...] = (),
    ) -> None:
        self.provider = provider
        self.model = model
        self.tracker = tracker
        self._hooks = hooks

    def _parts(self, hits: list[ScoredChunk]) -> list[list[str]]:
        size = self.provider.max_batch
        texts = [h.chunk.text for h in hits]
        return [texts[i : i + size] for i in range(0, len(texts), size)]

    def _observe(self, part: list[str]) -> Observation:
        return observe_rerank(self.provider.provider, self.model, len(part), hooks=self._hooks)

    def _book(self, part: list[str], batch: RerankScores, observed: Observation) -> list[float]:
        """Record the request in the ledger (a reply is billed, usable or not), then check it."""
        name = self.provider.provider
        observed.result = self.tracker.record(
            "rerank",
            name,
            batch.model or self.model,
            TokenUsage(batch.units if batch.units is not None else 0),
            estimated=batch.units is None,
        )
        scores = batch.scores
        if len(scores) != len(part):
            raise ProviderError(
                f"{name}: {len(scores)} relevance scores for {len(part)} texts", provider=name
            )
        if not all(math.isfinite(s) for s in scores):
            raise ProviderError(f"{name}: a relevance score is not a finite number", provider=name)
        return [float(s) for s in scores]

    def rerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` (None: all) most relevant ``hits``, best first, scored by the provider.

        Raises:
            ArgumentTypeError: ``query`` is not a str or ``hits`` not a list of ScoredChunk.
            InvalidArgumentError: ``k`` is not a positive int, or ``query`` is not valid text.
            ProviderError: the provider failed or did not score every text.
        """
        return drive(
            self._ranked(query, hits, k), lambda part: self.provider.score(query, part, self.model)
        )

    async def _ascore(self, query: str, part: list[str]) -> RerankScores:
        if isinstance(self.provider, AsyncRerankProvider):
            return await self.provider.ascore(query, part, self.model)
        return await offload(self.provider.score, query, part, self.model)

    async def arerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`rerank`: the provider's async client, or the offload pool."""
        return await adrive(self._ranked(query, hits, k), lambda part: self._ascore(query, part))

    def _ranked(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None
    ) -> Core[list[str], list[ScoredChunk]]:
        """:meth:`rerank` and :meth:`arerank`, written once: yields each batch of texts to
        score, is sent its :class:`RerankScores`."""
        items = _check(query, hits, k)
        scores: list[float] = []
        for part in self._parts(items):
            with self._observe(part) as observed:
                batch: RerankScores = yield part
                scores += self._book(part, batch, observed)
        return _ordered(items, scores, k)
