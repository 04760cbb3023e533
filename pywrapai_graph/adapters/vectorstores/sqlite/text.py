"""Lexical (BM25) search of the SQLite store, answered by SQLite's own full-text index (FTS5).

Beside the chunk table ``T`` live two FTS5 tables whose content is our analyzer's terms
(:func:`~pywrapai_graph.application.text_analysis.analyze`: stemmed, stop words dropped),
space-joined and read back by FTS5's ``ascii`` tokenizer, which splits on the spaces and
changes nothing else, so the engine's BM25 sees exactly our terms:

- ``T__terms``: one row per chunk (rowid = the chunk's rowid in ``T``): its terms, and the
  terms of its document part (:func:`document_parts`, unindexed) kept to rebuild its
  document's row;
- ``T__doc_terms``: one row per document (rowid = its key in ``T__doc_keys``, kept while
  the document has chunks): its chunks' parts together;
- ``T__chunk_docs``: each chunk's document key, so a query scores its chunks and cuts them
  to the best without reading the wide chunk table (read for the filter and the hits only).

A chunk scores ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(its document)`` with the idf of the
other stores (Lucene's, ``ln(1 + (N − df + 0.5) / (df + 0.5))``), in one statement with the
metadata filter (:func:`filter_sql`): the engine finds the units holding each query term
(``MATCH``) and scores them with ``bm25()`` (k1 1.2, b 0.75, lengths and averages from the
index), one term at a time; each term's score is multiplied by Lucene's idf over FTS5's
(``ln((N − df + 0.5) / (df + 0.5))``, at least 1e-6), ``df`` read from an ``fts5vocab``
table and ``N`` counted, and the terms' scores are summed. FTS5's own idf alone measured
nDCG@10 0.3639 whole and 0.3677 chunked on Cranfield (against 0.3661 and 0.3681), and lost
the document-field quality case of the contract (``lexical_quality``): the correction keeps
the ranking of every other store. k1 and b are FTS5's (per-query values are refused).

Every write changes these rows in its own transaction, so another process's next query
sees them, and nothing is rebuilt in any process. A store file written before these tables
existed gets them once, at its first open, inside a write transaction (:meth:`TextTables.ensure`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import stored_chunk
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["FTS5_B", "FTS5_K1", "TextTables", "check_fts5_bm25", "filter_sql", "query_terms"]

#: lexical hits best first, the scores of other chunks asked for, every chunk read by id
Found = tuple[list[ScoredChunk], dict[str, float], dict[str, Chunk]]

#: FTS5's bm25() constants (fts5_aux.c), the only ones this store serves.
FTS5_K1, FTS5_B = 1.2, 0.75


def check_fts5_bm25(k1: float, b: float) -> None:
    """SQLite's full-text index scores with its own k1 and b only.

    Raises:
        InvalidArgumentError: other values.
    """
    if (k1, b) != (FTS5_K1, FTS5_B):
        raise InvalidArgumentError(
            f"SQLite's full-text index (FTS5 bm25()) scores with k1={FTS5_K1} and b={FTS5_B}; "
            f"got k1={k1}, b={b}. Use the defaults with this store (or PostgreSQL or an "
            "in-process store, which apply k1 and b per query)."
        )


def query_terms(text: str) -> str | None:
    """The analysed terms of ``text`` with their counts (a repeated term counts each time,
    as in BM25's query term frequency), as a JSON object; None when it has none."""
    terms = Counter(analyze(text))
    return json.dumps(terms) if terms else None


def _idf_ratio(n: int, df: int) -> float:
    """Lucene's idf over FTS5's (fts5_aux.c: the same expression, 1e-6 where not positive)."""
    fts5 = math.log((n - df + 0.5) / (df + 0.5))
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5)) / (fts5 if fts5 > 0.0 else 1e-6)


def _int64(value: int | float) -> int | float:
    return value if isinstance(value, float) or -(2**63) <= value < 2**63 else float(value)


