"""Ollama embeddings through the official ``ollama`` client (``/api/embed``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pywrapai_graph.adapters._sdk import error_for_status, http_errors, require
from pywrapai_graph.errors import ProviderTimeoutError, ProviderUnavailableError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch, EmbeddingProvider

__all__ = ["OllamaEmbeddings", "create"]


class OllamaEmbeddings(EmbeddingProvider):
    """``client.embed`` with a list input; tokens estimated at 4 characters each (D6)."""

    provider = "ollama"
    default_model = "nomic-embed-text"
    max_batch = 256

    def __init__(self, *, base_url: str | None = None, timeout: float | None = None) -> None:
        sdk = require("ollama", "ollama")
        self._sdk = sdk
        self._client = sdk.Client(host=base_url, timeout=timeout)

    def __repr__(self) -> str:
        return "OllamaEmbeddings()"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        timeouts, transports = http_errors()
        try:
            yield
        except self._sdk.ResponseError as exc:
            raise error_for_status(exc.status_code, str(exc.error), provider="ollama") from exc
        except timeouts as exc:
            raise ProviderTimeoutError(
                "ollama: embedding request timed out", provider="ollama"
            ) from exc
        except transports as exc:
            raise ProviderUnavailableError(
                "ollama: cannot reach the server", provider="ollama"
            ) from exc

    def close(self) -> None:
        """Release the client's connections."""
        self._client.close()

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with self._errors():
            raw = self._client.embed(model=model, input=list(texts))
        return EmbeddingBatch([list(v) for v in raw.embeddings], None, raw.model or model)


def create(**options: Any) -> OllamaEmbeddings:
    """Factory used by ``Embedder(provider="ollama")``."""
    return OllamaEmbeddings(**options)
