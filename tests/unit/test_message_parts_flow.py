"""Images and documents travel through assembly, RAG injection and the agent loop unchanged;
text-only messages behave as before (no ``parts`` anywhere)."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from pywrapai import LLM, Message, Role, ToolCall, ToolResult
from pywrapai_graph import (
    Agent,
    Document,
    DocumentPart,
    FeatureHashingEmbedder,
    GraphLLM,
    ImagePart,
    InMemoryVectorStore,
    TextPart,
    ToolRegistry,
    VectorRetriever,
    tool,
)
from pywrapai_graph.application.call_model import request_key
from pywrapai_graph.domain import ChatRequest
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from pywrapai_graph.testing.media import pdf_bytes, png_bytes

IMAGE = ImagePart.from_bytes(png_bytes(4, 4))
PDF = DocumentPart.from_bytes(pdf_bytes(1), "menu.pdf")


def test_assembly_keeps_parts_and_rag_wraps_only_the_text() -> None:
    retriever = VectorRetriever(FeatureHashingEmbedder(), InMemoryVectorStore())
    retriever.add_documents([Document("What animal is this? A cat: cats are small felines.")])
    fake = ScriptedChatModel(["a cat"])
    graph = GraphLLM(llm=LLM(provider=fake), retriever=retriever).with_system_prompt("Be kind.")
    asked = Message(Role.USER, "What animal is this?", parts=[IMAGE, PDF])
    history = [Message(Role.USER, "Hi", parts=[IMAGE]), Message(Role.ASSISTANT, "Hello!")]
    graph.chat([asked], history=history)
    system, past_user, past_answer, current = fake.requests[0].messages
    assert system == Message(Role.SYSTEM, "Be kind.")
    assert (past_user, past_answer) == tuple(history)
    assert current.parts == (IMAGE, PDF)
    assert "<context>" in current.content and current.content.endswith("What animal is this?")
    assert asked.content == "What animal is this?"  # the caller's message is not modified


def test_the_agent_sends_the_parts_on_every_turn() -> None:
    @tool
    def lookup(name: str) -> str:
        """Look an animal up.

        Args:
            name: the animal.
        """
        return f"{name}: a small feline"

    registry = ToolRegistry()
    registry.register(lookup)

    fake = ScriptedChatModel(
        [ScriptedReply(tool_calls=[ToolCall("c1", "lookup", {"name": "cat"})]), "A cat."]
    )
    agent = Agent(graph=GraphLLM(llm=LLM(provider=fake)), registry=registry)
    result = agent.run([Message(Role.USER, "What is this?", parts=[IMAGE])])
    assert result.content == "A cat."
    for request in fake.requests:
        assert request.messages[0].parts == (IMAGE,)


def test_text_only_messages_keep_their_cache_keys() -> None:
    """A digest computed before parts existed is unchanged (no ``parts`` key for text)."""
    request = ChatRequest(messages=(Message(Role.USER, "Hi"),), model="m")
    assert request_key("openai", request) == (
        "37d1d5548c121fbddd1b26b5791f887fa90a41622b5d3299a217388c47b37ced"
    )
    with_image = dataclasses.replace(request, messages=(Message(Role.USER, "Hi", parts=[IMAGE]),))
    assert request_key("openai", with_image) != request_key("openai", request)


def test_messages_round_trip_through_json_records() -> None:
    call = ToolCall("c1", "lookup", {"name": "cat"})
    history = [
        Message(Role.SYSTEM, "Be kind."),
        Message(Role.USER, "What is this?", parts=[IMAGE, TextPart("and"), PDF]),
        Message(Role.USER, "And this?", parts=[ImagePart.from_url("https://e.com/a.png")]),
        Message(Role.ASSISTANT, "", tool_calls=[call]),
        Message(Role.TOOL, "a feline", tool_result=ToolResult("c1", "lookup", "a feline")),
    ]
    stored = json.dumps([m.to_dict() for m in history])
    assert base64.b64encode(IMAGE.data or b"").decode() in stored
    assert [Message.from_dict(r) for r in json.loads(stored)] == history
    # what a text-only history store has always kept reads back as before
    assert Message.from_dict({"role": "user", "content": "Hi"}) == Message(Role.USER, "Hi")
    assert Message(Role.USER, "Hi").to_dict() == {"role": "user", "content": "Hi"}


def test_malformed_records_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="'role' and 'content'"):
        Message.from_dict({"content": "Hi"})
    with pytest.raises(InvalidArgumentError, match="unknown part type 'audio'"):
        Message.from_dict({"role": "user", "content": "", "parts": [{"type": "audio"}]})
    with pytest.raises(InvalidArgumentError, match="not base64"):
        Message.from_dict(
            {"role": "user", "content": "", "parts": [{"type": "image", "data": "%%"}]}
        )
    with pytest.raises(InvalidArgumentError, match="malformed message record"):
        Message.from_dict({"role": "boss", "content": "Hi"})
