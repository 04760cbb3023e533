"""Reasoning kept across turns, through the official SDKs over real HTTP to the local wire
servers, which refuse — as the real APIs do — a tool-use turn sent back without the
reasoning it came with: Anthropic thinking blocks (signed, and redacted) and the
``reasoning_content`` of OpenAI-compatible servers (DeepSeek's rule)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, TokenUsage, ToolCall
from pywrapai_graph import (
    Agent,
    AgentConfig,
    GraphLLM,
    LLMResponse,
    Message,
    ReasoningPart,
    Role,
    ToolRegistry,
    ToolResult,
    tool,
)
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ProviderError
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OpenAIWire
from pywrapai_graph.testing.wire.reasoning import MISSING_REASONING, MISSING_SIGNATURE
from tests.contract.open_clients import opened

THINKING = {"type": "enabled", "budget_tokens": 1024}
THOUGHT = "The user wants London's weather — I should call get_weather. ✓"
# A signature as the API sends it: base64 with '+', '/' and padding, kept byte for byte.
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3h+Gg/xBdjrkzLoky3dl1pkiMOYds=="
SIGNED = ReasoningPart(THOUGHT, SIGNATURE, provider="anthropic")
REDACTED = ReasoningPart(redacted="EmwKAhgBEgy3va3pzix/LafPsn4a+Ul==", provider="anthropic")
CALL = ToolCall("toolu_01", "get_weather", {"city": "London"})
ANSWER = "London is 16°C and cloudy."


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


def _anthropic(wire: AnthropicWire, **options: Any) -> LLM:
    return opened(
        LLM(
            provider="anthropic",
            api_key=SECRET,
            base_url=wire.url,
            max_retries=0,
            timeout=5.0,
            **options,
        )
    )


def _openai(wire: OpenAIWire, **options: Any) -> LLM:
    return opened(
        LLM(
            provider="openai",
            api_key=SECRET,
            base_url=wire.base_url,
            max_retries=0,
            timeout=5.0,
            **options,
        )
    )


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(get_weather)
    return registry


def _tools() -> list[dict[str, Any]]:
    return list(_registry().to_schema())


def _gemini(wire: GeminiWire) -> LLM:
    return opened(
        LLM(provider="gemini", api_key=SECRET, base_url=wire.url, max_retries=0, timeout=5.0)
    )


def _agent(llm: LLM) -> Agent:
    return Agent(GraphLLM(llm=llm), _registry(), AgentConfig(max_turns=3))


def _script(wire: AnthropicWire | OpenAIWire | GeminiWire, reasoning: list[ReasoningPart]) -> None:
    wire.reply(
        ScriptedReply(tool_calls=[CALL], reasoning=reasoning, usage=TokenUsage(50, 40)),
        ScriptedReply(ANSWER, usage=TokenUsage(90, 10)),
    )


def _assistant_turn(wire: AnthropicWire, n: int = 1) -> list[dict[str, Any]]:
    [turn] = [t for t in wire.requests[n].json["messages"] if t["role"] == "assistant"]
    blocks: list[dict[str, Any]] = turn["content"]
    return blocks


def _tool_turn(response: LLMResponse) -> list[Message]:
    result = ToolResult(CALL.id, CALL.name, "16°C, cloudy in London")
    return [
        Message(Role.USER, "Weather in London?"),
        response.to_message(),
        Message(Role.TOOL, result.content, tool_result=result),
    ]


# ---------------------------------------------------------------------- Anthropic
@pytest.mark.parametrize("run", ["sync", "async"])
def test_an_agent_with_thinking_completes_its_second_turn(run: str) -> None:
    with AnthropicWire() as wire:
        _script(wire, [SIGNED])
        agent = _agent(_anthropic(wire, thinking=THINKING))
        ask = "Weather in London?"
        result = agent.run(ask) if run == "sync" else asyncio.run(agent.arun(ask))
        assert result.content == ANSWER
        assert [r.json["thinking"] for r in wire.requests] == [THINKING, THINKING]
        blocks = _assistant_turn(wire)
        assert blocks[0] == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
        assert [b["type"] for b in blocks] == ["thinking", "tool_use"]
    assert result.messages[1].reasoning == (SIGNED,)
    assert (
        Message.from_dict(json.loads(json.dumps(result.messages[1].to_dict())))
        == (result.messages[1])
    )


def test_the_wire_refuses_a_tool_turn_without_its_thinking_block() -> None:
    with AnthropicWire() as wire:
        _script(wire, [SIGNED])
        llm = _anthropic(wire, thinking=THINKING)
        first = llm.chat("Weather in London?", tools=_tools())
        stripped = _tool_turn(first)
        stripped[1] = Message(Role.ASSISTANT, "", tool_calls=[CALL])  # as before this change
        with pytest.raises(ProviderError, match="must start with a thinking block") as caught:
            llm.chat(stripped, tools=_tools())
        assert caught.value.status_code == 400


def test_the_wire_refuses_an_altered_signature() -> None:
    with AnthropicWire() as wire:
        _script(wire, [SIGNED])
        llm = _anthropic(wire, thinking=THINKING)
        tools = _tools()
        history = _tool_turn(llm.chat("Weather in London?", tools=tools))
        forged = ReasoningPart(THOUGHT, SIGNATURE[:-2] + "A=", provider="anthropic")
        history[1] = Message(Role.ASSISTANT, "", tool_calls=[CALL], reasoning=[forged])
        with pytest.raises(ProviderError, match="Invalid `signature`"):
            llm.chat(history, tools=tools)


@pytest.mark.parametrize("reasoning", [[SIGNED], [SIGNED, REDACTED]], ids=["signed", "redacted"])
def test_chat_keeps_thinking_blocks_byte_exact(reasoning: list[ReasoningPart]) -> None:
    with AnthropicWire() as wire:
        _script(wire, reasoning)
        llm = _anthropic(wire, thinking=THINKING)
        first = llm.chat("Weather in London?", tools=_tools())
        assert first.reasoning == tuple(reasoning)
        assert llm.chat(_tool_turn(first), tools=_tools()).content == ANSWER
        _check_sent(_assistant_turn(wire), reasoning)


def _check_sent(blocks: list[dict[str, Any]], reasoning: list[ReasoningPart]) -> None:
    assert blocks[0] == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
    if len(reasoning) == 2:
        assert blocks[1] == {"type": "redacted_thinking", "data": REDACTED.redacted}


@pytest.mark.parametrize("mode", ["stream", "astream"])
@pytest.mark.parametrize("reasoning", [[SIGNED], [SIGNED, REDACTED]], ids=["signed", "redacted"])
def test_a_stream_keeps_thinking_blocks_byte_exact(
    mode: str, reasoning: list[ReasoningPart]
) -> None:
    with AnthropicWire() as wire:
        wire.reply(ScriptedReply("It is 16°C.", reasoning=reasoning), "You are welcome.")
        llm = _anthropic(wire, thinking=THINKING)
        if mode == "stream":
            stream = llm.stream("Weather in London?")
            assert stream.text() == "It is 16°C."  # thinking is not part of the text
            first = stream.response
        else:

            async def read() -> LLMResponse:
                stream = llm.astream("Weather in London?")
                await stream.text()
                return stream.response

            first = asyncio.run(read())
        assert first.reasoning == tuple(reasoning)
        thanks = Message(Role.USER, "Thanks!")
        llm.chat([Message(Role.USER, "Weather in London?"), first.to_message(), thanks])
        blocks = _assistant_turn(wire)
    _check_sent(blocks, reasoning)
    assert blocks[len(reasoning) :] == [{"type": "text", "text": "It is 16°C."}]


def test_a_call_s_extra_thinking_wins_over_the_adapter_s() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok", "ok")
        llm = _anthropic(wire, thinking=THINKING)
        llm.chat("Hi")
        llm.chat("Hi", extra={"thinking": {"type": "disabled"}})
        assert [r.json["thinking"] for r in wire.requests] == [THINKING, {"type": "disabled"}]


def test_bad_reasoning_options_are_refused() -> None:
    with AnthropicWire() as wire, pytest.raises(ArgumentTypeError, match="thinking must be"):
        _anthropic(wire, thinking="enabled")
    with OpenAIWire() as wire, pytest.raises(InvalidArgumentError, match="reasoning_replay"):
        _openai(wire, reasoning_replay="sometimes")


def test_reasoning_of_another_provider_is_not_sent_to_anthropic() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok")
        foreign = ReasoningPart("thoughts of a local model", provider="openai")
        hello = Message(Role.ASSISTANT, "Hello", reasoning=[foreign])
        _anthropic(wire).chat([Message(Role.USER, "Hi"), hello, Message(Role.USER, "Again")])
        assert _assistant_turn(wire, 0) == [{"type": "text", "text": "Hello"}]


# ---------------------------------------------------------------------- OpenAI-compatible
@pytest.mark.parametrize("run", ["sync", "async"])
def test_an_agent_keeps_reasoning_content_on_its_tool_call_turn(run: str) -> None:
    with OpenAIWire() as wire:
        _script(wire, [ReasoningPart(THOUGHT, provider="openai")])
        agent = _agent(_openai(wire, model="deepseek-chat"))
        ask = "Weather in London?"
        result = agent.run(ask) if run == "sync" else asyncio.run(agent.arun(ask))
        assert result.content == ANSWER
        [assistant] = [m for m in wire.requests[1].json["messages"] if m["role"] == "assistant"]
    assert assistant["reasoning_content"] == THOUGHT
    assert result.messages[1].reasoning == (ReasoningPart(THOUGHT, provider="openai"),)


@pytest.mark.parametrize("mode", ["chat", "stream"])
def test_reasoning_content_is_kept_from_chat_and_stream(mode: str) -> None:
    with OpenAIWire() as wire:
        wire.reply(ScriptedReply(ANSWER, reasoning=[ReasoningPart(THOUGHT)]))
        llm = _openai(wire)
        if mode == "chat":
            response = llm.chat("Weather?")
        else:
            stream = llm.stream("Weather?")
            assert stream.text() == ANSWER  # the reasoning is not part of the text
            response = stream.response
    assert response.content == ANSWER
    assert response.reasoning == (ReasoningPart(THOUGHT, provider="openai"),)


@pytest.mark.parametrize(
    ("replay", "tool_turn", "plain_turn"),
    [("tool_calls", THOUGHT, None), ("always", THOUGHT, "plain"), ("never", None, None)],
)
def test_reasoning_replay_chooses_the_turns_that_send_it_back(
    replay: str, tool_turn: str | None, plain_turn: str | None
) -> None:
    plain = Message(Role.ASSISTANT, "Hello", reasoning=[ReasoningPart("plain", provider="openai")])
    with OpenAIWire() as wire:
        _script(wire, [ReasoningPart(THOUGHT)])
        llm = _openai(wire, reasoning_replay=replay)
        tools = _tools()
        history = [Message(Role.USER, "Hi"), plain, *_tool_turn(llm.chat("Hi", tools=tools))]
        if replay == "never":  # a thinking-mode server refuses what DeepSeek refuses
            with pytest.raises(ProviderError, match=MISSING_REASONING[:40]):
                llm.chat(history, tools=tools)
        else:
            assert llm.chat(history, tools=tools).content == ANSWER
        sent = [m for m in wire.requests[1].json["messages"] if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in sent] == [plain_turn, tool_turn]


def test_reasoning_tokens_are_counted_in_usage() -> None:
    usage = TokenUsage(20, 50, reasoning_tokens=40)
    with OpenAIWire() as wire:
        wire.reply(ScriptedReply(ANSWER, reasoning=[ReasoningPart(THOUGHT)], usage=usage))
        llm = _openai(wire)
        assert llm.chat("Weather?").usage.reasoning_tokens == 40
    assert llm.tokens.records[0].usage.reasoning_tokens == 40


# ---------------------------------------------------------------------- Gemini
GEMINI_SIGNATURE = "CiQB0e2Kb+/7xZ1aQm9Y2pU3dGhvdWdodA=="


def test_gemini_returns_the_thought_signature_on_the_step_s_function_call() -> None:
    summary = ReasoningPart("Look the weather up.")
    with GeminiWire() as wire:
        _script(wire, [summary, ReasoningPart(signature=GEMINI_SIGNATURE)])
        result = _agent(_gemini(wire)).run("Weather in London?")
        assert result.content == ANSWER
        [model] = [c for c in wire.requests[1].json["contents"] if c["role"] == "model"]
    signed = base64.urlsafe_b64decode(model["parts"][0]["thoughtSignature"])
    assert signed == base64.b64decode(GEMINI_SIGNATURE)  # the same bytes
    assert "functionCall" in model["parts"][0]
    assert result.messages[1].reasoning == (
        ReasoningPart("Look the weather up.", provider="gemini"),
        ReasoningPart(signature=GEMINI_SIGNATURE, provider="gemini"),
    )


def test_the_gemini_wire_refuses_a_function_call_without_its_signature() -> None:
    with GeminiWire() as wire:
        _script(wire, [ReasoningPart(signature=GEMINI_SIGNATURE)])
        llm = _gemini(wire)
        history = _tool_turn(llm.chat("Weather in London?", tools=_tools()))
        history[1] = Message(Role.ASSISTANT, "", tool_calls=[CALL])
        with pytest.raises(ProviderError, match=MISSING_SIGNATURE[:30]):
            llm.chat(history, tools=_tools())


def test_a_gemini_stream_keeps_its_thought_summary() -> None:
    with GeminiWire() as wire:
        wire.reply(ScriptedReply("It is 16°C.", reasoning=[ReasoningPart("Think first.")]))
        stream = _gemini(wire).stream("Weather?")
        assert stream.text() == "It is 16°C."
    assert stream.response.reasoning == (ReasoningPart("Think first.", provider="gemini"),)


# ---------------------------------------------------------------------- traces and logs
def _traced(capture: bool, caplog: pytest.LogCaptureFixture) -> str:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing, capture_content=capture)
    caplog.set_level(logging.DEBUG, logger="pywrapai_graph")
    try:
        with AnthropicWire() as wire:
            _script(wire, [SIGNED, REDACTED])
            _agent(_anthropic(wire, thinking=THINKING)).run("Weather in London?")
    finally:
        configure()
    seen = [
        json.dumps(
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [dict(e.attributes or {}) for e in s.events],
            },
            ensure_ascii=False,
            default=str,
        )
        for s in spans.get_finished_spans()
    ]
    assert len(seen) >= 3  # the run and its two calls
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("pywrapai_graph")]
    assert ours  # our logs were listened to
    return "\n".join(seen + ours)


def test_a_trace_without_content_capture_holds_no_thinking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    traced = _traced(False, caplog)
    assert "London's weather" not in traced
    assert SIGNATURE not in traced and "EmwKAhgB" not in traced


def test_a_trace_with_content_capture_holds_the_thinking_text_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    traced = _traced(True, caplog)
    assert "London's weather" in traced
    assert SIGNATURE not in traced and "EmwKAhgB" not in traced
