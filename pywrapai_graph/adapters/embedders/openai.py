"""OpenAI embeddings through the official ``openai`` SDK (exact token counts)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from pywrapai_graph.adapters._per_loop import PerLoop, close_async
from pywrapai_graph.adapters._provider_errors import stainless_errors
from pywrapai_graph.adapters._provider_payload import drop_none
from pywrapai_graph.adapters.embedders._base import SDKEmbeddings
from pywrapai_graph.errors import ConfigurationError, MissingExtraError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch

try:
    import openai
except ImportError as exc:  # this module loads only when its provider is chosen
    raise MissingExtraError("openai", "openai") from exc

__all__ = ["OpenAIEmbeddings"]


class OpenAIEmbeddings(SDKEmbeddings[openai.OpenAI, openai.AsyncOpenAI]):
    """``client.embeddings.create`` with up to 2,048 inputs per request (sync and async)."""

    provider = "openai"
    default_model = "text-embedding-3-small"
    max_batch = 2048

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        options = drop_none(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
        try:
            self._client = openai.OpenAI(**options)
        except openai.OpenAIError as exc:
            raise ConfigurationError(
                "OpenAI needs an API key: set OPENAI_API_KEY or pass api_key="
            ) from exc
        self._secret = self._client.api_key
        self._aclients = PerLoop(lambda: openai.AsyncOpenAI(**options), close_async)

    def _errors(self) -> AbstractContextManager[None]:
        return stainless_errors(openai, "openai", self._secret)

    def _embed(
        self, client: openai.OpenAI | openai.AsyncOpenAI, texts: list[str], model: str
    ) -> Any:
        return client.embeddings.create(model=model, input=texts)

    @staticmethod
    def _batch(raw: Any, model: str) -> EmbeddingBatch:
        data = sorted(raw.data, key=lambda d: d.index)
        tokens = raw.usage.prompt_tokens if raw.usage is not None else None
        return EmbeddingBatch([list(d.embedding) for d in data], tokens, raw.model)
