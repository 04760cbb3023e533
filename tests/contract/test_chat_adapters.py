"""The four chat adapters, each through its official SDK over real HTTP to a local wire server.

The behaviour every adapter shares is the shipped :class:`ChatModelContract` (one subclass
per provider below); this module adds what is provider-specific: the exact wire format
each one sends, and configuration through ``LLM(provider=...)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph.domain import GenerationParams, UnsupportedParameterWarning
from pywrapai_graph.errors import (
    ConfigurationError,
    MissingExtraError,
    ResponseFormatError,
)
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import (
    SECRET,
    ChatModelContract,
    City,
    tool_registry,
)
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer


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
        provider.llm().chat("q", tools=tool_registry().to_schema(), tool_choice=choice)
    body = provider.sent()
    if provider.name == "openai":
        assert body["tools"] == tool_registry().to_openai_schema()
        expected: Any = (
            choice
            if choice != "search_docs"
            else {"type": "function", "function": {"name": "search_docs"}}
        )
        assert body["tool_choice"] == expected
    elif provider.name == "anthropic":
        assert body["tools"] == tool_registry().to_anthropic_schema()
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
            llm.chat("q", tools=tool_registry().to_schema())
        assert info.value.raw == '{"city": "Lon'


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


# ---------------------------------------------------------------------------- structured output
def test_structured_output(provider: Provider) -> None:
    provider.wire.reply('{"name": "Paris", "population": 2100000}')
    city = provider.llm().chat_structured("Biggest French city?", City)
    assert city == City(name="Paris", population=2100000)
    body = provider.sent()
    if provider.name == "openai":
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == "City"
        assert body["response_format"]["json_schema"]["strict"] is True
    elif provider.name == "anthropic":  # native structured outputs, no tool
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert body["output_config"]["format"]["schema"]["additionalProperties"] is False
        assert "tools" not in body and "tool_choice" not in body
    elif provider.name == "gemini":
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert "responseSchema" in body["generationConfig"]
    else:
        assert body["format"]["required"] == ["name", "population"]


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


# ---------------------------------------------------------------------------- the contract
def _options(options: dict[str, Any]) -> dict[str, Any]:
    return {"api_key": SECRET, "timeout": 5.0, "max_retries": 0, **options}


class TestOpenAIChatModel(ChatModelContract):
    model = "gpt-4o-mini"

    def wire_server(self) -> WireServer:
        return OpenAIWire()

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        from pywrapai_graph.adapters.llm.openai import OpenAIChatModel

        return OpenAIChatModel(self.model, base_url=wire.base_url, **_options(options))


class TestAnthropicChatModel(ChatModelContract):
    model = "claude-haiku-4-5-20251001"

    def wire_server(self) -> WireServer:
        return AnthropicWire()

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        from pywrapai_graph.adapters.llm.anthropic import AnthropicChatModel

        return AnthropicChatModel(self.model, base_url=wire.url, **_options(options))


class TestGeminiChatModel(ChatModelContract):
    model = "gemini-2.5-flash"
    retry_after = False

    def wire_server(self) -> WireServer:
        return GeminiWire()

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        from pywrapai_graph.adapters.llm.gemini import GeminiChatModel

        return GeminiChatModel(self.model, base_url=wire.url, **_options(options))


class TestOllamaChatModel(ChatModelContract):
    model = "llama3.2"
    priced = False
    tool_call_ids = False
    retry_after = False

    def wire_server(self) -> WireServer:
        return OllamaWire()

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        from pywrapai_graph.adapters.llm.ollama import OllamaChatModel

        return OllamaChatModel(self.model, base_url=wire.url, **_options(options))


def _unsampled() -> set[str]:
    import inspect

    import anthropic

    accepted = inspect.signature(anthropic.Anthropic(api_key="x").messages.create).parameters
    return {p for p in ("temperature", "top_p") if p not in accepted}


UNSAMPLED = _unsampled()

WIRE_NAMES: dict[str, Callable[[Any], dict[str, Any]]] = {
    # where each provider's generation parameters travel, under its own field names
    "openai": lambda body: {
        k: body.get(k) for k in ("max_completion_tokens", "temperature", "top_p", "stop", "seed")
    },
    "anthropic": lambda body: {
        k: body.get(k) for k in ("max_tokens", "temperature", "top_p", "stop_sequences", "seed")
    },
    "gemini": lambda body: {
        k: body["generationConfig"].get(k)
        for k in ("maxOutputTokens", "temperature", "topP", "stopSequences", "seed")
    },
    "ollama": lambda body: {
        k: body["options"].get(k) for k in ("num_predict", "temperature", "top_p", "stop", "seed")
    },
}


FIRST = {"openai": "max_completion_tokens", "anthropic": "max_tokens"}
FIRST |= {"gemini": "maxOutputTokens", "ollama": "num_predict"}


def test_generation_parameters_reach_the_wire_under_each_providers_names(
    provider: Provider,
) -> None:
    llm = provider.llm(generation=GenerationParams(max_tokens=99, temperature=1.5))
    provider.wire.reply("one", "two", "three")
    # the Messages API has no seed, and the installed anthropic SDK no temperature/top_p
    unsupported = {"seed", *UNSAMPLED} if provider.name == "anthropic" else set()

    def expected(values: dict[str, Any]) -> list[Any]:
        return [None if k in unsupported else v for k, v in values.items()]

    def warns() -> contextlib.AbstractContextManager[object]:
        if unsupported:
            return pytest.warns(UnsupportedParameterWarning, match="not sent")
        return contextlib.nullcontext()

    with warns():
        llm.chat("Hi", max_tokens=7, temperature=0.25, top_p=0.5, stop=["END"], seed=42)
    sent = list(WIRE_NAMES[provider.name](provider.sent()).values())
    assert sent == expected(
        {"max_tokens": 7, "temperature": 0.25, "top_p": 0.5, "stop": ["END"], "seed": 42}
    )
    # the configured defaults apply when a call sets nothing; a call's own values win
    with warns():
        "".join(llm.stream("Hi", top_p=0.75))
    sent = list(WIRE_NAMES[provider.name](provider.sent()).values())
    assert sent == expected(
        {"max_tokens": 99, "temperature": 1.5, "top_p": 0.75, "stop": None, "seed": None}
    )
    with warns():
        asyncio.run(llm.achat("Hi", max_tokens=3))
    assert WIRE_NAMES[provider.name](provider.sent())[FIRST[provider.name]] == 3


def test_bad_generation_parameters_are_refused_before_any_request(provider: Provider) -> None:
    llm = provider.llm()
    for bad, match in [
        ({"max_tokens": 0}, "max_tokens"),
        ({"temperature": 3.0}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"stop": "END"}, "stop"),
        ({"seed": 1.5}, "seed"),
    ]:
        with pytest.raises(ConfigurationError, match=match):
            llm.chat("Hi", **bad)  # type: ignore[arg-type]
    assert provider.wire.requests == []
