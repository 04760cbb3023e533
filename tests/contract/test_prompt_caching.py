"""Prompt caching. Anthropic: ``cache_control`` breakpoints on the tools, the system prompt and
the stable history where the prefix reaches the model's minimum (at most four), none with
``prompt_cache="off"``; the exact request bodies on the wire server. OpenAI, Anthropic and
Gemini: cached tokens the provider reports reach the ledger at the cache rates, so a second
identical request costs less."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pywrapai import LLM, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph import GraphLLM, TokenTracker
from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.composition.factories import make_llm
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OpenAIWire
from pywrapai_graph.testing.wire.server import RecordedRequest, WireServer
from tests.contract.open_clients import opened

MARK = {"type": "ephemeral"}
# about 5,000 tokens at 4 characters a token: above every model's minimum
LONG_PROMPT = "You answer questions about our refund policy. " * 440
SHORT_PROMPT = "You are helpful."
TOOL = {
    "name": "lookup",
    "description": "Look an order up. " * 10,
    "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
}
HISTORY = [Message(Role.USER, "Hi, I have a question."), Message(Role.ASSISTANT, "Sure, ask.")]


def _llm(wire: WireServer, provider: str = "anthropic", **options: Any) -> LLM:
    url = wire.base_url if provider == "openai" else wire.url
    return opened(LLM(provider=provider, api_key=SECRET, base_url=url, max_retries=0, **options))


def _body(wire: WireServer, index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = list(wire.chat_requests())[index].json
    return body


def _marks(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


def test_auto_marks_tools_system_and_the_end_of_the_history() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok")
        graph = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT))
        graph.chat("Can I return shoes?", history=HISTORY, tools=[TOOL])
        body = _body(wire)
    assert body["system"] == [{"type": "text", "text": LONG_PROMPT, "cache_control": MARK}]
    # the tools alone are below the minimum: no breakpoint of their own
    assert "cache_control" not in body["tools"][0]
    assert body["messages"] == [
        {"role": "user", "content": "Hi, I have a question."},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Sure, ask.", "cache_control": MARK}],
        },
        {"role": "user", "content": "Can I return shoes?"},  # the current turn: never marked
    ]
    assert _marks(body) == 2


def test_long_tools_get_their_own_breakpoint_and_never_more_than_four() -> None:
    tools = [{**TOOL, "name": f"lookup_{i}", "description": "Look up. " * 700} for i in range(3)]
    with AnthropicWire() as wire:
        wire.reply("ok")
        graph = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT))
        graph.chat("Return?", history=HISTORY, tools=tools)
        body = _body(wire)
    assert [t.get("cache_control") for t in body["tools"]] == [None, None, MARK]
    assert body["system"][0]["cache_control"] == MARK
    assert body["messages"][1]["content"][-1]["cache_control"] == MARK
    assert _marks(body) == 3  # of the four a request may carry


def test_short_prefixes_and_off_send_the_plain_body() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok", "ok", "ok")
        short = GraphLLM(llm=_llm(wire, system_prompt=SHORT_PROMPT))
        short.chat("Return?", history=HISTORY, tools=[TOOL])
        off = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT, prompt_cache="off"))
        off.chat("Return?", history=HISTORY, tools=[TOOL])
        assert _marks(_body(wire, 0)) == 0 and _body(wire, 0)["system"] == SHORT_PROMPT
        assert _marks(_body(wire, 1)) == 0 and _body(wire, 1)["system"] == LONG_PROMPT


def test_the_minimum_is_the_models() -> None:
    # about 1,500 tokens: above Sonnet 4.5's 1,024, below Haiku 4.5's 4,096
    prompt = "You answer questions about our refund policy. " * 130
    with AnthropicWire() as wire:
        wire.reply("ok", "ok")
        _llm(wire, model="claude-sonnet-4-5", system_prompt=prompt).chat("Return?")
        _llm(wire, model="claude-haiku-4-5", system_prompt=prompt).chat("Return?")
        assert _body(wire, 0)["system"][0]["cache_control"] == MARK
        assert _body(wire, 1)["system"] == prompt


def test_an_agent_turn_marks_everything_before_the_latest_tool_results() -> None:
    call = ToolCall("t1", "lookup", {"order": "42"})
    messages = [
        Message(Role.USER, "Where is order 42?"),
        Message(Role.ASSISTANT, "", tool_calls=[call]),
        Message(Role.TOOL, "shipped", tool_result=ToolResult("t1", "lookup", "shipped")),
    ]
    with AnthropicWire() as wire:
        wire.reply("It shipped.")
        asyncio.run(_achat(_llm(wire, system_prompt=LONG_PROMPT), messages))
        body = _body(wire)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "t1",
                "name": "lookup",
                "input": {"order": "42"},
                "cache_control": MARK,
            }
        ],
    }
    assert "cache_control" not in json.dumps(body["messages"][2])


async def _achat(llm: LLM, messages: list[Message]) -> None:
    try:
        await llm.achat(messages)
    finally:
        await llm.aclose()


def test_streams_carry_the_same_breakpoints() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok", "ok")
        graph = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT))
        graph.chat("Return?", history=HISTORY)
        assert graph.stream("Return?", history=HISTORY).text() == "ok"
        first, second = (r.json for r in wire.chat_requests())
    assert first["system"] == second["system"] and _marks(second) == 2


def test_a_bad_mode_is_refused() -> None:
    with AnthropicWire() as wire, pytest.raises(InvalidArgumentError, match="prompt_cache"):
        _llm(wire, prompt_cache="always")


# ------------------------------------------------------------------ what the cache saves


def _blocks(body: dict[str, Any]) -> list[Any]:
    """The request's blocks in Anthropic's cache order: tools, system, message blocks."""
    system = body.get("system") or []
    blocks: list[Any] = list(body.get("tools") or [])
    blocks += [{"type": "text", "text": system}] if isinstance(system, str) else system
    for turn in body["messages"]:
        content = turn["content"]
        blocks += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return blocks


class _AnthropicCache:
    """Answers like Anthropic's prompt cache: the prefix up to each breakpoint is written on
    first sight and read afterwards; tokens at 4 characters each."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        blocks = _blocks(request.json)
        plain = [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]
        total = estimate_tokens([json.dumps(plain)])
        read = write = 0
        for i, block in enumerate(blocks):
            if "cache_control" not in block:
                continue
            prefix = json.dumps(plain[: i + 1])
            tokens = estimate_tokens([prefix])
            if prefix in self.seen:
                read = tokens
            else:
                write = tokens - read
                self.seen.add(prefix)
        usage = TokenUsage(total, 20, cache_read_tokens=read, cache_write_tokens=write)
        return ScriptedReply("You can return them within 30 days.", usage=usage)


