"""PGVectorStore's schema: creation, version check, rights-aware errors, grants for roles.

Beside the chunk table ``T`` and its manifests, :func:`open_schema` creates the lexical tables:
``T__terms`` the postings keyed ``(term, doc_id, chunk_id)`` with their counts (a term's are
one index range); ``T__doclen`` each document's chunks and length; ``T__bm25`` the counts and
total lengths as delta rows, one per ``pg_backend_pid() % 64`` (concurrent writers rarely
share one). Statement-level triggers keep these exact on every write path, documents in id
order (writers lock them in one order). A table of another layout is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pywrapai_graph.adapters.vectorstores.postgres.rows import names, store_tables
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError, VectorStoreError

__all__ = [
    "HNSW",
    "SCHEMA_VERSION",
    "committing",
    "grant_statements",
    "in_transaction",
    "missing_right",
    "open_schema",
]

T = TypeVar("T")

#: The layout this release reads and writes; any other one is refused.
SCHEMA_VERSION = 4
SCHEMA_TABLE = "pywrapai_schema"

_GRANTS_HINT = "(`pywrapai-graph store grants --reader ROLE --writer ROLE` lists them all)"
_GRANT_DML = "GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO <role> " + _GRANTS_HINT
_INIT_HINT = (
    "or set store.create_schema: false (PGVectorStore(create_schema=False)) and run "
    "`pywrapai-graph store init` once with an owner's DSN"
)


def missing_right(exc: Any, table: str, operation: str) -> str:
    """What right the role lacks for ``operation`` (on ``table`` or the one the server named),
    and how to get it."""
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


def _found(cur: Any, sql: Any, table: str, dimension: int) -> bool:
    """Whether ``table`` exists; another dimension or version raises as :func:`open_schema`."""
    cur.execute(
        "SELECT atttypmod FROM pg_attribute "
        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (sql.Identifier(table).as_string(cur),),
    )
    row = cur.fetchone()
    if row is None:
        return False
    if int(row[0]) != dimension:
        raise ConfigurationError(
            f"table {table!r} stores vectors of dimension {row[0]}, but dimension={dimension} "
            "was given; use another table or the matching model"
        )
    cur.execute("SELECT to_regclass(%s)", (SCHEMA_TABLE,))
    if cur.fetchone()[0] is not None:
        schema = sql.Identifier(SCHEMA_TABLE)
        cur.execute(
            sql.SQL("SELECT version FROM {s} WHERE table_name = %s").format(s=schema), [table]
        )
        row = cur.fetchone()
    version = None if row is None else int(row[0])
    if version is not None and version > SCHEMA_VERSION:
        raise ConfigurationError(
            f"table {table!r} has schema version {version}, newer than the version "
            f"{SCHEMA_VERSION} this pywrapai-graph knows; upgrade pywrapai-graph (nothing was "
            "changed)"
        )
    if version != SCHEMA_VERSION:
        raise VectorStoreError(
            f"table {table!r} has the layout of a pre-release pywrapai-graph (schema version "
            f"{version or 'unrecorded'}; this release reads {SCHEMA_VERSION}), which it does "
            "not upgrade: ingest the documents again into a new table (store.table), then drop "
            "this one (nothing was changed)"
        )
    return True


#: The advisory lock of every table's schema change: tables share the extension and
#: ``pywrapai_schema``, so creating *different* tables at once collides too.
SCHEMA_LOCK = 0x70_79_77_72_61_70_61_69  # "pywrapai"


def open_schema(conn: Any, sql: Any, table: str, dimension: int, *, create: bool) -> bool:
    """Check the table, or create it under :data:`SCHEMA_LOCK`; True if it created it.

    Raises:
        ConfigurationError: another dimension, or a newer schema version (nothing changed).
        VectorStoreError: an older layout; or no table and ``create`` off (run ``store init``).
    """
    with conn.cursor() as cur:
        if _found(cur, sql, table, dimension):
            return False  # the usual start: nothing to lock
        if not create:
            raise VectorStoreError(
                f"table {table!r} does not exist and create_schema is off: run "
                "`pywrapai-graph store init` once with an owner's DSN (it creates the "
                "extension, the table, its indexes and the schema-version row)"
            )

        def locked() -> bool:
            cur.execute("SET LOCAL statement_timeout = 0")  # waiting for the lock included
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if _found(cur, sql, table, dimension):
                return False  # another process made it while we waited
            _create(cur, sql, table, dimension)
            return True

        return in_transaction(conn, cur, locked)


def in_transaction(conn: Any, cur: Any, work: Callable[[], T]) -> T:
    """``work()`` between BEGIN and COMMIT (ROLLBACK if it raises and the connection stands);
    an error of the COMMIT itself is noted (:func:`committing`): it may have been applied."""
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


#: The HNSW index, also rebuilt after a ``bulk_load``.
HNSW = "CREATE INDEX IF NOT EXISTS {hnsw} ON {t} USING hnsw (embedding vector_cosine_ops)"
#: Every table and index (the layout in the module docstring).
_CREATE = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE TABLE IF NOT EXISTS {t} (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, "
    "text TEXT NOT NULL, metadata JSONB NOT NULL DEFAULT '{{}}', "
    "embedding vector({dim}) NOT NULL, lex_len INT NOT NULL DEFAULT 0, lex_doc INT)",
    HNSW,
    "CREATE INDEX IF NOT EXISTS {doc} ON {t} (doc_id)",
    "CREATE INDEX IF NOT EXISTS {meta} ON {t} USING gin (metadata)",
    "CREATE TABLE IF NOT EXISTS {d} (doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {i} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {sv} (table_name TEXT PRIMARY KEY, version INT NOT NULL, "
    "dimension INT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    "CREATE TABLE IF NOT EXISTS {p} (term TEXT NOT NULL, doc_id TEXT NOT NULL, "
    "chunk_id TEXT NOT NULL, tf INT NOT NULL, dtf INT NOT NULL, dl INT NOT NULL, "
    "PRIMARY KEY (term, doc_id, chunk_id) INCLUDE (tf, dtf, dl))",
    "CREATE INDEX IF NOT EXISTS {pc} ON {p} (chunk_id)",
    "CREATE TABLE IF NOT EXISTS {l} (doc_id TEXT PRIMARY KEY, chunks BIGINT NOT NULL, "
    "len BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {s} (slot INT PRIMARY KEY, n BIGINT NOT NULL, "
    "total BIGINT NOT NULL, docs BIGINT NOT NULL, dtotal BIGINT NOT NULL)",
)


def _create(cur: Any, sql: Any, table: str, dimension: int) -> None:
    """Create the extension, the tables, their indexes and triggers, and the version row."""
    ids = {**names(sql, table), "sv": sql.Identifier(SCHEMA_TABLE), "dim": sql.Literal(dimension)}
    for statement in _CREATE:
        cur.execute(sql.SQL(statement).format(**ids))
    cur.execute(sql.SQL(_FUNCTION).format(**ids))
    for trigger, event, tables in _TRIGGERS:
        cur.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {name} AFTER " + event + " ON {t} "
                "REFERENCING " + tables + " FOR EACH STATEMENT EXECUTE FUNCTION {f}()"
            ).format(name=ids[trigger], **ids)
        )
    cur.execute(
        sql.SQL(
            "INSERT INTO {sv} (table_name, version, dimension) VALUES (%s, %s, %s) "
            "ON CONFLICT (table_name) DO UPDATE SET version = EXCLUDED.version"
        ).format(**ids),
        (table, SCHEMA_VERSION, dimension),
    )


#: A chunk row's share of its document's length (NULL: the whole chunk).
_PART = "coalesce(lex_doc, lex_len)"
#: One statement's changes per document, in doc_id order (``{rows}``: rows with signs).
_DELTAS = (
    "SELECT array_agg(doc_id ORDER BY doc_id), array_agg(n ORDER BY doc_id), "
    "array_agg(len ORDER BY doc_id), array_agg(part ORDER BY doc_id) INTO ids, ns, lens, parts "
    "FROM (SELECT doc_id, sum(n) AS n, sum(len) AS len, sum(part) AS part FROM ({rows}) u "
    "GROUP BY doc_id HAVING sum(n) <> 0 OR sum(len) <> 0 OR sum(part) <> 0) x;"
)
_NEW = "SELECT doc_id, 1 AS n, lex_len AS len, " + _PART + " AS part FROM new_rows"
_OLD = "SELECT doc_id, -1 AS n, -lex_len AS len, -" + _PART + " AS part FROM old_rows"

#: The triggers' function: the deltas per document into the document lengths (a row at 0
#: chunks deleted), then the store's counts into this backend's delta row.
_FUNCTION = (
    """
