"""Structured output through each official SDK against its local wire server: the native
field each provider's request carries, the forced tool where asked, and the retry of an
invalid reply (the second request carries the reply and its validation error; both
attempts' usage is booked)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from pywrapai import LLM, TokenUsage, ToolCall
from pywrapai_graph.errors import StructuredOutputError
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET, City
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer

WIRES: dict[str, tuple[type[WireServer], str]] = {
    "openai": (OpenAIWire, "gpt-4o-mini"),
    "anthropic": (AnthropicWire, "claude-haiku-4-5-20251001"),
    "gemini": (GeminiWire, "gemini-2.5-flash"),
    "ollama": (OllamaWire, "llama3.2"),
}
VALID = {"name": "Paris", "population": 2100000}


class Census(BaseModel):
    city: str
    year: int = 2024  # a default: strict mode makes it required all the same
    note: str | None = None


class Tally(BaseModel):
    counts: dict[str, int]  # an open mapping: no strict mode can say it


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Iterator[tuple[str, WireServer]]:
    make, _ = WIRES[request.param]
    with make() as server:
        yield request.param, server


def llm_for(name: str, server: WireServer, model: str | None = None) -> LLM:
    url = server.base_url if name == "openai" else server.url
    options: dict[str, Any] = {"base_url": url, "timeout": 5.0, "max_retries": 0}
    if name != "ollama":
        options["api_key"] = SECRET
    return LLM(provider=name, model=model or WIRES[name][1], **options)


def bodies(server: WireServer) -> list[Any]:
    return [r.json for r in server.chat_requests()]


def last_turn(name: str, body: Any) -> str:
    """The last turn of a request body, as JSON text."""
    return json.dumps(body["contents" if name == "gemini" else "messages"][-1])


def test_an_invalid_reply_is_retried_with_its_error_and_both_attempts_booked(
    wire: tuple[str, WireServer],
) -> None:
    name, server = wire
    server.reply(
        ScriptedReply('{"name": "Paris"}', usage=TokenUsage(40, 6)),
        ScriptedReply(json.dumps(VALID), usage=TokenUsage(70, 9)),
    )
    with llm_for(name, server) as llm:
        assert llm.chat_structured("Biggest French city?", City) == City(**VALID)
    assert [r.usage for r in llm.tokens.records] == [TokenUsage(40, 6), TokenUsage(70, 9)]
    first, second = bodies(server)
    turns = "contents" if name == "gemini" else "messages"
    assert len(second[turns]) == len(first[turns]) + 2  # the reply, then the errors
    assert "population: Field required" in last_turn(name, second)
    assert "Paris" in json.dumps(second[turns][-2])  # the model sees what it said


def test_every_attempt_invalid_raises_with_every_raw_reply(
    wire: tuple[str, WireServer],
) -> None:
    name, server = wire
    replies = ["Paris, about two million", '{"name": "Paris", "population": "2.1M"}']
    server.reply(*replies)

    async def ask(llm: LLM) -> City:
        async with llm:
            return await llm.achat_structured("Biggest French city?", City)

    llm = llm_for(name, server)
    with pytest.raises(StructuredOutputError) as info:
        asyncio.run(ask(llm))
    assert info.value.replies == tuple(replies)
    assert "population: Input should be a valid integer" in info.value.validation_error
    assert len(llm.tokens) == 2


def test_openai_sends_a_strict_schema_when_it_can_be_made_strict() -> None:
    with OpenAIWire() as server:
        server.reply('{"city": "Oslo", "year": 2024, "note": null}', '{"counts": {"a": 1}}')
        with llm_for("openai", server) as llm:
            assert llm.chat_structured("q", Census).city == "Oslo"
            assert llm.chat_structured("q", Tally).counts == {"a": 1}
        strict, loose = (b["response_format"]["json_schema"] for b in bodies(server))
    assert strict["strict"] is True
    assert strict["schema"]["required"] == ["city", "year", "note"]
    assert strict["schema"]["additionalProperties"] is False
    assert "default" not in json.dumps(strict["schema"])
    assert "strict" not in loose  # dict[str, int] is sent as the caller's schema
    assert loose["schema"] == Tally.model_json_schema()


def test_openai_tool_mode_forces_a_function_and_answers_it_with_a_tool_message() -> None:
    with OpenAIWire() as server:
        server.reply(
            ScriptedReply(tool_calls=[ToolCall("call_1", "City", {"name": "Paris"})]),
            ScriptedReply(tool_calls=[ToolCall("call_2", "City", VALID)]),
        )
        with llm_for("openai", server) as llm:
            assert llm.chat_structured("q", City, mode="tool") == City(**VALID)
        first, second = bodies(server)
    assert "response_format" not in first
    assert first["tool_choice"] == {"type": "function", "function": {"name": "City"}}
    assert first["tools"][0]["function"]["strict"] is True
    assistant, result = second["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert result["role"] == "tool" and result["tool_call_id"] == "call_1"
    assert "population: Field required" in result["content"]


def test_anthropic_native_output_keeps_an_effort_given_in_extra() -> None:
    with AnthropicWire() as server:
        server.reply(json.dumps(VALID))
        with llm_for("anthropic", server) as llm:
            llm.chat_structured("q", City, extra={"output_config": {"effort": "low"}})
        [body] = bodies(server)
    assert body["output_config"]["effort"] == "low"
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["required"] == ["name", "population"]


@pytest.mark.parametrize(
    ("model", "mode"),
    [("claude-haiku-4-5-20251001", "tool"), ("claude-3-5-haiku-20241022", "auto")],
)
def test_anthropic_forced_tool_is_answered_with_a_tool_result(model: str, mode: Any) -> None:
    with AnthropicWire() as server:
        server.reply(
            ScriptedReply(tool_calls=[ToolCall("toolu_1", "City", {"name": "Paris"})]),
            ScriptedReply(tool_calls=[ToolCall("toolu_2", "City", VALID)]),
        )
        with llm_for("anthropic", server, model) as llm:
            assert llm.chat_structured("q", City, mode=mode) == City(**VALID)
        first, second = bodies(server)
    assert "output_config" not in first
    assert first["tool_choice"] == {"type": "tool", "name": "City"}
    [block] = second["messages"][-1]["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert "population: Field required" in block["content"]


def test_gemini_and_ollama_send_their_native_fields() -> None:
    with GeminiWire() as gemini, OllamaWire() as ollama:
        gemini.reply(json.dumps(VALID))
        ollama.reply(json.dumps(VALID))
        for name, server in (("gemini", gemini), ("ollama", ollama)):
            with llm_for(name, server) as llm:
                assert llm.chat_structured("q", City, mode="tool") == City(**VALID)
        [g], [o] = bodies(gemini), bodies(ollama)
    config = g["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["required"] == ["name", "population"]
    assert "tools" not in g and o["format"]["required"] == ["name", "population"]
