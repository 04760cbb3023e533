"""PostgresRunStore: run states in one PostgreSQL table, one row per run."""

from __future__ import annotations

import json
import re
from typing import Any

from pywrapai_graph.adapters.shared.connection import SharedDatabase
from pywrapai_graph.domain.agent_state import AgentRunState, RunConflictError
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.run_store import RunStore

__all__ = ["PostgresRunStore"]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresRunStore(RunStore):
    """Agent runs in a PostgreSQL table that every worker process shares.

    Each save is one autocommitted statement — an ``INSERT`` for a run's first state, else
    an ``UPDATE`` guarded by the stored ``seq`` — so it is atomic, and of two workers saving
    the same ``seq`` exactly one succeeds (the other waits for the row lock, then finds the
    ``seq`` changed).

    Args:
        dsn: the database (libpq URL or key=value; its password is never shown).
        table: the table (created on first use).

    Raises:
        InvalidArgumentError: ``table`` is not a lower-case SQL identifier.
        ConfigurationError: a DSN whose password holds an unencoded reserved character.
    """

    def __init__(self, dsn: str, *, table: str = "pywrapai_agent_runs") -> None:
        if not _IDENTIFIER.match(str(table)):
            raise InvalidArgumentError(
                f"table must be a lower-case SQL identifier (letters, digits, _), got {table!r}"
            )
        self._db = SharedDatabase(dsn, "agent run store")
        self.table = table
        self._created = False

    def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if not self._created:
            self._db.run(
                f"""DO $$ BEGIN
                  PERFORM pg_advisory_xact_lock(hashtext('{self.table}'));
                  CREATE TABLE IF NOT EXISTS {self.table} (
                    run_id text PRIMARY KEY, seq integer NOT NULL, state text NOT NULL);
                END $$"""
            )
            self._created = True
        return self._db.run(sql, params)

    def load(self, run_id: str) -> AgentRunState | None:
        rows = self._run(f"SELECT state FROM {self.table} WHERE run_id = %s", (run_id,))
        return None if not rows else AgentRunState.from_dict(json.loads(rows[0][0]))

    def save(self, state: AgentRunState) -> None:
        text = json.dumps(state.to_dict())
        if state.seq == 1:
            rows = self._run(
                f"INSERT INTO {self.table} (run_id, seq, state) VALUES (%s, 1, %s) "
                "ON CONFLICT (run_id) DO NOTHING RETURNING 1",
                (state.run_id, text),
            )
        else:
            rows = self._run(
                f"UPDATE {self.table} SET seq = %s, state = %s "
                "WHERE run_id = %s AND seq = %s RETURNING 1",
                (state.seq, text, state.run_id, state.seq - 1),
            )
        if not rows:
            raise RunConflictError(state.run_id)

    def delete(self, run_id: str) -> None:
        self._run(f"DELETE FROM {self.table} WHERE run_id = %s", (run_id,))

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresRunStore({self.table}, {self._db!r})"
