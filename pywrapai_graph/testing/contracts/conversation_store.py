"""The contract every conversation store must pass.

Subclass :class:`ConversationStoreContract` and say how to open your store::

    class TestMyStore(ConversationStoreContract):
        def new_store(self, tmp_path: Path) -> ConversationStore:
            return MyConversationStore(tmp_path / "chats")

Each case opens a fresh store (``new_store``); :meth:`reopen` opens a second one over the
same data (another worker), which the built-in shared stores pass too.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph.domain import (
    DocumentPart,
    ImagePart,
    Message,
    Role,
    TextPart,
    ToolCall,
    ToolResult,
)
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.testing.media import pdf_bytes, png_bytes

__all__ = [
    "ConversationStoreContract",
    "check_whole_turns",
    "every_part_turn",
    "numbered_turn",
]


def every_part_turn() -> list[Message]:
    """One turn with every kind of message and part a conversation can hold."""
    call = ToolCall("call-1", "lookup", {"q": "ünïcode ✓", "n": [1, 2.5, None, True]})
    return [
        Message(
            Role.USER,
            "What is in these?",
            parts=[
                ImagePart.from_bytes(png_bytes(3, 2)),
                ImagePart.from_url("https://example.com/cat.jpg", "image/jpeg"),
                TextPart("and this report"),
                DocumentPart.from_bytes(pdf_bytes(2), "report.pdf"),
            ],
        ),
        Message(Role.ASSISTANT, "", tool_calls=[call]),
        Message(
            Role.TOOL,
            'a\x00b \n"quoted"',
            tool_result=ToolResult("call-1", "lookup", 'a\x00b \n"quoted"'),
        ),
        Message(Role.ASSISTANT, "A cat, and a two-page report."),
    ]


def numbered_turn(writer: str, n: int, size: int = 3, pad: int = 0) -> list[Message]:
    """Turn ``n`` of ``writer``: a user message, an assistant's tool call and its results,
    each saying ``writer n i/size`` so a reader can check the turn is whole (each result
    carries ``pad`` more characters, to make a turn long to write)."""
    tag = f"{writer} {n}"
    call = ToolCall(f"{tag}-call", "step", {"n": n})
    messages = [
        Message(Role.USER, f"{tag} 0/{size}"),
        Message(Role.ASSISTANT, f"{tag} 1/{size}", tool_calls=[call]),
    ]
    messages += [
        Message(
            Role.TOOL,
            f"{tag} {i}/{size}",
            tool_result=ToolResult(call.id, "step", f"{tag} {i}/{size}" + "." * pad),
        )
        for i in range(2, size)
    ]
    return messages


class ConversationStoreContract(ABC):
    """The cases every :class:`ConversationStore` passes."""

    @abstractmethod
    def new_store(self, tmp_path: Path) -> ConversationStore:
        """A store over fresh, empty data."""

    def reopen(self, store: ConversationStore, tmp_path: Path) -> ConversationStore:
        """A second store over ``store``'s data (default: ``store`` itself)."""
        return store

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[ConversationStore]:
        opened = self.new_store(tmp_path)
        yield opened
        opened.close()

    def test_every_part_type_round_trips(self, store: ConversationStore, tmp_path: Path) -> None:
        turn = every_part_turn()
        store.append("c1", turn)
        assert store.load("c1") == turn
        other = self.reopen(store, tmp_path)
        assert other.load("c1") == turn
        if other is not store:
            other.close()

    def test_turns_read_back_in_order(self, store: ConversationStore) -> None:
        turns = [numbered_turn("w", n) for n in range(5)]
        for turn in turns:
            store.append("c1", turn)
        assert store.load("c1") == [m for turn in turns for m in turn]
        assert store.load("never written") == []

    def test_scopes_never_cross(self, store: ConversationStore) -> None:
        store.append("c1", [Message(Role.USER, "acme's")], scope={"tenant": "acme"})
        store.append("c1", [Message(Role.USER, "globex's")], scope={"tenant": "globex"})
        store.append("c1", [Message(Role.USER, "one's")], scope={"tenant": 1})
        store.append("c1", [Message(Role.USER, "unscoped")])
        assert [m.content for m in store.load("c1", scope={"tenant": "acme"})] == ["acme's"]
        assert [m.content for m in store.load("c1", scope={"tenant": 1.0})] == ["one's"]
        for other in ({"tenant": True}, {"tenant": "1"}, {"tenant": "acme", "user": "u"}):
            assert store.load("c1", scope=other) == []
        assert [m.content for m in store.load("c1")] == ["unscoped"]
        assert store.delete("c1", scope={"tenant": "globex"}) == 1
        assert [m.content for m in store.load("c1", scope={"tenant": "acme"})] == ["acme's"]
        assert store.conversations(scope={"tenant": "globex"}) == []
        assert store.conversations(scope={"tenant": "acme"}) == ["c1"]

    def test_delete_and_list(self, store: ConversationStore) -> None:
        for cid in ("b", "a", "b"):
            store.append(cid, [Message(Role.USER, cid)])
        assert store.conversations() == ["a", "b"]
        assert store.delete("b") == 2
        assert store.delete("b") == 0
        assert store.load("b") == []
        assert store.conversations() == ["a"]

    def test_bad_input_is_refused_and_writes_nothing(self, store: ConversationStore) -> None:
        with pytest.raises(InvalidArgumentError):
            store.append("c1", [])
        with pytest.raises(ArgumentTypeError):
            store.append("c1", [Message(Role.USER, "ok"), "not a message"])  # type: ignore[list-item]
        with pytest.raises(InvalidArgumentError):
            store.append("", [Message(Role.USER, "x")])
        with pytest.raises(InvalidArgumentError):
            store.load("c1", scope={"tenant": {"nested": 1}})
        assert store.load("c1") == []
        assert store.conversations() == []

    def test_threads_appending_at_once_all_land_whole(self, store: ConversationStore) -> None:
        writers, turns = 4, 10
        start = threading.Barrier(writers)

        def write(name: str) -> None:
            start.wait()
            for n in range(turns):
                store.append("shared", numbered_turn(name, n))

        threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check_whole_turns(store.load("shared"), {f"t{i}": turns for i in range(writers)})


def check_whole_turns(
    messages: list[Message], expected: dict[str, int] | None = None
) -> dict[str, list[int]]:
    """Every turn of ``messages`` (written by :func:`numbered_turn`) is whole, its
    messages together and in order, and each writer's turns are in the order it wrote
    them; with ``expected``, every writer wrote that many. Returns each writer's turns."""
    seen: dict[str, list[int]] = {w: [] for w in expected or {}}
    i = 0
    while i < len(messages):
        writer, n, first = messages[i].content.split(" ")
        size = int(first.split("/")[1])
        assert first == f"0/{size}", f"a turn starts mid-way at message {i}: {messages[i]}"
        for j in range(size):
            assert messages[i + j].content == f"{writer} {n} {j}/{size}", "a turn was split"
        seen.setdefault(writer, []).append(int(n))
        i += size
    assert all(turns == list(range(len(turns))) for turns in seen.values()), seen
    if expected is not None:
        assert {w: len(t) for w, t in seen.items()} == expected
    return seen
