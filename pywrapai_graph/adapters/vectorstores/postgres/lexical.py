"""BM25 served by PostgreSQL for PGVectorStore: postings and statistics written with the chunks.

Tables beside the chunk table ``<table>`` (which gains ``lex_len``, the chunk's length after
analysis, and ``lex_doc``, the length of its share of its document — its text without the
overlap it repeats from the chunk before it in the same write,
:func:`~pywrapai_graph.application.text_analysis.document_parts`; NULL: all of it):

- ``<table>__terms (term, doc_id, chunk_id, tf, dtf, dl)``: one posting per distinct term of
  a chunk or of its share, the counts in each (``tf``, ``dtf``) and the chunk's length, keyed
  ``(term, doc_id, chunk_id)`` with ``tf, dtf, dl`` included, so the postings of a term are
  one index range read, grouped by document, without touching the chunks; a second index on
  ``chunk_id`` serves deletes;
- ``<table>__doclen (doc_id, chunks, len)``: each document's number of chunks and length (the
  sum of its chunks' shares), the document field's ``|D|``;
- ``<table>__bm25 (slot, n, total, docs, dtotal)``: the number of chunks, their total length,
  the number of documents and their total length as delta rows, one per
  ``pg_backend_pid() % 64``, so concurrent writers rarely update the same row and a query
  sums at most 64 rows.

The client analyses each chunk with the project's analyzer
(:func:`~pywrapai_graph.application.text_analysis.analyze`) and writes its postings right
after the chunk, in the same transaction. Statement-level triggers on the chunk table (with
transition tables) keep the statistics and drop the postings of deleted or overwritten chunks,
so every write path, whatever issues it, leaves them exact: a document's row is upserted with
the statement's deltas (documents in id order, so writers lock them in one order) and removed
with its last chunk; concurrent writers of one document queue on that row.

The queries are in :mod:`~pywrapai_graph.adapters.vectorstores.postgres.bm25`.
"""

from __future__ import annotations

import io
import struct
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from pywrapai_graph.adapters.vectorstores.postgres.text import from_pg
from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk

__all__ = [
    "COPY_HEADER",
    "COPY_TRAILER",
    "Analysis",
    "add_lexical_columns",
    "analyse",
    "analysed",
    "copy_binary",
    "create_lexical",
    "lexical_tables",
    "query_terms",
    "write_postings",
]

#: Delta rows of the statistics table: a writer updates the one of its backend.
STATS_SLOTS = 64
#: From this many postings a write sends them with binary COPY instead of an INSERT.
COPY_MIN_POSTINGS = 5_000
_BACKFILL_BATCH = 1000
#: What every binary COPY payload starts and ends with.
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
COPY_TRAILER = struct.pack("!h", -1)


def analysed(text: str) -> Counter[str]:
    """A chunk's terms and how often each occurs."""
    return Counter(analyze(text))


def query_terms(query: str) -> tuple[list[str], list[int]]:
    """A query's distinct terms and how often each occurs in it."""
    counts = analysed(query)
    return list(counts), list(counts.values())


def lexical_tables(table: str) -> tuple[str, str, str]:
    """The postings, document-length and statistics tables of ``table``."""
    return table + "__terms", table + "__doclen", table + "__bm25"


def names(sql: Any, table: str) -> dict[str, Any]:
    """The identifiers of ``table``'s lexical objects, for ``sql.SQL(...).format(**names)``."""
    terms, doclen, stats = lexical_tables(table)
    return {
        "t": sql.Identifier(table),
        "p": sql.Identifier(terms),
        "l": sql.Identifier(doclen),
        "s": sql.Identifier(stats),
        "pc": sql.Identifier(terms + "_chunk"),
        "f": sql.Identifier(table + "__bm25_count"),
        "ins": sql.Identifier(table + "__bm25_ins"),
        "upd": sql.Identifier(table + "__bm25_upd"),
        "del": sql.Identifier(table + "__bm25_del"),
        "slots": sql.Literal(STATS_SLOTS),
    }


# ----------------------------------------------------------------------------- writes
class Analysis(NamedTuple):
    """A batch's chunks analysed: each chunk's terms and length (the ``lex_len`` column), and
    the terms and length of its share of its document (``lex_doc``: its text without the
    overlap it repeats from the chunk before it, :func:`document_parts`)."""

    terms: list[Counter[str]]
    lengths: list[int]
    part_terms: list[Counter[str]]
    part_lengths: list[int]


