"""The process's limiters: one per provider and key, shared by every ``LLM`` and ``Embedder``
given limits for them, and with ``Limits(shared=dsn)`` by every process using that database.
A key is known by a digest only (never kept, logged or shown)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from typing import Any

from pywrapai_graph.application.limited_models import LimitedChatModel, LimitedEmbeddingProvider
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.domain import Limits
from pywrapai_graph.errors import ArgumentTypeError, ConfigurationError
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.ports.embedding_provider import EmbeddingProvider
from pywrapai_graph.ports.shared_budget import SharedBudget

__all__ = ["LimitsArg", "limit_chat_model", "limit_embeddings", "shared_limiter"]

#: What ``limits=`` accepts: the budget (shared per provider key), a mapping of its fields
#: (the configuration form), or a limiter to share explicitly.
LimitsArg = Limits | Mapping[str, Any] | ProviderLimiter | None

# where each SDK reads its key when none is passed (the key identity must match the SDK's)
_KEY_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "azure-openai": ("AZURE_OPENAI_API_KEY",),
    "anthropic-bedrock": ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"),
}
#: the options that place an enterprise endpoint's quota (a resource, a region, a project)
_QUOTA_PLACES = ("azure_endpoint", "region", "project", "aws_access_key", "aws_profile")

_lock = threading.Lock()
#: (provider, key digest) -> its limiter: the explicit process-wide cache of budgets
_limiters: dict[tuple[str, str], ProviderLimiter] = {}


def _key_digest(provider: str, options: Mapping[str, Any]) -> str:
    key = options.get("api_key")
    if key is None:
        key = next((os.environ[v] for v in _KEY_VARIABLES.get(provider, ()) if v in os.environ), "")
    places = [str(options[k]) for k in _QUOTA_PLACES if options.get(k)]
    where = "\0".join(["", *places]) if places else ""  # unchanged digests for the others
    return hashlib.sha256(f"{provider}\0{key}{where}".encode()).hexdigest()[:16]


def _as_limits(given: Limits | Mapping[str, Any]) -> Limits:
    if isinstance(given, Limits):
        return given
    try:
        return Limits(**given)
    except TypeError as exc:
        raise ConfigurationError(
            f"limits= holds an unknown field ({exc}); the fields are requests_per_minute, "
            "tokens_per_minute, max_in_flight, max_wait_s and shared"
        ) from None


def shared_limiter(
    provider: str, options: Mapping[str, Any], given: LimitsArg
) -> ProviderLimiter | None:
    """The limiter of ``provider`` and the key in ``options`` (or the SDK's environment
    variable), made on first use; None without limits.

    Raises:
        ConfigurationError: other limits were already given for the same provider and key,
            or a mapping with an unknown field.
        ArgumentTypeError: ``given`` is none of the accepted types.
    """
    if given is None or isinstance(given, ProviderLimiter):
        return given
    if not isinstance(given, Limits | Mapping):
        raise ArgumentTypeError(
            f"limits= must be a Limits, a mapping or a ProviderLimiter, got {type(given).__name__}"
        )
    limits = _as_limits(given)
    digest = _key_digest(provider, options)
    with _lock:
        limiter = _limiters.get((provider, digest))
        if limiter is None:
            name = f"{provider} key {digest[:8]}"
            shared = _shared_budget(f"{provider}:{digest}", limits)
            limiter = ProviderLimiter(limits, name=name, shared=shared)
            _limiters[(provider, digest)] = limiter
    if limiter.limits != limits:
        other = " and another shared database" if limiter.limits.shared != limits.shared else ""
        raise ConfigurationError(
            f"{limiter.name} already has limits {limiter.limits}; every LLM and Embedder of a "
            f"process shares them, so give the same ones (got {limits}{other})"
        )
    return limiter


def _shared_budget(key: str, limits: Limits) -> SharedBudget | None:
    """The database row of ``limits.shared`` for ``key`` (None: this process's budget)."""
    if limits.shared is None:
        return None
    from pywrapai_graph.adapters.shared.budget import PostgresBudget

    return PostgresBudget(limits.shared, key, limits)


def limit_chat_model(model: ChatModel, options: Mapping[str, Any], given: LimitsArg) -> ChatModel:
    """``model`` behind its provider key's limiter (itself when there are no limits)."""
    limiter = shared_limiter(model.provider, options, given)
    return model if limiter is None else LimitedChatModel(model, limiter)


def limit_embeddings(
    provider: EmbeddingProvider, options: Mapping[str, Any], given: LimitsArg
) -> EmbeddingProvider:
    """``provider`` behind its key's limiter (itself when there are no limits)."""
    limiter = shared_limiter(provider.provider, options, given)
    return provider if limiter is None else LimitedEmbeddingProvider(provider, limiter)
