"""LimitedChatModel and LimitedEmbeddingProvider: an adapter whose every request first takes
its turn from a :class:`ProviderLimiter`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from pywrapai_graph.application.embed_texts import abatch, estimate_tokens
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.domain import ChatRequest, LLMResponse, StreamChunk
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.ports.embedding_provider import (
    AsyncEmbeddingProvider,
    EmbeddingBatch,
    EmbeddingProvider,
)

__all__ = ["LimitedChatModel", "LimitedEmbeddingProvider", "chat_tokens"]


def chat_tokens(request: ChatRequest) -> int:
    """A request's tokens before it is sent: its input at 4 characters per token, plus the
    output it may produce (``max_tokens``, when set)."""
    texts = [m.content for m in request.messages]
    return estimate_tokens(texts) + (request.max_tokens or 0)


class LimitedChatModel(ChatModel):
    """``model``, each request admitted by ``limiter`` first (a stream keeps its slot until
    it ends) and counted for the tokens the provider reports.

    Args:
        model: the adapter.
        limiter: the budget shared with every client of the same provider key.
    """

    def __init__(self, model: ChatModel, limiter: ProviderLimiter) -> None:
        self.inner = model
        self.limiter = limiter

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def default_model(self) -> str:
        return self.inner.default_model

    def chat(self, request: ChatRequest) -> LLMResponse:
        with self.limiter.acquire(chat_tokens(request)) as permit:
            response = self.inner.chat(request)
            permit.settle(response.usage.total_tokens)
            return response

    async def achat(self, request: ChatRequest) -> LLMResponse:
        with await self.limiter.aacquire(chat_tokens(request)) as permit:
            response = await self.inner.achat(request)
            permit.settle(response.usage.total_tokens)
            return response

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        chunks = self.inner.stream(request)  # translated now: a misuse raises before a turn
        return self._stream(request, chunks)

    def _stream(self, request: ChatRequest, chunks: Iterator[StreamChunk]) -> Iterator[StreamChunk]:
        with self.limiter.acquire(chat_tokens(request)) as permit:
            for chunk in chunks:
                if chunk.usage is not None:
                    permit.settle(chunk.usage.total_tokens)
                yield chunk

    def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        chunks = self.inner.astream(request)
        return self._astream(request, chunks)

    async def _astream(
        self, request: ChatRequest, chunks: AsyncIterator[StreamChunk]
    ) -> AsyncIterator[StreamChunk]:
        with await self.limiter.aacquire(chat_tokens(request)) as permit:
            async for chunk in chunks:
                if chunk.usage is not None:
                    permit.settle(chunk.usage.total_tokens)
                yield chunk

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()


class LimitedEmbeddingProvider(AsyncEmbeddingProvider):
    """``provider``, each batch admitted by ``limiter`` first (counted for the provider's
    token count when it reports one, its 4-characters-per-token estimate otherwise). Other
    attributes (``dimension``...) are the provider's.

    Args:
        provider: the embedding adapter.
        limiter: the budget shared with every client of the same provider key.
    """

    def __init__(self, provider: EmbeddingProvider, limiter: ProviderLimiter) -> None:
        self.inner = provider
        self.limiter = limiter
        self.provider = provider.provider
        self.default_model = provider.default_model
        self.max_batch = provider.max_batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with self.limiter.acquire(estimate_tokens(texts)) as permit:
            batch = self.inner.embed_batch(texts, model)
            if batch.input_tokens is not None:
                permit.settle(batch.input_tokens)
            return batch

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with await self.limiter.aacquire(estimate_tokens(texts)) as permit:
            batch = await abatch(self.inner, texts, model)
            if batch.input_tokens is not None:
                permit.settle(batch.input_tokens)
            return batch

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        if isinstance(self.inner, AsyncEmbeddingProvider):
            await self.inner.aclose()
