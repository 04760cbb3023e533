"""SQLiteRunStore: run states in one table of a SQLite file (WAL), one row per run."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.shared.sqlite_wal import use_wal
from pywrapai_graph.domain.agent_state import AgentRunState, RunConflictError
from pywrapai_graph.errors import InvalidArgumentError, RuntimeFailure
from pywrapai_graph.ports.run_store import RunStore

__all__ = ["SQLiteRunStore"]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class SQLiteRunStore(RunStore):
    """Agent runs in a SQLite file that every process on the machine can open.

    Each save is one statement — an ``INSERT`` for a run's first state, else an ``UPDATE``
    guarded by the stored ``seq`` — committed alone: atomic, and of two writers saving the
    same ``seq`` exactly one succeeds.

    Args:
        path: the database file (created if missing).
        table: the table (created on first open).

    Raises:
        InvalidArgumentError: ``table`` is not a lower-case SQL identifier.
        RuntimeFailure: the file cannot be opened as a SQLite database.
    """

    def __init__(self, path: str | os.PathLike[str], *, table: str = "pywrapai_agent_runs") -> None:
        if not _IDENTIFIER.match(str(table)):
            raise InvalidArgumentError(
                f"table must be a lower-case SQL identifier (letters, digits, _), got {table!r}"
            )
        self.path = os.fspath(path)
        self.table = table
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            use_wal(self._conn, 30.0)
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, state TEXT NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise RuntimeFailure(f"cannot open the run store {self.path!r}: {exc}") from exc

    def _run(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        with self._lock:
            try:
                return self._conn.execute(sql, params)
            except sqlite3.Error as exc:
                raise RuntimeFailure(f"the run store {self.path!r} failed: {exc}") from exc

    def load(self, run_id: str) -> AgentRunState | None:
        row = self._run(f"SELECT state FROM {self.table} WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else AgentRunState.from_dict(json.loads(row[0]))

    def save(self, state: AgentRunState) -> None:
        text = json.dumps(state.to_dict())
        if state.seq == 1:
            sql = f"INSERT OR IGNORE INTO {self.table} (run_id, seq, state) VALUES (?, 1, ?)"
            params: tuple[Any, ...] = (state.run_id, text)
        else:
            sql = f"UPDATE {self.table} SET seq = ?, state = ? WHERE run_id = ? AND seq = ?"
            params = (state.seq, text, state.run_id, state.seq - 1)
        if self._run(sql, params).rowcount != 1:
            raise RunConflictError(state.run_id)

    def delete(self, run_id: str) -> None:
        self._run(f"DELETE FROM {self.table} WHERE run_id = ?", (run_id,))

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteRunStore({self.path!r}, table={self.table!r})"