def analyse(chunks: Sequence[Chunk], *, parts: bool = True) -> Analysis:
    """``chunks`` analysed in their order (``parts=False``: each chunk counts whole)."""
    terms = [analysed(c.text) for c in chunks]
    part_terms = terms
    if parts:
        texts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
        part_terms = [
            t if text == c.text else analysed(text)
            for c, t, text in zip(chunks, terms, texts, strict=True)
        ]
    return Analysis(
        terms,
        [sum(t.values()) for t in terms],
        part_terms,
        [sum(t.values()) for t in part_terms],
    )


def _copy_postings(rows: list[tuple[str, str, str, int, int, int]]) -> bytes:
    out = io.BytesIO()
    out.write(COPY_HEADER)
    pack = struct.pack
    for term, doc_id, chunk_id, tf, dtf, dl in rows:
        t, d, c = term.encode(), doc_id.encode(), chunk_id.encode()
        out.write(
            pack(
                f"!hi{len(t)}si{len(d)}si{len(c)}siiiiii",
                *(6, len(t), t, len(d), d, len(c), c, 4, tf, 4, dtf, 4, dl),
            )
        )
    out.write(COPY_TRAILER)
    return out.getvalue()


_POSTING_COLUMNS = "(term, doc_id, chunk_id, tf, dtf, dl)"


def copy_binary(cur: Any, sql: Any, target: Any, columns: str, payload: bytes) -> None:
    """``COPY target columns FROM STDIN`` of a binary ``payload`` (:data:`COPY_HEADER`, the
    rows, :data:`COPY_TRAILER`)."""
    statement = sql.SQL("COPY {t} " + columns + " FROM STDIN WITH (FORMAT binary)")
    cur.copy_expert(statement.format(t=target).as_string(cur), io.BytesIO(payload))


def write_postings(cur: Any, sql: Any, table: str, chunks: Sequence[Chunk], a: Analysis) -> None:
    """Insert the postings of chunks just written (the triggers removed any older ones): one
    per term of the chunk or of its share of the document, with both counts."""
    rows = [
        (term, c.doc_id, c.id, terms[term], part[term], dl)
        for c, terms, part, dl in zip(chunks, a.terms, a.part_terms, a.lengths, strict=True)
        for term in terms | part
    ]
    if not rows:
        return
    rows.sort()  # in key order: each index page is visited once, not once per chunk
    ids = names(sql, table)
    if len(rows) >= COPY_MIN_POSTINGS:
        copy_binary(cur, sql, ids["p"], _POSTING_COLUMNS, _copy_postings(rows))
        return
    columns = list(zip(*rows, strict=True))
    cur.execute(
        sql.SQL(
            "INSERT INTO {p} " + _POSTING_COLUMNS + " SELECT * FROM "
            "unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::int[], %s::int[])"
        ).format(**ids),
        [list(col) for col in columns],
    )


# ----------------------------------------------------------------------------- schema
#: A chunk row's share of its document's length (``lex_doc``; NULL, in rows written before
#: the column: the whole chunk).
_PART = "coalesce(lex_doc, lex_len)"
#: One statement's changes per document, in doc_id order: chunks, their length, their share
#: of the document's length (``{rows}``: the rows with their signs).
_DELTAS = (
    "SELECT array_agg(doc_id ORDER BY doc_id), array_agg(n ORDER BY doc_id), "
    "array_agg(len ORDER BY doc_id), array_agg(part ORDER BY doc_id) INTO ids, ns, lens, parts "
    "FROM (SELECT doc_id, sum(n) AS n, sum(len) AS len, sum(part) AS part FROM ({rows}) u "
    "GROUP BY doc_id HAVING sum(n) <> 0 OR sum(len) <> 0 OR sum(part) <> 0) x;"
)
_NEW = "SELECT doc_id, 1 AS n, lex_len AS len, " + _PART + " AS part FROM new_rows"
_OLD = "SELECT doc_id, -1 AS n, -lex_len AS len, -" + _PART + " AS part FROM old_rows"

#: The triggers' function: each statement's deltas per document upserted into the document
#: lengths (a row created is a document more, a row at 0 chunks is deleted: a document
#: less), then the store's counts into this backend's delta row.
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


