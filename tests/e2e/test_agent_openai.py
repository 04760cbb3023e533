"""The agent end to end through the OpenAI adapter, SDK and wire format."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, TokenUsage, ToolCall
from pywrapai_graph import Agent, AgentConfig, AgentResult, GraphLLM, ToolRegistry, tool
from pywrapai_graph.errors import (
    ProviderTimeoutError,
    PyWrapAIError,
    RateLimitError,
    ResponseFormatError,
)
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


def script(wire: OpenAIWire) -> None:
    wire.reply(
        ScriptedReply(
            tool_calls=[
                ToolCall("call_1", "get_weather", {"city": "London"}),
                ToolCall("call_2", "get_weather", {"city": "Paris"}),
            ],
            usage=TokenUsage(120, 30),
        ),
        ScriptedReply("London and Paris are both 16°C and cloudy.", usage=TokenUsage(200, 15)),
    )


def build(wire: OpenAIWire, timeout: float | None = None) -> tuple[Agent, LLM]:
    llm = LLM(
        provider="openai",
        model="gpt-4o-mini",
        api_key="test",
        base_url=wire.base_url,
        max_retries=0,
        timeout=timeout,
    )
    registry = ToolRegistry()
    registry.register(get_weather)
    graph = GraphLLM(llm=llm).with_system_prompt("Always call a tool to look up real data.")
    return Agent(graph, registry, AgentConfig(max_turns=4)), llm


def check(result_content: str, wire: OpenAIWire, total_cost: float, llm: LLM) -> None:
    assert result_content == "London and Paris are both 16°C and cloudy."
    second = wire.requests[1].json["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert second[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "16°C, cloudy in London",
    }
    assert wire.requests[0].json["tools"][0]["function"]["name"] == "get_weather"
    assert total_cost == pytest.approx(llm.tokens.total_cost)
    assert total_cost == pytest.approx((320 * 0.15 + 45 * 0.60) / 1e6)


def test_agent_run_through_openai_wire() -> None:
    with OpenAIWire() as wire:
        script(wire)
        agent, llm = build(wire)
        result = agent.run("Weather in London and Paris?")
        check(result.content, wire, result.total_cost_usd, llm)
        assert result.total_turns == 2
        llm.close()


def test_agent_arun_through_openai_wire() -> None:
    with OpenAIWire() as wire:
        script(wire)
        agent, llm = build(wire)

        async def run() -> tuple[str, float]:
            result = await agent.arun("Weather in London and Paris?")
            await llm.aclose()
            return result.content, result.total_cost_usd

        content, cost = asyncio.run(run())
        check(content, wire, cost, llm)
        llm.close()


def _first_turn(wire: OpenAIWire) -> None:
    wire.reply(
        ScriptedReply(
            tool_calls=[ToolCall("call_1", "get_weather", {"city": "London"})],
            usage=TokenUsage(120, 30),
        )
    )


def _malformed_tool_call(wire: OpenAIWire) -> None:
    wire.raw(
        {
            "id": "chatcmpl-bad",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": '},
                            }
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 200, "completion_tokens": 9, "total_tokens": 209},
        }
    )


@pytest.mark.parametrize("failure", ["malformed tool-call JSON", "429", "timeout"])
def test_a_provider_error_on_turn_two_carries_the_partial_run(failure: str) -> None:
    with OpenAIWire() as wire:
        _first_turn(wire)
        if failure == "malformed tool-call JSON":
            _malformed_tool_call(wire)
        elif failure == "429":
            wire.fail(429, "slow down", headers={"retry-after": "5"})
        else:
            wire.stall(3.0)
        agent, llm = build(wire, timeout=0.5 if failure == "timeout" else None)
        with pytest.raises(PyWrapAIError) as info:
            agent.run("Weather in London, then Paris?")
        partial = info.value.partial
        assert isinstance(partial, AgentResult)
        assert partial.total_turns == 1
        assert [c.name for c in partial.steps[0].tool_calls] == ["get_weather"]
        assert partial.steps[0].tool_results[0].content == "16°C, cloudy in London"
        assert [m.role.value for m in partial.messages] == ["user", "assistant", "tool"]
        assert partial.total_cost_usd == pytest.approx((120 * 0.15 + 30 * 0.60) / 1e6)
        if failure == "malformed tool-call JSON":
            assert isinstance(info.value, ResponseFormatError)
            assert info.value.raw == '{"city": '
            # the billed reply that failed to parse is in the tracker, with its usage
            assert len(llm.tokens) == 2
            assert llm.tokens.records[1].usage == TokenUsage(200, 9)
        elif failure == "429":
            assert isinstance(info.value, RateLimitError)
            assert len(llm.tokens) == 1
        else:
            assert isinstance(info.value, ProviderTimeoutError)
        llm.close()


def test_an_async_run_also_carries_the_partial_run() -> None:
    with OpenAIWire() as wire:
        _first_turn(wire)
        _malformed_tool_call(wire)
        agent, llm = build(wire)
        with pytest.raises(ResponseFormatError) as info:
            asyncio.run(agent.arun("Weather in London, then Paris?"))
        assert info.value.partial.total_turns == 1
        assert len(llm.tokens) == 2
        llm.close()


# ----------------------------------------------------------------- the reference's "raise"

PW = "Hunter2-weather-pw"


class WeatherServiceDownError(Exception):
    """An application's own error, raised by its tool."""


