"""The provider tables: every chat, embedding and rerank provider, by name, in one place each.

A row names the provider, the pip extra it needs and a typed factory that imports its adapter
inside its body, so an SDK loads only when its provider is chosen, while mypy and
import-linter still see which class each name builds. ``LLM(provider=...)``,
``Embedder(provider=...)`` and the settings' provider names all come from these tables:
adding a provider is its adapter module plus one row here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypedDict, TypeVar

from pywrapai_graph.adapters._unreachable import refuse_unencoded_userinfo
from pywrapai_graph.errors import InvalidArgumentError, UnknownProviderError
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.ports.embedding_provider import EmbeddingProvider
from pywrapai_graph.ports.rerank_provider import RerankProvider

if TYPE_CHECKING:
    import os
    from collections.abc import Awaitable

    from google.auth.credentials import Credentials

    from pywrapai_graph.adapters.llm._anthropic_cache import PromptCache
    from pywrapai_graph.adapters.llm._openai_reasoning import ReasoningReplay

__all__ = [
    "CHAT_PROVIDERS",
    "EMBEDDING_PROVIDERS",
    "RERANK_PROVIDERS",
    "ChatFactory",
    "ChatOptions",
    "EmbedderOptions",
    "EmbeddingFactory",
    "ProviderEntry",
    "RerankOptions",
    "make_chat_model",
    "make_embedding_provider",
    "make_rerank_provider",
]


class _ServerOptions(TypedDict, total=False):
    """The options of every provider reached over HTTP."""

    api_key: str | None
    base_url: str | None
    timeout: float | None
    max_retries: int | None


class ChatOptions(_ServerOptions, total=False):
    """The adapter options ``LLM(provider=..., **options)`` accepts: typed, so a misspelt
    name is a type error (a provider without the option raises ``TypeError``)."""

    default_max_tokens: int | None  # OpenAI, Anthropic
    prompt_cache: PromptCache  # Anthropic
    api: Literal["chat", "responses"]  # OpenAI: Chat Completions (default) or Responses
    thinking: Mapping[str, Any] | None  # Anthropic
    reasoning_replay: ReasoningReplay  # OpenAI-compatible servers
    # the enterprise endpoints (docs/providers.md): Azure OpenAI, Bedrock, Vertex AI
    azure_endpoint: str | None  # azure-openai
    api_version: str | None  # azure-openai
    azure_ad_token_provider: Callable[[], str | Awaitable[str]] | None  # azure-openai
    region: str | None  # anthropic-bedrock (AWS region), anthropic-/gemini-vertex (location)
    project: str | None  # anthropic-vertex, gemini-vertex
    credentials: Credentials | None  # anthropic-vertex, gemini-vertex (google-auth)
    aws_access_key: str | None  # anthropic-bedrock
    aws_secret_key: str | None  # anthropic-bedrock
    aws_session_token: str | None  # anthropic-bedrock
    aws_profile: str | None  # anthropic-bedrock


class _LocalModelOptions(TypedDict, total=False):
    """The options of a model run in-process from its files."""

    model_dir: str | os.PathLike[str] | None
    model_name: str | None
    max_length: int


class EmbedderOptions(_ServerOptions, _LocalModelOptions, total=False):
    """The adapter options ``Embedder(provider=..., **options)`` accepts (typed as
    :class:`ChatOptions`)."""

    dimension: int  # hashing
    ngram: int  # hashing
    threads: int | None  # local


class RerankOptions(_ServerOptions, _LocalModelOptions, total=False):
    """The adapter options ``RerankModel(provider=..., **options)`` accepts (typed as
    :class:`ChatOptions`)."""

    threads: int  # local
    batch_size: int  # local


#: ``(model, adapter options) -> ChatModel``; model None means the adapter's default.
ChatFactory = Callable[[str | None, Mapping[str, Any]], ChatModel]
#: ``(adapter options) -> EmbeddingProvider``; the Embedder picks the model per request.
EmbeddingFactory = Callable[[Mapping[str, Any]], EmbeddingProvider]
#: ``(adapter options) -> RerankProvider``; the RerankModel names the model per request.
RerankFactory = Callable[[Mapping[str, Any]], RerankProvider]
Factory = TypeVar("Factory", ChatFactory, EmbeddingFactory, RerankFactory)


@dataclass(frozen=True, slots=True)
class ProviderEntry(Generic[Factory]):
    """One provider: its name, the extra that installs its SDK (None: always there), and
    the factory that imports and builds its adapter."""

    name: str
    extra: str | None
    build: Factory


def _table(*entries: ProviderEntry[Factory]) -> Mapping[str, ProviderEntry[Factory]]:
    return {entry.name: entry for entry in entries}


# ---------------------------------------------------------------------------- chat models
def _openai_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    api = options.get("api", "chat")
    rest = {k: v for k, v in options.items() if k != "api"}
    if api == "responses":
        from pywrapai_graph.adapters.llm.openai_responses import OpenAIResponsesChatModel

        return OpenAIResponsesChatModel(model, **rest)
    if api != "chat":
        raise InvalidArgumentError(f"OpenAI api must be 'chat' or 'responses', got {api!r}")
    from pywrapai_graph.adapters.llm.openai import OpenAIChatModel

    return OpenAIChatModel(model, **rest)


def _anthropic_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.anthropic import AnthropicChatModel

    return AnthropicChatModel(model, **options)


def _gemini_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.gemini import GeminiChatModel

    return GeminiChatModel(model, **options)


def _ollama_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.ollama import OllamaChatModel

    return OllamaChatModel(model, **options)


def _azure_openai_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.azure_openai import AzureOpenAIChatModel

    return AzureOpenAIChatModel(model, **options)


def _anthropic_bedrock_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.anthropic_bedrock import AnthropicBedrockChatModel

    return AnthropicBedrockChatModel(model, **options)


def _anthropic_vertex_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.anthropic_vertex import AnthropicVertexChatModel

    return AnthropicVertexChatModel(model, **options)


def _gemini_vertex_chat(model: str | None, options: Mapping[str, Any]) -> ChatModel:
    from pywrapai_graph.adapters.llm.gemini_vertex import GeminiVertexChatModel

    return GeminiVertexChatModel(model, **options)


#: provider name → chat-model entry (``LLM(provider=...)``, ``llm.provider`` in settings).
CHAT_PROVIDERS: Mapping[str, ProviderEntry[ChatFactory]] = _table(
    ProviderEntry("openai", "openai", _openai_chat),
    ProviderEntry("anthropic", "anthropic", _anthropic_chat),
    ProviderEntry("gemini", "gemini", _gemini_chat),
    ProviderEntry("ollama", "ollama", _ollama_chat),
    ProviderEntry("azure-openai", "openai", _azure_openai_chat),
    ProviderEntry("anthropic-bedrock", "bedrock", _anthropic_bedrock_chat),
    ProviderEntry("anthropic-vertex", "vertex", _anthropic_vertex_chat),
    ProviderEntry("gemini-vertex", "vertex", _gemini_vertex_chat),
)


# ---------------------------------------------------------------------------- embedders
def _openai_embeddings(options: Mapping[str, Any]) -> EmbeddingProvider:
    from pywrapai_graph.adapters.embedders.openai import OpenAIEmbeddings

    return OpenAIEmbeddings(**options)


def _gemini_embeddings(options: Mapping[str, Any]) -> EmbeddingProvider:
    from pywrapai_graph.adapters.embedders.gemini import GeminiEmbeddings

    return GeminiEmbeddings(**options)


def _ollama_embeddings(options: Mapping[str, Any]) -> EmbeddingProvider:
    from pywrapai_graph.adapters.embedders.ollama import OllamaEmbeddings

    return OllamaEmbeddings(**options)


def _hashing_embeddings(options: Mapping[str, Any]) -> EmbeddingProvider:
    from pywrapai_graph.adapters.embedders.hashing import HashingEmbeddings

    return HashingEmbeddings(**options)


def _local_embeddings(options: Mapping[str, Any]) -> EmbeddingProvider:
    from pywrapai_graph.adapters.embedders.local import LocalEmbeddings

    return LocalEmbeddings(**options)


#: provider name → embedding entry (``Embedder(provider=...)``, ``embedder.provider``).
EMBEDDING_PROVIDERS: Mapping[str, ProviderEntry[EmbeddingFactory]] = _table(
    ProviderEntry("hashing", None, _hashing_embeddings),
    ProviderEntry("local", "local", _local_embeddings),
    ProviderEntry("openai", "openai", _openai_embeddings),
    ProviderEntry("gemini", "gemini", _gemini_embeddings),
    ProviderEntry("ollama", "ollama", _ollama_embeddings),
)


# ---------------------------------------------------------------------------- rerankers
def _cohere_rerank(options: Mapping[str, Any]) -> RerankProvider:
    from pywrapai_graph.adapters.rerankers.cohere import CohereRerank

    return CohereRerank(**options)


def _local_rerank(options: Mapping[str, Any]) -> RerankProvider:
    from pywrapai_graph.adapters.rerankers.cross_encoder import LocalCrossEncoder

    return LocalCrossEncoder(**options)


#: provider name → reranker entry (``RerankModel(provider=...)``, ``retriever.reranker``).
RERANK_PROVIDERS: Mapping[str, ProviderEntry[RerankFactory]] = _table(
    ProviderEntry("cohere", "cohere", _cohere_rerank),
    ProviderEntry("local", "local", _local_rerank),
)


def make_chat_model(provider: str, model: str | None, options: Mapping[str, Any]) -> ChatModel:
    """Build the chat model registered as ``provider``.

    Raises:
        UnknownProviderError: the name is not registered (the message lists the known names).
        ConfigurationError: a ``base_url`` whose password holds an unencoded ``@:/?#[]``.
        MissingExtraError: the provider's SDK is not installed (raised by the adapter).
    """
    hint = ". You can also pass a ChatModel instance as provider="
    return _entry(CHAT_PROVIDERS, "LLM", provider, options, hint).build(model, options)


def make_embedding_provider(provider: str, options: Mapping[str, Any]) -> EmbeddingProvider:
    """Build the embedding provider registered as ``provider``.

    Raises:
        UnknownProviderError: the name is not registered (the message lists the known names).
        MissingExtraError: the provider's SDK is not installed (raised by the adapter).
    """
    return _entry(EMBEDDING_PROVIDERS, "embedding", provider, options).build(options)


def make_rerank_provider(provider: str, options: Mapping[str, Any]) -> RerankProvider:
    """Build the rerank provider registered as ``provider``.

    Raises:
        UnknownProviderError: the name is not registered (the message lists the known names).
        MissingExtraError: the provider's SDK is not installed (raised by the adapter).
    """
    return _entry(RERANK_PROVIDERS, "rerank", provider, options).build(options)


def _entry(
    table: Mapping[str, ProviderEntry[Factory]],
    kind: str,
    provider: str,
    options: Mapping[str, Any],
    hint: str = "",
) -> ProviderEntry[Factory]:
    """The table's entry for ``provider``, its ``base_url`` checked for a plain-text secret."""
    entry = table.get(provider)
    if entry is None:
        known = ", ".join(sorted(table))
        raise UnknownProviderError(
            f"unknown {kind} provider {provider!r}; known providers: {known}{hint}"
        )
    refuse_unencoded_userinfo(options.get("base_url"), f"{provider} base_url")
    return entry