def _same_sql(kind: str, atom: str, value: Any, name: str, params: dict[str, Any]) -> str:
    """SQL true when a JSON value (its ``json_each`` ``type`` and ``atom``) equals a scalar
    ``value`` as :func:`same_value` says: ``true`` is not ``1``, ``1.0`` is ``1``."""
    if isinstance(value, bool) or value is None:
        return f"{kind} = '{json.dumps(value)}'"
    params[name] = _int64(value) if not isinstance(value, str) else value
    types = "'text'" if isinstance(value, str) else "'integer', 'real'"
    return f"({kind} IN ({types}) AND {atom} = :{name})"


def filter_sql(filter: Mapping[str, Any] | None, column: str) -> tuple[str, dict[str, Any]]:
    """A SQL condition on the JSON metadata ``column`` keeping what ``filter`` keeps
    (:func:`matches_filter`), with its named parameters."""
    params: dict[str, Any] = {}
    conditions = ["1"]
    for i, (key, value) in enumerate((filter or {}).items()):
        params[f"fk{i}"] = key
        if isinstance(value, list | tuple):
            items = " OR ".join(
                f"(e.key = {j} AND {_same_sql('e.type', 'e.atom', v, f'f{i}_{j}', params)})"
                for j, v in enumerate(value)
            )
            counted = f"(SELECT count(*) FROM json_each(j.value) e WHERE {items})" if value else 0
            n = len(value)
            same = f"j.type = 'array' AND json_array_length(j.value) = {n} AND {counted} = {n}"
        else:
            same = _same_sql("j.type", "j.atom", value, f"f{i}", params)
        conditions.append(
            f"EXISTS (SELECT 1 FROM json_each({column}) j WHERE j.key = :fk{i} AND {same})"
        )
    return " AND ".join(conditions), params


