"""Values of the agent loop: configuration, steps, results and the typed stops."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.domain.messages import Message, ToolCall, ToolResult
from pywrapai_graph.domain.usage import TokenUsage
from pywrapai_graph.errors import InvalidArgumentError, RuntimeFailure

if TYPE_CHECKING:
    from pywrapai_graph.domain.agent_state import AgentRunState, PendingCall

__all__ = [
    "DEFAULT_MAX_TOOL_RESULT_BYTES",
    "DEFAULT_TOOL_TIMEOUT_S",
    "AgentBudgetExceededError",
    "AgentConfig",
    "AgentMaxTurnsError",
    "AgentResult",
    "AgentStep",
    "ToolErrorPolicy",
    "ToolTiming",
    "check_tool_limits",
]

ToolErrorPolicy = Literal["return_to_model", "raise", "skip"]
_POLICIES = ("return_to_model", "raise", "skip")

#: Seconds a tool call may take unless the tool or the config says otherwise: longer than any
#: healthy lookup or API call, shorter than the 60 s most HTTP front ends give a whole
#: request, so a hung tool fails its turn before the user's request dies.
DEFAULT_TOOL_TIMEOUT_S = 30.0
#: UTF-8 bytes of a tool's result text unless the tool or the config says otherwise: about
#: 16,000 tokens, a full page of records; every later turn re-sends it, so a runaway dump
#: would cost its size on each call and overflow a model's context.
DEFAULT_MAX_TOOL_RESULT_BYTES = 64 * 1024


def check_tool_limits(
    timeout_s: object,
    max_result_bytes: object,
    where: str = "",
    names: tuple[str, str] = ("timeout_s", "max_result_bytes"),
) -> None:
    """Refuse a timeout that is not a positive number or a size that is not a positive int.

    Raises:
        InvalidArgumentError: naming the value.
    """
    if timeout_s is not None and (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not timeout_s > 0  # NaN too
    ):
        raise InvalidArgumentError(
            f"{where}{names[0]} must be a positive number of seconds (math.inf: no limit), "
            f"got {timeout_s!r}"
        )
    if max_result_bytes is not None and not is_positive_int(max_result_bytes):
        raise InvalidArgumentError(
            f"{where}{names[1]} must be a positive int, got {max_result_bytes!r}"
        )


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
        state: when the run stopped for approval (``paused``), what ``Agent.resume``
            continues from; None otherwise.
    """

    content: str
    steps: list[AgentStep]
    total_turns: int
    total_usage: TokenUsage
    total_cost_usd: float
    messages: list[Message] = field(default_factory=list)
    state: AgentRunState | None = None

    @property
    def paused(self) -> bool:
        """True when the run stopped before tool calls that need a person's approval."""
        return self.state is not None and bool(self.state.turn and self.state.turn.pending)

    @property
    def pending(self) -> list[PendingCall]:
        """The calls awaiting approval, with their ids and arguments (empty unless paused)."""
        return [] if self.state is None else self.state.pending


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
        tool_timeout_s: seconds a tool call may take unless the tool sets its own
            (``ToolTimeoutError``, handled by ``tool_error_policy``); None: no limit.
        max_tool_result_bytes: UTF-8 bytes of a tool's result text unless the tool sets its
            own (``ToolResultTooLargeError``, handled by the policy); None: no limit.
    """

    max_turns: int = 10
    tool_error_policy: ToolErrorPolicy = "return_to_model"
    on_step: Callable[[AgentStep], None] | None = None
    max_cost_usd: float | None = None
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    max_tool_result_bytes: int | None = DEFAULT_MAX_TOOL_RESULT_BYTES

    def __post_init__(self) -> None:
        if not is_positive_int(self.max_turns):
            raise InvalidArgumentError(f"max_turns must be a positive int, got {self.max_turns!r}")
        if self.tool_error_policy not in _POLICIES:
            raise InvalidArgumentError(
                f"tool_error_policy must be one of {list(_POLICIES)}, "
                f"got {self.tool_error_policy!r}"
            )
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise InvalidArgumentError(f"max_cost_usd must be >= 0, got {self.max_cost_usd}")
        check_tool_limits(
            self.tool_timeout_s,
            self.max_tool_result_bytes,
            "AgentConfig: ",
            ("tool_timeout_s", "max_tool_result_bytes"),
        )
