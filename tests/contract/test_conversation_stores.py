"""The conversation-store contract on the in-process stores (PostgreSQL's runs in
``tests/integration/test_conversation_postgres.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pywrapai_graph import InMemoryConversationStore, SQLiteConversationStore
from pywrapai_graph.errors import RuntimeFailure
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.testing.contracts.conversation_store import ConversationStoreContract


class TestInMemoryConversationStore(ConversationStoreContract):
    def new_store(self, tmp_path: Path) -> ConversationStore:
        return InMemoryConversationStore()


class TestSQLiteConversationStore(ConversationStoreContract):
    def new_store(self, tmp_path: Path) -> ConversationStore:
        return SQLiteConversationStore(tmp_path / "chats.db")

    def reopen(self, store: ConversationStore, tmp_path: Path) -> ConversationStore:
        return SQLiteConversationStore(tmp_path / "chats.db")


def test_a_sqlite_file_that_cannot_be_opened_is_a_runtime_failure(tmp_path: Path) -> None:
    store = SQLiteConversationStore(tmp_path / "no such folder" / "chats.db")
    with pytest.raises(RuntimeFailure, match="no such folder"):
        store.load("c1")
    store.close()
