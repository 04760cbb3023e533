"""BM25 served by PostgreSQL for PGVectorStore: postings and statistics written with the chunks.

Tables beside the chunk table ``<table>`` (which gains ``lex_len``, the chunk's length after
analysis):

- ``<table>__terms (term, chunk_id, tf, dl)``: one posting per distinct term of a chunk, its
  count and the chunk's length, keyed ``(term, chunk_id)`` with ``tf, dl`` included, so the
  postings of a term are one index range read without touching the chunks; a second index on
  ``chunk_id`` serves deletes;
- ``<table>__bm25 (slot, n, total)``: the number of chunks and their total length as delta
  rows, one per ``pg_backend_pid() % 64``, so concurrent writers rarely update the same row
  and a query sums at most 64 rows.

The client analyses each chunk with the project's analyzer
(:func:`~pywrapai_graph.application.text_analysis.analyze`) and writes its postings right
after the chunk, in the same transaction. Statement-level triggers on the chunk table (with
transition tables) keep the statistics and drop the postings of deleted or overwritten chunks,
so every write path, whatever issues it, leaves them exact.

A query is one statement: its terms go in as parameters; it reads the postings of those
terms (their count is each term's document frequency), scores, applies the metadata filter
and returns only the ``k`` hits, all from one snapshot: only committed writes count, and a
document another process replaced or deleted is scored as it is now. The ranking is the one of
:mod:`~pywrapai_graph.adapters.vectorstores._lexical_index` (Okapi BM25, Lucene's idf, ties by
chunk id).
"""

from __future__ import annotations

import io
import struct
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores._pg_text import from_pg
from pywrapai_graph.application.text_analysis import analyze
from pywrapai_graph.domain import Chunk

__all__ = [
    "QUERY_SETTINGS",
    "add_lexical_columns",
    "analysed",
    "bm25_query",
    "bm25_scores_query",
    "create_lexical",
    "lengths",
    "lexical_tables",
    "query_terms",
    "write_postings",
]

#: Delta rows of the statistics table: a writer updates the one of its backend.
STATS_SLOTS = 64
#: From this many postings a write sends them with binary COPY instead of an INSERT.
COPY_MIN_POSTINGS = 5_000
_BACKFILL_BATCH = 1000
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


def analysed(text: str) -> Counter[str]:
    """A chunk's terms and how often each occurs."""
    return Counter(analyze(text))


def query_terms(query: str) -> tuple[list[str], list[int]]:
    """A query's distinct terms and how often each occurs in it."""
    counts = analysed(query)
    return list(counts), list(counts.values())


def lexical_tables(table: str) -> tuple[str, str]:
    """The postings and statistics tables of ``table``."""
    return table + "__terms", table + "__bm25"


def _names(sql: Any, table: str) -> dict[str, Any]:
    terms, stats = lexical_tables(table)
    return {
        "t": sql.Identifier(table),
        "p": sql.Identifier(terms),
        "s": sql.Identifier(stats),
        "pc": sql.Identifier(terms + "_chunk"),
        "f": sql.Identifier(table + "__bm25_count"),
        "ins": sql.Identifier(table + "__bm25_ins"),
        "upd": sql.Identifier(table + "__bm25_upd"),
        "del": sql.Identifier(table + "__bm25_del"),
        "slots": sql.Literal(STATS_SLOTS),
    }


# ----------------------------------------------------------------------------- writes
def lengths(chunks: Sequence[Chunk]) -> tuple[list[Counter[str]], list[int]]:
    """Each chunk's terms and its length after analysis (the ``lex_len`` column)."""
    terms = [analysed(c.text) for c in chunks]
    return terms, [sum(t.values()) for t in terms]


def _copy_postings(rows: list[tuple[str, str, int, int]]) -> bytes:
    out = io.BytesIO()
    out.write(_COPY_HEADER)
    pack = struct.pack
    for term, chunk_id, tf, dl in rows:
        t, c = term.encode(), chunk_id.encode()
        out.write(pack(f"!hi{len(t)}si{len(c)}siiii", 4, len(t), t, len(c), c, 4, tf, 4, dl))
    out.write(struct.pack("!h", -1))
    return out.getvalue()


