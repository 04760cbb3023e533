from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph import (
    Agent,
    AgentBudgetExceededError,
    AgentConfig,
    AgentMaxTurnsError,
    AgentStep,
    GraphLLM,
    ToolRegistry,
    tool,
)
from pywrapai_graph.agent import Agent as AgentFromModule
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


@tool
def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def calls(*pairs: tuple[str, dict[str, Any]], prefix: str = "call") -> list[ToolCall]:
    return [ToolCall(f"{prefix}_{i}", name, args) for i, (name, args) in enumerate(pairs)]


def make_agent(
    replies: list[ScriptedReply | str],
    config: AgentConfig | None = None,
    extra_tools: tuple[Callable[..., Any], ...] = (),
    model: str = "gpt-4o-mini",
) -> tuple[Agent, ScriptedChatModel, GraphLLM]:
    fake = ScriptedChatModel(replies, provider="openai")
    graph = GraphLLM(llm=LLM(provider=fake, model=model)).with_system_prompt("You are helpful.")
    registry = ToolRegistry()
    registry.register(get_weather)
    registry.register(fail)
    for t in extra_tools:
        registry.register(t)
    return Agent(graph=graph, registry=registry, config=config), fake, graph


def tool_turn(*pairs: tuple[str, dict[str, Any]], usage: TokenUsage | None = None) -> ScriptedReply:
    return ScriptedReply(tool_calls=calls(*pairs), usage=usage or TokenUsage(100, 20))


def test_config_defaults_and_validation() -> None:
    c = AgentConfig()
    assert (c.max_turns, c.tool_error_policy, c.on_step, c.max_cost_usd) == (
        10,
        "return_to_model",
        None,
        None,
    )
    with pytest.raises(ValueError, match="max_turns"):
        AgentConfig(max_turns=0)
    with pytest.raises(ValueError, match="tool_error_policy"):
        AgentConfig(tool_error_policy="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_cost_usd"):
        AgentConfig(max_cost_usd=-1)
    assert AgentFromModule is Agent


def test_plain_answer_without_tools_is_one_turn_no_steps() -> None:
    agent, fake, _ = make_agent([ScriptedReply("Hi!", usage=TokenUsage(10, 2))])
    result = agent.run("Hello")
    assert (result.content, result.steps, result.total_turns) == ("Hi!", [], 1)
    assert result.total_usage == TokenUsage(10, 2)
    assert fake.requests[0].tool_names == ["get_weather", "fail"]


def test_message_list_grows_each_turn_and_rag_is_off() -> None:
    agent, fake, _ = make_agent(
        [
            tool_turn(("get_weather", {"city": "London"}), ("get_weather", {"city": "Paris"})),
            "London 16°C, Paris 16°C.",
        ]
    )
    history = [Message(Role.USER, "earlier"), Message(Role.ASSISTANT, "ok")]
    result = agent.run("Weather in London and Paris?", history=history)
    second = fake.requests[1].messages
    assert [m.role for m in second] == [
        Role.SYSTEM,
        Role.USER,
        Role.ASSISTANT,  # system + history
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,  # input + tool turn + results
    ]
    assert second[4].tool_calls == tuple(
        calls(("get_weather", {"city": "London"}), ("get_weather", {"city": "Paris"}))
    )
    assert second[5].tool_result == ToolResult("call_0", "get_weather", "16°C, cloudy in London")
    assert second[6].tool_result == ToolResult("call_1", "get_weather", "16°C, cloudy in Paris")
    assert result.content == "London 16°C, Paris 16°C."
    assert result.total_turns == 2
    assert len(result.steps) == 1
    assert [m.role for m in result.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.ASSISTANT,
    ]


def test_agent_never_retrieves() -> None:
    from pywrapai_graph import FeatureHashingEmbedder, InMemoryVectorStore, VectorRetriever

    retriever = VectorRetriever(FeatureHashingEmbedder(), InMemoryVectorStore())
    from pywrapai_graph import Document

    retriever.add_documents([Document("The weather in London is always rainy.")])
    fake = ScriptedChatModel(["done"])
    graph = GraphLLM(llm=LLM(provider=fake), retriever=retriever)
    Agent(graph, ToolRegistry()).run("weather in London")
    assert fake.requests[0].messages[-1].content == "weather in London"