def add_lexical_columns(cur: Any, sql: Any, table: str) -> bool:
    """Add ``lex_len`` and ``lex_doc`` to a chunk table written before they existed (no
    rewrite of its rows); True if ``lex_len`` was added (its chunks need analysing)."""
    if not _has_column(cur, sql, table, "lex_doc"):
        cur.execute(
            sql.SQL("ALTER TABLE {t} ADD COLUMN lex_doc INT").format(t=sql.Identifier(table))
        )
    if _has_column(cur, sql, table, "lex_len"):
        return False
    cur.execute(
        sql.SQL("ALTER TABLE {t} ADD COLUMN lex_len INT NOT NULL DEFAULT 0").format(
            t=sql.Identifier(table)
        )
    )
    return True


def _has_column(cur: Any, sql: Any, table: str, column: str) -> bool:
    cur.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = %s AND NOT attisdropped",
        (sql.Identifier(table).as_string(cur), column),
    )
    return bool(cur.fetchone()[0])


def _backfill(cur: Any, sql: Any, table: str) -> None:
    """Analyse every chunk already in the table: its postings and its length (each chunk
    counts whole in its document: the order it was written in is not known)."""
    t = sql.Identifier(table)
    after = ""
    while True:  # keyset pages by id, in this transaction
        cur.execute(
            sql.SQL("SELECT id, doc_id, text FROM {t} WHERE id > %s ORDER BY id LIMIT %s").format(
                t=t
            ),
            (after, _BACKFILL_BATCH),
        )
        rows = cur.fetchall()
        if not rows:
            return
        chunks = [
            Chunk(from_pg(text), doc_id=doc_id, id=chunk_id) for chunk_id, doc_id, text in rows
        ]
        analysis = analyse(chunks, parts=False)  # the order of writing is not known here
        write_postings(cur, sql, table, chunks, analysis)
        cur.execute(
            sql.SQL(
                "UPDATE {t} SET lex_len = u.len FROM unnest(%s::text[], %s::int[]) "
                "AS u(id, len) WHERE {t}.id = u.id"
            ).format(t=t),
            ([c.id for c in chunks], analysis.lengths),
        )
        after = rows[-1][0]


def _postings_key(cur: Any, sql: Any, table: str) -> None:
    """The postings' key (term, doc_id, chunk_id) with their counts, and the chunk index."""
    ids = names(sql, table)
    cur.execute(
        sql.SQL(
            "ALTER TABLE {p} ADD PRIMARY KEY (term, doc_id, chunk_id) INCLUDE (tf, dtf, dl)"
        ).format(**ids)
    )
    cur.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {pc} ON {p} (chunk_id)").format(**ids))


def _upgrade_postings(cur: Any, sql: Any, table: str) -> None:
    """Give the postings of an older table their chunk's ``doc_id`` (from the chunk table)
    and their count in the document (``dtf``: the chunk's, each chunk counting whole), and
    the key that groups them by document; the indexes are rebuilt once, after the fill."""
    ids = names(sql, table)
    cur.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'",
        (ids["p"].as_string(cur),),
    )
    for (key,) in cur.fetchall():
        cur.execute(
            sql.SQL("ALTER TABLE {p} DROP CONSTRAINT {k}").format(k=sql.Identifier(key), **ids)
        )
    cur.execute(sql.SQL("DROP INDEX IF EXISTS {pc}").format(**ids))
    for statement in (
        "ALTER TABLE {p} ADD COLUMN IF NOT EXISTS doc_id TEXT",
        "ALTER TABLE {p} ADD COLUMN IF NOT EXISTS dtf INT",
        "UPDATE {p} p SET doc_id = t.doc_id, dtf = p.tf FROM {t} t WHERE t.id = p.chunk_id",
        "DELETE FROM {p} WHERE dtf IS NULL",  # orphans
        "ALTER TABLE {p} ALTER COLUMN doc_id SET NOT NULL, ALTER COLUMN dtf SET NOT NULL",
    ):
        cur.execute(sql.SQL(statement).format(**ids))
    _postings_key(cur, sql, table)


def _exists(cur: Any, sql: Any, table: str) -> bool:
    cur.execute("SELECT to_regclass(%s)", (sql.Identifier(table).as_string(cur),))
    return cur.fetchone()[0] is not None