def write_postings(
    cur: Any, sql: Any, table: str, chunks: Sequence[Chunk], terms: list[Counter[str]]
) -> None:
    """Insert the postings of chunks just written (the triggers removed any older ones)."""
    rows = [
        (term, c.id, tf, sum(counts.values()))
        for c, counts in zip(chunks, terms, strict=True)
        for term, tf in counts.items()
    ]
    if not rows:
        return
    names = _names(sql, table)
    if len(rows) >= COPY_MIN_POSTINGS:
        cur.copy_expert(
            sql.SQL("COPY {p} (term, chunk_id, tf, dl) FROM STDIN WITH (FORMAT binary)")
            .format(**names)
            .as_string(cur),
            io.BytesIO(_copy_postings(rows)),
        )
        return
    columns = list(zip(*rows, strict=True))
    cur.execute(
        sql.SQL(
            "INSERT INTO {p} (term, chunk_id, tf, dl) "
            "SELECT * FROM unnest(%s::text[], %s::text[], %s::int[], %s::int[])"
        ).format(**names),
        [list(col) for col in columns],
    )


# ----------------------------------------------------------------------------- schema
_FUNCTION = """
CREATE OR REPLACE FUNCTION {f}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE dn bigint := 0; dt bigint := 0;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT count(*), coalesce(sum(lex_len), 0) INTO dn, dt FROM new_rows;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT -count(*), -coalesce(sum(lex_len), 0) INTO dn, dt FROM old_rows;
    DELETE FROM {p} WHERE chunk_id IN (SELECT id FROM old_rows);
  ELSE
    SELECT coalesce(sum(lex_len), 0) INTO dt FROM new_rows;
    SELECT dt - coalesce(sum(lex_len), 0) INTO dt FROM old_rows;
    DELETE FROM {p} WHERE chunk_id IN (SELECT id FROM old_rows);
  END IF;
  IF dn <> 0 OR dt <> 0 THEN
    INSERT INTO {s} AS s (slot, n, total) VALUES (pg_backend_pid() % {slots}, dn, dt)
    ON CONFLICT (slot) DO UPDATE SET n = s.n + EXCLUDED.n, total = s.total + EXCLUDED.total;
  END IF;
  RETURN NULL;
END
$body$
"""


def add_lexical_columns(cur: Any, sql: Any, table: str) -> bool:
    """Add ``lex_len`` to a chunk table written before it existed; True if it was added."""
    cur.execute(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(%s) "
        "AND attname = 'lex_len' AND NOT attisdropped",
        (sql.Identifier(table).as_string(cur),),
    )
    if cur.fetchone()[0]:
        return False
    cur.execute(
        sql.SQL("ALTER TABLE {t} ADD COLUMN lex_len INT NOT NULL DEFAULT 0").format(
            t=sql.Identifier(table)
        )
    )
    return True


def _backfill(cur: Any, sql: Any, table: str) -> None:
    """Analyse every chunk already in the table: its postings and its length."""
    t = sql.Identifier(table)
    after = ""
    while True:  # keyset pages by id, in this transaction
        cur.execute(
            sql.SQL("SELECT id, text FROM {t} WHERE id > %s ORDER BY id LIMIT %s").format(t=t),
            (after, _BACKFILL_BATCH),
        )
        rows = cur.fetchall()
        if not rows:
            return
        chunks = [Chunk(from_pg(text), doc_id="", id=chunk_id) for chunk_id, text in rows]
        terms, lens = lengths(chunks)
        write_postings(cur, sql, table, chunks, terms)
        cur.execute(
            sql.SQL(
                "UPDATE {t} SET lex_len = u.len FROM unnest(%s::text[], %s::int[]) "
                "AS u(id, len) WHERE {t}.id = u.id"
            ).format(t=t),
            ([c.id for c in chunks], lens),
        )
        after = rows[-1][0]


