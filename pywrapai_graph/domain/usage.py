"""Token usage and the record of one billed call."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from pywrapai_graph.domain.fallback import FailedAttempt
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["CallKind", "CallRecord", "CostTotals", "TokenUsage"]

CallKind = Literal["chat", "embedding", "rerank"]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one call consumed, as the provider reported them.

    ``input_tokens`` counts every input token, including those read from or written to a
    prompt cache; ``cache_read_tokens`` and ``cache_write_tokens`` say how many of them were
    billed at the cache rates. ``reasoning_tokens`` are part of ``output_tokens`` (providers
    bill them as output) and are reported for information.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(
                    f"TokenUsage.{name} must be a non-negative int, got {value!r}"
                )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        if not isinstance(other, TokenUsage):
            return NotImplemented
        return TokenUsage(*(getattr(self, n) + getattr(other, n) for n in _COUNTS))


#: TokenUsage's counts, in field order
_COUNTS = tuple(f.name for f in fields(TokenUsage))


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call recorded by a :class:`~pywrapai_graph.TokenTracker`.

    Attributes:
        kind: "chat", "embedding" or "rerank".
        provider: e.g. "openai".
        model: the model the provider reported (or was asked for).
        usage: tokens consumed; for a rerank call ``input_tokens`` counts the units the
            provider bills (Cohere: search units; a local model: the tokens it ran).
        cost_usd: cost from the tracker's price table (0.0 for unknown models).
        prompt_file: the versioned prompt file in use, when the call came through GraphLLM.
        timestamp: when the call was recorded (``time.time()``; 0.0 when built by hand).
        agent_run: the id of the agent run the call belonged to, if any.
        estimated: True when ``usage`` is partly or wholly an estimate (4 characters per
            token) because the provider reported none: a stream the consumer closed or
            cancelled, or the provider cut off, before its usage arrived; an embedding
            batch from a provider that reports no token count.
        fallback_from: the models of a fallback chain that failed before this one
            answered (empty when the first one answered).
    """

    kind: CallKind
    provider: str
    model: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    prompt_file: str | None = None
    timestamp: float = 0.0
    agent_run: str | None = None
    estimated: bool = False
    fallback_from: tuple[FailedAttempt, ...] = ()


@dataclass(frozen=True, slots=True)
class CostTotals:
    """Calls, tokens and USD cost added up (a ledger's aggregate or a request scope's).

    ``estimated_calls`` of the ``calls`` carry estimated usage (see ``CallRecord.estimated``).
    """

    calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    estimated_calls: int = 0
