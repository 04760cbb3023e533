"""Approval of tool calls: a run stops before them, its JSON state resumes it (approve, deny,
edit), calls that needed no approval run once, and bad resumes fail typed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pywrapai_graph import (
    LLM,
    Agent,
    AgentRunState,
    ApprovalsError,
    GraphLLM,
    ReasoningPart,
    Role,
    RunStateError,
    ToolCall,
    ToolRegistry,
    idempotency_key,
    tool,
)
from pywrapai_graph.application.agent_runs import DENIED
from pywrapai_graph.errors import InvalidStateError, ToolArgumentsError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

RAN: list[tuple[str, dict[str, Any], str]] = []


@tool(requires_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund part of an order."""
    RAN.append(("refund", {"order": order, "amount": amount}, idempotency_key()))
    return f"refunded {amount} on {order}"


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    RAN.append(("lookup", {"order": order}, idempotency_key()))
    return f"{order}: paid 10"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def agent_for(*replies: ScriptedReply | str, **kwargs: Any) -> tuple[Agent, ScriptedChatModel]:
    registry = ToolRegistry()
    registry.register(refund)
    registry.register(lookup)
    fake = ScriptedChatModel(replies)
    return Agent(GraphLLM(llm=LLM(provider=fake)), registry, **kwargs), fake


def both_calls() -> ScriptedReply:
    return ScriptedReply(
        tool_calls=[
            ToolCall("c0", "lookup", {"order": "A1"}),
            ToolCall("c1", "refund", {"order": "A1", "amount": 5}),
        ]
    )


def through_json(state: AgentRunState | None) -> AgentRunState:
    assert state is not None
    return AgentRunState.from_dict(json.loads(json.dumps(state.to_dict())))


def test_the_run_stops_before_the_call_and_runs_the_rest_of_the_turn_once() -> None:
    agent, fake = agent_for(both_calls(), "Refunded 5.")
    stopped = agent.run("Refund 5 on A1")
    assert stopped.paused and stopped.content == ""
    [pending] = stopped.pending
    assert (pending.name, pending.arguments) == ("refund", {"order": "A1", "amount": 5})
    assert [r[0] for r in RAN] == ["lookup"]  # the call that needed no approval ran
    assert stopped.total_turns == 1 and len(fake.requests) == 1

    done = agent.resume(through_json(stopped.state), {pending.id: True})
    assert done.content == "Refunded 5." and not done.paused
    assert [r[0] for r in RAN] == ["lookup", "refund"]  # lookup not again
    assert RAN[1][2] == pending.id  # the approved call's idempotency key is its id
    tool_texts = [m.content for m in done.messages if m.role is Role.TOOL]
    assert tool_texts == ["A1: paid 10", "refunded 5 on A1"]
    assert done.total_turns == 2 and len(done.steps) == 1
    assert [t.tool_call_id for t in done.steps[0].timings] == ["c0", "c1"]


def test_a_denied_call_reaches_the_model_as_a_denial() -> None:
    agent, fake = agent_for(both_calls(), "I could not refund.")
    stopped = agent.run("Refund 5 on A1")
    done = agent.resume(through_json(stopped.state), {stopped.pending[0].id: False})
    assert done.content == "I could not refund."
    assert [r[0] for r in RAN] == ["lookup"]
    sent = fake.requests[-1].messages
    denial = [m for m in sent if m.role is Role.TOOL and m.tool_result is not None]
    assert [(m.tool_result.tool_call_id, m.content) for m in denial if m.tool_result] == [
        ("c0", "A1: paid 10"),
        ("c1", DENIED),
    ]


def test_edited_arguments_run_in_place_of_the_model_s_and_are_checked() -> None:
    agent, _ = agent_for(both_calls(), "Refunded 3.")
    stopped = agent.run("Refund 5 on A1")
    state, call_id = through_json(stopped.state), stopped.pending[0].id
    with pytest.raises(ToolArgumentsError, match="amount"):
        agent.resume(state, {call_id: {"order": "A1", "amount": "three"}})
    assert [r[0] for r in RAN] == ["lookup"]  # nothing ran
    done = agent.resume(state, {call_id: {"order": "A1", "amount": 3}})
    assert RAN[-1][:2] == ("refund", {"order": "A1", "amount": 3})
    assert done.messages[1].tool_calls is not None
    assert done.messages[1].tool_calls[1].arguments == {"order": "A1", "amount": 3}


