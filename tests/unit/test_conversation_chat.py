"""GraphLLM.chat(..., conversation_id=...): loads, fits to the window, calls, saves the turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pywrapai_graph import (
    LLM,
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    HistoryWindow,
    InMemoryConversationStore,
    InMemoryVectorStore,
    Message,
    Role,
    SQLiteConversationStore,
    ToolCall,
    ToolResult,
    VectorRetriever,
)
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import ChatRequest
from pywrapai_graph.errors import (
    BadRequestError,
    ConfigurationError,
    ContextWindowError,
    InvalidArgumentError,
    InvalidStateError,
    ScopeError,
)
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

ACME = {"tenant": "acme"}


def sent(fake: ScriptedChatModel, call: int = -1) -> list[tuple[str, str]]:
    return [(m.role.value, m.content) for m in fake.requests[call].messages]


def test_a_conversation_is_loaded_extended_and_saved_turn_by_turn(tmp_path: Path) -> None:
    fake = ScriptedChatModel(
        [
            "Hi Ann.",
            ScriptedReply(tool_calls=[ToolCall("c1", "weather", {"city": "Oslo"})]),
            "Snow.",
        ]
    )
    store = SQLiteConversationStore(tmp_path / "chats.db")
    graph = GraphLLM(LLM(provider=fake, system_prompt="Be brief."), conversations=store)
    graph.chat("I am Ann.", conversation_id="c1", scope=ACME)
    asked = graph.chat("Weather in Oslo?", conversation_id="c1", scope=ACME)
    assert asked.tool_calls == [ToolCall("c1", "weather", {"city": "Oslo"})]
    result = Message(Role.TOOL, "snow", tool_result=ToolResult("c1", "weather", "snow"))
    assert asyncio.run(graph.achat([result], conversation_id="c1", scope=ACME)).content == "Snow."
    assert sent(fake) == [
        ("system", "Be brief."),
        ("user", "I am Ann."),
        ("assistant", "Hi Ann."),
        ("user", "Weather in Oslo?"),
        ("assistant", ""),
        ("tool", "snow"),
    ]
    saved = SQLiteConversationStore(tmp_path / "chats.db")  # another worker reads it whole
    assert [(m.role.value, m.content) for m in saved.load("c1", scope=ACME)] == [
        *sent(fake)[1:],
        ("assistant", "Snow."),
    ]
    assert saved.load("c1", scope=ACME)[3].tool_calls == tuple(asked.tool_calls)
    assert saved.load("c1") == []  # another scope: another conversation
    saved.close()
    store.close()


def test_the_window_drops_the_oldest_turns_and_the_store_keeps_them() -> None:
    fake = ScriptedChatModel(respond=lambda request: "ok " + "x" * 36)
    store = InMemoryConversationStore()
    window = HistoryWindow(60)  # room for the current turn and one earlier exchange
    graph = GraphLLM(LLM(provider=fake), conversations=store, history_window=window)
    for n in range(5):
        graph.chat(f"question {n} " + "q" * 28, conversation_id="c")
    assert [m.content[:10] for m in fake.requests[-1].messages] == [
        "question 3",
        "ok xxxxxxx",
        "question 4",
    ]
    assert len(store.load("c")) == 10
    with pytest.raises(ContextWindowError):
        graph.chat("y" * 400, conversation_id="c")
    assert len(store.load("c")) == 10  # nothing sent, nothing saved


def test_the_saved_turn_is_the_callers_input_not_the_rag_augmented_one() -> None:
    retriever = VectorRetriever(FeatureHashingEmbedder(), InMemoryVectorStore())
    retriever.add_documents([Document("Refunds take 30 days.")])
    fake = ScriptedChatModel(["30 days."])
    store = InMemoryConversationStore()
    graph = GraphLLM(LLM(provider=fake), retriever=retriever, conversations=store)
    graph.chat("How long do refunds take?", conversation_id="c")
    assert "Refunds take 30 days." in fake.requests[0].messages[-1].content
    assert [m.content for m in store.load("c")] == ["How long do refunds take?", "30 days."]


def test_a_failed_call_saves_nothing() -> None:
    def refuse(request: ChatRequest) -> str:
        raise BadRequestError("refused")

    store = InMemoryConversationStore()
    graph = GraphLLM(LLM(provider=ScriptedChatModel(respond=refuse)), conversations=store)
    with pytest.raises(BadRequestError):
        graph.chat("hi", conversation_id="c")
    assert store.load("c") == []


def test_misuse_is_refused_with_typed_errors() -> None:
    fake = ScriptedChatModel(["ok"])
    with pytest.raises(InvalidStateError, match="conversation store"):
        GraphLLM(LLM(provider=fake)).chat("hi", conversation_id="c")
    graph = GraphLLM(LLM(provider=fake), conversations=InMemoryConversationStore())
    with pytest.raises(InvalidArgumentError, match="not both"):
        graph.chat("hi", history=[Message(Role.USER, "earlier")], conversation_id="c")
    assert fake.requests == []


def test_a_conversation_scoped_graph_reads_only_its_scope() -> None:
    fake = ScriptedChatModel(["a", "b"])
    store = InMemoryConversationStore()
    graph = GraphLLM(LLM(provider=fake), conversations=store)
    acme = graph.with_conversation_scope(ACME)
    acme.chat("acme's question", conversation_id="c")
    acme.chat("user's question", conversation_id="c", scope={"user": "u1"})  # narrower
    assert [m.content for m in store.load("c", scope=ACME)] == ["acme's question", "a"]
    assert len(store.load("c", scope={**ACME, "user": "u1"})) == 2
    assert store.load("c") == []
    with pytest.raises(ScopeError):
        acme.chat("x", conversation_id="c", scope={"tenant": "globex"})


def test_settings_build_each_store_and_refuse_a_missing_location(tmp_path: Path) -> None:
    path = str(tmp_path / "chats.db")
    for config, kind in (
        ({"store": "memory"}, InMemoryConversationStore),
        ({"store": "sqlite", "path": path}, SQLiteConversationStore),
    ):
        with build_container({"conversations": config}) as container:
            assert isinstance(container.conversations(), kind)
    with build_container() as container:
        assert container.conversations() is None
    for bad in ({"store": "sqlite"}, {"store": "postgres"}, {"store": "redis"}):
        with pytest.raises(ConfigurationError, match="conversations"):
            build_container({"conversations": bad})


def test_a_streamed_turn_is_saved_once_the_stream_is_exhausted() -> None:
    fake = ScriptedChatModel(["first answer", "second answer", "third answer"])
    store = InMemoryConversationStore()
    graph = GraphLLM(LLM(provider=fake), conversations=store)
    stream = graph.stream("one", conversation_id="c")
    assert "".join(stream) == "first answer"
    left = graph.stream("two", conversation_id="c")
    next(iter(left))  # the caller stops reading: no whole answer, no turn
    left.close()

    async def rest() -> str:
        pieces = [p async for p in graph.astream("three", conversation_id="c")]
        return "".join(pieces)

    assert asyncio.run(rest()) == "third answer"
    assert [m.content for m in store.load("c")] == ["one", "first answer", "three", "third answer"]
    assert sent(fake) == [("user", "one"), ("assistant", "first answer"), ("user", "three")]


def test_the_llms_own_system_prompt_counts_against_the_window() -> None:
    fake = ScriptedChatModel(["ok", "ok"])
    window = HistoryWindow(30)
    prompt = "p" * 40  # 10 tokens + 4: the earlier exchange (2 x 5) no longer fits beside it
    graph = GraphLLM(
        LLM(provider=fake, system_prompt=prompt),
        conversations=InMemoryConversationStore(),
        history_window=window,
    )
    graph.chat("hi", conversation_id="c")
    graph.chat("q" * 12, conversation_id="c")
    assert sent(fake) == [("system", prompt), ("user", "q" * 12)]


def test_the_configured_window_counts_media_by_the_providers_formula() -> None:
    from pywrapai_graph import ImagePart
    from pywrapai_graph.composition.conversation_settings import ConversationSettings
    from pywrapai_graph.testing.media import png_bytes

    class PricedImages(ScriptedChatModel):
        def media_tokens(self, part: object) -> int:
            return 1_000

    picture = Message(Role.USER, "", parts=[ImagePart.from_bytes(png_bytes())])
    settings = ConversationSettings(store="memory", max_tokens=500)
    provider_window = settings.history_window(PricedImages())
    generic_window = settings.history_window(ScriptedChatModel())
    assert provider_window is not None and generic_window is not None
    assert provider_window.count(picture) == 1_004
    assert generic_window.count(picture) < 500


def test_a_stored_call_never_answered_is_left_out_of_the_request() -> None:
    fake = ScriptedChatModel(["Sure."])
    store = InMemoryConversationStore()
    call = ToolCall("c9", "refund", {"order": 7})
    store.append(  # the caller stopped between the model's call and its result
        "c", [Message(Role.USER, "Refund order 7"), Message(Role.ASSISTANT, "", tool_calls=[call])]
    )
    orphan = Message(Role.TOOL, "late", tool_result=ToolResult("gone", "refund", "late"))
    store.append("c", [Message(Role.USER, "Never mind."), orphan, Message(Role.ASSISTANT, "Ok.")])
    stale = Message(Role.ASSISTANT, "Checking.", tool_calls=[ToolCall("c10", "status", {})])
    store.append("c", [Message(Role.USER, "Status?"), stale])
    graph = GraphLLM(LLM(provider=fake), conversations=store)
    graph.chat("Thanks!", conversation_id="c")
    assert sent(fake) == [
        ("user", "Refund order 7"),
        ("user", "Never mind."),
        ("assistant", "Ok."),
        ("user", "Status?"),
        ("assistant", "Checking."),
        ("user", "Thanks!"),
    ]
    assert all(not m.tool_calls and not m.tool_result for m in fake.requests[0].messages)
    assert len(store.load("c")) == 9  # the store keeps what was said
