"""The agent end to end through the OpenAI adapter, SDK and wire format."""

from __future__ import annotations

import asyncio

import pytest

from pywrapai import LLM, TokenUsage, ToolCall
from pywrapai_graph import Agent, AgentConfig, GraphLLM, ToolRegistry, tool
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


def build(wire: OpenAIWire) -> tuple[Agent, LLM]:
    llm = LLM(
        provider="openai",
        model="gpt-4o-mini",
        api_key="test",
        base_url=wire.base_url,
        max_retries=0,
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
