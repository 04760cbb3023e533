"""Generation parameters: the sampling and length controls the four providers share."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypedDict

from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import ConfigurationError

__all__ = ["GenerationOptions", "GenerationParams", "UnsupportedParameterWarning"]


class UnsupportedParameterWarning(UserWarning):
    """A generation parameter the provider has no field for; it was not sent."""


class GenerationOptions(TypedDict, total=False):
    """The keyword arguments every call accepts (``llm.chat("Hi", max_tokens=64)``)."""

    max_tokens: int
    temperature: float
    top_p: float
    stop: Sequence[str]
    seed: int


def _number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"{name} must be a number, got {value!r}")
    if not low <= value <= high:
        raise ConfigurationError(f"{name} must be between {low} and {high}, got {value}")
    return float(value)


def _check_max_tokens(value: object) -> None:
    if value is not None and not is_positive_int(value):
        raise ConfigurationError(f"max_tokens must be a positive int, got {value!r}")


def _check_stop(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigurationError(f"stop must be a list of strings, got {value!r}")
    items: list[object] = list(value)
    if not all(isinstance(s, str) and s for s in items):
        raise ConfigurationError(f"stop must be a list of non-empty strings, got {value!r}")
    return tuple(str(s) for s in items)


def _check_seed(value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigurationError(f"seed must be an int, got {value!r}")


@dataclass(frozen=True, slots=True)
class GenerationParams:
    """Per-call generation parameters; None leaves the provider's (or the config's) default.

    Each adapter maps them to its provider's own names (OpenAI ``max_completion_tokens``,
    Anthropic ``stop_sequences``, Gemini ``max_output_tokens``, Ollama ``num_predict`` ...);
    one a provider lacks is not sent and raises an :class:`UnsupportedParameterWarning`.

    Attributes:
        max_tokens: output token cap (> 0).
        temperature: sampling temperature in [0, 2].
        top_p: nucleus sampling mass in (0, 1].
        stop: sequences that end the reply (non-empty strings).
        seed: best-effort deterministic sampling.

    Raises:
        ConfigurationError: a value out of range or of the wrong type (names the parameter).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        _check_max_tokens(self.max_tokens)
        if self.temperature is not None:
            _number("temperature", self.temperature, 0.0, 2.0)
        if self.top_p is not None and _number("top_p", self.top_p, 0.0, 1.0) == 0.0:
            raise ConfigurationError("top_p must be greater than 0")
        if self.stop is not None:
            object.__setattr__(self, "stop", _check_stop(self.stop))
        _check_seed(self.seed)

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> GenerationParams:
        """Parameters from keyword arguments (``GenerationOptions``).

        Raises:
            ConfigurationError: an unknown name, or a bad value.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown generation parameter(s) {unknown}; known: {sorted(known)} "
                "(pass provider-specific ones in extra=)"
            )
        return cls(**options)

    def over(self, defaults: GenerationParams) -> GenerationParams:
        """These parameters, with ``defaults`` filling the ones left unset."""
        return GenerationParams(
            **{
                f.name: getattr(self, f.name)
                if getattr(self, f.name) is not None
                else getattr(defaults, f.name)
                for f in fields(self)
            }
        )

    def given(self) -> dict[str, Any]:
        """The parameters that are set, by name."""
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None
        }
