"""What observability hooks receive: one frozen value per finished operation."""

from __future__ import annotations

from dataclasses import dataclass, field

from pywrapai_graph.domain.agent import AgentStep
from pywrapai_graph.domain.documents import ScoredChunk
from pywrapai_graph.domain.messages import ToolCall
from pywrapai_graph.domain.usage import TokenUsage

__all__ = ["AgentStepEvent", "LLMCallEvent", "RetrievalEvent", "ToolCallEvent"]


@dataclass(frozen=True, slots=True)
class LLMCallEvent:
    """One model call (chat, stream or structured), finished or failed.

    Attributes:
        operation: "chat".
        provider: e.g. "openai".
        request_model: the model asked for.
        response_model: the model that answered ("" on failure).
        usage: tokens consumed.
        cost_usd: the ledger's price of the call.
        cached: served from the response cache.
        stream: a streamed call.
        prompt_file: the versioned prompt file in use, if any.
        finish_reasons: why the model stopped, as the provider said.
        duration_s: wall time of the call (for a stream: until it ended).
        error: the exception's type name when the call failed.
        estimated: ``usage`` is an estimate (a stream that ended before its usage arrived).
    """

    operation: str
    provider: str
    request_model: str
    response_model: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    cached: bool = False
    stream: bool = False
    prompt_file: str | None = None
    finish_reasons: tuple[str, ...] = ()
    duration_s: float = 0.0
    error: str | None = None
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class RetrievalEvent:
    """One retrieval: the query's hits (ids and scores), or the failure."""

    retriever: str
    k: int
    hits: tuple[ScoredChunk, ...] = ()
    duration_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """One tool execution."""

    call: ToolCall
    duration_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AgentStepEvent:
    """One completed agent turn (the same step ``AgentConfig.on_step`` receives)."""

    run_id: str
    step: AgentStep
