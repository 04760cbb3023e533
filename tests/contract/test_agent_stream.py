"""Agent.stream / Agent.astream on each provider's streaming API, through its official SDK over
real HTTP to the local wire server: the events of a run with a tool call, in order (text,
the call's name then its argument pieces, the call's start and result, each step's end with
usage, the final answer); the same through a fallback chain and a client-side limiter; and a
run stopped after its first tool call (closed, or its task cancelled) makes no second model
call and has its usage booked."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from pywrapai import LLM
from pywrapai_graph import (
    Agent,
    AgentEvent,
    FinalAnswer,
    GraphLLM,
    StepEnded,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallResult,
    ToolCallStarted,
    ToolRegistry,
    tool,
)
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.domain import FailedAttempt, Limits, TokenUsage
from pywrapai_graph.errors import ResponseFormatError
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer, sse

WIRES: dict[str, Callable[[], WireServer]] = {
    "openai": OpenAIWire,
    "anthropic": AnthropicWire,
    "gemini": GeminiWire,
    "ollama": OllamaWire,
}
ARGS = {"city": "Paris", "units": "celsius"}
CALL = ToolCall("call_w1", "get_weather", ARGS)
FIRST = ScriptedReply("Let me check.", tool_calls=[CALL], usage=TokenUsage(30, 7))
SECOND = ScriptedReply("It is 16°C in Paris.", usage=TokenUsage(50, 9))
KINDS = [
    "text_delta",
    "tool_call_delta",
    "tool_call_started",
    "tool_call_result",
    "step_ended",
    "text_delta",
    "step_ended",
    "final_answer",
]


@tool
def get_weather(city: str, units: str = "celsius") -> str:
    """The current weather in a city.

    Args:
        city: the city's name.
        units: celsius or fahrenheit.
    """
    return f"16 {units} in {city}"


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(get_weather)
    return tools


def llm_for(name: str, wire: WireServer, **more: Any) -> LLM:
    options: dict[str, Any] = {"base_url": wire.base_url, "timeout": 5.0, "max_retries": 0}
    if name != "ollama":
        options["api_key"] = SECRET
    return LLM(provider=name, **options, **more)


def collect(agent: Agent, mode: str) -> list[AgentEvent]:
    if mode == "sync":
        return list(agent.stream("Weather in Paris?"))

    async def main() -> list[AgentEvent]:
        return [event async for event in agent.astream("Weather in Paris?")]

    return asyncio.run(main())


def squeezed(events: list[AgentEvent]) -> list[str]:
    """The kinds of ``events``, runs of the same kind as one."""
    kinds: list[str] = []
    for event in events:
        if not kinds or kinds[-1] != event.kind:
            kinds.append(event.kind)
    return kinds


def check_run(events: list[AgentEvent], call_id: str) -> None:
    assert squeezed(events) == KINDS
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Let me check.It is 16°C in Paris."
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (deltas[0].index, deltas[0].id, deltas[0].name) == (0, call_id, "get_weather")
    assert all(d.index == 0 and d.name is None for d in deltas[1:])
    assert json.loads("".join(d.arguments for d in deltas)) == ARGS
    call = ToolCall(call_id, "get_weather", ARGS)
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [ToolCallStarted(call)]
    results = [e for e in events if isinstance(e, ToolCallResult)]
    assert results == [ToolCallResult(call, "16 celsius in Paris")]
    ends = [e for e in events if isinstance(e, StepEnded)]
    assert [(e.turn, e.usage) for e in ends] == [(1, FIRST.usage), (2, SECOND.usage)]
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.result.content == "It is 16°C in Paris."
    assert final.result.total_usage == FIRST.usage + SECOND.usage
    assert final.result.total_cost_usd == sum(e.cost_usd for e in ends)
    assert final.result.steps[0].tool_results[0].content == "16 celsius in Paris"


def call_id(name: str) -> str:
    return "call_0" if name == "ollama" else CALL.id  # Ollama's calls carry no id


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", list(WIRES))
def test_a_run_streams_its_events_in_order(name: str, mode: str) -> None:
    with WIRES[name]() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for(name, wire)
        events = collect(Agent(GraphLLM(llm), registry()), mode)
        check_run(events, call_id(name))
        sent = list(wire.chat_requests())
        assert len(sent) == 2
        assert "get_weather" in json.dumps(sent[0].json)  # the tools were offered
        assert "16 celsius in Paris" in json.dumps(sent[1].json)  # the result went back
        records = llm.tokens.records
        assert [r.usage for r in records] == [FIRST.usage, SECOND.usage]
        llm.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_fallback_streams_when_the_first_model_fails_before_streaming(mode: str) -> None:
    with OpenAIWire() as primary, AnthropicWire() as backup:
        primary.fail(503, "overloaded").reply(SECOND)  # turn 1 fails over, turn 2 does not
        backup.reply(FIRST)
        fallback: dict[str, Any] = {"provider": "anthropic", "model": "claude-haiku-4-5-20251001"}
        fallback.update(base_url=backup.base_url, api_key=SECRET, max_retries=0)
        llm = llm_for("openai", primary, fallbacks=[fallback])
        events = collect(Agent(GraphLLM(llm), registry()), mode)
        check_run(events, CALL.id)
        assert len(list(primary.chat_requests())) == 2
        assert len(list(backup.chat_requests())) == 1
        turn_one = llm.tokens.records[0]
        assert turn_one.provider == "anthropic"
        failed = FailedAttempt("openai", "gpt-4o-mini", "ProviderUnavailableError", 503)
        assert turn_one.fallback_from == (failed,)
        llm.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_limited_model_streams_and_gives_its_slots_back(mode: str) -> None:
    limiter = ProviderLimiter(Limits(max_in_flight=1, requests_per_minute=100))
    with GeminiWire() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for("gemini", wire, limits=limiter)
        events = collect(Agent(GraphLLM(llm), registry()), mode)
        check_run(events, CALL.id)
        assert limiter.stats.admitted == 2
        assert limiter.in_flight == 0
        llm.close()


def test_closing_a_limited_run_mid_reply_gives_the_slot_back() -> None:
    limiter = ProviderLimiter(Limits(max_in_flight=1, requests_per_minute=100))
    with AnthropicWire() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for("anthropic", wire, limits=limiter)
        stream = Agent(GraphLLM(llm), registry()).stream("Weather?")
        assert isinstance(next(stream), TextDelta)
        assert limiter.in_flight == 1  # the reply is still streaming
        stream.close()
        assert limiter.in_flight == 0
        assert len(llm.tokens.records) == 1
        llm.close()


def first_result_index(events: list[AgentEvent]) -> int:
    return next(i for i, e in enumerate(events) if isinstance(e, ToolCallResult))


@pytest.mark.parametrize("name", list(WIRES))
def test_closing_the_stream_after_a_tool_call_stops_the_run(name: str) -> None:
    with WIRES[name]() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for(name, wire)
        seen: list[AgentEvent] = []
        with contextlib.closing(Agent(GraphLLM(llm), registry()).stream("Weather?")) as stream:
            for event in stream:
                seen.append(event)
                if isinstance(event, ToolCallResult):
                    break
        assert len(list(wire.chat_requests())) == 1  # no second model call
        assert llm.tokens.total_usage == FIRST.usage  # the first call is booked
        assert not any(isinstance(e, StepEnded | FinalAnswer) for e in seen)
        llm.close()


@pytest.mark.parametrize("name", list(WIRES))
def test_aclose_after_a_tool_call_stops_the_run(name: str) -> None:
    async def main(llm: LLM) -> list[AgentEvent]:
        stream = Agent(GraphLLM(llm), registry()).astream("Weather?")
        seen = []
        async for event in stream:
            seen.append(event)
            if isinstance(event, ToolCallResult):
                break
        await stream.aclose()
        return seen

    with WIRES[name]() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for(name, wire)
        seen = asyncio.run(main(llm))
        assert seen[first_result_index(seen)] == seen[-1]
        assert len(list(wire.chat_requests())) == 1
        assert llm.tokens.total_usage == FIRST.usage
        llm.close()


def test_cancelling_the_task_during_a_tool_call_stops_the_run() -> None:
    """The task is cancelled while the tool runs: the tool sees the cancellation, the loop
    unwinds, and the model is not asked again."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    @tool
    async def slow_weather(city: str) -> str:
        """A weather service that hangs.

        Args:
            city: the city's name.
        """
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    async def consume(agent: Agent, seen: list[AgentEvent]) -> None:
        async for event in agent.astream("Weather?"):
            seen.append(event)

    async def main(llm: LLM) -> list[AgentEvent]:
        tools = ToolRegistry()
        tools.register(slow_weather)
        seen: list[AgentEvent] = []
        task = asyncio.create_task(consume(Agent(GraphLLM(llm), tools), seen))
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    slow_call = ToolCall("call_s1", "slow_weather", {"city": "Paris"})
    with OpenAIWire() as wire:
        wire.reply(ScriptedReply(tool_calls=[slow_call], usage=TokenUsage(30, 7)), SECOND)
        llm = llm_for("openai", wire)
        seen = asyncio.run(main(llm))
        assert cancelled == [True]
        assert seen[-1] == ToolCallStarted(slow_call)
        assert len(list(wire.chat_requests())) == 1
        assert llm.tokens.total_usage == TokenUsage(30, 7)
        llm.close()


