"""OpenAI's Responses API mode, through the official SDK over real HTTP to a local server of
its wire format: the shared chat-model contract, then the request bodies the SDK sends
(input items, call ids, tools, ``text.format``), usage with reasoning tokens, reasoning items
kept across an agent's tool turn, and configuration."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pywrapai import LLM, LLMResponse, Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph import Agent, GraphLLM
from pywrapai_graph.adapters.llm.openai_responses import OpenAIResponsesChatModel
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.composition.factories import make_llm
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.domain import (
    DocumentPart,
    ImagePart,
    ReasoningPart,
    ToolCallDelta,
    UnsupportedParameterWarning,
)
from pywrapai_graph.errors import (
    BadRequestError,
    ConfigurationError,
    IncompleteStreamError,
    InvalidArgumentError,
    ProviderUnavailableError,
)
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import (
    SECRET,
    ChatModelContract,
    City,
    tool_registry,
)
from pywrapai_graph.testing.wire import OpenAIResponsesWire
from pywrapai_graph.testing.wire.responses import SUMMARY
from pywrapai_graph.testing.wire.server import WireServer

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x02\x00\x00\x00\x03\x08\x02\x00\x00\x00"
    b"\x00\x00\x00\x00"
)
REASONING = TokenUsage(100, 40, cache_read_tokens=64, reasoning_tokens=32)


class TestOpenAIResponsesChatModel(ChatModelContract):
    model = "o4-mini"

    def wire_server(self) -> WireServer:
        return OpenAIResponsesWire()

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        given = {"api_key": SECRET, "timeout": 5.0, "max_retries": 0, **options}
        return OpenAIResponsesChatModel(self.model, base_url=wire.base_url, **given)


@pytest.fixture
def wire() -> Iterator[OpenAIResponsesWire]:
    with OpenAIResponsesWire() as server:
        yield server


def _llm(wire: OpenAIResponsesWire, model: str = "o4-mini", **options: Any) -> LLM:
    return LLM(
        provider="openai",
        api="responses",
        model=model,
        api_key=SECRET,
        base_url=wire.base_url,
        max_retries=0,
        **options,
    )


def _sent(wire: OpenAIResponsesWire, index: int = -1) -> Any:
    return list(wire.chat_requests())[index].json


# ---------------------------------------------------------------------------- request body
def test_messages_become_instructions_and_input_items(wire: OpenAIResponsesWire) -> None:
    wire.reply("ok")
    pdf = DocumentPart.from_bytes(b"%PDF-1.4 one page", "q3.pdf")
    history = [
        Message(Role.SYSTEM, "Be brief."),
        Message(Role.USER, "What is this?", parts=[ImagePart.from_bytes(PNG), pdf]),
        Message(Role.ASSISTANT, "A chart.", tool_calls=[ToolCall("call_a", "lookup", {"q": 1})]),
        Message(Role.TOOL, "42", tool_result=ToolResult("call_a", "lookup", "42")),
    ]
    with _llm(wire, "gpt-4o-mini", default_max_tokens=300) as llm:
        llm.chat(history)
    body = _sent(wire)
    assert body["instructions"] == "Be brief."
    assert body["store"] is False
    assert body["max_output_tokens"] == 300
    assert "include" not in body  # gpt-4o-mini does not reason: encrypted reasoning is a 400
    user, assistant, call, output = body["input"]
    assert user["role"] == "user"
    assert user["content"][0] == {"type": "input_text", "text": "What is this?"}
    assert user["content"][1]["type"] == "input_image"
    assert user["content"][1]["image_url"].startswith("data:image/png;base64,")
    assert user["content"][2]["type"] == "input_file"
    assert user["content"][2]["filename"] == "q3.pdf"
    assert user["content"][2]["file_data"].startswith("data:application/pdf;base64,")
    assert assistant == {"role": "assistant", "content": "A chart."}
    assert call == {
        "type": "function_call",
        "call_id": "call_a",
        "name": "lookup",
        "arguments": '{"q": 1}',
    }
    assert output == {"type": "function_call_output", "call_id": "call_a", "output": "42"}


@pytest.mark.parametrize(
    ("model", "asked"),
    [("o4-mini", True), ("gpt-5-mini", True), ("gpt-5-chat-latest", False), ("gpt-4.1", False)],
)
def test_only_reasoning_models_are_asked_for_encrypted_reasoning(
    wire: OpenAIResponsesWire, model: str, asked: bool
) -> None:
    wire.reply("ok")
    with _llm(wire, model) as llm:
        llm.chat("q")
    assert ("include" in _sent(wire)) is asked


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("search_docs", {"type": "function", "name": "search_docs"}),
    ],
)
def test_function_tools_and_tool_choice(wire: OpenAIResponsesWire, choice: str, sent: Any) -> None:
    wire.reply("ok")
    with _llm(wire) as llm:
        llm.chat("q", tools=tool_registry().to_schema(), tool_choice=choice)
    body = _sent(wire)
    expected = [
        {"type": "function", **t["function"], "strict": False}
        for t in tool_registry().to_openai_schema()
    ]
    assert body["tools"] == expected
    assert body["tools"][1]["name"] == "search_docs"
    assert body["tool_choice"] == sent


def test_structured_output_is_a_strict_json_schema(wire: OpenAIResponsesWire) -> None:
    class Trip(BaseModel):
        city: City
        nights: int = 2

    wire.reply('{"city": {"name": "Paris", "population": 2100000}, "nights": 3}')
    with _llm(wire) as llm:
        trip = llm.chat_structured("Plan a trip", Trip)
    assert trip == Trip(city=City(name="Paris", population=2100000), nights=3)
    fmt = _sent(wire)["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "Trip", True)
    assert fmt["schema"]["required"] == ["city", "nights"]  # strict: every field required
    assert fmt["schema"]["additionalProperties"] is False
    assert fmt["schema"]["$defs"]["City"]["additionalProperties"] is False
    assert "default" not in fmt["schema"]["properties"]["nights"]  # strict mode refuses it


def test_a_schema_with_free_form_objects_is_sent_unconstrained(
    wire: OpenAIResponsesWire,
) -> None:
    class Tags(BaseModel):
        counts: dict[str, int]

    wire.reply('{"counts": {"a": 1}}')
    with _llm(wire) as llm:
        assert llm.chat_structured("Count", Tags) == Tags(counts={"a": 1})
    fmt = _sent(wire)["text"]["format"]
    assert fmt["strict"] is False
    assert fmt["schema"] == Tags.model_json_schema()


def test_extra_fields_pass_and_owned_ones_are_refused(wire: OpenAIResponsesWire) -> None:
    wire.reply("ok")
    extra = {"store": True, "previous_response_id": "resp_0001", "reasoning": {"effort": "low"}}
    with _llm(wire) as llm:
        llm.chat("next", extra=extra)
        with pytest.raises(InvalidArgumentError, match="max_tokens="):
            llm.chat("x", extra={"max_output_tokens": 5})
    body = _sent(wire)
    assert (body["store"], body["previous_response_id"]) == (True, "resp_0001")
    assert body["reasoning"] == {"effort": "low"}


def test_stop_and_seed_are_warned_about_not_sent(wire: OpenAIResponsesWire) -> None:
    wire.reply("ok")
    with _llm(wire) as llm, pytest.warns(UnsupportedParameterWarning, match="seed, stop"):
        llm.chat("x", stop=["END"], seed=7)
    assert "stop" not in _sent(wire) and "seed" not in _sent(wire)


# ---------------------------------------------------------------------------- usage, stream
def test_usage_with_reasoning_and_cached_tokens(wire: OpenAIResponsesWire) -> None:
    wire.reply(ScriptedReply("Paris.", usage=REASONING))
    with _llm(wire) as llm:
        response = llm.chat("Capital of France?")
        assert response.usage == REASONING
        assert response.finish_reason == "completed"
        [record] = llm.tokens.records
    price = llm.tokens.prices.price_for("o4-mini")
    assert price is not None and record.cost_usd == pytest.approx(price.cost(REASONING))


def test_stream_reads_text_deltas_and_the_completed_usage(wire: OpenAIResponsesWire) -> None:
    call = ToolCall("call_s", "get_weather", {"city": "Oslo"})
    wire.reply(ScriptedReply("It is sunny in Oslo.", tool_calls=[call], usage=REASONING))
    with _llm(wire) as llm:
        stream = llm.stream("Weather?")
        pieces = list(stream)
        assert "".join(pieces) == "It is sunny in Oslo." and len(pieces) == 3
        assert stream.response.usage == REASONING
        assert llm.tokens.total_usage == REASONING
    assert _sent(wire)["stream"] is True


def test_a_stream_keeps_its_reasoning_items_and_tool_calls(wire: OpenAIResponsesWire) -> None:
    call = ToolCall("call_s", "get_weather", {"city": "Oslo"})
    wire.reply(ScriptedReply(tool_calls=[call], usage=REASONING))
    with _llm(wire) as llm:
        stream = llm.stream_with_tools("Weather?", tools=tool_registry().to_schema())
        deltas = [e for e in stream.events() if isinstance(e, ToolCallDelta)]
        response = stream.response
    assert (deltas[0].index, deltas[0].id, deltas[0].name) == (0, "call_s", "get_weather")
    assert json.loads("".join(d.arguments for d in deltas)) == {"city": "Oslo"}
    assert list(response.tool_calls) == [call]
    (item,) = response.reasoning
    assert item.provider == "openai-responses" and item.signature == wire.issued[str(item.id)]


def test_the_wire_stream_is_the_sdks_typed_events(wire: OpenAIResponsesWire) -> None:
    import openai

    call = ToolCall("call_t", "get_weather", {"city": "Oslo"})
    wire.reply(ScriptedReply("Sunny.", tool_calls=[call], usage=REASONING))
    with openai.OpenAI(api_key=SECRET, base_url=wire.base_url) as client:
        events = list(client.responses.create(model="o4-mini", input="Hi", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    kinds = [type(e).__name__ for e in events]
    assert kinds[:3] == [
        "ResponseCreatedEvent",
        "ResponseInProgressEvent",
        "ResponseOutputItemAddedEvent",
    ]
    assert kinds[-1] == "ResponseCompletedEvent"
    for expected in (
        "ResponseReasoningSummaryTextDeltaEvent",
        "ResponseTextDeltaEvent",
        "ResponseFunctionCallArgumentsDeltaEvent",
        "ResponseOutputItemDoneEvent",
    ):
        assert expected in kinds


def test_a_cut_stream_is_incomplete(wire: OpenAIResponsesWire) -> None:
    wire.cut("A long answer that never finishes.", keep=5)
    with _llm(wire) as llm, pytest.raises(IncompleteStreamError, match=r"response\.completed"):
        list(llm.stream("Go"))


def test_a_failed_response_event_is_provider_unavailable(wire: OpenAIResponsesWire) -> None:
    failed = {
        "type": "response.failed",
        "sequence_number": 0,
        "response": {
            "id": "resp_x",
            "object": "response",
            "created_at": 0,
            "status": "failed",
            "model": "o4-mini",
            "output": [],
            "error": {"code": "server_error", "message": "The model crashed"},
        },
    }
    wire.raw(f"event: response.failed\ndata: {json.dumps(failed)}\n\n", 200, "text/event-stream")
    with _llm(wire) as llm, pytest.raises(ProviderUnavailableError, match="The model crashed"):
        list(llm.stream("Go"))


def test_an_error_status_is_typed(wire: OpenAIResponsesWire) -> None:
    wire.fail(400, "Invalid schema for response_format 'City'")
    with _llm(wire) as llm, pytest.raises(BadRequestError) as info:
        llm.chat("x")
    assert info.value.status_code == 400
    assert "Invalid schema" in str(info.value)


# ---------------------------------------------------------------------------- reasoning items
def test_agent_sends_the_reasoning_back_with_its_tool_call(wire: OpenAIResponsesWire) -> None:
    call = ToolCall("call_w", "get_weather", {"city": "Oslo"})
    wire.reply(
        ScriptedReply(tool_calls=[call], usage=REASONING),
        ScriptedReply("Oslo: 16°C, cloudy.", usage=REASONING),
    )
    with _llm(wire) as llm:
        result = Agent(GraphLLM(llm=llm), tool_registry()).run("Weather in Oslo?")
    assert result.content == "Oslo: 16°C, cloudy."
    first_reasoning, _ = wire.issued  # the wire refuses a reasoning item it did not issue
    second = _sent(wire)["input"]
    assert [i.get("type", i.get("role")) for i in second] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second[1] == {
        "type": "reasoning",
        "id": first_reasoning,
        "summary": [{"type": "summary_text", "text": SUMMARY}],
        "encrypted_content": wire.issued[first_reasoning],
    }
    assert second[2]["call_id"] == second[3]["call_id"] == "call_w"
    assert _sent(wire, 0)["include"] == ["reasoning.encrypted_content"]
    turn = result.messages[1]
    assert turn.role is Role.ASSISTANT and turn.reasoning[0].id == first_reasoning
    assert result.messages[-1].reasoning  # the final answer keeps its reasoning too


def test_reasoning_the_provider_never_issued_is_refused(wire: OpenAIResponsesWire) -> None:
    part = ReasoningPart(signature="forged", provider="openai-responses", id="rs_9")
    forged = Message(Role.ASSISTANT, "hm", reasoning=[part])
    wire.reply("an answer the server would give a valid request")
    with _llm(wire) as llm, pytest.raises(BadRequestError, match="not found"):
        llm.chat([Message(Role.USER, "q"), forged, Message(Role.USER, "and?")])


def test_reasoning_items_survive_a_history_record() -> None:
    item = ReasoningPart("Thinking.", "ZW5j", provider="openai-responses", id="rs_1")
    message = Message(Role.ASSISTANT, "", tool_calls=[ToolCall("c", "t")], reasoning=[item])
    record = json.loads(json.dumps(message.to_dict()))
    assert Message.from_dict(record) == message
    with pytest.raises(InvalidArgumentError, match="ASSISTANT"):
        Message(Role.USER, "x", reasoning=[item])


def test_a_shared_cache_entry_keeps_the_reasoning_items() -> None:
    from pywrapai_graph.adapters.shared.response_cache import _decode, _encode

    item = ReasoningPart("Thinking.", "ZW5j", provider="openai-responses", id="rs_1")
    response = LLMResponse("Paris.", usage=REASONING, reasoning=(item,))
    assert _decode(_encode(response)) == response


# ---------------------------------------------------------------------------- configuration
def test_settings_and_environment_choose_the_responses_api(
    wire: OpenAIResponsesWire, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "pywrapai.yaml"
    config.write_text(f"llm:\n  provider: openai\n  base_url: {wire.base_url}\n")
    monkeypatch.setenv("PYWRAPAI_LLM__API", "responses")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    llm = make_llm(load_settings(config), TokenTracker(), ())
    assert llm is not None
    assert isinstance(llm.chat_model, OpenAIResponsesChatModel)
    wire.reply("configured")
    assert llm.chat("hi").content == "configured"
    llm.close()


def test_api_is_checked(wire: OpenAIResponsesWire) -> None:
    with pytest.raises(ConfigurationError, match="api applies to provider 'openai'"):
        load_settings({"llm": {"provider": "anthropic", "api": "responses"}})
    with pytest.raises(InvalidArgumentError, match="'chat' or 'responses'"):
        LLM(provider="openai", api="assistants", api_key=SECRET)  # type: ignore[arg-type]
