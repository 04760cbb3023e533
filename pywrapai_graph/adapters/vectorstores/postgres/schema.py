"""The PostgreSQL schema of PGVectorStore: creation, version row, and rights-aware errors.

``init_schema`` creates (idempotently) the ``vector`` extension, the chunk table, its three
indexes, the manifest and info tables (``<table>__docs``, ``<table>__info``), the lexical
postings, document lengths and statistics (``<table>__terms``, ``<table>__doclen``,
``<table>__bm25`` and their triggers, see ``lexical``) and a row in ``pywrapai_schema``
naming the table, its dimension and the schema version; it upgrades a table of an older version
in the same transaction. An owner runs it once (``pywrapai-graph store init``); the service can
then use roles with only the rights ``pywrapai-graph store grants`` prints
(``store.create_schema: false``; docs/least-privilege.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from pywrapai_graph.adapters.vectorstores.postgres.lexical import (
    add_lexical_columns,
    create_lexical,
)
from pywrapai_graph.errors import ConfigurationError, VectorStoreError

__all__ = [
    "SCHEMA_LOCK",
    "SCHEMA_TABLE",
    "SCHEMA_VERSION",
    "check_schema",
    "committing",
    "in_transaction",
    "init_schema",
    "missing_right",
]

T = TypeVar("T")

#: The layout this release reads and writes; a newer one in the database is refused, an older
#: one upgraded by ``init_schema``. 2: the lexical postings and statistics (``lexical``);
#: 4: the document field (postings by document with their count in the document's text,
#: document lengths and count; 3 was its first layout, without the counts in the document).
SCHEMA_VERSION = 4
SCHEMA_TABLE = "pywrapai_schema"

#: where every grant of a store's tables is listed
_GRANTS_HINT = "(`pywrapai-graph store grants --reader ROLE --writer ROLE` lists them all)"
_GRANT_DML = "GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO <role> " + _GRANTS_HINT
_INIT_HINT = (
    "or set store.create_schema: false (PGVectorStore(create_schema=False)) and run "
    "`pywrapai-graph store init` once with an owner's DSN"
)


def missing_right(exc: Any, table: str, operation: str) -> str:
    """What right the role lacks for ``operation`` on ``table`` (or on the table of the store
    the server named), and how to get it."""
    text = str(getattr(exc, "pgerror", None) or exc)
    creating = _creation_right(text, table)
    if creating is not None:
        return creating
    denied = re.search(r"permission denied for (?:table|relation) (\w+)", text)
    target = denied.group(1) if denied else table
    if target == SCHEMA_TABLE and operation == "CREATE":
        return f"the role may not record table {table!r} in {SCHEMA_TABLE} (INSERT): {_INIT_HINT}"
    if target == SCHEMA_TABLE or operation == "SELECT":
        return f"the role lacks SELECT on table {target!r}: GRANT SELECT ON {target} TO <role> " + (
            _GRANTS_HINT
        )
    if operation == "TRUNCATE":
        return (
            f"the role lacks TRUNCATE on table {target!r} (clear()): GRANT TRUNCATE on each "
            f"table of the store to <role> {_GRANTS_HINT}"
        )
    if operation == "CREATE":
        return f"the role may not create or alter table {table!r}: {_INIT_HINT}"
    return f"the role lacks {operation} on table {target!r}: " + _GRANT_DML.format(table=target)


def _creation_right(text: str, table: str) -> str | None:
    """The database- or schema-level right the server said is missing, if it said one."""
    if "extension" in text:
        return (
            "the role may not create the 'vector' extension: CREATE EXTENSION needs the "
            f"database owner or a superuser ({_INIT_HINT})"
        )
    schema = re.search(r"permission denied for schema (\w+)", text)
    if schema:
        return (
            f"the role lacks CREATE on schema {schema.group(1)} needed to create table "
            f"{table!r}: GRANT CREATE ON SCHEMA {schema.group(1)} TO <role>, {_INIT_HINT}"
        )
    return None


def _schema_row(cur: Any, sql: Any, table: str) -> tuple[int, int] | None:
    cur.execute("SELECT to_regclass(%s)", (SCHEMA_TABLE,))
    if cur.fetchone()[0] is None:
        return None
    cur.execute(
        sql.SQL("SELECT version, dimension FROM {s} WHERE table_name = %s").format(
            s=sql.Identifier(SCHEMA_TABLE)
        ),
        (table,),
    )
    row = cur.fetchone()
    return (int(row[0]), int(row[1])) if row is not None else None


def _check_version(row: tuple[int, int] | None, table: str) -> None:
    if row is not None and row[0] > SCHEMA_VERSION:
        raise ConfigurationError(
            f"table {table!r} has schema version {row[0]}, newer than the version {SCHEMA_VERSION} "
            "this pywrapai-graph knows; upgrade pywrapai-graph (nothing was changed)"
        )


def _table_dimension(cur: Any, sql: Any, table: str, conn: Any) -> int | None:
    cur.execute(
        "SELECT atttypmod FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (sql.Identifier(table).as_string(conn),),
    )
    row = cur.fetchone()
    return int(row[0]) if row is not None else None


def _check_dimension(found: int | None, dimension: int, table: str) -> None:
    if found is not None and found != dimension:
        raise ConfigurationError(
            f"table {table!r} stores vectors of dimension {found}, but dimension={dimension} "
            "was given; use another table or the matching model"
        )


def check_schema(conn: Any, sql: Any, table: str, dimension: int) -> None:
    """Read-only checks for a role without DDL rights: the table exists, fits, and is not
    of a newer schema version.

    Raises:
        VectorStoreError: the table does not exist (run ``store init``).
        ConfigurationError: another dimension, or a newer schema version.
    """
    with conn.cursor() as cur:
        found = _table_dimension(cur, sql, table, conn)
        if found is None:
            raise VectorStoreError(
                f"table {table!r} does not exist and create_schema is off: run "
                "`pywrapai-graph store init` once with an owner's DSN (it creates the extension, "
                "the table, its indexes and the schema-version row)"
            )
        _check_dimension(found, dimension, table)
        row = _schema_row(cur, sql, table)
        _check_version(row, table)
        if row is None or row[0] < SCHEMA_VERSION:
            raise VectorStoreError(
                f"table {table!r} has the layout of an older pywrapai-graph (schema version "
                f"{row[0] if row else 'unrecorded'}; this release needs {SCHEMA_VERSION}, "
                "whose lexical search PostgreSQL serves): run `pywrapai-graph store init` once "
                "with an owner's DSN to upgrade it (one transaction; it analyses the stored "
                "chunks)"
            )


#: The advisory lock every schema change of every table takes (``pg_advisory_xact_lock``):
#: tables share the ``vector`` extension and the ``pywrapai_schema`` table, so processes
#: creating *different* tables at once collide as surely as those creating the same one.
SCHEMA_LOCK = 0x70_79_77_72_61_70_61_69  # "pywrapai"


def init_schema(conn: Any, sql: Any, table: str, dimension: int) -> bool:
    """Create the extension, table, indexes and schema-version row, or upgrade a table of an
    older schema version (idempotent), in one transaction under :data:`SCHEMA_LOCK`:
    processes starting at once on an empty database take turns, and each one after the first
    finds everything made.

    Returns:
        True when something was created or upgraded, False when all of it was up to date.

    Raises:
        ConfigurationError: another dimension, or a newer schema version (nothing changed).
    """
    with conn.cursor() as cur:
        if _up_to_date(cur, conn, sql, table, dimension):
            return False  # the usual start: nothing to lock

        def locked() -> bool:
            cur.execute("SET LOCAL statement_timeout = 0")  # waiting for the lock included
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if _up_to_date(cur, conn, sql, table, dimension):
                return False  # another process made it while we waited
            _create(cur, sql, table, dimension)
            return True

        return in_transaction(conn, cur, locked)


def in_transaction(conn: Any, cur: Any, work: Callable[[], T]) -> T:
    """``work()`` between BEGIN and COMMIT on an autocommit connection (ROLLBACK if it
    raises and the connection still stands). An error of the COMMIT itself carries the
    note :data:`_COMMITTING` (:func:`committing`): the server may have applied it."""
    cur.execute("BEGIN")
    sent = False
    try:
        result = work()
        sent = True
        cur.execute("COMMIT")
    except BaseException as exc:
        if sent:
            exc.add_note(_COMMITTING)
        if not conn.closed:
            cur.execute("ROLLBACK")
        raise
    return result


_COMMITTING = "raised by COMMIT: the transaction may have been applied"


def committing(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or the error it was raised in, e.g. a failed ROLLBACK's) was raised
    by the COMMIT of :func:`in_transaction`."""
    while exc is not None:
        if _COMMITTING in getattr(exc, "__notes__", ()):
            return True
        exc = exc.__context__
    return False