CREATE OR REPLACE FUNCTION {f}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE ids text[]; ns bigint[]; lens bigint[]; parts bigint[];
        dn bigint; dt bigint; dp bigint; dd bigint;
BEGIN
  IF TG_OP = 'INSERT' THEN
    """
    + _DELTAS.replace("{rows}", _NEW)
    + """
  ELSIF TG_OP = 'DELETE' THEN
    """
    + _DELTAS.replace("{rows}", _OLD)
    + """
    DELETE FROM {p} WHERE chunk_id IN (SELECT id FROM old_rows);
  ELSE
    """
    + _DELTAS.replace("{rows}", _NEW + " UNION ALL " + _OLD)
    + """
    DELETE FROM {p} WHERE chunk_id IN (SELECT id FROM old_rows);
  END IF;
  IF ids IS NULL THEN
    RETURN NULL;
  END IF;
  WITH up AS (
    INSERT INTO {l} AS l (doc_id, chunks, len) SELECT * FROM unnest(ids, ns, parts)
    ON CONFLICT (doc_id) DO UPDATE SET chunks = l.chunks + EXCLUDED.chunks,
                                       len = l.len + EXCLUDED.len
    RETURNING l.doc_id, l.chunks)
  SELECT sum(d.n), sum(d.len), sum(d.part),
         count(*) FILTER (WHERE up.chunks = d.n) - count(*) FILTER (WHERE up.chunks = 0)
  INTO dn, dt, dp, dd
  FROM up JOIN unnest(ids, ns, lens, parts) AS d(doc_id, n, len, part) USING (doc_id);
  DELETE FROM {l} WHERE doc_id = ANY (ids) AND chunks = 0;
  INSERT INTO {s} AS s (slot, n, total, docs, dtotal)
  VALUES (pg_backend_pid() % {slots}, dn, dt, dd, dp)
  ON CONFLICT (slot) DO UPDATE SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total,
    docs = s.docs + EXCLUDED.docs, dtotal = s.dtotal + EXCLUDED.dtotal;
  RETURN NULL;
