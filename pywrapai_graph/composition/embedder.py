"""Embedder: the embedding facade — one provider, one model, its own TokenTracker (D7)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.observability.model_calls import observe_embedding
from pywrapai_graph.application.observability.observation import Observation
from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.providers import EMBEDDING_PROVIDERS, make_embedding_provider
from pywrapai_graph.domain import TokenUsage
from pywrapai_graph.errors import ProviderError
from pywrapai_graph.ports.embedder import AsyncEmbeddingModel
from pywrapai_graph.ports.embedding_provider import (
    AsyncEmbeddingProvider,
    EmbeddingBatch,
    EmbeddingProvider,
)
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.offload import offload

__all__ = ["EMBEDDING_PROVIDERS", "Embedder"]


class Embedder(AsyncEmbeddingModel):
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
        **options: adapter options (``api_key``, ``base_url``, ``timeout``, ...).

    Raises:
        UnknownProviderError: for an unknown provider name.
        MissingExtraError: when the provider's SDK is not installed.
    """

    def __init__(
        self,
        provider: str | EmbeddingProvider = "openai",
        model: str | None = None,
        *,
        batch_size: int | None = None,
        tracker: TokenTracker | None = None,
        prices: PriceTable | None = None,
        hooks: Sequence[Hooks] | None = None,
        **options: Any,
    ) -> None:
        self._adapter = (
            make_embedding_provider(provider, options) if isinstance(provider, str) else provider
        )
        self._model = model or self._adapter.default_model
        limit = self._adapter.max_batch
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self._batch = min(batch_size or limit, limit)
        self._tracker = tracker if tracker is not None else TokenTracker(prices)
        self._truncated = 0
        self._hooks = check_hooks(hooks)

    @property
    def provider(self) -> str:
        """The provider name."""
        return self._adapter.provider

    @property
    def model(self) -> str:
        """The embedding model."""
        return self._model

    @property
    def dimension(self) -> int | None:
        """The vector size when the provider declares it (local, hashing), else None."""
        size = getattr(self._adapter, "dimension", None)
        return size if isinstance(size, int) and size > 0 else None

    @property
    def truncated_texts(self) -> int:
        """How many texts the model truncated so far (reported by local models)."""
        return self._truncated

    @property
    def tokens(self) -> TokenTracker:
        """Usage and cost of every embedding request."""
        return self._tracker

    def _parts(self, texts: Sequence[str]) -> list[list[str]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a list of texts; use embed_one() for one text")
        items = list(texts)
        return [items[i : i + self._batch] for i in range(0, len(items), self._batch)]

    def _observe(self, part: list[str]) -> Observation:
        return observe_embedding(self.provider, self._model, len(part), hooks=self._hooks)

    def _book(
        self, part: list[str], batch: EmbeddingBatch, observed: Observation
    ) -> list[list[float]]:
        if len(batch.vectors) != len(part):
            raise ProviderError(
                f"{self.provider}: {len(batch.vectors)} vectors for {len(part)} texts",
                provider=self.provider,
            )
        tokens = batch.input_tokens if batch.input_tokens is not None else estimate_tokens(part)
        observed.result = self._tracker.record(
            "embedding", self.provider, batch.model or self._model, TokenUsage(tokens)
        )
        if observed.active and batch.vectors:
            observed.set({"gen_ai.embeddings.dimension.count": len(batch.vectors[0])})
        self._truncated += batch.truncated
        return batch.vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; large inputs are split into provider-sized batches.

        Raises:
            TypeError: when given a single string.
            ProviderError: when the provider fails or returns the wrong number of vectors.
        """
        vectors: list[list[float]] = []
        for part in self._parts(texts):
            with self._observe(part) as observed:
                batch = self._adapter.embed_batch(part, self._model)
                vectors.extend(self._book(part, batch, observed))
        return vectors

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        return self.embed([text])[0]

    async def _abatch(self, part: list[str]) -> EmbeddingBatch:
        if isinstance(self._adapter, AsyncEmbeddingProvider):
            return await self._adapter.aembed_batch(part, self._model)
        return await offload(self._adapter.embed_batch, part, self._model)

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed`, on the provider's async client; never blocks the loop."""
        vectors: list[list[float]] = []
        for part in self._parts(texts):
            with self._observe(part) as observed:
                vectors.extend(self._book(part, await self._abatch(part), observed))
        return vectors

    async def aembed_one(self, text: str) -> list[float]:
        """Async :meth:`embed_one`."""
        return (await self.aembed([text]))[0]

    def close(self) -> None:
        """Release the provider client's connections."""
        self._adapter.close()

    async def aclose(self) -> None:
        """Release the provider's async client of the running loop."""
        if isinstance(self._adapter, AsyncEmbeddingProvider):
            await self._adapter.aclose()

    def __enter__(self) -> Embedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Embedder(provider={self.provider!r}, model={self.model!r})"
