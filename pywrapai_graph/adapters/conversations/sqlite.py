"""SQLiteConversationStore: conversations in a SQLite file that several processes share.

A turn is one row (its messages as one JSON array), so one INSERT writes it: SQLite's
journal makes it visible whole or not at all, a crash mid-write included, and a turn is
never interleaved with another writer's. Rows are numbered by ``AUTOINCREMENT`` (never
reused) and SQLite serialises writers, so a conversation reads back in the order its turns
were committed. The file uses WAL, so readers never wait for a writer.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.adapters.conversations._turns import TurnTable, checked_table
from pywrapai_graph.adapters.shared.sqlite_wal import use_wal
from pywrapai_graph.errors import RuntimeFailure
from pywrapai_graph.ports.conversation_store import conversation_key

__all__ = ["SQLiteConversationStore"]

#: how long a write waits for another process's write to end
_BUSY_S = 30.0


class SQLiteConversationStore(TurnTable):
    """Conversations in the SQLite file at ``path`` (created when missing).

    Args:
        path: the database file; every process that names it shares its conversations.
        table: the table (created on first use).

    Raises:
        InvalidArgumentError: ``table`` is not an SQL identifier.
    """

    _mark = "?"

    def __init__(
        self, path: str | os.PathLike[str], *, table: str = "pywrapai_conversations"
    ) -> None:
        self._table = checked_table(table)
        self._path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = os.getpid()

    def _open(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # a forked child: the connection is the parent's
            self._conn, self._pid = None, os.getpid()
        if self._conn is None:
            conn = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None, timeout=_BUSY_S
            )
            try:
                use_wal(conn, _BUSY_S)
                # WAL's NORMAL: a commit survives the process being killed; only a power
                # loss may take the last turns back (FULL would fsync every turn)
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self._table} ("
                    "turn INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL, "
                    "conversation_id TEXT NOT NULL, messages TEXT NOT NULL)"
                )
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS {self._table}_conversation "
                    f"ON {self._table} (scope, conversation_id, turn)"
                )
            except sqlite3.Error:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _run(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._lock:
            try:
                cursor = self._open().execute(sql, params)
                rows = cursor.fetchall()
                return rows if cursor.description is not None else [cursor.rowcount]
            except sqlite3.Error as exc:
                raise RuntimeFailure(
                    f"the conversation store {self._path!r} failed: {exc}"
                ) from exc

    def delete(self, conversation_id: str, *, scope: Mapping[str, Any] | None = None) -> int:
        (count,) = self._run(
            f"DELETE FROM {self._table} WHERE {self._one}",
            conversation_key(conversation_id, scope),
        )
        return int(count)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    def __repr__(self) -> str:
        return f"SQLiteConversationStore({self._path!r}, table={self._table!r})"
