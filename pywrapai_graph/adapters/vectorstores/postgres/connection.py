"""PGVectorStore's connections: the pool, session settings, the driver's errors as ours
(never showing the DSN's password), and one deadline per call from when it was made
(:func:`call_made`): ``statement_timeout`` bounds each statement, ``pool.watch`` the call.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import cannot_reach, reason_of, refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores.postgres import pool, schema
from pywrapai_graph.adapters.vectorstores.postgres.bm25 import WORK_MEM
from pywrapai_graph.adapters.vectorstores.postgres.pool import CLIENT_GRACE_S, FairPool, Slot
from pywrapai_graph.domain.checks import is_positive_int, is_text
from pywrapai_graph.errors import (
    ConfigurationError,
    StorageFullError,
    StoreBusyError,
    StoreTimeoutError,
    VectorStoreError,
)
from pywrapai_graph.ports.call_clock import call_made
from pywrapai_graph.redaction import redact, scrubbed

__all__ = ["DEFAULT_EF_SEARCH", "PGConnection", "T"]

_DISK_FULL = "53100"  # SQLSTATE disk_full
_NO_PRIVILEGE = "42501"  # insufficient_privilege
_CANCELED = "57014"  # query_canceled (statement_timeout)
#: libpq options unless the DSN sets them: a bounded connect; keepalives find a dead peer.
_CONNECT_OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}
T = TypeVar("T")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,50}$")
#: HNSW search breadth for this session: pgvector's default (40) loses recall.
DEFAULT_EF_SEARCH = 200


class PGConnection:
    """Connections, deadlines and error translation for a PostgreSQL store."""

    _ef_search = DEFAULT_EF_SEARCH

    def _prepare(
        self,
        dsn: str,
        table_name: str,
        dimension: int,
        pool_size: int,
        statement_timeout_ms: int | None,
        pool_timeout_ms: int | None = None,
    ) -> None:
        """Validate the arguments, load the driver and open the pool."""
        if not is_text(table_name) or not _IDENTIFIER.fullmatch(table_name):
            raise ConfigurationError(
                f"table_name {table_name!r} is not a valid identifier: use letters, digits and "
                "underscores, starting with a letter or underscore (at most 51 characters)"
            )
        for name, value in (("dimension", dimension), ("pool_size", pool_size)):
            if not is_positive_int(value):
                raise ConfigurationError(f"{name} must be a positive int, got {value!r}")
        for name, limit in (("statement", statement_timeout_ms), ("pool", pool_timeout_ms)):
            if limit is not None and not is_positive_int(limit):
                raise ConfigurationError(f"{name}_timeout_ms must be a positive int or None")
        refuse_unencoded_userinfo(dsn, "PostgreSQL connection string")
        self._pg = require("psycopg2", "pgvector", "psycopg2-binary")
        self._sql = require("psycopg2.sql", "pgvector", "psycopg2-binary")
        self._register = require("pgvector.psycopg2", "pgvector", "pgvector").register_vector
        self._dsn = dsn
        self._params: dict[str, str] = {}
        with contextlib.suppress(Exception):  # an unparsable DSN fails in connect, redacted
            self._params = self._pg.extensions.parse_dsn(dsn)
        self._table = table_name
        self._dim = dimension
        self._pool_size = pool_size
        self._timeout_ms = statement_timeout_ms
        self._pool_timeout = None if pool_timeout_ms is None else pool_timeout_ms / 1000
        self._pool = FairPool(pool_size)  # each connection opened on first use

    def _secrets(self) -> list[str]:
        """The DSN and the password inside it, whatever the form (URL or key=value)."""
        return [self._dsn, *([self._params["password"]] if self._params.get("password") else [])]

    def _redact(self, text: str) -> str:
        return redact(text, self._secrets())

    def _location(self) -> str:
        """The DSN without its password, for messages and the repr."""
        return redact(self._dsn, self._secrets()[1:])

    def _host(self) -> str:
        """``host:port`` for messages (never the user or password)."""
        host = self._params.get("host") or "localhost"
        return f"{host}:{self._params.get('port') or 5432}" if "," not in host else host

    def _connect(self, slot: Slot, due: float) -> None:
        """A new connection for ``slot``, given up with the call at ``due`` (monotonic; libpq
        counts whole seconds); the DSN's own options win over ours."""
        params = self._params
        options: dict[str, Any] = {k: v for k, v in _CONNECT_OPTIONS.items() if k not in params}
        options["application_name"] = f"pywrapai-graph:{self._table}"
        if self._timeout_ms is not None:  # added to the DSN's own server options, if any
            given = params.get("options", "")
            options["options"] = f"{given} -c statement_timeout={self._timeout_ms}".strip()
        if due < math.inf:
            limit = 0
            with contextlib.suppress(ValueError):  # a value libpq refuses fails in connect
                limit = int(params.get("connect_timeout", _CONNECT_OPTIONS["connect_timeout"]))
            seconds = int(due - time.monotonic() + CLIENT_GRACE_S)
            options["connect_timeout"] = max(1, seconds if limit <= 0 else min(limit, seconds))
        try:
            slot.conn = self._pg.connect(self._dsn, **options)
        except self._pg.Error as exc:
            raise self._unreachable(exc) from scrubbed(exc, self._secrets())

    def _unreachable(self, exc: BaseException) -> VectorStoreError:
        if isinstance(exc, self._pg.OperationalError):  # no session: DNS, refused, auth
            message = self._redact(cannot_reach("PostgreSQL", self._host(), exc))
            if reason_of(exc) == "timeout":  # connect_timeout: the server did not answer
                return StoreTimeoutError(message)
            return VectorStoreError(message)
        return VectorStoreError(
            f"invalid PostgreSQL connection string {self._location()!r}: "
            f"{self._redact(str(exc).strip())}"
        )

    @contextlib.contextmanager
    def _connection(self, due: float = math.inf) -> Iterator[Any]:
        """A pooled connection for one unit of work until ``due`` (monotonic seconds).

        Raises:
            StoreBusyError: every connection stayed in use past the pool timeout.
            StoreTimeoutError: the deadline passed before a connection was free, or the
                server did not answer within it.
        """
        slot = self._slot(due)
        armed = pool.NEVER
        seconds = round(due - time.monotonic() + CLIENT_GRACE_S, 2) if due < math.inf else None
        try:
            fresh = slot.conn is None
            if fresh:
                self._connect(slot, due)
            with pool.watch(slot.conn, seconds) as armed:
                if fresh:
                    try:
                        self._configure(slot.conn)
                    except BaseException:  # never pooled without its session settings
                        slot.discard()
                        raise
                yield slot.conn
        except (self._pg.OperationalError, self._pg.InterfaceError) as exc:
            slot.discard()
            if armed.fired:
                raise self._too_slow(armed.seconds) from scrubbed(exc, self._secrets())
            raise
        finally:
            if slot.conn is not None and slot.conn.closed:
                slot.discard()
            self._pool.release(slot)

    def _slot(self, due: float) -> Slot:
        """A slot of the pool, first come first served, before the pool timeout and ``due``."""
        left = due - time.monotonic()
        if left <= 0:
            raise self._expired(due, "before it could run")
        wait = min(left, math.inf if self._pool_timeout is None else self._pool_timeout)
        slot = self._pool.acquire(None if wait == math.inf else wait)
        if slot is not None:
            return slot
        if wait < left:
            raise StoreBusyError(
                f"all {self._pool_size} connections of table {self._table!r} to PostgreSQL at "
                f"{self._host()} stayed in use for {self._pool_timeout:g} s "
                "(store.pool_timeout_ms): the server may be slow or stuck (look at its "
                "pg_stat_activity), or the load is more than store.pool_size connections "
                "serve; nothing was done, retry later"
            )
        raise self._expired(due, f"waiting for one of the {self._pool_size} connections")

    def _configure(self, conn: Any) -> None:
        """A new connection's session settings (a retrieval is then one statement)."""
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SET hnsw.ef_search = %s; SET work_mem = %s", (self._ef_search, WORK_MEM))
            with contextlib.suppress(self._pg.Error):
                # pgvector >= 0.8: filtered HNSW scans keep going until k rows match
                cur.execute("SET hnsw.iterative_scan = relaxed_order")
        with contextlib.suppress(self._pg.ProgrammingError):  # no vector type yet: init adds it
            self._register(conn)

    def _expired(self, due: float, where: str) -> StoreTimeoutError:
        waited = (self._timeout_ms or 0) / 1000 + time.monotonic() - due
        return StoreTimeoutError(
            f"a call on table {self._table!r} to PostgreSQL at {self._host()} reached "
            f"its deadline {where}, {waited:.2f} s after it was made "
            f"(store.statement_timeout_ms = {self._timeout_ms} ms counts from the call): "
            "nothing was done. This process has more calls than store.pool_size connections "
            "serve in time, or the server is slow or stuck; retry later"
        )

    def _too_slow(self, seconds: float) -> StoreTimeoutError:
        """Raised while handling the driver's error, whose COMMIT note says whether the write
        may have been applied."""
        outcome = (
            "it timed out committing, so the write may have been applied (check before retrying it)"
            if schema.committing(sys.exception())
            else "the transaction was rolled back: nothing of this call was applied (retry it)"
        )
        return StoreTimeoutError(
            f"PostgreSQL at {self._host()} did not answer within {seconds:g} s "
            f"(store.statement_timeout_ms = {self._timeout_ms} ms, plus {CLIENT_GRACE_S:g} s): "
            "the connection was closed. Check that the server is up, reachable and not "
            f"overloaded; {outcome}"
        )

    def _ident(self, suffix: str = "") -> Any:
        return self._sql.Identifier(self._table + suffix)

    def _rows(self, statement: Any, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
        """The rows of one statement, in autocommit: one round trip, no BEGIN and COMMIT."""

        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        return self._run(work, transaction=False)

    def _run(
        self,
        work: Callable[[Any], T],
        operation: str = "SELECT",
        *,
        transaction: bool = True,
        deadline: bool = True,
    ) -> T:
        """``work(cursor)`` in a transaction (or not) on a pooled connection within the call's
        deadline (``deadline=False``: none, for DDL); a dropped connection is replaced once."""
        due = math.inf
        if deadline and self._timeout_ms is not None:
            due = call_made() + self._timeout_ms / 1000
        for attempt in (1, 2):
            try:
                with self._connection(due) as conn, conn.cursor() as cur:
                    if not transaction:
                        return work(cur)
                    return schema.in_transaction(conn, cur, lambda: work(cur))
            except self._pg.Error as exc:
                dropped = isinstance(exc, self._pg.OperationalError | self._pg.InterfaceError)
                if attempt == 2 or not dropped or isinstance(exc, self._pg.errors.QueryCanceled):
                    raise self._failure(exc, operation) from scrubbed(exc, self._secrets())
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, exc: BaseException, operation: str) -> VectorStoreError:
        code = getattr(exc, "pgcode", None)
        said = self._redact(str(exc).strip())
        if code == _DISK_FULL:  # the server names the file it could not extend
            said = self._redact(str(getattr(getattr(exc, "diag", None), "message_primary", "")))
            file = re.search(r'"([^"]+)"', said)
            return StorageFullError(
                f"the PostgreSQL server's disk is full (table {self._table!r}"
                + (f"; the server said: {said}" if said else "")
                + "); the transaction was rolled back. Free space on the server (the "
                "tablespace holding that file) and run it again.",
                path=file.group(1) if file else self._location(),
            )
        if code == _NO_PRIVILEGE:
            return VectorStoreError(
                f"PostgreSQL refused {operation} on {self._table!r}: "
                f"{schema.missing_right(exc, self._table, operation)}"
            )
        if code == _CANCELED and self._timeout_ms is not None:
            return StoreTimeoutError(
                f"a statement on table {self._table!r} ran longer than statement_timeout "
                f"({self._timeout_ms} ms) and was cancelled; the transaction was rolled back: "
                "nothing of this call was applied. Raise store.statement_timeout_ms or narrow "
                "the query"
            )
        if isinstance(exc, self._pg.OperationalError | self._pg.InterfaceError):
            return VectorStoreError(
                f"lost the PostgreSQL connection to {self._location()!r}: {said}"
            )
        return VectorStoreError(f"PostgreSQL error on table {self._table!r}: {said}")
