"""The four chat adapters, each through its official SDK over real HTTP to a local wire server."""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph import GraphLLM, ToolRegistry, tool
from pywrapai_graph.errors import (
    AuthenticationError,
    ConfigurationError,
    MissingExtraError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    ResponseFormatError,
    StructuredOutputError,
)
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer

SECRET = "sk-test-SECRET-0123456789"


@dataclass
class Provider:
    name: str
    wire: WireServer
    model: str
    made: list[LLM] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return self.wire.base_url if self.name == "openai" else self.wire.url

    def llm(self, **kwargs: Any) -> LLM:
        options: dict[str, Any] = {"base_url": self.base_url, "timeout": 5.0, "max_retries": 0}
        if self.name != "ollama":
            options.update(api_key=SECRET)
        options.update(kwargs)
        llm = LLM(provider=self.name, model=self.model, **options)
        self.made.append(llm)
        return llm

    def sent(self, index: int = -1) -> Any:
        return list(self.wire.chat_requests())[index].json


FACTORIES: dict[str, tuple[Callable[[], WireServer], str]] = {
    "openai": (OpenAIWire, "gpt-4o-mini"),
    "anthropic": (AnthropicWire, "claude-haiku-4-5-20251001"),
    "gemini": (GeminiWire, "gemini-2.5-flash"),
    "ollama": (OllamaWire, "llama3.2"),
}


@pytest.fixture(params=list(FACTORIES))
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    make, model = FACTORIES[request.param]
    with make() as wire:
        p = Provider(request.param, wire, model)
        yield p
        for llm in p.made:
            llm.close()


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


@tool
def search_docs(query: str, limit: int = 5) -> str:
    """Search internal documentation."""
    return f"Found {limit} results for: {query}"


def registry() -> ToolRegistry:
    r = ToolRegistry()
    r.register(get_weather)
    r.register(search_docs)
    return r


HISTORY_WITH_TOOLS = [
    Message(Role.SYSTEM, "You are helpful."),
    Message(Role.USER, "Weather in London and Paris?"),
    Message(
        Role.ASSISTANT,
        "",
        tool_calls=[
            ToolCall("call_a", "get_weather", {"city": "London"}),
            ToolCall("call_b", "get_weather", {"city": "Paris"}),
        ],
    ),
    Message(
        Role.TOOL, "16°C London", tool_result=ToolResult("call_a", "get_weather", "16°C London")
    ),
    Message(Role.TOOL, "18°C Paris", tool_result=ToolResult("call_b", "get_weather", "18°C Paris")),
]


# ---------------------------------------------------------------------------- plain chat
def test_chat_text_usage_and_cost(provider: Provider) -> None:
    provider.wire.reply(ScriptedReply("Hello!", usage=TokenUsage(1000, 500)))
    llm = provider.llm(system_prompt="Be brief.")
    response = llm.chat("Hi")
    assert response.content == "Hello!"
    assert response.usage.input_tokens == 1000
    assert response.usage.output_tokens == 500
    assert response.provider == provider.name
    [rec] = llm.tokens.records
    assert rec.usage == response.usage
    if provider.name == "ollama":
        assert rec.cost_usd == 0.0
    else:
        price = llm.tokens.prices.price_for(provider.model)
        assert price is not None
        assert rec.cost_usd == pytest.approx(price.cost(response.usage))
        assert rec.cost_usd > 0


def test_system_prompt_placement(provider: Provider) -> None:
    provider.wire.reply("ok")
    provider.llm(system_prompt="Be brief.").chat("Hi")
    body = provider.sent()
    if provider.name == "anthropic":
        assert body["system"] == "Be brief."
        assert body["messages"] == [{"role": "user", "content": "Hi"}]
    elif provider.name == "gemini":
        assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
        assert body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    else:
        assert body["messages"][:2] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ]