def test_cost_invariant_is_exact_and_steps_populated() -> None:
    seen: list[AgentStep] = []
    agent, _, graph = make_agent(
        [
            tool_turn(("get_weather", {"city": "A"}), usage=TokenUsage(1234, 56)),
            tool_turn(("get_weather", {"city": "B"}), usage=TokenUsage(2345, 67)),
            ScriptedReply("final", usage=TokenUsage(3456, 78)),
        ],
        AgentConfig(on_step=seen.append),
    )
    result = agent.run("go")
    final_turn_cost = graph.tokens.records[-1].cost_usd
    assert result.total_cost_usd == sum(s.cost_usd for s in result.steps) + final_turn_cost
    assert result.total_cost_usd == pytest.approx(graph.tokens.total_cost)
    assert result.total_cost_usd > 0
    assert result.total_usage == TokenUsage(1234 + 2345 + 3456, 56 + 67 + 78)
    assert [s.turn_num for s in result.steps] == [1, 2]
    assert seen == result.steps
    step = seen[0]
    assert step.usage == TokenUsage(1234, 56)
    assert step.cost_usd == graph.tokens.records[0].cost_usd
    assert step.tool_results == [ToolResult("call_0", "get_weather", "16°C, cloudy in A")]
    assert len(step.timings) == 1
    assert step.timings[0].seconds >= 0


def test_on_step_fires_before_the_step_is_stored_and_its_errors_propagate() -> None:
    counts: list[int] = []

    def on_step(step: AgentStep) -> None:
        counts.append(step.turn_num)
        raise RuntimeError("callback failed")

    agent, _, _ = make_agent(
        [tool_turn(("get_weather", {"city": "A"})), "x"], AgentConfig(on_step=on_step)
    )
    with pytest.raises(RuntimeError, match="callback failed"):
        agent.run("go")
    assert counts == [1]


def test_policy_return_to_model() -> None:
    agent, fake, _ = make_agent([tool_turn(("fail", {"reason": "city not found"})), "sorry"])
    result = agent.run("go")
    assert result.steps[0].tool_results == [ToolResult("call_0", "fail", "Error: city not found")]
    assert fake.requests[1].messages[-1].content == "Error: city not found"


def test_policy_raise() -> None:
    agent, fake, _ = make_agent(
        [tool_turn(("fail", {"reason": "boom"})), "never"], AgentConfig(tool_error_policy="raise")
    )
    # the reference: the tool's own exception propagates, carrying the run so far
    with pytest.raises(RuntimeError, match="boom") as info:
        agent.run("go")
    assert info.value.partial is not None  # type: ignore[attr-defined]
    assert len(fake.requests) == 1


def test_policy_skip_sends_no_tool_message_for_the_failure() -> None:
    agent, fake, _ = make_agent(
        [tool_turn(("fail", {"reason": "x"}), ("get_weather", {"city": "Rome"})), "ok"],
        AgentConfig(tool_error_policy="skip"),
    )
    result = agent.run("go")
    tool_msgs = [m for m in fake.requests[1].messages if m.role is Role.TOOL]
    assert [m.tool_result.name for m in tool_msgs if m.tool_result] == ["get_weather"]
    assert [r.name for r in result.steps[0].tool_results] == ["get_weather"]
    assert len(result.steps[0].tool_calls) == 2


@pytest.mark.parametrize("policy", ["return_to_model", "raise", "skip"])
def test_unregistered_tool_is_key_error_under_every_policy(policy: Any) -> None:
    agent, _, _ = make_agent([tool_turn(("nope", {}))], AgentConfig(tool_error_policy=policy))
    with pytest.raises(KeyError, match="nope"):
        agent.run("go")


def test_invalid_arguments_follow_the_policy() -> None:
    agent, _, _ = make_agent([tool_turn(("get_weather", {"town": "Oslo"})), "retrying"])
    result = agent.run("go")
    content = result.steps[0].tool_results[0].content
    assert content.startswith("Error: tool 'get_weather'")
    assert "missing required argument 'city'" in content
    strict, _, _ = make_agent(
        [tool_turn(("get_weather", {"city": 3}))], AgentConfig(tool_error_policy="raise")
    )
    with pytest.raises(TypeError, match="must be of type string"):
        strict.run("go")


