"""``extra=``: provider-specific request fields through every entry point, each provider's
official SDK over real HTTP to its local wire server; the recorded body is what the SDK sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pywrapai import LLM
from pywrapai_graph import GraphLLM
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireServer


@dataclass(frozen=True)
class Case:
    """One provider: its wire server, the extra= a caller passes and what the body must hold."""

    make: Callable[[], WireServer]
    extra: Mapping[str, object]
    sent: Mapping[str, object]


CASES = {
    # a keyword the SDK names (user, service_tier), a field it does not (top_k: extra_body),
    # and the SDK's own escape hatch merged with them
    "openai": Case(
        OpenAIWire,
        {"user": "u-42", "service_tier": "flex", "top_k": 3, "extra_body": {"guided_regex": "a+"}},
        {"user": "u-42", "service_tier": "flex", "top_k": 3, "guided_regex": "a+"},
    ),
    "anthropic": Case(
        AnthropicWire,
        {"metadata": {"user_id": "u-42"}, "service_tier": "auto", "top_k": 3},
        {"metadata": {"user_id": "u-42"}, "service_tier": "auto", "top_k": 3},
    ),
    # config fields (labels, top_k in generationConfig) and a body field the config lacks
    "gemini": Case(
        GeminiWire,
        {"labels": {"team": "search"}, "top_k": 3, "extra_body": {"cachedContent": "c/1"}},
        {"labels": {"team": "search"}, "generationConfig": {"topK": 3}, "cachedContent": "c/1"},
    ),
    # keywords of Client.chat (keep_alive, think); other keys are model options
    "ollama": Case(
        OllamaWire,
        {"keep_alive": "5m", "think": False, "num_ctx": 4096, "options": {"top_k": 3}},
        {"keep_alive": "5m", "think": False, "options": {"num_ctx": 4096, "top_k": 3}},
    ),
}


@dataclass
class Provider:
    name: str
    wire: WireServer
    case: Case
    llm: LLM

    def body(self) -> dict[str, Any]:
        requests = list(self.wire.chat_requests())
        assert len(requests) == 1
        body: dict[str, Any] = requests[0].json
        return body


@pytest.fixture(params=list(CASES))
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    name: str = request.param
    case = CASES[name]
    with case.make() as wire:
        options: dict[str, Any] = {"timeout": 5.0, "max_retries": 0}
        options["base_url"] = wire.base_url if name == "openai" else wire.url
        if name != "ollama":
            options["api_key"] = SECRET
        llm = LLM(provider=name, **options)
        yield Provider(name, wire, case, llm)
        llm.close()


def _run(entry: str, target: LLM | GraphLLM, extra: Mapping[str, object]) -> str:
    if entry == "chat":
        return target.chat("Hi", extra=extra).content
    if entry == "stream":
        return target.stream("Hi", extra=extra).text()

    async def call() -> str:
        try:
            if entry == "achat":
                return (await target.achat("Hi", extra=extra)).content
            return await target.astream("Hi", extra=extra).text()
        finally:
            llm = target if isinstance(target, LLM) else target.llm
            await llm.aclose()  # this loop's client, before the loop closes

    return asyncio.run(call())


def _holds(body: Mapping[str, Any], expected: Mapping[str, object]) -> None:
    for key, value in expected.items():
        if isinstance(value, Mapping):
            _holds(body[key], value)
        else:
            assert body[key] == value, key


@pytest.mark.parametrize("facade", ["LLM", "GraphLLM"])
@pytest.mark.parametrize("entry", ["chat", "achat", "stream", "astream"])
def test_extra_fields_reach_the_request_body(provider: Provider, entry: str, facade: str) -> None:
    provider.wire.reply("ok")
    target = provider.llm if facade == "LLM" else GraphLLM(llm=provider.llm)
    assert _run(entry, target, provider.case.extra) == "ok"
    body = provider.body()
    _holds(body, provider.case.sent)
    assert "extra_body" not in body  # the escape hatch is the SDK's, never sent as a field


def test_without_extra_the_body_is_unchanged(provider: Provider) -> None:
    provider.wire.reply("ok", "ok")
    provider.llm.chat("Hi")
    provider.llm.chat("Hi", extra={})
    first, second = (r.json for r in provider.wire.chat_requests())
    assert first == second
    extra_keys = {k for k in provider.case.sent if k not in ("options", "generationConfig")}
    assert not extra_keys & set(first)


OWNED = {
    "openai": ["model", "messages", "temperature", "max_completion_tokens", "stream_options"],
    "anthropic": ["model", "messages", "max_tokens", "system", "stop_sequences"],
    "gemini": ["model", "contents", "system_instruction", "max_output_tokens", "http_options"],
    "ollama": ["model", "messages", "format", "num_predict", "temperature"],
}


@pytest.mark.parametrize("entry", ["chat", "achat", "stream", "astream"])
def test_a_field_the_library_sets_is_refused_before_anything_is_sent(
    provider: Provider, entry: str
) -> None:
    for key in OWNED[provider.name]:
        with pytest.raises(InvalidArgumentError, match=f"extra={{'{key}'") as info:
            _run(entry, GraphLLM(llm=provider.llm), {key: "x"})
        assert "instead" in str(info.value)
    assert list(provider.wire.chat_requests()) == []


def test_the_refusal_names_the_argument_to_use(provider: Provider) -> None:
    with pytest.raises(InvalidArgumentError, match=r"use temperature= instead"):
        provider.llm.chat("Hi", extra={"temperature": 0.2})
    with pytest.raises(InvalidArgumentError, match=r"use LLM\(model=\.\.\.\) instead"):
        provider.llm.stream("Hi", extra={"model": "other"})  # at the call, not on iteration


def test_the_sdk_escape_hatch_cannot_smuggle_an_owned_field() -> None:
    with OpenAIWire() as wire:
        llm = LLM(provider="openai", api_key=SECRET, base_url=wire.base_url, max_retries=0)
        with pytest.raises(InvalidArgumentError, match="'messages'"):
            llm.chat("Hi", extra={"extra_body": {"messages": []}})
        with pytest.raises(InvalidArgumentError, match="'top_k' twice"):
            llm.chat("Hi", extra={"top_k": 1, "extra_body": {"top_k": 2}})
        with pytest.raises(ArgumentTypeError, match="must be a mapping"):
            llm.chat("Hi", extra={"extra_body": ["top_k", 2]})
        assert list(wire.chat_requests()) == []


def test_ollama_options_from_extra_never_override_generation_arguments() -> None:
    with OllamaWire() as wire:
        wire.reply("ok")
        with LLM(provider="ollama", base_url=wire.url, max_retries=0) as llm:
            with pytest.raises(InvalidArgumentError, match="use max_tokens= instead"):
                llm.chat("Hi", extra={"options": {"num_predict": 5}})
            llm.chat("Hi", max_tokens=7, extra={"options": {"num_ctx": 2048}})
        (sent,) = wire.chat_requests()
        assert sent.json["options"] == {"num_predict": 7, "num_ctx": 2048}


@pytest.mark.parametrize("bad", [["user", "u-1"], "user=u-1", {1: "x"}])
def test_extra_must_be_a_mapping_of_names(bad: Any) -> None:
    with OpenAIWire() as wire:
        llm = LLM(provider="openai", api_key=SECRET, base_url=wire.base_url, max_retries=0)
        with pytest.raises(ArgumentTypeError, match="extra="):
            llm.chat("Hi", extra=bad)
        with pytest.raises(ArgumentTypeError, match="extra="):
            GraphLLM(llm=llm).stream("Hi", extra=bad)
        assert list(wire.chat_requests()) == []