def test_history_with_tool_calls_is_translated_faithfully(provider: Provider) -> None:
    provider.wire.reply("London is 16°C, Paris 18°C.")
    response = provider.llm().chat(HISTORY_WITH_TOOLS)
    assert response.content == "London is 16°C, Paris 18°C."
    body = provider.sent()
    if provider.name == "openai":
        msgs = body["messages"]
        assert msgs[2]["tool_calls"][0]["function"] == {
            "name": "get_weather",
            "arguments": '{"city": "London"}',
        }
        assert msgs[3] == {"role": "tool", "tool_call_id": "call_a", "content": "16°C London"}
        assert msgs[4] == {"role": "tool", "tool_call_id": "call_b", "content": "18°C Paris"}
    elif provider.name == "anthropic":
        msgs = body["messages"]
        assert body["system"] == "You are helpful."
        assert msgs[1]["content"] == [
            {
                "type": "tool_use",
                "id": "call_a",
                "name": "get_weather",
                "input": {"city": "London"},
            },
            {"type": "tool_use", "id": "call_b", "name": "get_weather", "input": {"city": "Paris"}},
        ]
        assert len(msgs) == 3  # consecutive tool results merged into one user turn
        assert msgs[2] == {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "16°C London"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "18°C Paris"},
            ],
        }
    elif provider.name == "gemini":
        contents = body["contents"]
        assert [p["functionCall"]["name"] for p in contents[1]["parts"]] == ["get_weather"] * 2
        assert contents[1]["role"] == "model"
        assert len(contents) == 3
        responses = [p["functionResponse"] for p in contents[2]["parts"]]
        assert [(r["name"], r["response"]) for r in responses] == [
            ("get_weather", {"result": "16°C London"}),
            ("get_weather", {"result": "18°C Paris"}),
        ]
    else:
        msgs = body["messages"]
        assert msgs[2]["tool_calls"][1]["function"] == {
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
        assert msgs[3]["role"] == "tool"
        assert msgs[3]["tool_name"] == "get_weather"


def test_tool_message_without_result_is_a_clear_error(provider: Provider) -> None:
    if provider.name == "ollama":  # Ollama's tool messages carry no call id: this is valid
        provider.wire.reply("ok")
        provider.llm().chat([Message(Role.USER, "x"), Message(Role.TOOL, "orphan")])
        assert provider.sent()["messages"][1] == {"role": "tool", "content": "orphan"}
        return
    with pytest.raises(ValueError, match="tool_result"):
        provider.llm().chat([Message(Role.USER, "x"), Message(Role.TOOL, "orphan")])


# ---------------------------------------------------------------------------- tools
@pytest.mark.parametrize("choice", ["auto", "required", "none", "search_docs"])
def test_tools_and_tool_choice_on_the_wire(
    provider: Provider, choice: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider.wire.reply("ok")
    with caplog.at_level(logging.WARNING):
        provider.llm().chat("q", tools=registry().to_schema(), tool_choice=choice)
    body = provider.sent()
    if provider.name == "openai":
        assert body["tools"] == registry().to_openai_schema()
        expected: Any = (
            choice
            if choice != "search_docs"
            else {"type": "function", "function": {"name": "search_docs"}}
        )
        assert body["tool_choice"] == expected
    elif provider.name == "anthropic":
        assert body["tools"] == registry().to_anthropic_schema()
        expected = {
            "auto": {"type": "auto"},
            "required": {"type": "any"},
            "none": {"type": "none"},
            "search_docs": {"type": "tool", "name": "search_docs"},
        }[choice]
        assert body["tool_choice"] == expected
    elif provider.name == "gemini":
        decls = body["tools"][0]["functionDeclarations"]
        assert [d["name"] for d in decls] == ["get_weather", "search_docs"]
        assert "default" not in str(decls)  # stripped for Gemini
        config = body["toolConfig"]["functionCallingConfig"]
        assert (
            config["mode"]
            == {"auto": "AUTO", "required": "ANY", "none": "NONE", "search_docs": "ANY"}[choice]
        )
        if choice == "search_docs":
            assert config["allowedFunctionNames"] == ["search_docs"]
    else:
        # the ollama client re-models tools and drops JSON Schema "default"
        sent = [
            (t["function"]["name"], t["function"]["parameters"]["required"]) for t in body["tools"]
        ]
        assert sent == [("get_weather", ["city"]), ("search_docs", ["query"])]
        assert (
            body["tools"][1]["function"]["parameters"]["properties"]["limit"]["type"] == "integer"
        )
        assert "tool_choice" not in body
        warned = any("tool_choice" in r.getMessage() for r in caplog.records)
        assert warned == (choice != "auto")


def test_tool_calls_parsed(provider: Provider) -> None:
    calls = [
        ToolCall("call_1", "get_weather", {"city": "London"}),
        ToolCall("call_2", "search_docs", {"query": "refunds", "limit": 2}),
    ]
    provider.wire.reply(ScriptedReply(tool_calls=calls))
    response = provider.llm().chat("q", tools=registry().to_schema())
    assert response.content == ""
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("get_weather", {"city": "London"}),
        ("search_docs", {"query": "refunds", "limit": 2}),
    ]
    if provider.name == "ollama":  # Ollama sends no ids: we number them
        assert [c.id for c in response.tool_calls] == ["call_0", "call_1"]
    else:
        assert [c.id for c in response.tool_calls] == ["call_1", "call_2"]


def test_malformed_tool_arguments_are_a_typed_error() -> None:
    with OpenAIWire() as wire:
        wire.raw(
            {
                "id": "x",
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
                                    "id": "c",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city": "Lon',
                                    },
                                }
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
        llm = LLM(provider="openai", api_key=SECRET, base_url=wire.base_url, max_retries=0)
        with pytest.raises(ResponseFormatError, match="malformed JSON arguments") as info:
            llm.chat("q", tools=registry().to_schema())
        assert info.value.raw == '{"city": "Lon'


def test_full_tool_calling_flow(provider: Provider) -> None:
    provider.wire.reply(
        ScriptedReply(tool_calls=[ToolCall("call_abc", "get_weather", {"city": "London"})]),
        "The weather in London is 16°C and cloudy.",
    )
    graph = GraphLLM(llm=provider.llm())
    reg = registry()
    response = graph.chat(
        "What's the weather in London?", tools=reg.to_schema(), tool_choice="auto"
    )
    assert response.tool_calls
    tc = response.tool_calls[0]
    result = reg.execute(tc)
    assert result.content == "16°C, cloudy in London"
    messages = [
        Message(Role.USER, "What's the weather in London?"),
        Message(Role.ASSISTANT, "", tool_calls=response.tool_calls),
        Message(Role.TOOL, result.content, tool_result=ToolResult(tc.id, tc.name, result.content)),
    ]
    final = graph.chat(messages)
    assert final.content == "The weather in London is 16°C and cloudy."
    assert "16°C, cloudy in London" in str(provider.sent())
    assert len(graph.tokens) == 2


# ---------------------------------------------------------------------------- streams
def test_stream_text_and_usage_recorded_after_exhaustion(provider: Provider) -> None:
    provider.wire.reply(
        ScriptedReply("Once upon a time, there was a library.", usage=TokenUsage(40, 12))
    )
    llm = provider.llm()
    pieces = []
    for piece in llm.stream("Write a story"):
        pieces.append(piece)
        assert len(llm.tokens) == 0
    assert "".join(pieces) == "Once upon a time, there was a library."
    assert len(pieces) >= 3
    assert llm.tokens.records[0].usage.input_tokens == 40
    assert llm.tokens.records[0].usage.output_tokens == 12
    if provider.name == "openai":
        assert provider.sent()["stream_options"] == {"include_usage": True}


def test_stream_tolerates_tool_call_deltas_split_across_chunks(provider: Provider) -> None:
    provider.wire.reply(
        ScriptedReply(
            "Checking.",
            tool_calls=[ToolCall("call_9", "get_weather", {"city": "A very long city name"})],
            usage=TokenUsage(5, 6),
        )
    )
    llm = provider.llm()
    assert "".join(llm.stream("go")) == "Checking."
    assert llm.tokens.total_usage == TokenUsage(5, 6)


def test_async_chat_and_stream(provider: Provider) -> None:
    provider.wire.reply(
        ScriptedReply("async hello", usage=TokenUsage(3, 2)),
        ScriptedReply("async stream text", usage=TokenUsage(4, 5)),
    )
    llm = provider.llm()

    async def run() -> tuple[str, str]:
        r = await llm.achat("Hi")
        text = "".join([p async for p in llm.astream("story")])
        await llm.aclose()
        return r.content, text

    assert asyncio.run(run()) == ("async hello", "async stream text")
    assert llm.tokens.total_usage == TokenUsage(7, 7)


# ---------------------------------------------------------------------------- structured output
class City(BaseModel):
    name: str
    population: int


def test_structured_output(provider: Provider) -> None:
    payload = '{"name": "Paris", "population": 2100000}'
    if provider.name == "anthropic":  # a forced tool call carries the object
        provider.wire.reply(
            ScriptedReply(
                tool_calls=[ToolCall("toolu_1", "City", {"name": "Paris", "population": 2100000})]
            )
        )
    else:
        provider.wire.reply(payload)
    city = provider.llm().chat_structured("Biggest French city?", City)
    assert city == City(name="Paris", population=2100000)
    body = provider.sent()
    if provider.name == "openai":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == "City"
    elif provider.name == "anthropic":
        assert body["tool_choice"] == {"type": "tool", "name": "City"}
        assert body["tools"][-1]["input_schema"]["required"] == ["name", "population"]
    elif provider.name == "gemini":
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert "responseSchema" in body["generationConfig"]
    else:
        assert body["format"]["required"] == ["name", "population"]


def test_invalid_structured_output_keeps_raw_text(provider: Provider) -> None:
    if provider.name == "anthropic":
        provider.wire.reply(ScriptedReply(tool_calls=[ToolCall("t", "City", {"name": "Paris"})]))
    else:
        provider.wire.reply('{"name": "Paris", "population": "many"')
    with pytest.raises(StructuredOutputError) as info:
        provider.llm().chat_structured("q", City)
    assert "Paris" in info.value.raw


# ---------------------------------------------------------------------------- errors
def test_401_is_authentication_error_without_the_key(provider: Provider) -> None:
    provider.wire.fail(401, f"Incorrect API key provided: {SECRET}")
    with pytest.raises(AuthenticationError) as info:
        provider.llm().chat("Hi")
    assert SECRET not in str(info.value)
    assert info.value.__cause__ is not None
    assert info.value.status_code == 401


def test_429_is_rate_limit_with_retry_after(provider: Provider) -> None:
    provider.wire.fail(429, "slow down", headers={"retry-after": "2"})
    with pytest.raises(RateLimitError) as info:
        provider.llm().chat("Hi")
    if provider.name in ("openai", "anthropic"):
        assert info.value.retry_after == 2.0


def test_500_is_provider_unavailable(provider: Provider) -> None:
    provider.wire.fail(500, "internal")
    with pytest.raises(ProviderUnavailableError):
        provider.llm().chat("Hi")


def test_timeout(provider: Provider) -> None:
    provider.wire.stall(3.0)
    with pytest.raises(ProviderTimeoutError):
        provider.llm(timeout=0.5).chat("Hi")


def test_unreachable_server_is_provider_unavailable(provider: Provider) -> None:
    llm = provider.llm(timeout=2.0)
    provider.wire.stop()
    with pytest.raises(ProviderUnavailableError):
        llm.chat("Hi")


def test_reprs_show_no_secret(provider: Provider) -> None:
    llm = provider.llm()
    assert SECRET not in repr(llm)
    assert SECRET not in repr(llm.chat_model)


# ---------------------------------------------------------------------------- configuration
ENV = {
    "openai": {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "{base}"},
    "anthropic": {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "{url}"},
    "gemini": {"GOOGLE_API_KEY": SECRET, "GOOGLE_GEMINI_BASE_URL": "{url}"},
    "ollama": {"OLLAMA_HOST": "{url}"},
}


def test_sdk_environment_variables_work_unchanged(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in ENV[provider.name].items():
        monkeypatch.setenv(key, value.format(base=provider.wire.base_url, url=provider.wire.url))
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    provider.wire.reply("from env")
    with LLM(provider=provider.name, model=provider.model) as llm:
        assert llm.chat("Hi").content == "from env"
    if provider.name != "ollama":
        sent = list(provider.wire.chat_requests())[-1].headers
        assert SECRET in (
            sent.get("authorization", "")
            + sent.get("x-api-key", "")
            + sent.get("x-goog-api-key", "")
        )


@pytest.mark.parametrize(
    ("name", "env"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GOOGLE_API_KEY"),
    ],
)
def test_missing_api_key_is_a_configuration_error(
    name: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
    ):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigurationError, match=env):
        LLM(provider=name)


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [
        ("openai", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic"),
        ("gemini", "google.genai", "gemini"),
        ("ollama", "ollama", "ollama"),
    ],
)
def test_missing_sdk_names_the_extra(
    name: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, module, None)
    # The adapter imports its SDK at the top: load it afresh, as a process without the SDK would.
    monkeypatch.delitem(sys.modules, f"pywrapai_graph.adapters.llm.{name}", raising=False)
    with pytest.raises(MissingExtraError, match=rf"pywrapai-graph\[{extra}\]"):
        LLM(provider=name, api_key="k")


def test_an_echoed_key_is_nowhere_in_the_traceback_or_log(
    provider: Provider, caplog: pytest.LogCaptureFixture
) -> None:
    odd_key = "not-shaped-like-a-key-4242"  # only known-secret masking can catch this one
    provider.wire.fail(401, f"Incorrect API key provided: {SECRET} / {odd_key}")
    llm = provider.llm(api_key=odd_key)
    with pytest.raises(AuthenticationError) as info:
        llm.chat("Hi")
    text = "".join(traceback.format_exception(info.value))
    with caplog.at_level(logging.ERROR):
        try:
            raise info.value
        except AuthenticationError:
            logging.getLogger("test").exception("provider failed")
    cause = info.value.__cause__
    chain = []
    while cause is not None:
        chain.append(str(cause))
        cause = cause.__cause__
    for shown in (text, caplog.text, *chain):
        assert odd_key not in shown
        assert SECRET not in shown
    assert "Incorrect API key provided" in text  # the message survives, redacted


def test_async_clients_are_safe_across_event_loops(provider: Provider) -> None:
    """Repeated asyncio.run and a loop in another thread each get their own async client."""
    llm = provider.llm()
    provider.wire.reply("first", "second", "third", "fourth")

    async def ask() -> str:
        return (await llm.achat("Hi")).content

    async def ask_stream() -> str:
        return "".join([piece async for piece in llm.astream("Hi")])

    assert asyncio.run(ask()) == "first"
    assert asyncio.run(ask()) == "second"  # a new loop: no "Event loop is closed"
    in_thread: list[str] = []
    thread = threading.Thread(target=lambda: in_thread.append(asyncio.run(ask_stream())))
    thread.start()
    thread.join()
    assert in_thread == ["third"]

    async def ask_and_close() -> str:
        answer = await ask()
        await llm.aclose()
        return answer

    assert asyncio.run(ask_and_close()) == "fourth"