def _up_to_date(cur: Any, conn: Any, sql: Any, table: str, dimension: int) -> bool:
    found = _table_dimension(cur, sql, table, conn)
    _check_dimension(found, dimension, table)
    row = _schema_row(cur, sql, table) if found is not None else None
    _check_version(row, table)
    return row is not None and row[0] == SCHEMA_VERSION


def _create(cur: Any, sql: Any, table: str, dimension: int) -> None:
    t = sql.Identifier(table)
    cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {t} (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, "
            "text TEXT NOT NULL, metadata JSONB NOT NULL DEFAULT '{{}}', "
            "embedding vector({d}) NOT NULL, lex_len INT NOT NULL DEFAULT 0, lex_doc INT)"
        ).format(t=t, d=sql.Literal(dimension))
    )
    upgraded = add_lexical_columns(cur, sql, table)
    cur.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
        ).format(i=sql.Identifier(table + "_hnsw"), t=t)
    )
    cur.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (doc_id)").format(
            i=sql.Identifier(table + "_doc"), t=t
        )
    )
    cur.execute(
        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (metadata)").format(
            i=sql.Identifier(table + "_meta"), t=t
        )
    )
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {d} (doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)"
        ).format(d=sql.Identifier(table + "__docs"))
    )
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {i} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        ).format(i=sql.Identifier(table + "__info"))
    )
    create_lexical(cur, sql, table, backfill=upgraded)
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {s} (table_name TEXT PRIMARY KEY, "
            "version INT NOT NULL, dimension INT NOT NULL, "
            "created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ).format(s=sql.Identifier(SCHEMA_TABLE))
    )
    cur.execute(
        sql.SQL(
            "INSERT INTO {s} (table_name, version, dimension) VALUES (%s, %s, %s) "
            "ON CONFLICT (table_name) DO UPDATE SET version = EXCLUDED.version"
        ).format(s=sql.Identifier(SCHEMA_TABLE)),
        (table, SCHEMA_VERSION, dimension),
    )