class TextTables:
    """The full-text tables of one chunk table ``T`` (module docstring)."""

    def __init__(self, table: str, where: str) -> None:
        self._where = where
        self._t = f'"{table}"'
        self._terms = f'"{table}__terms"'
        self._docs = f'"{table}__doc_terms"'
        self._keys = f'"{table}__doc_keys"'
        self._of = f'"{table}__chunk_docs"'
        self._name = f"{table}__chunk_docs"  # the table made last: its presence means all are
        self._vocab = f'"{table}__terms_vocab"'
        self._doc_vocab = f'"{table}__doc_terms_vocab"'

    def connect(self, conn: sqlite3.Connection) -> None:
        """Give ``conn`` the idf correction the queries call (once per connection)."""
        conn.create_function("pywrapai_idf_ratio", 2, _idf_ratio, deterministic=True)

    # ------------------------------------------------------------------ schema
    def ensure(self, conn: sqlite3.Connection) -> None:
        """Create the tables and index what ``T`` holds, once: a file of an earlier
        release gets them (made again) at its first open. One write transaction, so
        processes opening the file at once build them once (the others find them made)."""
        if self._exist(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._exist(conn):
                for table in (self._vocab, self._doc_vocab, self._terms, self._docs, self._keys):
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                fts5 = "USING fts5(terms, {}tokenize='ascii')"
                conn.execute(
                    f"CREATE VIRTUAL TABLE {self._terms} {fts5.format('part UNINDEXED, ')}"
                )
                conn.execute(f"CREATE VIRTUAL TABLE {self._docs} {fts5.format('')}")
                for vocab, fts in ((self._vocab, self._terms), (self._doc_vocab, self._docs)):
                    conn.execute(f"CREATE VIRTUAL TABLE {vocab} USING fts5vocab({fts}, 'row')")
                conn.execute(
                    f"CREATE TABLE {self._keys} "
                    "(key INTEGER PRIMARY KEY, doc_id TEXT UNIQUE NOT NULL)"
                )
                conn.execute(f"CREATE TABLE {self._of} (r INTEGER PRIMARY KEY, key INTEGER)")
                rows = conn.execute(f"SELECT rowid, doc_id, text FROM {self._t} ORDER BY rowid")
                self._put(conn, rows.fetchall())
                self._refresh(conn, None)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _exist(self, conn: sqlite3.Connection) -> bool:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (self._name,)
        )
        return found.fetchone() is not None

    # ------------------------------------------------------------------ writes
    def index(self, conn: sqlite3.Connection, chunks: Sequence[Chunk]) -> None:
        """Index chunks just written to ``T`` (their rows, by id; their old rows' terms were
        dropped by :meth:`drop`), each with its document part within this batch."""
        rowids = dict(
            conn.execute(
                f"SELECT id, rowid FROM {self._t} WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([c.id for c in chunks]),),
            )
        )
        self._put(conn, [(rowids[c.id], c.doc_id, c.text) for c in chunks])

    def _put(self, conn: sqlite3.Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Index ``(rowid, doc_id, text)`` rows, each with its part within ``rows``, and
        each under its document's key (kept while the document has chunks)."""
        parts = document_parts([text for _, _, text in rows], [d for _, d, _ in rows])
        values = []
        for (rowid, _, text), part in zip(rows, parts, strict=True):
            terms = " ".join(analyze(text))
            share = terms if len(part) == len(text) else " ".join(analyze(part))
            values.append((rowid, terms, share))
        conn.executemany(f"INSERT INTO {self._terms} (rowid, terms, part) VALUES (?, ?, ?)", values)
        docs = [(d,) for d in dict.fromkeys(d for _, d, _ in rows)]
        conn.executemany(f"INSERT OR IGNORE INTO {self._keys} (doc_id) VALUES (?)", docs)
        conn.executemany(
            f"INSERT INTO {self._of} (r, key) SELECT ?, key FROM {self._keys} WHERE doc_id = ?",
            [(rowid, doc_id) for rowid, doc_id, _ in rows],
        )

    def drop(self, conn: sqlite3.Connection, where: str, param: str) -> set[str]:
        """Drop the terms of the chunks of ``T`` matching ``where`` (before they change);
        returns their documents."""
        rows = conn.execute(f"SELECT rowid, doc_id FROM {self._t} WHERE {where}", (param,))
        found = rows.fetchall()
        for table in (self._terms, self._of):
            conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r,) for r, _ in found])
        return {d for _, d in found}

    def drop_ids(self, conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
        """:meth:`drop` for chunk ids."""
        return self.drop(conn, "id IN (SELECT value FROM json_each(?))", json.dumps(list(ids)))

    def refresh(self, conn: sqlite3.Connection, doc_ids: set[str]) -> None:
        """Rebuild the rows of these documents from their chunks' parts (a document left
        without chunks loses its row and its key)."""
        if doc_ids:
            self._refresh(conn, json.dumps(sorted(doc_ids)))

    def _refresh(self, conn: sqlite3.Connection, doc_ids: str | None) -> None:
        """:meth:`refresh` of the documents in a JSON list, of every document for None."""
        which = (
            "(SELECT value FROM json_each(:docs))" if doc_ids else f"(SELECT doc_id FROM {self._t})"
        )
        keys = f"(SELECT key FROM {self._keys} WHERE doc_id IN {which})"
        docs = {"docs": doc_ids} if doc_ids else {}
        conn.execute(f"DELETE FROM {self._docs} WHERE rowid IN {keys}", docs)
        conn.execute(
            f"DELETE FROM {self._keys} WHERE doc_id IN {which} AND NOT EXISTS "
            f"(SELECT 1 FROM {self._t} t WHERE t.doc_id = {self._keys}.doc_id)",
            docs,
        )
        conn.execute(
            f"INSERT INTO {self._docs} (rowid, terms) SELECT k.key, "
            f"(SELECT group_concat(f.part, ' ') FROM {self._t} t JOIN {self._terms} f "
            f"ON f.rowid = t.rowid WHERE t.doc_id = k.doc_id) "
            f"FROM {self._keys} k WHERE k.doc_id IN {which}",
            docs,
        )

    def clear(self, conn: sqlite3.Connection) -> None:
        """Forget every chunk and document."""
        for table in (self._terms, self._docs, self._keys, self._of):
            conn.execute(f"DELETE FROM {table}")

    # ------------------------------------------------------------------ queries
    def query(
        self,
        conn: sqlite3.Connection,
        text: str,
        k: int,
        filter: Mapping[str, Any] | None,
        ids: Sequence[str] = (),
    ) -> Found:
        """One statement: the ``k`` best chunks by BM25 for ``text`` among those ``filter``
        keeps, best first; the scores of the chunks of ``ids`` not among them (those holding
        a query term); and the chunks of both, by id."""
        terms = query_terms(text)
        where, params = filter_sql(filter, "t.metadata")
        params.update(terms=terms or "{}", weight=DOCUMENT_WEIGHT, k=k, ids=json.dumps(list(ids)))
        rows = conn.execute(self._statement(where), params).fetchall()
        chunks = {r[0]: stored_chunk(r[:4], self._where) for r in rows}
        top = sorted((r for r in rows if r[5]), key=lambda r: (-r[4], r[0]))[:k]
        shown = {r[0] for r in top}
        scores = {r[0]: r[4] for r in rows if r[0] not in shown and r[4] is not None}
        return [ScoredChunk(chunks[r[0]], r[4]) for r in top], scores, chunks

    def _statement(self, where: str) -> str:
        """:meth:`query`'s statement, with the filter condition ``where`` on ``t``.

        Chunks are scored and cut to the ``k`` best (with the ties at the cut) through the
        narrow ``chunk_docs`` table; the chunk table is read for the filter (when there is
        one) and for the rows returned only."""
        kept, source = "", "scored"
        if where != "1":
            kept, source = (
                f"kept AS MATERIALIZED (SELECT s.r, s.score FROM scored s "
                f"JOIN {self._t} t ON t.rowid = s.r WHERE {where}),",
                "kept",
            )
        return f"""
WITH q(term, n) AS (SELECT key, value FROM json_each(:terms)),
{self._field("c", "r", self._terms, self._vocab, self._of)},
{self._field("d", "key", self._docs, self._doc_vocab, self._keys)},
asked AS MATERIALIZED (SELECT rowid AS r FROM {self._t}
    WHERE id IN (SELECT value FROM json_each(:ids))),
scored AS MATERIALIZED (SELECT c.r AS r, c.s + :weight * coalesce(d.s, 0.0) AS score,
    c.r IN asked AS asked FROM c JOIN {self._of} o ON o.r = c.r LEFT JOIN d ON d.key = o.key),
{kept}
top AS MATERIALIZED (SELECT r, score FROM {source} WHERE :k > 0 AND score >= coalesce(
    (SELECT score FROM {source} ORDER BY score DESC LIMIT 1 OFFSET :k - 1), -1e308))
SELECT t.id, t.doc_id, t.text, t.metadata, top.score, 1 FROM top
    JOIN {self._t} t ON t.rowid = top.r
UNION ALL
SELECT t.id, t.doc_id, t.text, t.metadata, s.score, 0 FROM asked a
    JOIN {self._t} t ON t.rowid = a.r LEFT JOIN (SELECT r, score FROM scored WHERE asked) s
    ON s.r = a.r WHERE a.r NOT IN (SELECT r FROM top)"""

    @staticmethod
    def _field(name: str, key: str, fts: str, vocab: str, units: str) -> str:
        """CTEs scoring one field: ``name`` (``key``, ``s``), the BM25 with Lucene's idf of
        each unit of ``fts`` holding a query term (``units`` counts them). ``CROSS JOIN``
        keeps the query's terms the outer loop: the vocabulary is looked up by term, never
        scanned whole."""
        return f"""{name}_w AS MATERIALIZED (SELECT '"' || q.term || '"' AS phrase,
    q.n * pywrapai_idf_ratio((SELECT count(*) FROM {units}), v.doc) AS w
    FROM q CROSS JOIN {vocab} v ON v.term = q.term),
{name}_t AS MATERIALIZED (SELECT {fts}.rowid AS {key}, w.w * -bm25({fts}) AS s
    FROM {name}_w w JOIN {fts} ON {fts} MATCH w.phrase),
{name} AS MATERIALIZED (SELECT {key}, sum(s) AS s FROM {name}_t GROUP BY {key})"""