def _create_postings(cur: Any, sql: Any, table: str) -> None:
    ids = names(sql, table)
    if _exists(cur, sql, lexical_tables(table)[0]):
        if not _has_column(cur, sql, lexical_tables(table)[0], "dtf"):
            _upgrade_postings(cur, sql, table)
        return
    cur.execute(
        sql.SQL(
            "CREATE TABLE {p} (term TEXT NOT NULL, doc_id TEXT NOT NULL, chunk_id TEXT NOT NULL, "
            "tf INT NOT NULL, dtf INT NOT NULL, dl INT NOT NULL)"
        ).format(**ids)
    )
    _postings_key(cur, sql, table)


def _recount(cur: Any, sql: Any, table: str) -> None:
    """Document lengths and store counts derived from the chunk table (under its SHARE lock)."""
    ids = names(sql, table)
    statements = (
        "CREATE TABLE IF NOT EXISTS {l} (doc_id TEXT PRIMARY KEY, chunks BIGINT NOT NULL, "
        "len BIGINT NOT NULL)",
        "DELETE FROM {l}",
        f"INSERT INTO {{l}} (doc_id, chunks, len) SELECT doc_id, count(*), sum({_PART}) "
        "FROM {t} GROUP BY doc_id",
        "CREATE TABLE IF NOT EXISTS {s} (slot INT PRIMARY KEY, n BIGINT NOT NULL, "
        "total BIGINT NOT NULL)",
        "ALTER TABLE {s} ADD COLUMN IF NOT EXISTS docs BIGINT NOT NULL DEFAULT 0, "
        "ADD COLUMN IF NOT EXISTS dtotal BIGINT NOT NULL DEFAULT 0",
        "DELETE FROM {s}",
        "INSERT INTO {s} (slot, n, total, docs, dtotal) SELECT 0, count(*), "
        f"coalesce(sum(lex_len), 0), (SELECT count(*) FROM {{l}}), coalesce(sum({_PART}), 0) "
        "FROM {t}",
    )
    for statement in statements:
        cur.execute(sql.SQL(statement).format(**ids))


_PRIVILEGES = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES"})


def _grant_as(cur: Any, sql: Any, model: str, table: str) -> None:
    """Give the roles holding rights on ``model`` (other than its owner) the same rights on
    ``table``, new in an upgrade, so the roles ``store grants`` set up keep working."""
    cur.execute(
        "SELECT a.privilege_type, r.rolname FROM pg_class c "
        "CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.oid = to_regclass(%s) AND a.grantee <> c.relowner",
        (sql.Identifier(model).as_string(cur),),
    )
    for privilege, role in cur.fetchall():
        if privilege in _PRIVILEGES:
            cur.execute(
                sql.SQL("GRANT " + privilege + " ON {t} TO {r}").format(
                    t=sql.Identifier(table),
                    r=sql.SQL("PUBLIC") if role is None else sql.Identifier(role),
                )
            )


def create_lexical(cur: Any, sql: Any, table: str, *, backfill: bool) -> None:
    """Create the postings, document-length and statistics tables and the triggers
    (idempotent); with ``backfill``, first analyse the chunks already stored. Postings of an
    older schema get their document ids; the counts are derived from the chunks.

    Call inside the transaction that creates or upgrades the table.
    """
    ids = names(sql, table)
    # writers wait until the triggers exist, so the counts below miss none of theirs
    cur.execute(sql.SQL("LOCK TABLE {t} IN SHARE MODE").format(**ids))
    new = [name for name in lexical_tables(table) if not _exists(cur, sql, name)]
    _create_postings(cur, sql, table)
    if backfill:
        _backfill(cur, sql, table)
    _recount(cur, sql, table)
    cur.execute(sql.SQL(_FUNCTION).format(**ids))
    for trigger, event, tables in (
        ("ins", "INSERT", "NEW TABLE AS new_rows"),
        ("upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("del", "DELETE", "OLD TABLE AS old_rows"),
    ):
        cur.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {name} AFTER " + event + " ON {t} "
                "REFERENCING " + tables + " FOR EACH STATEMENT EXECUTE FUNCTION {f}()"
            ).format(name=ids[trigger], **ids)
        )
    for name in new:  # the chunk table's rights, on the tables an upgrade adds
        _grant_as(cur, sql, table, name)