def test_a_predicate_over_the_call_asks_for_approval() -> None:
    big = ScriptedReply(tool_calls=[ToolCall("c0", "lookup", {"order": "VIP-1"})])
    agent, _ = agent_for(
        big, "ok", requires_approval=lambda call: call.arguments.get("order", "").startswith("VIP")
    )
    stopped = agent.run("look up VIP-1")
    assert [p.name for p in stopped.pending] == ["lookup"] and RAN == []
    assert agent.resume(stopped.state or "", {stopped.pending[0].id: True}).content == "ok"


def test_bad_resumes_fail_typed_before_anything_runs() -> None:
    agent, _ = agent_for(both_calls(), "unused")
    stopped = agent.run("Refund 5 on A1")
    state, call_id = through_json(stopped.state), stopped.pending[0].id
    with pytest.raises(ApprovalsError, match="without a decision"):
        agent.resume(state)
    with pytest.raises(ApprovalsError, match="unknown call ids"):
        agent.resume(state, {call_id: True, "nope": True})
    with pytest.raises(ApprovalsError, match="True, False or a mapping"):
        agent.resume(state, {call_id: "yes"})  # type: ignore[dict-item]
    other = ToolRegistry()
    other.register(lookup)
    stranger = Agent(agent.graph, other)
    with pytest.raises(RunStateError, match="saved by an agent with tools"):
        stranger.resume(state, {call_id: True})
    with pytest.raises(RunStateError, match="version 99"):
        AgentRunState.from_dict({**state.to_dict(), "version": 99})
    with pytest.raises(RunStateError, match="malformed"):
        AgentRunState.from_dict({**state.to_dict(), "turn": {"calls": 3}})
    with pytest.raises(InvalidStateError, match="run_store"):
        agent.resume(state.run_id, {call_id: True})
    assert [r[0] for r in RAN] == ["lookup"]


def test_the_state_is_plain_json_of_the_run_and_nothing_else() -> None:
    agent, _ = agent_for(both_calls())
    stopped = agent.run("Refund 5 on A1", temperature=0.2, filter={"tenant": "t1"})
    assert stopped.state is not None
    data = stopped.state.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["version"] == 1
    assert data["options"] == {"filter": {"tenant": "t1"}, "rag_k": None, "temperature": 0.2}
    # the run's books and the user's data; no field for a client, a key or a DSN
    assert set(data) == {
        "version", "run_id", "tools", "messages", "history", "options", "steps", "turns",
        "usage", "cost_usd", "last_cost_usd", "turn", "answer", "seq",
    }  # fmt: skip


def test_aresume_continues_like_resume() -> None:
    agent, _ = agent_for(both_calls(), "Refunded 5.")

    async def go() -> str:
        stopped = await agent.arun("Refund 5 on A1")
        done = await agent.aresume(through_json(stopped.state), {stopped.pending[0].id: True})
        return done.content

    assert asyncio.run(go()) == "Refunded 5."
    assert [r[0] for r in RAN] == ["lookup", "refund"]


def test_idempotency_key_outside_an_agent_s_tool_call_is_refused() -> None:
    with pytest.raises(InvalidStateError):
        idempotency_key()


def test_a_paused_turn_keeps_its_reasoning_through_the_json_state() -> None:
    """Thinking blocks (signed) of the turn that paused go back with its calls on resume."""
    thought = ReasoningPart("Refund needs approval.", "c2lnbmF0dXJl", provider="anthropic")
    reply = ScriptedReply(
        tool_calls=[ToolCall("c2", "refund", {"order": "A1", "amount": 5})],
        reasoning=[thought],
    )
    agent, fake = agent_for(reply, "Refunded.")
    stopped = agent.run("Refund 5 on A1")
    assert stopped.state is not None
    state = AgentRunState.from_dict(json.loads(json.dumps(stopped.state.to_dict())))
    (call,) = stopped.pending
    assert agent.resume(state, {call.id: True}).content == "Refunded."
    sent = fake.requests[-1].messages
    (turn,) = [m for m in sent if m.role is Role.ASSISTANT]
    assert turn.reasoning == (thought,) and turn.tool_calls
