"""The chat model used when no provider is configured: assembly works, calls explain why not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import NoReturn

from pywrapai_graph.domain import ChatRequest, LLMResponse, StreamChunk
from pywrapai_graph.errors import ConfigurationError
from pywrapai_graph.ports import ChatModel

__all__ = ["NoProviderChatModel"]

_MESSAGE = (
    "no LLM provider is configured: set llm.provider in pywrapai.yaml or "
    "PYWRAPAI_LLM__PROVIDER (openai, anthropic, gemini, ollama)"
)


class NoProviderChatModel(ChatModel):
    """Raises ConfigurationError on every call, naming the setting to fill in."""

    @property
    def provider(self) -> str:
        return "none"

    @property
    def default_model(self) -> str:
        return "none"

    def _refuse(self) -> NoReturn:
        raise ConfigurationError(_MESSAGE)

    def chat(self, request: ChatRequest) -> LLMResponse:
        self._refuse()

    async def achat(self, request: ChatRequest) -> LLMResponse:
        self._refuse()

    def stream(self, request: ChatRequest) -> Iterator[StreamChunk]:
        self._refuse()

    def astream(self, request: ChatRequest) -> AsyncIterator[StreamChunk]:
        self._refuse()

    def close(self) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Nothing to release."""
