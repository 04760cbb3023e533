"""ConversationMemory: what ``GraphLLM.chat(..., conversation_id=...)`` does around a call.

Before the call it loads the conversation's history from the store; the assembled request
is then fitted to the model's window; after a successful call it appends the turn (the
caller's messages and the answer) as one record. A failed call saves nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.application.assemble_messages import as_messages
from pywrapai_graph.application.history_window import HistoryWindow
from pywrapai_graph.application.scoped_retriever import merge_scope
from pywrapai_graph.domain import LLMResponse, Message, Role
from pywrapai_graph.errors import InvalidArgumentError, InvalidStateError
from pywrapai_graph.ports.conversation_store import ConversationStore
from pywrapai_graph.ports.offload import offload

__all__ = ["ConversationMemory", "paired"]


def paired(messages: list[Message], current: int) -> list[Message]:
    """``messages`` without the tool calls of their history (all but the ``current`` last)
    that no message answers, and without results whose call is not there.

    A stored conversation can hold a call whose results never came (the caller stopped, or
    its worker died, between the call and the next message); providers refuse a request
    with one, so it is left out of the request (the store keeps it).
    """
    answered = {m.tool_result.tool_call_id for m in messages if m.tool_result is not None}
    called = {c.id for m in messages for c in m.tool_calls or ()}
    past: list[Message] = []
    for m in messages[: len(messages) - current]:
        if m.tool_result is not None and m.tool_result.tool_call_id not in called:
            continue
        if m.tool_calls and any(c.id not in answered for c in m.tool_calls):
            kept = [c for c in m.tool_calls if c.id in answered]
            if kept or m.content:
                past.append(dataclasses.replace(m, tool_calls=kept or None))
            continue
        past.append(m)
    return past + messages[len(messages) - current :]


class ConversationMemory:
    """Loads, fits and saves conversations for a ``GraphLLM``.

    Args:
        store: where conversations are kept (None: ``conversation_id=`` raises).
        window: the history policy (None: the whole history is sent).
        scope: the scope every conversation is filed under (a scoped graph's tenant); a
            call's own ``scope`` narrows it and may not contradict it.
    """

    def __init__(
        self,
        store: ConversationStore | None = None,
        window: HistoryWindow | None = None,
        scope: Mapping[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.window = window
        self.scope = dict(scope) if scope else None

    def scoped(self, scope: Mapping[str, Any] | None) -> ConversationMemory:
        """The same store and window, filing conversations under ``scope`` too."""
        return ConversationMemory(self.store, self.window, self._scope(scope))

    def _scope(self, scope: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if self.scope is None:
            return scope
        return merge_scope(self.scope, scope)

    def _store(self) -> ConversationStore:
        if self.store is None:
            raise InvalidStateError(
                "conversation_id= needs a conversation store: configure "
                "conversations: {store: sqlite, path: ...} or pass "
                "GraphLLM(..., conversations=SQLiteConversationStore(path))"
            )
        return self.store

    def recall(
        self,
        conversation_id: str | None,
        history: Sequence[Message] | None,
        scope: Mapping[str, Any] | None,
    ) -> Sequence[Message] | None:
        """The history to send: ``history`` itself, or the stored conversation.

        Raises:
            InvalidArgumentError: both ``history`` and ``conversation_id`` given.
            InvalidStateError: ``conversation_id`` without a store.
        """
        if conversation_id is None:
            return history
        if history is not None:
            raise InvalidArgumentError(
                "pass history= or conversation_id=, not both: a conversation's history is "
                "the one its store holds"
            )
        return self._store().load(conversation_id, scope=self._scope(scope))

    async def arecall(
        self,
        conversation_id: str | None,
        history: Sequence[Message] | None,
        scope: Mapping[str, Any] | None,
    ) -> Sequence[Message] | None:
        """:meth:`recall` in the offload pool (store calls block)."""
        if conversation_id is None:
            return history
        return await offload(self.recall, conversation_id, history, scope)

    def fit(
        self,
        conversation_id: str | None,
        messages: list[Message],
        current: int,
        system_prompt: str | None = None,
    ) -> list[Message]:
        """``messages`` within the window, for a conversation (others are sent whole).

        ``system_prompt`` is the one the LLM adds when ``messages`` start with none: it is
        put first here, so the window counts it (the LLM then adds nothing)."""
        if conversation_id is None:
            return messages
        messages = paired(messages, current)
        if self.window is None:
            return messages
        if system_prompt and not (messages and messages[0].role is Role.SYSTEM):
            messages = [Message(Role.SYSTEM, system_prompt), *messages]
        return self.window.fit(messages, current)

    def remember(
        self,
        conversation_id: str | None,
        input: str | Sequence[Message],
        response: LLMResponse,
        scope: Mapping[str, Any] | None,
    ) -> None:
        """Append the turn: the caller's messages (system prompts left out, unaugmented)
        and the answer, with its tool calls."""
        if conversation_id is None:
            return
        turn = [m for m in as_messages(input) if m.role is not Role.SYSTEM]
        turn.append(response.to_message())
        self._store().append(conversation_id, turn, scope=self._scope(scope))

    async def aremember(
        self,
        conversation_id: str | None,
        input: str | Sequence[Message],
        response: LLMResponse,
        scope: Mapping[str, Any] | None,
    ) -> None:
        """:meth:`remember` in the offload pool."""
        if conversation_id is not None:
            await offload(self.remember, conversation_id, input, response, scope)
