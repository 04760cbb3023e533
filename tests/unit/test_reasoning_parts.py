"""ReasoningPart on messages and responses: checked, kept through to_dict/from_dict and the
cache key, hidden from reprs, carried by a stream to its final response."""

from __future__ import annotations

import json

import pytest

from pywrapai import LLM
from pywrapai_graph import LLMResponse, Message, ReasoningPart, Role, ToolCall
from pywrapai_graph.application.call_model import request_key
from pywrapai_graph.domain import ChatRequest
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

SIGNED = ReasoningPart("secret plan", "c2lnbmF0dXJl+/==", provider="anthropic")
REDACTED = ReasoningPart(redacted="ZW5jcnlwdGVk", provider="anthropic")


def test_a_reasoning_part_checks_its_fields() -> None:
    with pytest.raises(ArgumentTypeError, match="text must be str"):
        ReasoningPart(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="signature must be str"):
        ReasoningPart("x", 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="only its encrypted data"):
        ReasoningPart("x", redacted="abc")


def test_its_repr_shows_sizes_never_the_text_or_signature() -> None:
    shown = repr(Message(Role.ASSISTANT, "", reasoning=[SIGNED, REDACTED]))
    assert "secret plan" not in shown and "c2lnbmF0" not in shown and "ZW5j" not in shown
    assert "ReasoningPart(anthropic, 11 chars, signed)" in shown
    assert "ReasoningPart(anthropic, redacted, 12 chars)" in shown


def test_only_an_assistant_message_carries_reasoning() -> None:
    with pytest.raises(InvalidArgumentError, match="only an ASSISTANT message"):
        Message(Role.USER, "hi", reasoning=[SIGNED])
    with pytest.raises(ArgumentTypeError, match="ReasoningPart values only"):
        Message(Role.ASSISTANT, "hi", reasoning=["thinking"])  # type: ignore[list-item]


def test_reasoning_round_trips_through_json_records() -> None:
    m = Message(
        Role.ASSISTANT,
        "",
        tool_calls=[ToolCall("c1", "look", {"q": 1})],
        reasoning=[SIGNED, REDACTED, ReasoningPart("local thought", provider="openai")],
    )
    record = json.loads(json.dumps(m.to_dict()))
    assert record["reasoning"][1] == {
        "text": "",
        "redacted": "ZW5jcnlwdGVk",
        "provider": "anthropic",
    }
    assert Message.from_dict(record) == m
    assert "reasoning" not in Message(Role.ASSISTANT, "hi").to_dict()  # old records unchanged
    with pytest.raises(InvalidArgumentError, match="malformed message record"):
        Message.from_dict({**record, "reasoning": [{"thought": "x"}]})


def test_the_response_makes_the_assistant_message_of_the_next_turn() -> None:
    response = LLMResponse("ok", [ToolCall("c1", "look")], reasoning=(SIGNED,))
    assert response.to_message() == Message(
        Role.ASSISTANT, "ok", tool_calls=[ToolCall("c1", "look")], reasoning=[SIGNED]
    )


def test_the_cache_key_tells_reasoning_apart() -> None:
    def key(*reasoning: ReasoningPart) -> str:
        m = Message(Role.ASSISTANT, "a", reasoning=reasoning)
        return request_key("anthropic", ChatRequest((Message(Role.USER, "q"), m), "claude"))

    assert key() != key(SIGNED) != key(REDACTED)
    assert key(SIGNED) == key(
        ReasoningPart("secret plan", "c2lnbmF0dXJl+/==", provider="anthropic")
    )


def test_a_stream_hands_its_reasoning_to_the_final_response() -> None:
    llm = LLM(provider=ScriptedChatModel([ScriptedReply("Hello", reasoning=[SIGNED])]))
    stream = llm.stream("Hi")
    assert stream.text() == "Hello"
    assert stream.response.reasoning == (SIGNED,)