def test_a_second_identical_request_costs_less_on_anthropic() -> None:
    with AnthropicWire(responder=_AnthropicCache()) as wire:
        graph = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT))
        first = graph.chat("Can I return shoes?", history=HISTORY)
        second = graph.chat("Can I return shoes?", history=HISTORY)
        off = GraphLLM(llm=_llm(wire, system_prompt=LONG_PROMPT, prompt_cache="off"))
        plain = off.chat("Can I return shoes?", history=HISTORY)
    assert first.usage.cache_write_tokens > 0 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert plain.usage.cache_read_tokens == plain.usage.cache_write_tokens == 0
    # Haiku 4.5: $1/M input, $1.25/M cache write, $0.10/M cache read
    assert second.cost_usd < plain.cost_usd < first.cost_usd
    assert first.cost_usd + second.cost_usd < 2 * plain.cost_usd  # one reuse pays the write
    records = graph.llm.tokens.records
    assert [r.usage.cache_read_tokens for r in records] == [0, second.usage.cache_read_tokens]


CACHED = TokenUsage(10_000, 100, cache_read_tokens=8_000)
UNCACHED = TokenUsage(10_000, 100)


@pytest.mark.parametrize(
    ("provider", "make", "model", "cache_rate"),
    [
        ("openai", OpenAIWire, "gpt-4o-mini", 0.075),
        ("gemini", GeminiWire, "gemini-2.5-flash", 0.03),
    ],
)
def test_cached_tokens_reported_by_openai_and_gemini_are_priced_at_the_cache_rate(
    provider: str, make: type[WireServer], model: str, cache_rate: float
) -> None:
    with make() as wire:
        wire.reply(ScriptedReply("a", usage=UNCACHED), ScriptedReply("a", usage=CACHED))
        llm = _llm(wire, provider, model=model)
        first = llm.chat("Hi")
        second = llm.chat("Hi")
        streamed_usage = _stream_usage(wire, llm)
    assert second.usage.cache_read_tokens == 8_000 == streamed_usage.cache_read_tokens
    price = llm.tokens.prices.price_for(model)
    assert price is not None
    saved = 8_000 * (price.input - cache_rate) / 1e6
    assert second.cost_usd == pytest.approx(first.cost_usd - saved)
    assert [r.usage.cache_read_tokens for r in llm.tokens.records] == [0, 8_000, 8_000]


def _stream_usage(wire: WireServer, llm: LLM) -> TokenUsage:
    wire.reply(ScriptedReply("a", usage=CACHED))
    stream = llm.stream("Hi")
    stream.text()
    return stream.response.usage


def test_the_configuration_sets_the_mode_for_anthropic_only() -> None:
    with AnthropicWire() as wire:
        wire.reply("ok")
        settings = load_settings(
            {
                "llm": {
                    "provider": "anthropic",
                    "api_key": SECRET,
                    "base_url": wire.url,
                    "system_prompt": LONG_PROMPT,
                    "prompt_cache": "off",
                }
            }
        )
        llm = make_llm(settings, TokenTracker(), ())
        assert llm is not None
        opened(llm)
        llm.chat("Return?")
        assert _marks(_body(wire)) == 0
    with pytest.raises(ConfigurationError, match="applies to provider 'anthropic' only"):
        load_settings({"llm": {"provider": "openai", "prompt_cache": "auto"}})
    fallback = {"provider": "gemini", "prompt_cache": "off"}
    with pytest.raises(ConfigurationError, match="applies to provider 'anthropic' only"):
        load_settings({"llm": {"provider": "openai", "fallbacks": [fallback]}})


def test_a_configured_anthropic_fallback_takes_its_own_mode() -> None:
    with OpenAIWire() as primary, AnthropicWire() as backup:
        primary.fail(429, "slow down")
        backup.reply("from the backup")
        fallback = {
            "provider": "anthropic",
            "api_key": SECRET,
            "base_url": backup.url,
            "max_retries": 0,
            "prompt_cache": "off",
        }
        settings = load_settings(
            {
                "llm": {
                    "provider": "openai",
                    "api_key": SECRET,
                    "base_url": primary.base_url,
                    "max_retries": 0,
                    "system_prompt": LONG_PROMPT,
                    "fallbacks": [fallback],
                }
            }
        )
        llm = make_llm(settings, TokenTracker(), ())
        assert llm is not None
        assert opened(llm).chat("Return?").content == "from the backup"
        assert _marks(_body(backup)) == 0
        assert _body(backup)["system"] == LONG_PROMPT
