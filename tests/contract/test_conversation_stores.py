"""The conversation-store contract on the in-process stores (PostgreSQL's runs in
``tests/integration/test_conversation_postgres.py``)."""

from __future__ import annotations

from pathlib import Path

from pywrapai_graph import InMemoryConversationStore, SQLiteConversationStore
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
