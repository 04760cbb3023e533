"""Ollama embeddings through the official ``ollama`` client (``/api/embed``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._provider_errors import status_code_errors
from pywrapai_graph.adapters.embedders._base import SDKEmbeddings
from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch

try:
    import ollama
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("ollama", "ollama") from exc

__all__ = ["OllamaEmbeddings"]


class OllamaEmbeddings(SDKEmbeddings[ollama.Client, ollama.AsyncClient]):
    """``client.embed`` with a list input; tokens estimated at 4 characters each (D6)."""

    provider = "ollama"
    default_model = "nomic-embed-text"
    max_batch = 256

    def __init__(self, *, base_url: str | None = None, timeout: float | None = None) -> None:
        self._client = ollama.Client(host=base_url, timeout=timeout)
        self._aclients = PerLoop(
            lambda: ollama.AsyncClient(host=base_url, timeout=timeout), close_async
        )

    def _errors(self) -> AbstractContextManager[None]:
        return status_code_errors(ollama.ResponseError, "ollama", None, "status_code", "error")

    def _embed(
        self, client: ollama.Client | ollama.AsyncClient, texts: list[str], model: str
    ) -> Any:
        return client.embed(model=model, input=texts)

    @staticmethod
    def _batch(raw: Any, model: str) -> EmbeddingBatch:
        return EmbeddingBatch([list(v) for v in raw.embeddings], None, raw.model or model)
