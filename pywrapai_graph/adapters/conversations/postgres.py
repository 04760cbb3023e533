"""PostgresConversationStore: conversations in one PostgreSQL table every process shares.

A turn is one row (its messages as one JSON array) written by one statement, so it is
visible whole or not at all, and never interleaved with another writer's turn; rows are
numbered by an identity column and a conversation reads back in that order. Connections are
:class:`~pywrapai_graph.adapters.shared.connection.SharedDatabase`'s: bounded statements,
one reconnect, and errors that name the host and port, never the DSN's password.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.adapters.conversations._turns import TurnTable, checked_table
from pywrapai_graph.adapters.shared.connection import SharedDatabase
from pywrapai_graph.ports.conversation_store import conversation_key

__all__ = ["PostgresConversationStore"]


class PostgresConversationStore(TurnTable):
    """Conversations in ``table`` of the PostgreSQL database at ``dsn``.

    Args:
        dsn: a libpq URL or key=value string (its password is never shown).
        table: the table (created on first use).

    Raises:
        InvalidArgumentError: ``table`` is not an SQL identifier.
        ConfigurationError: a DSN whose password holds an unencoded reserved character.
        MissingExtraError: psycopg2 is not installed (the ``pgvector`` extra).
    """

    _mark = "%s"

    def __init__(self, dsn: str, *, table: str = "pywrapai_conversations") -> None:
        self._table = checked_table(table).lower()
        self._db = SharedDatabase(dsn, "conversation store")
        self._created = False

    def _run(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        if not self._created:  # the lock: processes creating the table at once both succeed
            self._db.run(
                f"""DO $$ BEGIN
                  PERFORM pg_advisory_xact_lock(hashtext('{self._table}'));
                  CREATE TABLE IF NOT EXISTS {self._table} (
                    turn bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    scope text NOT NULL, conversation_id text NOT NULL, messages text NOT NULL);
                  CREATE INDEX IF NOT EXISTS {self._table}_conversation
                    ON {self._table} (scope, conversation_id, turn);
                END $$"""
            )
            self._created = True
        return self._db.run(sql, params)

    def delete(self, conversation_id: str, *, scope: Mapping[str, Any] | None = None) -> int:
        rows = self._run(
            f"WITH gone AS (DELETE FROM {self._table} WHERE {self._one} RETURNING 1) "
            "SELECT count(*) FROM gone",
            conversation_key(conversation_id, scope),
        )
        return int(rows[0][0])

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresConversationStore({self._table}, {self._db!r})"
