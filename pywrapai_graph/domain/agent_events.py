"""The events of a streamed agent run (``Agent.stream`` / ``Agent.astream``).

A closed set of frozen values, one :data:`AgentEvent` union; each has a ``kind`` string (the
``event:`` line of a server-sent event). A run yields, per turn: the model's
:class:`TextDelta` and :class:`~pywrapai_graph.domain.ToolCallDelta` pieces as they stream;
for each tool call it asked for, :class:`ToolCallStarted` then :class:`ToolCallResult`; then
:class:`StepEnded`. The last event is :class:`FinalAnswer` — or :class:`ApprovalRequired`
when the run stopped for calls that await a person's approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pywrapai_graph.domain.agent import AgentResult
from pywrapai_graph.domain.agent_state import PendingCall
from pywrapai_graph.domain.messages import ToolCall
from pywrapai_graph.domain.response import ToolCallDelta
from pywrapai_graph.domain.usage import TokenUsage

__all__ = [
    "AgentEvent",
    "ApprovalRequired",
    "FinalAnswer",
    "StepEnded",
    "TextDelta",
    "ToolCallResult",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's text, as it streams."""

    kind: ClassVar[str] = "text_delta"

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call is about to run (its arguments complete and decoded)."""

    kind: ClassVar[str] = "tool_call_started"

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallResult:
    """A tool call finished.

    Attributes:
        call: the call.
        content: what the model receives for it (for a failure under the
            "return_to_model" policy, the error text).
        error: the call's failure as the model would see it ("Error: ..." with the text
            redacted), or None when it succeeded.
    """

    kind: ClassVar[str] = "tool_call_result"

    call: ToolCall
    content: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class StepEnded:
    """A turn is complete: its model call and the tools it asked for.

    Attributes:
        turn: 1-indexed turn number.
        usage: tokens of this turn's model call.
        cost_usd: USD cost of this turn's model call.
    """

    kind: ClassVar[str] = "step_ended"

    turn: int
    usage: TokenUsage
    cost_usd: float


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The run finished: ``result`` is what ``Agent.run`` would have returned."""

    kind: ClassVar[str] = "final_answer"

    result: AgentResult


@dataclass(frozen=True, slots=True)
class ApprovalRequired:
    """The run stopped before tool calls that await approval (the last event of the run).

    Attributes:
        calls: the pending calls: each one's stable ``id`` (the key of ``Agent.resume``'s
            ``approvals``), tool name and the arguments the model gave.
        result: the paused run; its ``state`` is what ``Agent.resume`` continues.
    """

    kind: ClassVar[str] = "approval_required"

    calls: tuple[PendingCall, ...]
    result: AgentResult


#: One event of a streamed agent run.
AgentEvent = (
    TextDelta
    | ToolCallDelta
    | ToolCallStarted
    | ToolCallResult
    | StepEnded
    | FinalAnswer
    | ApprovalRequired
)
