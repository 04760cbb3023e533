from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph import GraphLLM, ToolRegistry, tool
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply


@pytest.fixture
def prompts_dir(tmp_path: Path) -> Path:
    d = tmp_path / "system_prompts_registry"
    d.mkdir()
    (d / "support-agent-v1.txt").write_text("You are a support agent v1.\n")
    (d / "support-agent-v2.txt").write_text("You are a support agent v2.")
    return d


def roles_and_text(messages: tuple[Message, ...]) -> list[tuple[Role, str]]:
    return [(m.role, m.content) for m in messages]


def test_versioning_requires_prompt_file() -> None:
    with pytest.raises(ValueError, match="prompt_file"):
        GraphLLM(llm=LLM(provider=ScriptedChatModel()), enable_system_prompt_versioning=True)


def test_missing_prompt_file_fails_at_construction(prompts_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"support-agent-v1\.txt"):
        GraphLLM(
            llm=LLM(provider=ScriptedChatModel()),
            enable_system_prompt_versioning=True,
            prompt_file="nope-v1.txt",
            prompts_dir=str(prompts_dir),
        )


def test_three_turn_conversation_assembly(prompts_dir: Path) -> None:
    fake = ScriptedChatModel(["Hello Alice!", "Your name is Alice."])
    graph = GraphLLM(
        llm=LLM(provider=fake),
        enable_system_prompt_versioning=True,
        prompt_file="support-agent-v1.txt",
        prompts_dir=prompts_dir,
    )
    history: list[Message] = []
    r1 = graph.chat("My name is Alice.", history=history)
    history += [Message(Role.USER, "My name is Alice."), Message(Role.ASSISTANT, r1.content)]
    graph.chat("What's my name?", history=history)
    assert roles_and_text(fake.requests[1].messages) == [
        (Role.SYSTEM, "You are a support agent v1."),
        (Role.USER, "My name is Alice."),
        (Role.ASSISTANT, "Hello Alice!"),
        (Role.USER, "What's my name?"),
    ]
    assert graph.system_prompt == "You are a support agent v1."
    assert [r.prompt_file for r in graph.tokens.records] == ["support-agent-v1.txt"] * 2


def test_caller_system_message_replaced_when_versioning(prompts_dir: Path) -> None:
    fake = ScriptedChatModel(["ok"])
    graph = GraphLLM(LLM(provider=fake), True, "support-agent-v2.txt", prompts_dir)
    graph.chat([Message(Role.SYSTEM, "ignore me"), Message(Role.USER, "q")])
    assert roles_and_text(fake.requests[0].messages) == [
        (Role.SYSTEM, "You are a support agent v2."),
        (Role.USER, "q"),
    ]


def test_without_versioning_llm_system_prompt_applies() -> None:
    fake = ScriptedChatModel(["ok"])
    graph = GraphLLM(llm=LLM(provider=fake, system_prompt="You are a concise code reviewer."))
    graph.chat("def add(a, b): return a + c")
    assert fake.requests[0].messages[0] == Message(Role.SYSTEM, "You are a concise code reviewer.")
    assert graph.system_prompt == "You are a concise code reviewer."


def test_with_system_prompt_is_a_shallow_copy_sharing_llm_cache_tracker() -> None:
    fake = ScriptedChatModel(["P/E answer", "reset answer"])
    base = GraphLLM(llm=LLM(provider=fake, cache=True))
    finance = base.with_system_prompt("You are a finance expert.")
    support = base.with_system_prompt("You are a support agent.")
    assert finance.llm is base.llm and support.tokens is base.tokens and finance.cache is base.cache
    assert base.system_prompt is None and finance.system_prompt == "You are a finance expert."
    finance.chat("What is the P/E ratio?")
    support.chat("How do I reset my password?")
    assert fake.requests[0].messages[0].content == "You are a finance expert."
    assert fake.requests[1].messages[0].content == "You are a support agent."
    assert len(base.tokens) == 2
    # a cached response from one copy is reused by another copy with the same request
    other = base.with_system_prompt("You are a finance expert.")
    assert other.chat("What is the P/E ratio?").cached
    with pytest.raises(TypeError):
        base.with_system_prompt(None)  # type: ignore[arg-type]