END
$body$
"""
)


_TRIGGERS = (
    ("ins", "INSERT", "NEW TABLE AS new_rows"),
    ("upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
    ("del", "DELETE", "OLD TABLE AS old_rows"),
)


#: The database, the table's schema and the ``vector`` extension's schema (no row: no table).
_WHERE = (
    "SELECT current_database(), n.nspname, (SELECT en.nspname FROM pg_extension e "
    "JOIN pg_namespace en ON en.oid = e.extnamespace WHERE e.extname = 'vector') "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(%s)"
)


def _names(sql: Any, names: Sequence[str]) -> Any:
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


def grant_statements(
    conn: Any, sql: Any, table: str, reader: str | None, writer: str | None
) -> list[str]:
    """``PGVectorStore.grant_statements``, on the owner's connection ``conn``."""
    roles = [r for r in (reader, writer) if r is not None]
    if not roles or any(not r.strip() for r in roles):
        raise InvalidArgumentError("name a reader role, a writer role or both (non-empty names)")
    with conn.cursor() as cur:
        cur.execute(_WHERE, (sql.Identifier(table).as_string(conn),))
        row = cur.fetchone()
        if row is None:
            raise VectorStoreError(
                f"table {table!r} does not exist: run `pywrapai-graph store init` with the "
                "owner's DSN first, then ask for the grants"
            )
    database, schema, vector_schema = row
    schemas = [schema] + ([vector_schema] if vector_schema not in (None, schema) else [])
    own = sorted(store_tables(table))
    tables = [*own, SCHEMA_TABLE]

    def render(template: str, **parts: Any) -> str:
        return str(sql.SQL(template).format(**parts).as_string(conn))

    everyone = _names(sql, roles)
    db = sql.Identifier(str(database))
    out = [
        "-- both roles: reach the database and the store's schema",
        render("GRANT CONNECT ON DATABASE {d} TO {r};", d=db, r=everyone),
        render("GRANT USAGE ON SCHEMA {s} TO {r};", s=_names(sql, schemas), r=everyone),
        "-- read: search (dense and lexical), count, manifests, the schema-version check",
        render("GRANT SELECT ON {t} TO {r};", t=_names(sql, tables), r=everyone),
    ]
    if writer is None:
        return out
    role = sql.Identifier(writer)
    out.append("-- write: ingest, replace, delete (a write stages rows in a temp table)")
    out.append(render("GRANT INSERT, UPDATE, DELETE ON {t} TO {r};", t=_names(sql, own), r=role))
    out.append(render("GRANT TEMPORARY ON DATABASE {d} TO {r};", d=db, r=role))
    return out
