"""Ollama embeddings through the official ``ollama`` client (``/api/embed``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._provider_errors import decoding, status_code_errors
from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.ports.embedding_provider import AsyncEmbeddingProvider, EmbeddingBatch

try:
    import ollama
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("ollama", "ollama") from exc

__all__ = ["OllamaEmbeddings"]


class OllamaEmbeddings(AsyncEmbeddingProvider):
    """``client.embed`` with a list input; tokens estimated at 4 characters each (D6)."""

    provider = "ollama"
    default_model = "nomic-embed-text"
    max_batch = 256
    #: a server takes several requests at once (the client is thread-safe)
    concurrent_requests = True

    def __init__(self, *, base_url: str | None = None, timeout: float | None = None) -> None:
        self._client = ollama.Client(host=base_url, timeout=timeout)
        self._aclients = PerLoop(
            lambda: ollama.AsyncClient(host=base_url, timeout=timeout), close_async
        )

    def __repr__(self) -> str:
        return "OllamaEmbeddings()"

    def _errors(self) -> AbstractContextManager[None]:
        return status_code_errors(ollama.ResponseError, "ollama", None, "status_code", "error")

    def close(self) -> None:
        """Release the client's connections."""
        self._client.close()  # type: ignore[no-untyped-call]  # unannotated in ollama

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        await self._aclients.aclose()

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding("ollama", lambda: None, [None]), self._errors():
            raw = self._client.embed(model=model, input=list(texts))
            return EmbeddingBatch([list(v) for v in raw.embeddings], None, raw.model or model)

    async def aembed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with decoding("ollama", lambda: None, [None]), self._errors():
            raw = await self._aclients.get().embed(model=model, input=list(texts))
            return EmbeddingBatch([list(v) for v in raw.embeddings], None, raw.model or model)