def test_max_turns_error_carries_partial_result_with_messages() -> None:
    agent, _, graph = make_agent(
        [tool_turn(("get_weather", {"city": str(i)})) for i in range(3)],
        AgentConfig(max_turns=3),
    )
    with pytest.raises(AgentMaxTurnsError) as info:
        agent.run("loop forever")
    exc = info.value
    assert exc.turns == 3
    assert len(exc.partial.steps) == 3
    assert exc.partial.total_turns == 3
    assert exc.partial.content == ""
    assert exc.partial.total_cost_usd == pytest.approx(graph.tokens.total_cost)
    assert [m.role for m in exc.partial.messages] == [Role.USER] + [Role.ASSISTANT, Role.TOOL] * 3


def test_partial_messages_resume_a_run() -> None:
    agent, fake, _ = make_agent(
        [tool_turn(("get_weather", {"city": "A"}))], AgentConfig(max_turns=1)
    )
    with pytest.raises(AgentMaxTurnsError) as info:
        agent.run("go")
    fake.add("resumed answer")
    result = agent.run(info.value.partial.messages)
    assert result.content == "resumed answer"
    assert fake.requests[-1].messages[-1].role is Role.TOOL


def test_budget_stops_before_a_call_that_would_exceed_it() -> None:
    # each turn costs 1000*0.15/1e6 + 1000*0.6/1e6 = 0.00075 USD on gpt-4o-mini
    expensive = TokenUsage(1000, 1000)
    agent, fake, _ = make_agent(
        [tool_turn(("get_weather", {"city": str(i)}), usage=expensive) for i in range(5)],
        AgentConfig(max_cost_usd=0.002),
    )
    with pytest.raises(AgentBudgetExceededError) as info:
        agent.run("go")
    assert len(fake.requests) == 2  # a third call would bring the total to 0.00225
    assert info.value.spent == pytest.approx(0.0015)
    assert info.value.budget == 0.002
    assert len(info.value.partial.steps) == 2
    assert info.value.partial.messages[-1].role is Role.TOOL


def test_arun_matches_run_semantics() -> None:
    agent, fake, _ = make_agent(
        [
            tool_turn(("get_weather", {"city": "London"}), ("fail", {"reason": "bad"})),
            "done",
        ]
    )
    result = asyncio.run(agent.arun("go"))
    assert result.content == "done"
    assert [r.content for r in result.steps[0].tool_results] == [
        "16°C, cloudy in London",
        "Error: bad",
    ]
    assert len(fake.requests) == 2


def test_arun_runs_a_turns_tools_concurrently_in_call_order() -> None:
    @tool
    async def slow_async(tag: str) -> str:
        """Waits."""
        await asyncio.sleep(0.3)
        return f"async {tag}"

    @tool
    def slow_sync(tag: str) -> str:
        """Blocks."""
        time.sleep(0.3)
        return f"sync {tag}"

    agent, _, _ = make_agent(
        [
            tool_turn(
                ("slow_async", {"tag": "a"}),
                ("slow_sync", {"tag": "b"}),
                ("slow_async", {"tag": "c"}),
                ("slow_sync", {"tag": "d"}),
            ),
            "all done",
        ],
        extra_tools=(slow_async, slow_sync),
    )
    result = asyncio.run(agent.arun("go"))
    step = result.steps[0]
    assert [r.content for r in step.tool_results] == ["async a", "sync b", "async c", "sync d"]
    timings = step.timings
    # structural concurrency: every call started before any call finished
    assert max(t.started for t in timings) < min(t.finished for t in timings)


def test_run_executes_sequentially() -> None:
    @tool
    def slow_sync(tag: str) -> str:
        """Blocks."""
        time.sleep(0.05)
        return tag

    agent, _, _ = make_agent(
        [tool_turn(("slow_sync", {"tag": "a"}), ("slow_sync", {"tag": "b"})), "ok"],
        extra_tools=(slow_sync,),
    )
    timings = agent.run("go").steps[0].timings
    assert timings[0].finished <= timings[1].started


def test_arun_max_turns_and_key_error() -> None:
    agent, _, _ = make_agent([tool_turn(("get_weather", {"city": "x"}))], AgentConfig(max_turns=1))
    with pytest.raises(AgentMaxTurnsError):
        asyncio.run(agent.arun("go"))
    agent2, _, _ = make_agent([tool_turn(("missing", {}))])
    with pytest.raises(KeyError):
        asyncio.run(agent2.arun("go"))
