"""Agent.stream with the scripted model: a streamed reply's text and tool-call events, a
tool's failure as an event, errors raised as from run(), and the approval hook."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pywrapai_graph import (
    LLM,
    Agent,
    AgentConfig,
    AgentMaxTurnsError,
    AgentResult,
    ApprovalRequired,
    FinalAnswer,
    GraphLLM,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCallDelta,
    ToolCallResult,
    ToolRegistry,
    tool,
)
from pywrapai_graph.application.agent_stream import closing_events
from pywrapai_graph.application.observability.scope import current_agent_run
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

CALL = ToolCall("c1", "divide", {"a": 1, "b": 0})


@tool
def divide(a: int, b: int) -> str:
    """Divide two numbers.

    Args:
        a: the dividend.
        b: the divisor.
    """
    return str(a / b)


def agent(*replies: ScriptedReply | str, **config: Any) -> Agent:
    tools = ToolRegistry()
    tools.register(divide)
    graph = GraphLLM(LLM(provider=ScriptedChatModel(replies)))
    return Agent(graph, tools, AgentConfig(**config))


def test_chat_stream_iterates_text_and_events_carry_the_calls() -> None:
    fake = ScriptedChatModel([ScriptedReply("Hm.", tool_calls=[CALL])])
    stream = GraphLLM(LLM(provider=fake)).stream_with_tools("1/0?", tools=[divide_spec()])
    events = list(stream.events())
    assert "".join(e for e in events if isinstance(e, str)) == "Hm."
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert deltas[0] == ToolCallDelta(0, "c1", "divide")
    assert json.loads("".join(d.arguments for d in deltas)) == CALL.arguments
    assert stream.response.tool_calls == [CALL]
    fake.add(ScriptedReply("Hm.", tool_calls=[CALL]))
    text_only = LLM(provider=fake).stream_with_tools("1/0?", tools=[divide_spec()])
    assert list(text_only) == ["H", "m", "."]  # plain iteration: text only
    assert text_only.response.tool_calls == [CALL]


def divide_spec() -> Any:
    tools = ToolRegistry()
    tools.register(divide)
    return tools.to_schema()[0]


def test_stream_still_refuses_tools() -> None:
    graph = GraphLLM(LLM(provider=ScriptedChatModel(["x"])))
    with pytest.raises(ValueError, match="stream_with_tools"):
        graph.stream("Hi", tools=[divide_spec()])


def test_a_failed_tool_is_an_event_and_the_model_sees_it() -> None:
    events = list(agent(ScriptedReply(tool_calls=[CALL]), "Cannot divide by zero.").stream("1/0?"))
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.error is not None and result.error.startswith("Error:")
    assert result.content == result.error
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.result.content == "Cannot divide by zero."


def test_errors_raise_from_the_stream_with_the_run_so_far() -> None:
    stream = agent(ScriptedReply(tool_calls=[CALL]), max_turns=1).stream("1/0?")
    with pytest.raises(AgentMaxTurnsError) as raised:
        list(stream)
    assert raised.value.partial.total_turns == 1


def test_a_tool_error_under_raise_propagates_after_its_event() -> None:
    seen: list[Any] = []

    async def main() -> None:
        run = agent(ScriptedReply(tool_calls=[CALL]), tool_error_policy="raise")
        async for event in run.astream("1/0?"):
            seen.append(event)

    with pytest.raises(ZeroDivisionError) as raised:
        asyncio.run(main())
    assert isinstance(seen[-1], ToolCallResult) and seen[-1].error is not None
    assert raised.value.partial.total_turns == 1  # type: ignore[attr-defined]


def test_a_graph_that_cannot_stream_is_refused() -> None:
    class ChatOnly:
        def __init__(self, graph: GraphLLM) -> None:
            self.chat, self.achat = graph.chat, graph.achat

    graph = GraphLLM(LLM(provider=ScriptedChatModel(["x"])))
    loop = Agent(ChatOnly(graph), ToolRegistry())
    assert loop.run("Hi").content == "x"
    with pytest.raises(InvalidArgumentError, match="stream_with_tools"):
        next(loop.stream("Hi"))


def test_text_deltas_add_up_to_the_answer() -> None:
    events = list(agent("The answer is 42.").stream("?"))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.result.content == text == "The answer is 42."


def test_a_run_stopped_for_approval_ends_with_approval_required() -> None:
    done = AgentResult("ok", [], 1, TokenUsage(), 0.0)
    assert closing_events(done) == [FinalAnswer(done)]
    run = agent(ScriptedReply(tool_calls=[CALL]), "Division by zero is undefined.")
    run.requires_approval = lambda call: call.name == "divide"
    events = list(run.stream("1/0?"))
    stop = events[-1]
    assert isinstance(stop, ApprovalRequired) and stop.kind == "approval_required"
    assert stop.result.paused and not any(isinstance(e, ToolCallResult) for e in events)
    (pending,) = stop.calls
    assert (pending.name, pending.arguments) == ("divide", {"a": 1, "b": 0})
    assert stop.result.state is not None
    resumed = run.resume(stop.result.state, {pending.id: False})  # denied: the model is told
    assert resumed.content == "Division by zero is undefined."
    assert "denied" in resumed.messages[-2].content


def test_the_run_keeps_its_context_to_itself() -> None:
    """The loop's context variables (its run id) never leak into the consumer between
    events, and every call of the run is booked under the run's id."""
    run = agent(ScriptedReply(tool_calls=[CALL]), "done")
    stream = run.stream("1/0?")
    next(stream)
    assert current_agent_run() is None
    events = [*stream]
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert isinstance(run.graph, GraphLLM)
    ids = {r.agent_run for r in run.graph.tokens.records}
    assert len(run.graph.tokens.records) == 2 and len(ids) == 1 and None not in ids


def test_an_async_run_read_from_two_tasks() -> None:
    """A web framework reads the first event in the request's task and the rest in the
    response's: the run's context goes with it."""

    async def main() -> list[Any]:
        stream = agent(ScriptedReply(tool_calls=[CALL]), "done").astream("1/0?")
        first = await asyncio.create_task(anext(stream))
        rest = await asyncio.create_task(_drain(stream))
        return [first, *rest]

    events = asyncio.run(main())
    assert isinstance(events[-1], FinalAnswer) and events[-1].result.content == "done"


async def _drain(stream: Any) -> list[Any]:
    return [event async for event in stream]