@tool
def get_weather_or_fail(city: str) -> str:
    """Get the current weather for a city."""
    try:
        raise ConnectionRefusedError("port 5432")
    except ConnectionRefusedError as exc:
        raise WeatherServiceDownError(f"postgresql://app:{PW}@db/weather down ({city})") from exc


@pytest.mark.parametrize("entry", ["run", "arun"])
def test_under_raise_the_tools_own_exception_reaches_the_caller(
    entry: str, caplog: pytest.LogCaptureFixture
) -> None:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing, capture_content=True)
    try:
        with OpenAIWire() as wire, caplog.at_level(logging.DEBUG):
            wire.reply(
                ScriptedReply(
                    tool_calls=[ToolCall("call_1", "get_weather_or_fail", {"city": "London"})],
                    usage=TokenUsage(120, 30),
                ),
                "never asked for",
            )
            llm = LLM(
                provider="openai",
                model="gpt-4o-mini",
                api_key="test",
                base_url=wire.base_url,
                max_retries=0,
            )
            registry = ToolRegistry()
            registry.register(get_weather_or_fail)
            graph = GraphLLM(llm=llm).with_system_prompt("Always call a tool.")
            agent = Agent(graph, registry, AgentConfig(max_turns=4, tool_error_policy="raise"))
            try:
                if entry == "run":
                    agent.run("What's the weather in London?")
                else:
                    asyncio.run(agent.arun("What's the weather in London?"))
            except WeatherServiceDownError as exc:  # the application catches its own error
                caught = exc
            else:
                pytest.fail("the tool's exception did not propagate")
            assert len(wire.requests) == 1  # the model never saw the failure
            llm.close()
    finally:
        configure()
    assert str(caught) == f"postgresql://app:{PW}@db/weather down (London)"  # its own text
    assert isinstance(caught.__cause__, ConnectionRefusedError)  # and its own chain
    assert caught.__context__ is caught.__cause__
    partial = caught.partial  # type: ignore[attr-defined]
    assert isinstance(partial, AgentResult)
    assert partial.total_turns == 1
    assert partial.total_cost_usd == pytest.approx((120 * 0.15 + 30 * 0.60) / 1e6)
    assert any("'get_weather_or_fail'" in note for note in caught.__notes__)
    # spans and logs saw only our typed error, redacted
    traced = "\n".join(
        json.dumps(dict(s.attributes or {}), default=str)
        + "".join(json.dumps(dict(e.attributes or {}), default=str) for e in s.events)
        for s in spans.get_finished_spans()
    )
    assert PW not in traced + caplog.text
    assert "postgresql://app:***@db/weather down (London)" in traced
    assert "WeatherServiceDownError" not in traced
    types = {
        e.attributes["exception.type"]
        for s in spans.get_finished_spans()
        for e in s.events
        if e.attributes and "exception.type" in e.attributes
    }
    assert types == {"pywrapai_graph.errors.ToolExecutionError"}