def create_lexical(cur: Any, sql: Any, table: str, *, backfill: bool) -> None:
    """Create the postings and statistics tables and the triggers (idempotent); with
    ``backfill``, first analyse the chunks already stored.

    Call inside the transaction that creates or upgrades the table.
    """
    names = _names(sql, table)
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {p} (term TEXT NOT NULL, chunk_id TEXT NOT NULL, "
            "tf INT NOT NULL, dl INT NOT NULL, PRIMARY KEY (term, chunk_id) INCLUDE (tf, dl))"
        ).format(**names)
    )
    cur.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {pc} ON {p} (chunk_id)").format(**names))
    # writers wait until the triggers exist, so the count below misses none of theirs
    cur.execute(sql.SQL("LOCK TABLE {t} IN SHARE MODE").format(**names))
    if backfill:
        _backfill(cur, sql, table)
    cur.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {s} (slot INT PRIMARY KEY, n BIGINT NOT NULL, "
            "total BIGINT NOT NULL)"
        ).format(**names)
    )
    cur.execute(sql.SQL("DELETE FROM {s}").format(**names))
    cur.execute(
        sql.SQL(
            "INSERT INTO {s} (slot, n, total) SELECT 0, count(*), coalesce(sum(lex_len), 0) "
            "FROM {t}"
        ).format(**names)
    )
    cur.execute(sql.SQL(_FUNCTION).format(**names))
    for trigger, event, tables in (
        ("ins", "INSERT", "NEW TABLE AS new_rows"),
        ("upd", "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("del", "DELETE", "OLD TABLE AS old_rows"),
    ):
        cur.execute(
            sql.SQL(
                "CREATE OR REPLACE TRIGGER {name} AFTER " + event + " ON {t} "
                "REFERENCING " + tables + " FOR EACH STATEMENT EXECUTE FUNCTION {f}()"
            ).format(name=names[trigger], **names)
        )


# ----------------------------------------------------------------------------- queries
#: Run before :func:`bm25_query` in its transaction: memory for its hash aggregate (one
#: group per candidate chunk); with the default 4MB it spilled to disk at 100,000 chunks
#: (226 ms vs 125 ms for a Cranfield query).
QUERY_SETTINGS = "SET LOCAL work_mem = '32MB'; "


def bm25_query(sql: Any, table: str, keep: Any | None) -> Any:
    """One statement ranking the chunks by BM25; ``keep`` is the filter's predicate on a chunk
    row (None: no filter). Only the ``k`` best chunks' rows are read for their text.

    Parameters, in order: the query's term counts, its terms, the terms again, k1, k1, b, b,
    the filter's parameters, k. The postings come from one index range scan ordered by term,
    so df is a window count without a sort and every chunk sums its terms in the same
    (term) order: chunks that tie score the same to the last bit, and their order is the
    chunk ids'. Run it after :data:`QUERY_SETTINGS`.
    """
    scored = (
        "WITH st AS (SELECT greatest(coalesce(sum(n), 0), 1)::float8 AS n, "
        "coalesce(sum(total), 0)::float8 AS total FROM {s}), "
        "m AS (SELECT chunk_id, tf::float8 AS tf, dl, "
        "(%s::int[])[array_position(%s::text[], term)] AS qtf, "
        "count(*) OVER (PARTITION BY term)::float8 AS df FROM {p} "
        "WHERE term = ANY (%s::text[])), "
        "s AS (SELECT m.chunk_id AS id, sum(m.qtf * ln(1 + (st.n - m.df + 0.5) / (m.df + 0.5)) "
        "* m.tf * (%s::float8 + 1) / (m.tf + %s::float8 * (1 - %s::float8 + %s::float8 * m.dl / "
        "CASE WHEN st.total > 0 THEN st.total / st.n ELSE 1 END))) AS score "
        "FROM m CROSS JOIN st {where} GROUP BY m.chunk_id ORDER BY score DESC, id LIMIT %s) "
        "SELECT t.id, t.doc_id, t.text, t.metadata, s.score FROM s JOIN {t} t USING (id) "
        "ORDER BY s.score DESC, t.id"
    )
    # the filter selects among the scored postings (df above counts them all)
    where = (
        sql.SQL("")
        if keep is None
        else sql.SQL("WHERE m.chunk_id IN (SELECT id FROM {t} WHERE {keep})").format(
            t=sql.Identifier(table), keep=keep
        )
    )
    return sql.SQL(scored).format(where=where, **_names(sql, table))


def bm25_scores_query(sql: Any, table: str) -> Any:
    """One statement scoring the given chunks by BM25 as :func:`bm25_query` ranks them
    (document frequencies over the whole table): ``(chunk_id, score)`` of each chunk that
    holds a query term.

    Parameters, in order: the query's terms, its terms again, the chunk ids, its term counts,
    its terms again, k1, k1, b, b. Only the postings of the query's terms are read (their
    count per term, and the index entries of the given chunks).
    """
    statement = (
        "WITH st AS (SELECT greatest(coalesce(sum(n), 0), 1)::float8 AS n, "
        "coalesce(sum(total), 0)::float8 AS total FROM {s}), "
        "df AS (SELECT term, count(*)::float8 AS df FROM {p} WHERE term = ANY (%s::text[]) "
        "GROUP BY term), "
        "m AS (SELECT term, chunk_id, tf::float8 AS tf, dl FROM {p} "
        "WHERE term = ANY (%s::text[]) AND chunk_id = ANY (%s::text[])) "
        "SELECT m.chunk_id, sum((%s::int[])[array_position(%s::text[], m.term)] "
        "* ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf * (%s::float8 + 1) "
        "/ (m.tf + %s::float8 * (1 - %s::float8 + %s::float8 * m.dl / "
        "CASE WHEN st.total > 0 THEN st.total / st.n ELSE 1 END))) "
        "FROM m JOIN df USING (term) CROSS JOIN st GROUP BY m.chunk_id"
    )
    return sql.SQL(statement).format(**_names(sql, table))
