"""The conversation-store contract on PostgreSQL, and its DSN's password never shown."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pywrapai_graph import PostgresConversationStore
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Message, Role
from pywrapai_graph.errors import RuntimeFailure
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.testing.contracts.conversation_store import ConversationStoreContract
from pywrapai_graph.testing.wire import OpenAIWire

pytestmark = pytest.mark.integration

PASSWORD = "pw-" + uuid.uuid4().hex


class TestPostgresConversationStore(ConversationStoreContract):
    @pytest.fixture(autouse=True)
    def _dsn(self, pg_url: str) -> None:
        self.dsn = pg_url

    def new_store(self, tmp_path: Path) -> ConversationStore:
        self.table = f"conv_{uuid.uuid4().hex[:8]}"
        return PostgresConversationStore(self.dsn, table=self.table)

    def reopen(self, store: ConversationStore, tmp_path: Path) -> ConversationStore:
        return PostgresConversationStore(self.dsn, table=self.table)


def test_the_dsn_password_never_shows(caplog: pytest.LogCaptureFixture) -> None:
    dsn = f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/postgres?connect_timeout=2"
    store = PostgresConversationStore(dsn)
    with pytest.raises(RuntimeFailure) as caught:
        store.append("c1", [Message(Role.USER, "hi")])
    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert "cannot reach PostgreSQL at 127.0.0.1:1" in str(caught.value)
    assert all(PASSWORD not in f"{e!r} {e}" for e in chain)
    container = build_container({"conversations": {"store": "postgres", "dsn": dsn}})
    shown = [repr(store), repr(container.settings()), repr(container.conversations())]
    assert all(PASSWORD not in text for text in shown)
    assert PASSWORD not in caplog.text
    container.shutdown()


def test_the_container_files_a_scoped_graphs_conversations_under_its_scope(pg_url: str) -> None:
    table = f"conv_{uuid.uuid4().hex[:8]}"
    with OpenAIWire() as wire:
        wire.reply("Hello.")
        llm = {"provider": "openai", "model": "gpt-4o-mini", "base_url": wire.base_url}
        config = {
            "llm": {**llm, "api_key": "sk-test"},
            "conversations": {"store": "postgres", "dsn": pg_url, "table": table},
        }
        with build_container(config) as container:
            graph = container.scoped_graph(scope={"tenant": "acme"})
            graph.chat("Hi", conversation_id="c1", rag=False)
            store = container.conversations()
            assert store is not None
            acme = store.load("c1", scope={"tenant": "acme"})
            assert [m.content for m in acme] == ["Hi", "Hello."]
            assert store.load("c1") == [] and store.load("c1", scope={"tenant": "globex"}) == []
