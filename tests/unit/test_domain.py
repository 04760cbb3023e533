from __future__ import annotations

import pytest

from pywrapai_graph import Message, Role, TokenUsage, ToolCall, ToolResult
from pywrapai_graph.domain import Chunk, Document


def test_message_is_positional_and_coerces_role_strings() -> None:
    m = Message(Role.USER, "hi")
    assert (m.role, m.content, m.tool_calls, m.tool_result) == (Role.USER, "hi", None, None)
    assert Message("assistant", "ok").role is Role.ASSISTANT  # type: ignore[arg-type]


def test_message_rejects_unknown_role_and_non_text_content() -> None:
    with pytest.raises(ValueError, match="must be one of"):
        Message("wizard", "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content must be str"):
        Message(Role.USER, None)  # type: ignore[arg-type]


def test_tool_calls_only_on_assistant_and_results_only_on_tool() -> None:
    call = ToolCall("c1", "f", {"a": 1})
    assert Message(Role.ASSISTANT, "", tool_calls=[call]).tool_calls == (call,)
    with pytest.raises(ValueError, match="ASSISTANT"):
        Message(Role.USER, "", tool_calls=[call])
    with pytest.raises(ValueError, match="TOOL"):
        Message(Role.USER, "", tool_result=ToolResult("c1", "f", "x"))


def test_empty_tool_call_list_normalises_to_none() -> None:
    assert Message(Role.ASSISTANT, "x", tool_calls=[]).tool_calls is None


def test_tool_call_copies_its_arguments() -> None:
    args = {"city": "Paris"}
    call = ToolCall("c1", "get_weather", args)
    args["city"] = "Rome"
    assert call.arguments == {"city": "Paris"}
    with pytest.raises(TypeError, match="mapping"):
        ToolCall("c1", "f", ["not", "a", "dict"])  # type: ignore[arg-type]


def test_token_usage_adds_and_validates() -> None:
    total = TokenUsage(10, 5, cache_read_tokens=2) + TokenUsage(1, 1, reasoning_tokens=3)
    assert total == TokenUsage(11, 6, cache_read_tokens=2, reasoning_tokens=3)
    assert total.total_tokens == 17
    with pytest.raises(ValueError, match="non-negative"):
        TokenUsage(-1, 0)
    with pytest.raises(ValueError, match="non-negative"):
        TokenUsage(True, 0)


def test_documents_and_chunks_get_fresh_ids() -> None:
    d1, d2 = Document("a"), Document("b", metadata={"source": "x"})
    assert d1.id != d2.id and d2.metadata == {"source": "x"}
    c = Chunk("text", doc_id=d1.id)
    assert c.embedding is None and c.metadata == {} and len(c.id) == 36
    c.embedding = [1.0, 0.0]
    assert c.embedding == [1.0, 0.0]
