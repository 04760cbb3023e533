"""The GRANT statements for a read-only and a read-write application role on a store.

Derived from the catalog, not from a list kept here: every table of the store (the chunk
table and its ``<table>__*`` companions, whatever this release creates), its sequences, the
shared ``pywrapai_schema`` table, the schema holding them and the ``vector`` extension's
schema. Tables of another store whose name merely starts with ``<table>__`` are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.postgres.schema import SCHEMA_TABLE
from pywrapai_graph.errors import InvalidArgumentError, VectorStoreError

__all__ = ["grant_statements"]

_WHERE = (
    "SELECT current_database(), c.relnamespace, n.nspname, (SELECT en.nspname FROM "
    "pg_extension e JOIN pg_namespace en ON en.oid = e.extnamespace WHERE e.extname = 'vector') "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(%s)"
)
#: The store's relations, the shared table last; ``o`` another store recorded in the
#: shared table whose name starts with ``<table>__``, whose relations are not ours.
_RELATIONS = """
SELECT c.relname, c.relkind FROM pg_class c
WHERE c.relnamespace = %(schema)s AND c.relkind IN ('r', 'p', 'S')
  AND (c.relname IN (%(table)s, %(shared)s)
       OR left(c.relname, length(%(table)s) + 2) = %(table)s || '__')
  AND NOT EXISTS (SELECT FROM {shared} o WHERE o.table_name <> %(table)s
    AND left(o.table_name, length(%(table)s) + 2) = %(table)s || '__'
    AND (c.relname = o.table_name
         OR left(c.relname, length(o.table_name) + 2) = o.table_name || '__'))
ORDER BY c.relname = %(shared)s, c.relname
"""


def _names(sql: Any, names: Sequence[str]) -> Any:
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


def grant_statements(
    conn: Any, sql: Any, table: str, reader: str | None, writer: str | None
) -> list[str]:
    """The statements (with ``--`` comments) that give ``reader`` read-only and ``writer``
    read-write use of the store, for its owner to run.

    Raises:
        InvalidArgumentError: no role, or an empty role name.
        VectorStoreError: the table does not exist.
    """
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
        database, namespace, schema, vector_schema = row
        relations = sql.SQL(_RELATIONS).format(shared=sql.Identifier(SCHEMA_TABLE))
        cur.execute(relations, {"schema": namespace, "table": table, "shared": SCHEMA_TABLE})
        found = [(str(n), str(k)) for n, k in cur.fetchall()]
    schemas = [schema] + ([vector_schema] if vector_schema not in (None, schema) else [])
    tables = [n for n, k in found if k != "S"]
    sequences = [n for n, k in found if k == "S"]

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
    own = [t for t in tables if t != SCHEMA_TABLE]  # only store init writes that one
    out.append("-- write: ingest, replace, delete (a write stages rows in a temp table)")
    out.append(render("GRANT INSERT, UPDATE, DELETE ON {t} TO {r};", t=_names(sql, own), r=role))
    if sequences:
        out.append(render("GRANT USAGE ON SEQUENCE {q} TO {r};", q=_names(sql, sequences), r=role))
    out.append(render("GRANT TEMPORARY ON DATABASE {d} TO {r};", d=db, r=role))
    return out