@pytest.mark.parametrize("name", list(WIRES))
def test_closing_mid_reply_books_what_the_model_produced(name: str) -> None:
    """Closed on the first text piece of the first turn: the unfinished call is booked."""
    with WIRES[name]() as wire:
        wire.reply(FIRST, SECOND)
        llm = llm_for(name, wire)
        stream = Agent(GraphLLM(llm), registry()).stream("Weather?")
        assert isinstance(next(stream), TextDelta)
        stream.close()
        assert len(llm.tokens.records) == 1
        assert llm.tokens.total_usage.input_tokens > 0
        assert len(list(wire.chat_requests())) == 1
        llm.close()


def test_malformed_streamed_arguments_fail_the_run_and_are_booked() -> None:
    """A streamed call whose argument pieces do not make a JSON object: ResponseFormatError
    with the raw text, the reply booked with its usage, and the run's partial."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c", "created": 1, "model": "gpt-4o-mini", "choices": [choice]}

    call = {"id": "call_x", "type": "function", "function": {"name": "get_weather"}}
    events: list[Any] = [
        chunk({"tool_calls": [{"index": 0, **call}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({}, "tool_calls"),
        {**chunk({}), "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 4}},
        "[DONE]",
    ]
    with OpenAIWire() as wire:
        wire.raw(b"".join(sse(events)), content_type="text/event-stream")
        llm = llm_for("openai", wire)
        seen: list[AgentEvent] = []
        with pytest.raises(ResponseFormatError) as raised:
            seen.extend(Agent(GraphLLM(llm), registry()).stream("Weather?"))
        assert raised.value.raw == '{"city": '
        assert raised.value.partial is not None and raised.value.partial.total_turns == 0
        assert llm.tokens.total_usage == TokenUsage(12, 4)
        llm.close()
