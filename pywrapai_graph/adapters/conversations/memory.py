"""InMemoryConversationStore: conversations in this process, for tests and one-worker apps."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.domain import Message
from pywrapai_graph.ports.conversation_store import (
    ConversationStore,
    checked_turn,
    conversation_key,
    scope_text,
)

__all__ = ["InMemoryConversationStore"]


class InMemoryConversationStore(ConversationStore):
    """Conversations in a dict of turns, under one lock; gone when the process ends."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], list[tuple[Message, ...]]] = {}
        self._lock = threading.Lock()

    def load(
        self, conversation_id: str, *, scope: Mapping[str, Any] | None = None
    ) -> list[Message]:
        key = conversation_key(conversation_id, scope)
        with self._lock:
            return [m for turn in self._turns.get(key, ()) for m in turn]

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        scope: Mapping[str, Any] | None = None,
    ) -> None:
        key = conversation_key(conversation_id, scope)
        turn = tuple(checked_turn(messages))
        with self._lock:
            self._turns.setdefault(key, []).append(turn)

    def delete(self, conversation_id: str, *, scope: Mapping[str, Any] | None = None) -> int:
        key = conversation_key(conversation_id, scope)
        with self._lock:
            return len(self._turns.pop(key, ()))

    def conversations(self, *, scope: Mapping[str, Any] | None = None) -> list[str]:
        text = scope_text(scope)
        with self._lock:
            return sorted(cid for s, cid in self._turns if s == text)

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"InMemoryConversationStore({len(self._turns)} conversations)"
