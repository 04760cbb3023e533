"""chat_structured retries a reply that does not validate: the model gets its reply and the
errors back, each attempt is booked, and the last error keeps every raw reply."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from pywrapai_graph import LLM, GraphLLM
from pywrapai_graph.domain import ChatRequest, Role, TokenUsage, ToolCall
from pywrapai_graph.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    ResponseFormatError,
    StructuredOutputError,
)
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply


class City(BaseModel):
    name: str
    population: int


VALID = '{"name": "Paris", "population": 2100000}'
NO_POPULATION = '{"name": "Paris"}'


def test_an_invalid_reply_is_sent_back_and_the_second_attempt_validates() -> None:
    fake = ScriptedChatModel(
        [ScriptedReply(NO_POPULATION, usage=TokenUsage(40, 5)), ScriptedReply(VALID)]
    )
    llm = LLM(provider=fake)
    assert llm.chat_structured("Biggest French city?", City) == City(
        name="Paris", population=2100000
    )
    assert [r.usage for r in llm.tokens.records] == [TokenUsage(40, 5), TokenUsage(10, 5)]
    first, second = fake.requests
    assert second.messages[: len(first.messages)] == first.messages
    reply, feedback = second.messages[len(first.messages) :]
    assert (reply.role, reply.content) == (Role.ASSISTANT, NO_POPULATION)
    assert feedback.role is Role.USER
    assert "population: Field required" in feedback.content


def test_a_forced_tool_reply_is_answered_with_a_tool_result() -> None:
    call = ToolCall("call_7", "City", {"name": "Paris", "population": "many"})
    fake = ScriptedChatModel(
        [ScriptedReply('{"name": "Paris", "population": "many"}', tool_calls=[call]), VALID]
    )
    llm = LLM(provider=fake)
    llm.chat_structured("Biggest French city?", City, mode="tool")
    sent = fake.requests[1]
    assert sent.response_format is not None and sent.response_format.mode == "tool"
    assistant, result = sent.messages[-2:]
    assert assistant.role is Role.ASSISTANT and assistant.tool_calls == (call,)
    assert result.role is Role.TOOL and result.tool_result is not None
    assert (result.tool_result.tool_call_id, result.tool_result.name) == ("call_7", "City")
    assert "population: Input should be a valid integer" in result.content


def test_every_attempt_invalid_raises_with_every_raw_reply() -> None:
    replies = ["not json", NO_POPULATION, '{"name": 3, "population": 1}']
    llm = LLM(provider=ScriptedChatModel(replies))
    with pytest.raises(StructuredOutputError) as info:
        llm.chat_structured("Biggest French city?", City, retries=2)
    error = info.value
    assert error.replies == tuple(replies) and error.raw == replies[-1]
    assert error.validation_error == "- name: Input should be a valid string"
    assert isinstance(error.__cause__, ValidationError)
    assert "after 3 attempt(s)" in str(error) and "retries=" in str(error)
    assert len(llm.tokens) == 3  # each attempt booked


def test_retries_zero_makes_one_attempt() -> None:
    fake = ScriptedChatModel(["nope", VALID])
    with pytest.raises(StructuredOutputError) as info:
        LLM(provider=fake).chat_structured("q", City, retries=0)
    assert info.value.replies == ("nope",) and fake.remaining == 1


def test_an_undecodable_reply_counts_as_an_attempt() -> None:
    def respond(request: ChatRequest) -> str:
        if len(request.messages) == 1:
            raise ResponseFormatError("scripted: no tool call in the reply", raw="{raw body}")
        return VALID

    fake = ScriptedChatModel(respond=respond)
    llm = LLM(provider=fake)
    assert llm.chat_structured("q", City).population == 2100000
    feedback = fake.requests[1].messages[-1]
    assert feedback.role is Role.USER and "could not be read as a City" in feedback.content
    assert "{raw body}" not in feedback.content  # the raw body is not echoed to the model
    assert len(llm.tokens) == 2


def test_async_retries_the_same_way() -> None:
    fake = ScriptedChatModel(["not json", VALID])
    llm = LLM(provider=fake)
    city = asyncio.run(llm.achat_structured("q", City))
    assert city.name == "Paris" and len(llm.tokens) == 2
    assert "Invalid JSON" in fake.requests[1].messages[-1].content


def test_graph_llm_passes_retries_and_mode(tmp_path: Path) -> None:
    fake = ScriptedChatModel(["bad", "worse"])
    graph = GraphLLM(llm=LLM(provider=fake), prompts_dir=str(tmp_path))
    with pytest.raises(StructuredOutputError) as info:
        graph.chat_structured("q", City, retries=1, mode="native")
    assert info.value.replies == ("bad", "worse")
    assert all(r.response_format and r.response_format.mode == "native" for r in fake.requests)


@pytest.mark.parametrize("retries", [-1, True, "2", 1.0])
def test_retries_must_be_a_non_negative_int(retries: object) -> None:
    llm = LLM(provider=ScriptedChatModel([VALID]))
    with pytest.raises(ArgumentTypeError, match="retries"):
        llm.chat_structured("q", City, retries=retries)  # type: ignore[arg-type]


def test_an_unknown_mode_is_refused() -> None:
    llm = LLM(provider=ScriptedChatModel([VALID]))
    with pytest.raises(InvalidArgumentError, match="'auto', 'native'"):
        llm.chat_structured("q", City, mode="json")  # type: ignore[arg-type]
