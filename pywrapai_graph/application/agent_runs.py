"""The books of one agent run, their JSON state, and what a resume does to them first."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from pywrapai_graph.application.tools import ToolRegistry
from pywrapai_graph.domain import LLMResponse, Message, TokenUsage, ToolCall, ToolResult
from pywrapai_graph.domain.agent import AgentResult, AgentStep, ToolTiming
from pywrapai_graph.domain.agent_state import (
    AgentRunState,
    Approval,
    ApprovalsError,
    RunStateError,
    TurnState,
    call_key,
    copied,
)
from pywrapai_graph.errors import PyWrapAIError

__all__ = ["DENIED", "RunBooks", "resumed_books"]

#: What the model receives for a call a person denied (it can answer or try otherwise).
DENIED = "The tool call was denied by the user."


@dataclass
class RunBooks:
    """The books of one run; :meth:`snapshot` is its :class:`AgentRunState`."""

    messages: list[Message]
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    steps: list[AgentStep] = field(default_factory=list)
    turns: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    last_cost: float = 0.0
    #: what a tool raised that stopped the run under the "raise" policy
    tool_raised: Exception | None = None
    #: the tool-calling turn under way (between the model's reply and the turn's step)
    turn: TurnState | None = None
    #: saves so far (the run store's compare-and-set counter)
    seq: int = 0
    #: what every model call of the run gets besides the messages
    history: Sequence[Message] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def book(self, response: LLMResponse) -> None:
        self.turns += 1
        self.usage = self.usage + response.usage
        self.cost += response.cost_usd
        self.last_cost = response.cost_usd

    @contextmanager
    def interrupted(self) -> Iterator[None]:
        """An error that stops the run (a failed model call, a tool's failure under the
        "raise" policy) carries the run so far as ``partial`` (steps, messages, cost)."""
        try:
            yield
        except PyWrapAIError as exc:
            if exc.partial is None:
                exc.partial = self.result()
            raise

    def result(self, content: str = "", state: AgentRunState | None = None) -> AgentResult:
        return AgentResult(
            content=content,
            steps=list(self.steps),
            total_turns=self.turns,
            total_usage=self.usage,
            total_cost_usd=self.cost,
            messages=list(self.messages),
            state=state,
        )

    def key(self, index: int) -> str:
        """The stable id of the open turn's call ``index``."""
        return call_key(self.run_id, self.turns, index)

    def settle(self, index: int, result: ToolResult | None, timing: ToolTiming) -> None:
        """Record the open turn's call ``index`` as done (``result`` None: skipped)."""
        turn = self.turn
        assert turn is not None
        turn.results[index] = result
        turn.timings[index] = timing

    def snapshot(self, tools: Sequence[str], answer: str | None = None) -> AgentRunState:
        """The run as it stands (``answer``: its final answer, once finished)."""
        history = self.history
        return AgentRunState(
            run_id=self.run_id,
            tools=tuple(tools),
            messages=tuple(self.messages),
            history=None if history is None else tuple(history),
            options={k: v for k, v in self.options.items() if k not in ("tools", "rag")},
            steps=tuple(self.steps),
            turns=self.turns,
            usage=self.usage,
            cost_usd=self.cost,
            last_cost_usd=self.last_cost,
            turn=copied(self.turn),
            answer=answer,
            seq=self.seq,
        )

    @classmethod
    def restore(cls, state: AgentRunState) -> RunBooks:
        return cls(
            messages=list(state.messages),
            run_id=state.run_id,
            steps=list(state.steps),
            turns=state.turns,
            usage=state.usage,
            cost=state.cost_usd,
            last_cost=state.last_cost_usd,
            turn=copied(state.turn),
            seq=state.seq,
        )


def resumed_books(
    state: AgentRunState, approvals: Mapping[str, Approval] | None, registry: ToolRegistry
) -> RunBooks:
    """The books of ``state`` with the decisions on its pending calls applied: a denied call
    is settled with :data:`DENIED`, an edited one gets its new (validated) arguments.

    Raises:
        RunStateError: ``state`` was saved by an agent with another tool set.
        ApprovalsError: a pending call without a decision, an unknown call id, a decision
            that is neither a bool nor a mapping.
        ToolArgumentsError: edited arguments that do not fit the tool.
    """
    if sorted(state.tools) != sorted(registry.names):
        raise RunStateError(
            f"run {state.run_id!r} was saved by an agent with tools {sorted(state.tools)}; "
            f"this agent has {sorted(registry.names)}"
        )
    books = RunBooks.restore(state)
    waiting = books.turn.pending if books.turn else ()
    pending = {p.id: i for p, i in zip(state.pending, waiting, strict=True)}
    given = dict(approvals or {})
    unknown = sorted(set(given) - set(pending))
    missing = sorted(set(pending) - set(given))
    if unknown or missing:
        raise ApprovalsError(
            f"run {state.run_id!r}: approvals must decide each pending call exactly; "
            f"unknown call ids {unknown}, pending calls without a decision {missing}"
        )
    if books.turn is None or not pending:
        return books
    calls = list(books.turn.calls)
    for call_id, index in pending.items():
        decision: object = given[call_id]
        call = calls[index]
        if isinstance(decision, Mapping):
            registry.get(call.name).prepare_arguments(decision)
            calls[index] = ToolCall(call.id, call.name, dict(decision))
        elif not isinstance(decision, bool):
            raise ApprovalsError(
                f"the decision on call {call_id!r} must be True, False or a mapping of "
                f"edited arguments, got {type(decision).__name__}"
            )
    books.turn = replace(books.turn, calls=tuple(calls), pending=())
    for call_id, index in pending.items():
        if given[call_id] is False:
            now = time.perf_counter()
            call = calls[index]
            denied = ToolResult(call.id, call.name, DENIED)
            books.settle(index, denied, ToolTiming(call.id, call.name, now, now))
    return books
