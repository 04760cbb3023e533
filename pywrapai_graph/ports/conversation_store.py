"""The conversation-store port: a conversation's messages, by conversation id and scope.

A conversation belongs to one scope (``{"tenant": "acme"}``, or None for none): the same id
in another scope is another conversation, and no call reads or changes a conversation of a
scope other than the one it names. Scopes are matched as the vector stores match metadata
(:func:`~pywrapai_graph.ports.store_inputs.same_value`: ``1`` is ``1.0``, not ``True`` or
``"1"``), through one canonical text (:func:`scope_text`).

A store keeps turns: each :meth:`ConversationStore.append` writes its messages as one
record, so a turn (the user's message, the assistant's tool calls, their results, the
answer) is visible whole or not at all, and never interleaved with another writer's turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pywrapai_graph.domain import Message
from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports.store_inputs import canonical_json, check_filter

__all__ = [
    "ConversationStore",
    "checked_turn",
    "conversation_key",
    "decode_turn",
    "encode_turn",
    "scope_text",
]

#: the longest conversation id taken (ids are keys, not content)
MAX_ID_CHARS = 512


@runtime_checkable
class ConversationStore(Protocol):
    """Conversations' messages, oldest first, kept by conversation id and scope.

    Implementations are safe to share between threads; the SQLite and PostgreSQL ones
    between processes too.
    """

    def load(
        self, conversation_id: str, *, scope: Mapping[str, Any] | None = None
    ) -> list[Message]:
        """Every message of the conversation, oldest first ([] for one never written).

        Raises:
            InvalidArgumentError: an empty or over-long id, or a scope that is not a dict
                of JSON scalars.
        """
        ...

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        scope: Mapping[str, Any] | None = None,
    ) -> None:
        """Add one turn: ``messages`` are written together, after every turn before them,
        or (on any failure, a crash included) not at all.

        Raises:
            InvalidArgumentError: no messages, or an invalid id or scope.
        """
        ...

    def delete(self, conversation_id: str, *, scope: Mapping[str, Any] | None = None) -> int:
        """Forget the conversation; returns how many turns it had."""
        ...

    def conversations(self, *, scope: Mapping[str, Any] | None = None) -> list[str]:
        """The ids of the scope's conversations, sorted."""
        ...

    def close(self) -> None:
        """Release connections (the next call opens them again)."""
        ...


def scope_text(scope: Mapping[str, Any] | None) -> str:
    """``{"key":value,...}``: one text per scope, keys sorted, values canonical ("{}" for
    None); two scopes share a text exactly when the stores would match them.

    Raises:
        InvalidArgumentError: a key that is not a str, or a value that is not a JSON scalar
            (or a flat list of them).
    """
    check_filter(scope)
    pairs = (
        json.dumps(key, ensure_ascii=False) + ":" + canonical_json(value)
        for key, value in sorted((scope or {}).items())
    )
    return "{" + ",".join(pairs) + "}"


def conversation_key(conversation_id: str, scope: Mapping[str, Any] | None) -> tuple[str, str]:
    """(scope text, conversation id), both checked: the key every store files a turn under.

    Raises:
        ArgumentTypeError: an id that is not a str.
        InvalidArgumentError: an empty or over-long id, or an invalid scope.
    """
    given: object = conversation_id
    if not isinstance(given, str):
        raise ArgumentTypeError(f"conversation_id must be a str, got {type(given).__name__}")
    if not conversation_id or len(conversation_id) > MAX_ID_CHARS:
        raise InvalidArgumentError(
            f"conversation_id must be 1 to {MAX_ID_CHARS} characters, got {len(conversation_id)}"
        )
    check_unicode(conversation_id, "conversation_id")
    return scope_text(scope), conversation_id


def checked_turn(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as a list, each a Message, at least one.

    Raises:
        ArgumentTypeError: an item that is not a Message.
        InvalidArgumentError: no messages.
    """
    turn = list(messages)
    if not turn:
        raise InvalidArgumentError("a turn needs at least one message")
    for i, m in enumerate(turn):
        if not isinstance(m, Message):
            raise ArgumentTypeError(f"messages[{i}] is {type(m).__name__}, not a Message")
    return turn


def encode_turn(messages: Sequence[Message]) -> str:
    """One turn as JSON text (:meth:`Message.to_dict` records; images base64)."""
    return json.dumps([m.to_dict() for m in messages], ensure_ascii=False, separators=(",", ":"))


def decode_turn(text: str) -> list[Message]:
    """The messages :func:`encode_turn` wrote."""
    return [Message.from_dict(record) for record in json.loads(text)]
