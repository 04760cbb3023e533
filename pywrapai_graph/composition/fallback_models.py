"""The fallback models of an ``LLM``: built from what the caller or the configuration gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pywrapai_graph.application.fallbacks import ModelTarget
from pywrapai_graph.composition.providers import make_chat_model
from pywrapai_graph.composition.shared_limits import limit_chat_model
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports import ChatModel

__all__ = ["FallbackTargets", "fallback_targets"]


@dataclass(slots=True)
class FallbackTargets:
    """The targets, and the adapters built here (the ``LLM`` that asked closes them)."""

    targets: list[ModelTarget] = field(default_factory=list)
    owned: list[ChatModel] = field(default_factory=list)


def _from_mapping(i: int, spec: Mapping[str, Any]) -> ChatModel:
    options = dict(spec)
    provider = options.pop("provider", None)
    if not isinstance(provider, str):
        raise InvalidArgumentError(
            f"fallbacks[{i}] needs a provider name, e.g. {{'provider': 'anthropic', "
            "'model': 'claude-haiku-4-5'}"
        )
    model = options.pop("model", None)
    if model is not None and not isinstance(model, str):
        raise ArgumentTypeError(f"fallbacks[{i}]['model'] must be a model name (str)")
    limits = options.pop("limits", None)
    return limit_chat_model(make_chat_model(provider, model, options), options, limits)


def fallback_targets(fallbacks: Sequence[object] | None) -> FallbackTargets:
    """Each fallback as a :class:`ModelTarget`, in order: an ``LLM`` (its adapter and model),
    a ``ChatModel`` (its default model), or a mapping ``{"provider": ..., "model": ...,
    "limits": ..., **adapter options}`` (the configuration form; its adapter is built here).

    Raises:
        ArgumentTypeError: an entry that is neither an ``LLM``, a ``ChatModel`` nor a mapping.
        InvalidArgumentError: a mapping without a provider name.
        UnknownProviderError: an unknown provider name.
        MissingExtraError: the provider's SDK is not installed.
    """
    from pywrapai_graph.composition.llm import LLM

    given: object = fallbacks
    if given is None:
        return FallbackTargets()
    if isinstance(given, str | Mapping) or not isinstance(given, Sequence):
        raise ArgumentTypeError(
            "fallbacks= must be a list of LLMs, ChatModels or {'provider': ..., 'model': ...} "
            f"mappings, got {type(given).__name__}"
        )
    out = FallbackTargets()
    for i, spec in enumerate(given):
        if isinstance(spec, LLM):
            out.targets.append(ModelTarget(spec.chat_model, spec.model))
        elif isinstance(spec, Mapping):
            chat_model = _from_mapping(i, spec)
            out.owned.append(chat_model)
            out.targets.append(
                ModelTarget(chat_model, spec.get("model") or chat_model.default_model)
            )
        elif isinstance(spec, ChatModel):
            out.targets.append(ModelTarget(spec, spec.default_model))
        else:
            raise ArgumentTypeError(
                f"fallbacks[{i}] is a {type(spec).__name__}; pass an LLM, a ChatModel or "
                "{'provider': ..., 'model': ...}"
            )
    return out
