"""One PostgreSQL connection for the state every process shares (limits, responses).

Each statement runs alone in autocommit under a lock (psycopg2 serialises a connection's
statements anyway); a connection found broken is replaced once. Failures are ours, worded
by host and port: the DSN's password never reaches a message, a repr, a log or a cause.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import cannot_reach, refuse_unencoded_userinfo
from pywrapai_graph.errors import RuntimeFailure
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["SharedDatabase"]

#: a bounded connect, a bounded statement, a bounded wait for a row lock, and keepalives
#: that find a dead peer on an idle connection in about a minute (the DSN's own win)
_OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
_SESSION = "-c statement_timeout=5000 -c lock_timeout=5000"


class SharedDatabase:
    """A connection to the database at ``dsn``, opened on first use.

    Args:
        dsn: a libpq URL or key=value string.
        what: what it is for, in messages (``"shared limits"``).

    Raises:
        ConfigurationError: a URL whose password holds an unencoded reserved character.
        MissingExtraError: psycopg2 is not installed (the ``pgvector`` extra).
    """

    def __init__(self, dsn: str, what: str) -> None:
        refuse_unencoded_userinfo(dsn, f"{what} DSN")
        self._pg = require("psycopg2", "pgvector", "psycopg2-binary")
        self._dsn = dsn
        self._what = what
        self._lock = threading.Lock()
        self._conn: Any = None
        self._pid = os.getpid()
        self._prepared: set[str] = set()  # the PREPAREs run on this connection
        params: dict[str, str] = {}
        with contextlib.suppress(Exception):  # a DSN libpq refuses fails in connect()
            params = self._pg.extensions.parse_dsn(dsn)
        self._secrets = (dsn, params.get("password"))
        self._where = f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}"
        self._options: dict[str, Any] = {k: v for k, v in _OPTIONS.items() if k not in params}
        self._options["options"] = f"{params.get('options', '')} {_SESSION}".strip()
        self._options["application_name"] = f"pywrapai-graph:{what}"

    def run(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, prepare: str = ""
    ) -> list[tuple[Any, ...]]:
        """The rows of one statement (none for a statement that returns none).

        Args:
            sql: the statement.
            params: its parameters.
            prepare: a ``PREPARE`` that ``sql`` executes, run first on a connection that has
                not run it yet (the hot statement is planned once per connection).

        Raises:
            RuntimeFailure: the database cannot be reached or refused the statement (its
                message names the host and port, never the password).
        """
        with self._lock:
            for attempt in (1, 2):
                conn = self._open()
                try:
                    with conn.cursor() as cur:
                        if prepare and prepare not in self._prepared:
                            cur.execute(prepare)
                            self._prepared.add(prepare)
                        cur.execute(sql, params)
                        return cur.fetchall() if cur.description is not None else []
                except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
                    broken = bool(conn.closed)  # else a timeout: the session is fine
                    if broken:
                        self._discard()
                    if attempt == 2 or not broken:
                        raise self._failure(exc) from scrubbed(exc, self._secrets)
                except self._pg.Error as exc:
                    raise self._failure(exc) from scrubbed(exc, self._secrets)
        raise AssertionError("unreachable")  # pragma: no cover

    def _open(self) -> Any:
        if self._pid != os.getpid():  # a forked child: the session is the parent's
            self._conn, self._pid = None, os.getpid()  # left open (closing would end it)
        if self._conn is None or self._conn.closed:
            try:
                self._conn = self._pg.connect(self._dsn, **self._options)
            except self._pg.Error as exc:
                raise RuntimeFailure(
                    redact(cannot_reach("PostgreSQL", self._where, exc), self._secrets)
                ) from scrubbed(exc, self._secrets)
            self._conn.autocommit = True
            self._prepared = set()
        return self._conn

    def _failure(self, exc: BaseException) -> RuntimeFailure:
        text = redact(" ".join(str(exc).split()), self._secrets)[:300]
        return RuntimeFailure(f"the {self._what} database at {self._where} failed: {text}")

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            conn.close()

    def close(self) -> None:
        """Close the connection (the next statement opens a new one)."""
        with self._lock:
            self._discard()

    def __repr__(self) -> str:
        return f"SharedDatabase({self._what} at {self._where})"
