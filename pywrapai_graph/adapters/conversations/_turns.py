"""What the SQL conversation stores share: one table, a row a turn (its messages as one JSON
array), numbered as written; the statements that read and write it, written once for every
driver's parameter mark."""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pywrapai_graph.domain import Message
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.conversation_store import (
    ConversationStore,
    checked_turn,
    conversation_key,
    decode_turn,
    encode_turn,
    scope_text,
)

__all__ = ["TurnTable", "checked_table"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def checked_table(table: str) -> str:
    """``table`` when it is a plain SQL identifier.

    Raises:
        InvalidArgumentError: any other name.
    """
    if not _IDENTIFIER.match(str(table)):
        raise InvalidArgumentError(
            f"table must be an SQL identifier (letters, digits, _), got {table!r}"
        )
    return table


class TurnTable(ConversationStore):
    """:meth:`load`, :meth:`append` and :meth:`conversations` over the table ``_table``
    (``turn``, ``scope``, ``conversation_id``, ``messages``); a subclass runs the statements
    (:meth:`_run`) on its driver, whose parameter mark is ``_mark``."""

    #: the driver's parameter placeholder: "?" (sqlite3) or "%s" (psycopg2)
    _mark: ClassVar[str]
    _table: str

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of ``sql`` run with ``params`` (the table created on first use)."""

    @property
    def _one(self) -> str:
        """The condition that selects one conversation's rows (scope, then id)."""
        return f"scope = {self._mark} AND conversation_id = {self._mark}"

    def load(
        self, conversation_id: str, *, scope: Mapping[str, Any] | None = None
    ) -> list[Message]:
        rows = self._run(
            f"SELECT messages FROM {self._table} WHERE {self._one} ORDER BY turn",
            conversation_key(conversation_id, scope),
        )
        return [m for (text,) in rows for m in decode_turn(text)]

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        scope: Mapping[str, Any] | None = None,
    ) -> None:
        text = encode_turn(checked_turn(messages))
        marks = ", ".join([self._mark] * 3)
        self._run(
            f"INSERT INTO {self._table} (scope, conversation_id, messages) VALUES ({marks})",
            (*conversation_key(conversation_id, scope), text),
        )

    def conversations(self, *, scope: Mapping[str, Any] | None = None) -> list[str]:
        rows = self._run(
            f"SELECT DISTINCT conversation_id FROM {self._table} "
            f"WHERE scope = {self._mark} ORDER BY 1",
            (scope_text(scope),),
        )
        return [str(cid) for (cid,) in rows]
