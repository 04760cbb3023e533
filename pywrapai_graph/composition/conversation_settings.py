"""``conversations``: where ``GraphLLM.chat(..., conversation_id=...)`` keeps conversations."""

from __future__ import annotations

import functools
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from pywrapai_graph.application.history_window import HistoryWindow, estimate_message_tokens
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import CountsMediaTokens
from pywrapai_graph.ports.conversation_store import ConversationStore

__all__ = ["ConversationSettings"]


class ConversationSettings(BaseModel):
    """``conversations: {store: sqlite, path: chats.db}`` keeps conversations in that file
    (every process naming it shares them); ``{store: postgres, dsn: postgresql://...}`` in
    PostgreSQL; ``{store: memory}`` in this process; ``none`` (the default) keeps none.
    ``max_tokens`` is the history window: the most input tokens one request may hold (the
    model's context window less room for its reply); older turns beyond it are not sent."""

    model_config = ConfigDict(extra="forbid")

    store: Literal["none", "memory", "sqlite", "postgres"] = "none"
    path: str | None = None
    dsn: SecretStr | None = None
    table: str = "pywrapai_conversations"
    max_tokens: int | None = Field(default=32_000, gt=0)

    @model_validator(mode="after")
    def _location(self) -> Self:
        if self.store == "sqlite" and not self.path:
            raise InvalidArgumentError("conversations.path is required for store 'sqlite'")
        if self.store == "postgres" and self.dsn is None:
            raise InvalidArgumentError("conversations.dsn is required for store 'postgres'")
        return self

    def conversation_store(self) -> ConversationStore | None:
        """The store these settings describe (None for ``none``)."""
        if self.store == "memory":
            from pywrapai_graph.adapters.conversations.memory import InMemoryConversationStore

            return InMemoryConversationStore()
        if self.store == "sqlite":
            from pywrapai_graph.adapters.conversations.sqlite import SQLiteConversationStore

            assert self.path is not None  # checked above
            return SQLiteConversationStore(self.path, table=self.table)
        if self.store == "postgres":
            from pywrapai_graph.adapters.conversations.postgres import PostgresConversationStore

            assert self.dsn is not None  # checked above
            return PostgresConversationStore(self.dsn.get_secret_value(), table=self.table)
        return None

    def history_window(self, chat_model: object = None) -> HistoryWindow | None:
        """The window (None: whole conversations are sent), counting images and documents
        by ``chat_model``'s provider formula where it has one."""
        if self.max_tokens is None:
            return None
        if isinstance(chat_model, CountsMediaTokens):
            count = functools.partial(estimate_message_tokens, media=chat_model.media_tokens)
            return HistoryWindow(self.max_tokens, count)
        return HistoryWindow(self.max_tokens)