def test_proxy_properties() -> None:
    llm = LLM(provider=ScriptedChatModel(), model="claude-haiku-4-5-20251001")
    graph = GraphLLM(llm=llm)
    assert (graph.llm, graph.tokens, graph.cache) == (llm, llm.tokens, None)
    assert (graph.model, graph.provider) == ("claude-haiku-4-5-20251001", "scripted")


def test_stream_refuses_tools_and_streams_with_same_assembly(prompts_dir: Path) -> None:
    fake = ScriptedChatModel([ScriptedReply("once upon a time", usage=TokenUsage(2, 3))])
    graph = GraphLLM(LLM(provider=fake), True, "support-agent-v1.txt", prompts_dir)
    with pytest.raises(ValueError, match="tools"):
        graph.stream("x", tools=[])
    with pytest.raises(ValueError, match="tools"):
        graph.astream("x", tools=[])
    assert (
        "".join(graph.stream("Write a story", history=[Message(Role.USER, "earlier")]))
        == "once upon a time"
    )
    assert [m.content for m in fake.requests[0].messages] == [
        "You are a support agent v1.",
        "earlier",
        "Write a story",
    ]
    assert graph.tokens.records[0].usage == TokenUsage(2, 3)
    assert graph.tokens.records[0].prompt_file == "support-agent-v1.txt"


def test_async_chat_with_tools_and_astream() -> None:
    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"16°C, cloudy in {city}"

    registry = ToolRegistry()
    registry.register(get_weather)
    call = ToolCall("call_1", "get_weather", {"city": "Paris"})
    fake = ScriptedChatModel([ScriptedReply(tool_calls=[call]), "a story"])
    graph = GraphLLM(LLM(provider=fake)).with_system_prompt("sys")

    async def run() -> tuple[list[ToolCall], str]:
        r = await graph.achat(
            "What's the weather in Paris?", tools=registry.to_schema(), tool_choice="auto"
        )
        text = "".join([c async for c in graph.astream("Write a story")])
        return r.tool_calls, text

    calls, text = asyncio.run(run())
    assert calls == [call] and text == "a story"


def test_full_tool_calling_flow_offline() -> None:
    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"16°C, cloudy in {city}"

    registry = ToolRegistry()
    registry.register(get_weather)
    fake = ScriptedChatModel(
        [
            ScriptedReply(tool_calls=[ToolCall("call_abc", "get_weather", {"city": "London"})]),
            "The weather in London is 16°C and cloudy.",
        ]
    )
    graph = GraphLLM(llm=LLM(provider=fake))
    response = graph.chat(
        "What's the weather in London?", tools=registry.to_schema(), tool_choice="auto"
    )
    tc = response.tool_calls[0]
    result = registry.execute(tc)
    messages = [
        Message(Role.USER, "What's the weather in London?"),
        Message(Role.ASSISTANT, "", tool_calls=response.tool_calls),
        Message(Role.TOOL, result.content, tool_result=ToolResult(tc.id, tc.name, result.content)),
    ]
    final = graph.chat(messages)
    assert final.content == "The weather in London is 16°C and cloudy."
    sent = fake.requests[1].messages
    assert sent[1].tool_calls == (tc,) and sent[2].tool_result == ToolResult(
        "call_abc", "get_weather", "16°C, cloudy in London"
    )


class Answer(BaseModel):
    text: str


def test_chat_structured_with_history(prompts_dir: Path) -> None:
    fake = ScriptedChatModel(['{"text": "hi"}'])
    graph = GraphLLM(LLM(provider=fake), True, "support-agent-v1.txt", prompts_dir)
    assert graph.chat_structured("q", Answer, history=[Message(Role.USER, "h")]) == Answer(
        text="hi"
    )
    assert [m.role for m in fake.requests[0].messages] == [Role.SYSTEM, Role.USER, Role.USER]


def test_rag_k_validated() -> None:
    with pytest.raises(ValueError, match="rag_k"):
        GraphLLM(LLM(provider=ScriptedChatModel()), rag_k=0)
