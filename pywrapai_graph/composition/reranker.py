"""RerankModel: the reranking facade — a provider chosen by name, the :class:`RerankHits` use
case behind it (batching, score checks, usage records), its own TokenTracker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.application.rerank_hits import RerankHits
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition._provider_facade import ProviderFacade
from pywrapai_graph.composition.providers import (
    RERANK_PROVIDERS,
    RerankOptions,
    make_rerank_provider,
)
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.rerank_provider import RerankProvider
from pywrapai_graph.ports.reranker import Reranker

__all__ = ["RERANK_PROVIDERS", "RerankModel"]


class RerankModel(ProviderFacade, Reranker):
    """Re-orders retrieved hits by relevance with a rerank model: a hosted API or a local
    cross-encoder. Give it to ``VectorRetriever(..., reranker=...)``.

    Every request is recorded as a ``CallRecord(kind="rerank")`` in ``reranker.tokens``,
    priced from the units the provider bills (Cohere: search units, one per 100 documents;
    a local model costs nothing), and traced as a ``rerank {model}`` span.

    Args:
        provider: "cohere" (extra ``[cohere]``), "local" (an ONNX cross-encoder from
            ``model_dir=``, extra ``[local]``), or a :class:`RerankProvider` instance.
        model: the rerank model; the provider's default otherwise.
        tracker: share a TokenTracker (e.g. the LLM's, for one ledger); a new one by default.
        prices: the price table of a new tracker.
        hooks: observability hooks told about every request (``on_llm_call``).
        **options: adapter options (``api_key``, ``base_url``, ``timeout``, ``max_retries``;
            ``model_dir``, ``threads``, ``max_length`` for "local").

    Raises:
        UnknownProviderError: for an unknown provider name.
        MissingExtraError: when the provider's SDK is not installed.
        ConfigurationError: a missing API key or model folder.

    Example:
        >>> reranker = RerankModel("local", model_dir="models/ms-marco-MiniLM")  # doctest: +SKIP
        >>> retriever = VectorRetriever(embedder, store, reranker=reranker)  # doctest: +SKIP
    """

    _adapter: RerankProvider
    _use_case: RerankHits

    def __init__(
        self,
        provider: str | RerankProvider = "cohere",
        model: str | None = None,
        *,
        tracker: TokenTracker | None = None,
        prices: PriceTable | None = None,
        hooks: Sequence[Hooks] | None = None,
        **options: Unpack[RerankOptions],
    ) -> None:
        self._adapter = (
            make_rerank_provider(provider, options) if isinstance(provider, str) else provider
        )
        self._use_case = RerankHits(
            self._adapter,
            model or self._adapter.default_model,
            tracker if tracker is not None else TokenTracker(prices),
            hooks=check_hooks(hooks),
        )

    def rerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` (None: all) most relevant ``hits``, best first, scored by the model.

        Raises:
            ArgumentTypeError: ``query`` is not a str or ``hits`` not a list of ScoredChunk.
            InvalidArgumentError: ``k`` is not a positive int.
            ProviderError: the provider failed or did not score every hit.
            ResponseFormatError: the provider's reply could not be decoded.
        """
        return self._use_case.rerank(query, hits, k)

    async def arerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`rerank`, on the provider's async client; never blocks the loop."""
        return await self._use_case.arerank(query, hits, k)
