"""Embedder: the embedding facade — a provider chosen by name, the :class:`EmbedTexts` use case
behind it (batching, count check, usage records), its own TokenTracker (D7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

from pywrapai_graph.application.embed_texts import EmbedTexts
from pywrapai_graph.application.limited_models import LimitedEmbeddingProvider
from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition._provider_facade import ProviderFacade
from pywrapai_graph.composition.providers import (
    EMBEDDING_PROVIDERS,
    EmbedderOptions,
    make_embedding_provider,
)
from pywrapai_graph.composition.shared_limits import LimitsArg, limit_embeddings
from pywrapai_graph.ports.embedder import AsyncEmbeddingModel, MatrixEmbeddingModel
from pywrapai_graph.ports.embedding_provider import EmbeddingProvider
from pywrapai_graph.ports.hooks import Hooks

__all__ = ["EMBEDDING_PROVIDERS", "Embedder"]


class Embedder(ProviderFacade, AsyncEmbeddingModel, MatrixEmbeddingModel):
    """Turns texts into vectors through a provider, splitting large inputs into batches.

    ``aembed``/``aembed_one`` use the provider's native async client (one per event loop);
    a provider without one runs in the bounded offload pool.

    Token counts are the provider's when it reports them (OpenAI), otherwise estimated at
    4 characters per token (Gemini, Ollama: reference D6). Every request is recorded as a
    ``CallRecord(kind="embedding")`` in ``embedder.tokens`` (D7).

    Args:
        provider: "openai", "gemini", "ollama", "local" (offline, semantic: an ONNX
            sentence-embedding model, extra ``[local]``), "hashing" (offline, lexical), or an
            :class:`EmbeddingProvider` instance.
        model: the embedding model; the provider's default otherwise.
        batch_size: at most this many texts per request (capped by the provider's limit).
        tracker: share a TokenTracker (e.g. the LLM's, for one ledger); a new one by default.
        hooks: observability hooks told about every request (``on_llm_call``).
        limits: client-side ``Limits`` shared with every ``LLM`` and ``Embedder`` of the
            process naming the same provider and key (see ``LLM``).
        **options: adapter options (``api_key``, ``base_url``, ``timeout``, ...).

    Raises:
        UnknownProviderError: for an unknown provider name.
        MissingExtraError: when the provider's SDK is not installed.
    """

    _adapter: EmbeddingProvider
    _use_case: EmbedTexts

    def __init__(
        self,
        provider: str | EmbeddingProvider = "openai",
        model: str | None = None,
        *,
        batch_size: int | None = None,
        tracker: TokenTracker | None = None,
        prices: PriceTable | None = None,
        hooks: Sequence[Hooks] | None = None,
        limits: LimitsArg = None,
        **options: Unpack[EmbedderOptions],
    ) -> None:
        adapter = (
            make_embedding_provider(provider, options) if isinstance(provider, str) else provider
        )
        self._adapter = limit_embeddings(adapter, options, limits)
        self._use_case = EmbedTexts(
            self._adapter,
            model or self._adapter.default_model,
            tracker if tracker is not None else TokenTracker(prices),
            batch_size=batch_size,
            hooks=check_hooks(hooks),
        )

    @property
    def limiter(self) -> ProviderLimiter | None:
        """The client-side limiter this embedder's requests take their turn from (None: no
        limits)."""
        adapter = self._adapter
        return adapter.limiter if isinstance(adapter, LimitedEmbeddingProvider) else None

    @property
    def dimension(self) -> int | None:
        """The vector size when the provider declares it (local, hashing), else None."""
        size = getattr(self._adapter, "dimension", None)
        return size if isinstance(size, int) and size > 0 else None

    @property
    def concurrent_requests(self) -> bool:
        """True when the provider is a server (OpenAI, Gemini, Ollama): ingest then sends
        up to ``embed_concurrency`` requests at once."""
        return getattr(self._adapter, "concurrent_requests", False) is True

    @property
    def pure_python(self) -> bool:
        """True when the provider computes in pure Python (``hashing``): it holds the GIL,
        so ingest embeds it on the calling thread instead of one batch ahead in a worker."""
        return getattr(self._adapter, "pure_python", False) is True

    @property
    def truncated_texts(self) -> int:
        """How many texts the model truncated so far (reported by local models)."""
        return self._use_case.truncated

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; large inputs are split into provider-sized batches.

        Raises:
            TypeError: when given a single string.
            ProviderError: when the provider fails or returns the wrong number of vectors.
        """
        return self._use_case.run(texts)

    def embed_matrix(self, texts: Sequence[str]) -> memoryview:
        """The vectors as one (len(texts), dimension) float32 matrix, in a ``memoryview``.

        What ingest uses: vectors a provider computes locally never become Python floats.

        Raises:
            TypeError: when given a single string.
            ProviderError: when the provider fails or returns vectors of different sizes.
        """
        return self._use_case.run_matrix(texts)

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        return self.embed([text])[0]

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed`, on the provider's async client; never blocks the loop."""
        return await self._use_case.arun(texts)

    async def aembed_one(self, text: str) -> list[float]:
        """Async :meth:`embed_one`."""
        return (await self.aembed([text]))[0]
