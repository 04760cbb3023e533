"""Values of the agent loop: configuration, steps, results and the typed stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pywrapai_graph.domain.messages import Message, ToolCall, ToolResult
from pywrapai_graph.domain.usage import TokenUsage
from pywrapai_graph.errors import InvalidArgumentError, RuntimeFailure

__all__ = [
    "AgentBudgetExceededError",
    "AgentConfig",
    "AgentMaxTurnsError",
    "AgentResult",
    "AgentStep",
    "ToolErrorPolicy",
    "ToolTiming",
]

ToolErrorPolicy = Literal["return_to_model", "raise", "skip"]
_POLICIES = ("return_to_model", "raise", "skip")


@dataclass(frozen=True, slots=True)
class ToolTiming:
    """Wall time of one tool call (``time.perf_counter`` readings, seconds)."""

    tool_call_id: str
    name: str
    started: float
    finished: float

    @property
    def seconds(self) -> float:
        """How long the call took."""
        return self.finished - self.started


@dataclass(frozen=True, slots=True)
class AgentStep:
    """One completed tool-calling turn.

    Attributes:
        turn_num: 1-indexed turn number.
        tool_calls: what the model requested.
        tool_results: what the tools returned (a skipped failure has no result).
        usage: tokens of this turn's LLM call.
        cost_usd: USD cost of this turn's LLM call.
        timings: wall time per tool call, in call order.
    """

    turn_num: int
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    usage: TokenUsage
    cost_usd: float
    timings: list[ToolTiming] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What a run produced.

    Attributes:
        content: the final plain-text answer ("" in a partial result).
        steps: one entry per tool-calling turn (the final answer turn has none).
        total_turns: LLM calls made, including the final answer turn.
        total_usage: tokens of every turn.
        total_cost_usd: ``sum(step.cost_usd) + final turn cost``, exactly.
        messages: the agent's message list: input, assistant tool-call turns, TOOL results,
            and (on success) the final assistant answer. History is not repeated here.
    """

    content: str
    steps: list[AgentStep]
    total_turns: int
    total_usage: TokenUsage
    total_cost_usd: float
    messages: list[Message] = field(default_factory=list)


class AgentMaxTurnsError(RuntimeFailure):
    """The loop reached ``max_turns`` without a plain-text answer.

    Attributes:
        turns: how many turns ran.
        partial: an :class:`AgentResult` with every completed step, the cost so far and the
            full message list (resume by passing ``partial.messages`` to ``run``).
    """

    def __init__(self, turns: int, partial: AgentResult) -> None:
        super().__init__(f"agent stopped after {turns} turns without a final answer")
        self.turns = turns
        self.partial = partial


class AgentBudgetExceededError(RuntimeFailure):
    """The run would exceed ``AgentConfig.max_cost_usd``.

    Attributes:
        spent: USD spent so far.
        budget: the configured budget.
        partial: the result so far, as for :class:`AgentMaxTurnsError`.
    """

    def __init__(self, spent: float, budget: float, partial: AgentResult) -> None:
        super().__init__(f"agent stopped: ${spent:.6f} spent, budget ${budget:.6f}")
        self.spent = spent
        self.budget = budget
        self.partial = partial


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How the loop behaves.

    Attributes:
        max_turns: stop (AgentMaxTurnsError) after this many tool-calling turns.
        tool_error_policy: "return_to_model" (the model sees "Error: ..."), "raise"
            (abort the run) or "skip" (no TOOL message for the failed call).
        on_step: called after each tool-calling turn, before the step is stored.
        max_cost_usd: stop (AgentBudgetExceededError) before a call that would exceed it,
            estimating the next call at no less than the previous one.
    """

    max_turns: int = 10
    tool_error_policy: ToolErrorPolicy = "return_to_model"
    on_step: Callable[[AgentStep], None] | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        turns: object = self.max_turns
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
            raise InvalidArgumentError(f"max_turns must be a positive int, got {turns!r}")
        if self.tool_error_policy not in _POLICIES:
            raise InvalidArgumentError(
                f"tool_error_policy must be one of {list(_POLICIES)}, "
                f"got {self.tool_error_policy!r}"
            )
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise InvalidArgumentError(f"max_cost_usd must be >= 0, got {self.max_cost_usd}")
