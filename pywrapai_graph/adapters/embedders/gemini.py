"""Gemini embeddings through the official ``google-genai`` SDK (``batchEmbedContents``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from pywrapai_graph.adapters._gemini import close_aio, gemini_client
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._provider_errors import status_code_errors
from pywrapai_graph.adapters.embedders._base import SDKEmbeddings
from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai.client import AsyncClient
    from google.genai.types import PartUnion
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("google-genai", "gemini") from exc

__all__ = ["GeminiEmbeddings"]


class GeminiEmbeddings(SDKEmbeddings[genai.Client, AsyncClient]):
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
        self._client = gemini_client(api_key, base_url, timeout, max_retries)
        self._aclients = PerLoop(
            lambda: gemini_client(api_key, base_url, timeout, max_retries).aio, close_aio
        )
        self._secret = api_key

    def _errors(self) -> AbstractContextManager[None]:
        return status_code_errors(genai_errors.APIError, "gemini", self._secret, "code", "message")

    def _embed(self, client: genai.Client | AsyncClient, texts: list[str], model: str) -> Any:
        # one part per text (``list`` is invariant: a ``list[str]`` is not accepted as is)
        return client.models.embed_content(model=model, contents=list[PartUnion](texts))

    @staticmethod
    def _batch(raw: Any, model: str) -> EmbeddingBatch:
        vectors = [list(e.values or []) for e in raw.embeddings or []]
        return EmbeddingBatch(vectors, None, model)
