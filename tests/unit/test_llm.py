from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall
from pywrapai_graph import ToolRegistry, tool
from pywrapai_graph.errors import StructuredOutputError, UnknownProviderError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply, ScriptExhaustedError


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.register(get_weather)
    return r


def test_chat_records_usage_and_cost() -> None:
    fake = ScriptedChatModel(
        [ScriptedReply("Hi!", usage=TokenUsage(1000, 2000))], provider="openai"
    )
    llm = LLM(provider=fake, model="gpt-4o-mini")
    response = llm.chat("Hello")
    assert (response.content, response.provider, response.model) == ("Hi!", "openai", "gpt-4o-mini")
    assert response.cost_usd == pytest.approx((1000 * 0.15 + 2000 * 0.60) / 1e6)
    assert llm.tokens.total_cost == pytest.approx(response.cost_usd)
    [rec] = llm.tokens.records
    assert (rec.kind, rec.provider, rec.model, rec.usage) == (
        "chat",
        "openai",
        "gpt-4o-mini",
        TokenUsage(1000, 2000),
    )


def test_inline_system_prompt_prepended_once() -> None:
    fake = ScriptedChatModel(["a", "b"])
    llm = LLM(provider=fake, system_prompt="Be brief.")
    llm.chat("q")
    llm.chat([Message(Role.SYSTEM, "Caller's own"), Message(Role.USER, "q")])
    assert [m.content for m in fake.requests[0].messages] == ["Be brief.", "q"]
    assert [m.content for m in fake.requests[1].messages] == ["Caller's own", "q"]
    assert llm.system_prompt == "Be brief."


def test_tools_forwarded_in_neutral_format_and_tool_calls_returned() -> None:
    call = ToolCall("call_1", "get_weather", {"city": "London"})
    fake = ScriptedChatModel([ScriptedReply(tool_calls=[call])])
    llm = LLM(provider=fake)
    response = llm.chat("weather?", tools=registry().to_schema(), tool_choice="auto")
    assert response.content == "" and response.tool_calls == [call]
    request = fake.requests[0]
    assert request.tool_names == ["get_weather"] and request.tool_choice == "auto"


@pytest.mark.parametrize("choice", ["auto", "required", "none", "get_weather"])
def test_valid_tool_choices(choice: str) -> None:
    fake = ScriptedChatModel(["ok"])
    LLM(provider=fake).chat("q", tools=registry().to_schema(), tool_choice=choice)
    assert fake.requests[0].tool_choice == choice


def test_bad_tools_and_tool_choice_rejected_before_any_call() -> None:
    fake = ScriptedChatModel(["never"])
    llm = LLM(provider=fake)
    with pytest.raises(ValueError, match="neither"):
        llm.chat("q", tools=registry().to_schema(), tool_choice="other_tool")
    with pytest.raises(ValueError, match="provider-specific"):
        llm.chat("q", tools=registry().to_openai_schema())
    with pytest.raises(ValueError, match="required"):
        llm.chat("q", tool_choice="required")
    assert fake.requests == [] and len(llm.tokens) == 0


def test_stream_yields_pieces_and_records_usage_after_exhaustion() -> None:
    fake = ScriptedChatModel([ScriptedReply("Hello there, world", usage=TokenUsage(7, 9))])
    llm = LLM(provider=fake)
    stream = llm.stream("hi")
    first = next(stream)
    assert len(llm.tokens) == 0  # not recorded until the stream is exhausted
    rest = list(stream)
    assert first + "".join(rest) == "Hello there, world" and len(rest) >= 2
    assert llm.tokens.total_usage == TokenUsage(7, 9)


def test_stream_refuses_tools() -> None:
    llm = LLM(provider=ScriptedChatModel())
    with pytest.raises(ValueError, match="tools"):
        llm.stream("hi", tools=registry().to_schema())
    with pytest.raises(ValueError, match="tools"):
        llm.astream("hi", tools=registry().to_schema())


def test_async_chat_and_stream() -> None:
    fake = ScriptedChatModel(
        ["async answer", ScriptedReply("streamed text", usage=TokenUsage(3, 4))]
    )
    llm = LLM(provider=fake)

    async def run() -> tuple[str, str]:
        r = await llm.achat("q")
        pieces = [p async for p in llm.astream("q")]
        return r.content, "".join(pieces)

    assert asyncio.run(run()) == ("async answer", "streamed text")
    assert len(llm.tokens) == 2 and llm.tokens.total_usage == TokenUsage(13, 9)


class City(BaseModel):
    name: str
    population: int


def test_chat_structured_valid_and_invalid() -> None:
    fake = ScriptedChatModel(['{"name": "Paris", "population": 2100000}', "not json at all"])
    llm = LLM(provider=fake)
    city = llm.chat_structured("Biggest French city?", City)
    assert city == City(name="Paris", population=2100000)
    fmt = fake.requests[0].response_format
    assert fmt is not None and fmt.name == "City" and "population" in fmt.json_schema["properties"]
    with pytest.raises(StructuredOutputError) as info:
        llm.chat_structured("again", City, retries=0)
    assert info.value.raw == "not json at all" and info.value.replies == ("not json at all",)


def test_cache_hit_records_no_new_cost() -> None:
    fake = ScriptedChatModel(
        [ScriptedReply("cached!", usage=TokenUsage(1000, 1000))], provider="openai"
    )
    llm = LLM(provider=fake, model="gpt-4o", cache=True)
    first = llm.chat("same question")
    second = llm.chat("same question")
    assert second.content == "cached!" and second.cached and second.cost_usd == 0.0
    assert not first.cached and first.cost_usd > 0
    assert len(fake.requests) == 1 and len(llm.tokens) == 1
    assert llm.cache is not None and len(llm.cache) == 1
    with pytest.raises(ScriptExhaustedError):
        llm.chat("a different question")


def test_unknown_provider_and_options_with_instance() -> None:
    with pytest.raises(UnknownProviderError, match="unknown LLM provider 'nope'"):
        LLM(provider="nope")
    with pytest.raises(TypeError, match="only apply"):
        LLM(provider=ScriptedChatModel(), api_key="sk-secret")


def test_repr_shows_no_secret() -> None:
    llm = LLM(provider=ScriptedChatModel(), model="m")
    assert repr(llm) == "LLM(provider='scripted', model='m')"
