"""PostgresResponseCache: the response cache every process shares, in one PostgreSQL table.

An entry is served until its time to live has passed on the database's clock (one clock for
every process and machine), never after; expired rows are deleted a hundred at a time by the
writes that come later. Responses are stored as JSON (nothing is unpickled).
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from pywrapai_graph.adapters.shared.connection import SharedDatabase
from pywrapai_graph.domain import (
    FailedAttempt,
    InjectedChunk,
    LLMResponse,
    ReasoningPart,
    TokenUsage,
    ToolCall,
)
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import ResponseCache

__all__ = ["PostgresResponseCache"]

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
#: expired rows each write deletes (bounded: a write never pays for a backlog)
_PURGE = 100


def _encode(response: LLMResponse) -> str:
    return json.dumps(dataclasses.asdict(response), default=dict)


def _decode(text: str) -> LLMResponse:
    data: dict[str, Any] = json.loads(text)
    return LLMResponse(
        **{
            **data,
            "tool_calls": [ToolCall(**call) for call in data["tool_calls"]],
            "usage": TokenUsage(**data["usage"]),
            "context": tuple(InjectedChunk(**chunk) for chunk in data["context"]),
            "fallback_from": tuple(FailedAttempt(**f) for f in data["fallback_from"]),
            "reasoning": tuple(ReasoningPart(**r) for r in data.get("reasoning", ())),
        }
    )


class PostgresResponseCache(ResponseCache):
    """Responses by request key, for every process using the database at ``dsn``.

    Args:
        dsn: the PostgreSQL database (libpq URL or key=value; its password is never shown).
        ttl_s: how long an entry is served after it was written.
        table: the table (created on first use).

    Raises:
        InvalidArgumentError: ``ttl_s`` is not positive, or ``table`` is not a lower-case
            SQL identifier.
        ConfigurationError: a DSN whose password holds an unencoded reserved character.
    """

    def __init__(
        self, dsn: str, *, ttl_s: float = 3600.0, table: str = "pywrapai_response_cache"
    ) -> None:
        given: object = ttl_s  # checked at runtime, whatever its type says
        if isinstance(given, bool) or not isinstance(given, int | float) or not given > 0:
            raise InvalidArgumentError(f"ttl_s must be a number of seconds > 0, got {ttl_s!r}")
        if not _IDENTIFIER.match(str(table)):
            raise InvalidArgumentError(
                f"table must be a lower-case SQL identifier (letters, digits, _), got {table!r}"
            )
        self._db = SharedDatabase(dsn, "shared response cache")
        self.ttl_s = float(ttl_s)
        self.table = table
        self._created = False
        self.hits = 0
        self.misses = 0

    def _run(self, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        if not self._created:
            self._db.run(
                f"""DO $$ BEGIN
                  PERFORM pg_advisory_xact_lock(hashtext('{self.table}'));
                  CREATE TABLE IF NOT EXISTS {self.table} (
                    key text PRIMARY KEY, value text NOT NULL, expires_at timestamptz NOT NULL);
                  CREATE INDEX IF NOT EXISTS {self.table}_expires ON {self.table} (expires_at);
                END $$"""
            )
            self._created = True
        return self._db.run(sql, params or {})

    def get(self, key: str) -> LLMResponse | None:
        rows = self._run(
            f"SELECT value FROM {self.table} WHERE key = %(key)s "
            "AND expires_at > clock_timestamp()",
            {"key": key},
        )
        if not rows:
            self.misses += 1
            return None
        self.hits += 1
        return _decode(rows[0][0])

    def set(self, key: str, response: LLMResponse) -> None:
        self._run(
            f"""WITH gone AS (
                  DELETE FROM {self.table} WHERE ctid = ANY(ARRAY(
                    SELECT ctid FROM {self.table}
                    WHERE expires_at <= clock_timestamp() AND key <> %(key)s LIMIT {_PURGE})))
                INSERT INTO {self.table} (key, value, expires_at)
                VALUES (%(key)s, %(value)s, clock_timestamp() + make_interval(secs => %(ttl)s))
                ON CONFLICT (key) DO UPDATE
                SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at""",
            {"key": key, "value": _encode(response), "ttl": self.ttl_s},
        )

    def clear(self) -> None:
        self._run(f"DELETE FROM {self.table}")

    def __len__(self) -> int:
        rows = self._run(f"SELECT count(*) FROM {self.table} WHERE expires_at > clock_timestamp()")
        return int(rows[0][0])

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        self._db.close()

    def __repr__(self) -> str:
        return f"PostgresResponseCache({self.table}, {self._db!r}, ttl_s={self.ttl_s:g})"
