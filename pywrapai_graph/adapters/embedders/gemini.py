"""Gemini embeddings through the official ``google-genai`` SDK (``batchEmbedContents``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pywrapai_graph.adapters._sdk import error_for_status, http_errors, require
from pywrapai_graph.errors import ConfigurationError, ProviderTimeoutError, ProviderUnavailableError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch, EmbeddingProvider

__all__ = ["GeminiEmbeddings", "create"]


class GeminiEmbeddings(EmbeddingProvider):
    """``client.models.embed_content`` with up to 100 texts per request (the API's limit).

    The API reports no token counts; the Embedder estimates 4 characters per token (D6).
    """

    provider = "gemini"
    default_model = "gemini-embedding-001"
    max_batch = 100

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        require("google.genai", "gemini", "google-genai")
        from google import genai
        from google.genai import errors, types

        self._errors_mod = errors
        http: dict[str, Any] = {}
        if base_url:
            http["base_url"] = base_url
        if timeout is not None:
            http["timeout"] = int(timeout * 1000)
        if max_retries is not None:
            http["retry_options"] = types.HttpRetryOptions(attempts=max_retries + 1)
        try:
            self._client = genai.Client(
                api_key=api_key, http_options=types.HttpOptions(**http) if http else None
            )
        except ValueError as exc:
            raise ConfigurationError(
                "Gemini needs an API key: set GOOGLE_API_KEY or pass api_key="
            ) from exc
        self._secret = api_key

    def __repr__(self) -> str:
        return "GeminiEmbeddings()"

    @contextmanager
    def _errors(self) -> Iterator[None]:
        timeouts, transports = http_errors()
        try:
            yield
        except self._errors_mod.APIError as exc:
            raise error_for_status(
                exc.code, str(exc.message or exc), provider="gemini", secrets=[self._secret]
            ) from exc
        except timeouts as exc:
            raise ProviderTimeoutError(
                "gemini: embedding request timed out", provider="gemini"
            ) from exc
        except transports as exc:
            raise ProviderUnavailableError(
                "gemini: cannot reach the API", provider="gemini"
            ) from exc

    def close(self) -> None:
        """Release the client's connections."""
        self._client.close()

    def embed_batch(self, texts: Sequence[str], model: str) -> EmbeddingBatch:
        with self._errors():
            raw = self._client.models.embed_content(model=model, contents=list(texts))
        vectors = [list(e.values or []) for e in raw.embeddings or []]
        return EmbeddingBatch(vectors, None, model)


def create(**options: Any) -> GeminiEmbeddings:
    """Factory used by ``Embedder(provider="gemini")``."""
    return GeminiEmbeddings(**options)
