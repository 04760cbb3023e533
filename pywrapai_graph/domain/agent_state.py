"""The state of an agent run as plain JSON: what a stopped or interrupted run resumes from.

A state holds the run's messages, books (steps, usage, cost) and the tool-calling turn under
way — the model's reply, the calls settled so far and those awaiting a person's decision —
plus the generation options of its model calls. It holds no secret of ours (no API key, no
DSN); tool arguments and messages are the user's own data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pywrapai_graph.domain.agent import AgentStep, ToolTiming
from pywrapai_graph.domain.messages import Message, ToolCall, ToolResult
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.domain.usage import TokenUsage
from pywrapai_graph.errors import InvalidArgumentError, PyWrapAIError, RuntimeFailure

__all__ = [
    "RUN_STATE_VERSION",
    "AgentRunState",
    "Approval",
    "ApprovalsError",
    "PendingCall",
    "RunConflictError",
    "RunNotFoundError",
    "RunStateError",
    "TurnState",
    "call_key",
    "copied",
]

#: The format of :meth:`AgentRunState.to_dict`; a state of another version is refused.
RUN_STATE_VERSION = 1

#: A decision on a pending call: approve, deny, or approve with these arguments instead.
Approval = bool | Mapping[str, Any]


class RunStateError(InvalidArgumentError):
    """A run state that cannot be resumed: malformed, of an unknown ``version``, or saved by
    an agent with another tool set."""


class ApprovalsError(InvalidArgumentError):
    """The approvals passed to ``resume`` do not match the run's pending calls (a pending
    call without a decision, an unknown call id, or a decision that is not a bool or a
    mapping of arguments)."""


class RunNotFoundError(InvalidArgumentError):
    """``resume(run_id)``: the run store holds no run of that id."""


class RunConflictError(RuntimeFailure):
    """Another worker saved this run first (the store's compare-and-set failed): this
    worker must stop; the run goes on in the other one.

    Attributes:
        run_id: the run.
    """

    def __init__(self, run_id: str) -> None:
        super().__init__(f"agent run {run_id!r} was saved by another worker; this one stops")
        self.run_id = run_id


def call_key(run_id: str, turn: int, index: int) -> str:
    """The stable id of a run's tool call: the same in every process that resumes the run
    (a provider's call ids are not unique across turns)."""
    return f"{run_id}-{turn}-{index}"


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call waiting for a person's decision.

    Attributes:
        id: the call's stable id: the key of ``resume``'s ``approvals``, and the tool's
            ``idempotency_key()`` when it runs.
        name: the tool.
        arguments: what the model asked to pass.
    """

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnState:
    """A tool-calling turn not yet closed: the model's reply and its calls' fate so far.

    Attributes:
        content: the reply's text.
        calls: the calls it asked for (with edited arguments where a person edited them).
        usage: the reply's tokens.
        cost_usd: the reply's cost.
        results: settled calls by index (None: a failure skipped by the error policy).
        timings: their timings by index.

    A running agent fills ``results`` and ``timings`` in place; the states it hands out
    (``AgentResult.state``, a run store's) hold copies.
        pending: indices of the calls awaiting a decision.
        reasoning: the reply's reasoning, sent back with its calls when the turn closes.
    """

    content: str
    calls: tuple[ToolCall, ...]
    usage: TokenUsage
    cost_usd: float
    results: dict[int, ToolResult | None] = field(default_factory=dict)
    timings: dict[int, ToolTiming] = field(default_factory=dict)
    pending: tuple[int, ...] = ()
    reasoning: tuple[ReasoningPart, ...] = ()


def copied(turn: TurnState | None) -> TurnState | None:
    """``turn`` with its own ``results`` and ``timings``."""
    if turn is None:
        return None
    return replace(turn, results=dict(turn.results), timings=dict(turn.timings))


@dataclass(frozen=True, slots=True)
class AgentRunState:
    """Everything a run needs to go on in another process: JSON with :meth:`to_dict`.

    Attributes:
        run_id: the run.
        tools: the names of the agent's tools (a state resumes only on the same set).
        messages: the run's messages so far (input, tool turns, results).
        history: the history every model call of the run was given.
        options: the run's model-call options (``filter``, ``rag_k``, generation params).
        steps: the completed tool-calling turns.
        turns: model calls made.
        usage: tokens of every model call.
        cost_usd: USD of every model call.
        last_cost_usd: USD of the last model call (the budget check's estimate).
        turn: the turn under way, if any.
        answer: the final answer, once the run has finished.
        seq: how many times the run was saved (a run store's compare-and-set counter).
    """

    run_id: str
    tools: tuple[str, ...]
    messages: tuple[Message, ...]
    history: tuple[Message, ...] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    steps: tuple[AgentStep, ...] = ()
    turns: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float = 0.0
    last_cost_usd: float = 0.0
    turn: TurnState | None = None
    answer: str | None = None
    seq: int = 0

    @property
    def pending(self) -> list[PendingCall]:
        """The calls awaiting a decision (empty unless the run stopped for approval)."""
        if self.turn is None:
            return []
        calls = self.turn.calls
        return [
            PendingCall(call_key(self.run_id, self.turns, i), calls[i].name, calls[i].arguments)
            for i in self.turn.pending
        ]

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON values (``json.dumps`` takes it as is), with a ``version``."""
        return {
            "version": RUN_STATE_VERSION,
            "run_id": self.run_id,
            "tools": list(self.tools),
            "messages": [m.to_dict() for m in self.messages],
            "history": None if self.history is None else [m.to_dict() for m in self.history],
            "options": dict(self.options),
            "steps": [asdict(s) for s in self.steps],
            "turns": self.turns,
            "usage": asdict(self.usage),
            "cost_usd": self.cost_usd,
            "last_cost_usd": self.last_cost_usd,
            "turn": None if self.turn is None else _turn_record(self.turn),
            "answer": self.answer,
            "seq": self.seq,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentRunState:
        """The state a :meth:`to_dict` dict describes.

        Raises:
            RunStateError: not a state of this version, or malformed.
        """
        given: object = data
        version = given.get("version") if isinstance(given, Mapping) else None
        if version != RUN_STATE_VERSION:
            raise RunStateError(
                f"unknown agent run state version {version!r}; this release reads version "
                f"{RUN_STATE_VERSION}"
            )
        try:
            history = data["history"]
            return cls(
                run_id=str(data["run_id"]),
                tools=tuple(str(t) for t in data["tools"]),
                messages=tuple(Message.from_dict(m) for m in data["messages"]),
                history=None if history is None else tuple(Message.from_dict(m) for m in history),
                options=dict(data["options"]),
                steps=tuple(_step(s) for s in data["steps"]),
                turns=int(data["turns"]),
                usage=TokenUsage(**data["usage"]),
                cost_usd=float(data["cost_usd"]),
                last_cost_usd=float(data["last_cost_usd"]),
                turn=None if data["turn"] is None else _turn(data["turn"]),
                answer=None if data["answer"] is None else str(data["answer"]),
                seq=int(data["seq"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError, PyWrapAIError) as exc:
            raise RunStateError(f"malformed agent run state: {exc!r}") from exc


def _turn_record(turn: TurnState) -> dict[str, Any]:
    record = asdict(turn)
    record["calls"] = list(record["calls"])
    record["results"] = {str(i): r for i, r in record["results"].items()}
    record["timings"] = {str(i): t for i, t in record["timings"].items()}
    record["pending"] = list(turn.pending)
    record["reasoning"] = list(record["reasoning"])
    return record


def _calls(records: Sequence[Mapping[str, Any]]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(str(c["id"]), str(c["name"]), dict(c["arguments"])) for c in records)


def _result(record: Mapping[str, Any] | None) -> ToolResult | None:
    return None if record is None else ToolResult(**record)


def _timing(record: Mapping[str, Any]) -> ToolTiming:
    return ToolTiming(**record)


def _step(record: Mapping[str, Any]) -> AgentStep:
    return AgentStep(
        turn_num=int(record["turn_num"]),
        tool_calls=list(_calls(record["tool_calls"])),
        tool_results=[r for r in map(_result, record["tool_results"]) if r is not None],
        usage=TokenUsage(**record["usage"]),
        cost_usd=float(record["cost_usd"]),
        timings=[_timing(t) for t in record["timings"]],
    )


def _turn(record: Mapping[str, Any]) -> TurnState:
    return TurnState(
        content=str(record["content"]),
        calls=_calls(record["calls"]),
        usage=TokenUsage(**record["usage"]),
        cost_usd=float(record["cost_usd"]),
        results={int(i): _result(r) for i, r in record["results"].items()},
        timings={int(i): _timing(t) for i, t in record["timings"].items()},
        pending=tuple(int(i) for i in record["pending"]),
        reasoning=tuple(ReasoningPart(**r) for r in record.get("reasoning", ())),
    )
