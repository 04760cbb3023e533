"""Resolves provider names to chat-model adapters, importing each adapter only when used."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from pywrapai_graph.errors import UnknownProviderError
from pywrapai_graph.ports import ChatModel

__all__ = ["CHAT_PROVIDERS", "make_chat_model"]

#: provider name → "module:factory". The factory takes ``model`` and the adapter options.
CHAT_PROVIDERS: dict[str, str] = {
    "openai": "pywrapai_graph.adapters.llm.openai:create",
    "anthropic": "pywrapai_graph.adapters.llm.anthropic:create",
    "gemini": "pywrapai_graph.adapters.llm.gemini:create",
    "ollama": "pywrapai_graph.adapters.llm.ollama:create",
}


def make_chat_model(provider: str, model: str | None, options: dict[str, Any]) -> ChatModel:
    """Build the adapter registered as ``provider``.

    Raises:
        UnknownProviderError: the name is not registered (the message lists the known names).
        MissingExtraError: the provider's SDK is not installed (raised by the adapter).
    """
    target = CHAT_PROVIDERS.get(provider)
    if target is None:
        known = sorted(CHAT_PROVIDERS) or ["(none installed)"]
        raise UnknownProviderError(
            f"unknown LLM provider {provider!r}; known providers: {', '.join(known)}. "
            "You can also pass a ChatModel instance as provider="
        )
    module_name, _, attr = target.partition(":")
    factory: Callable[..., ChatModel] = getattr(importlib.import_module(module_name), attr)
    return factory(model=model, **options)
