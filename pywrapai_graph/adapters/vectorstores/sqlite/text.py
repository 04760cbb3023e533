"""Lexical (BM25) search of the SQLite store by SQLite's full-text index (FTS5).

FTS5 tables of our analyzer's terms beside the chunk table ``T``: ``T__terms`` a row per chunk
(its rowid in ``T``), ``T__doc_terms`` a row per document (key in ``T__doc_keys``),
``T__chunk_docs`` each chunk's document key. A chunk scores ``BM25(chunk) + DOCUMENT_WEIGHT ·
BM25(its document)``, FTS5's ``bm25()`` per term rescaled to Lucene's idf (FTS5's own ranked
Cranfield lower). Each write changes these rows in its transaction.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import stored_chunk
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.store_inputs import matches_filter

__all__ = ["TextTables", "check_fts5_bm25"]

_EACH = "(SELECT value FROM json_each(?))"


def check_fts5_bm25(k1: float, b: float) -> None:
    """Raise InvalidArgumentError unless k1 and b are FTS5's own (fts5_aux.c)."""
    if (k1, b) != (1.2, 0.75):
        raise InvalidArgumentError(
            "SQLite's full-text index (FTS5 bm25()) scores with k1=1.2 and b=0.75; "
            f"got k1={k1}, b={b}. Use the defaults with this store (or PostgreSQL or an "
            "in-process store, which apply k1 and b per query)."
        )


def _idf_ratio(n: int, df: int) -> float:
    """Lucene's idf over FTS5's (fts5_aux.c: the same expression, 1e-6 where not positive)."""
    fts5 = math.log((n - df + 0.5) / (df + 0.5))
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5)) / (fts5 if fts5 > 0.0 else 1e-6)


@lru_cache(maxsize=1024)
def _keeps(metadata: str, filter: str) -> bool:
    """The metadata filter in SQL: exactly what :func:`matches_filter` keeps."""
    return matches_filter(json.loads(metadata), json.loads(filter))


class TextTables:
    """The full-text tables of one chunk table ``T`` (module docstring)."""

    def __init__(self, table: str, where: str) -> None:
        self._where, self._t = where, f'"{table}"'
        self._terms, self._docs = f'"{table}__terms"', f'"{table}__doc_terms"'
        self._keys, self._of = f'"{table}__doc_keys"', f'"{table}__chunk_docs"'
        self._vocab, self._doc_vocab = f'"{table}__terms_vocab"', f'"{table}__doc_terms_vocab"'
        self._name, self._touched = table, f'"{table}__touched"'
        #: the documents whose chunks this transaction changed (a subquery)
        self.touched = f"(SELECT doc_id FROM {self._touched})"

    # ------------------------------------------------------------------ schema
    def open(self, conn: sqlite3.Connection) -> None:
        """Ready ``conn``: the SQL functions, the tables, and this connection's triggers
        filing a chunk under its document's key and noting its document (:meth:`refresh`)."""
        conn.create_function("pywrapai_idf_ratio", 2, _idf_ratio, deterministic=True)
        conn.create_function("pywrapai_keeps", 2, _keeps, deterministic=True)
        fts5, vocab = "USING fts5(terms, {}tokenize='ascii')", "USING fts5vocab({}, 'row')"
        for table, schema in (
            (self._terms, fts5.format("part UNINDEXED, ")),
            (self._docs, fts5.format("")),
            (self._vocab, vocab.format(self._terms)),
            (self._doc_vocab, vocab.format(self._docs)),
            (self._keys, "(key INTEGER PRIMARY KEY, doc_id TEXT UNIQUE NOT NULL)"),
            (self._of, "(r INTEGER PRIMARY KEY, key INTEGER)"),
        ):
            virtual = "VIRTUAL " if schema.startswith("USING") else ""
            conn.execute(f"CREATE {virtual}TABLE IF NOT EXISTS {table} {schema}")
        conn.execute(f"CREATE TEMP TABLE {self._touched} (doc_id TEXT PRIMARY KEY)")
        note = f"INSERT OR IGNORE INTO {self._touched} VALUES"
        conn.execute(
            f'CREATE TEMP TRIGGER "{self._name}__deleted" AFTER DELETE ON main.{self._t} BEGIN '
            f"DELETE FROM {self._terms} WHERE rowid = old.rowid; "
            f"DELETE FROM {self._of} WHERE r = old.rowid; {note} (old.doc_id); END"
        )
        conn.execute(
            f'CREATE TEMP TRIGGER "{self._name}__inserted" AFTER INSERT ON main.{self._t} BEGIN '
            f"INSERT OR IGNORE INTO {self._keys} (doc_id) VALUES (new.doc_id); "
            f"INSERT INTO {self._of} (r, key) SELECT new.rowid, key FROM {self._keys} "
            f"WHERE doc_id = new.doc_id; {note} (new.doc_id); END"
        )

    # ------------------------------------------------------------------ writes
    def clear(self, conn: sqlite3.Connection) -> None:
        """Forget every chunk and document (before ``T`` is emptied: faster than triggers)."""
        for table in (self._terms, self._docs, self._keys, self._of):
            conn.execute(f"DELETE FROM {table}")

    def index(self, conn: sqlite3.Connection, chunks: Sequence[Chunk]) -> None:
        """Index chunks just inserted into ``T``, each with its document part in this batch."""
        ids = json.dumps([c.id for c in chunks])
        rowids = dict(conn.execute(f"SELECT id, rowid FROM {self._t} WHERE id IN {_EACH}", (ids,)))
        parts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
        values = []
        for chunk, part in zip(chunks, parts, strict=True):
            terms = " ".join(analyze(chunk.text))
            share = terms if len(part) == len(chunk.text) else " ".join(analyze(part))
            values.append((rowids[chunk.id], terms, share))
        conn.executemany(f"INSERT INTO {self._terms} (rowid, terms, part) VALUES (?, ?, ?)", values)

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Rebuild the rows of the documents in :attr:`touched` (after :meth:`index`); one
        left without chunks loses its row and key."""
        which = self.touched
        keys = f"(SELECT key FROM {self._keys} WHERE doc_id IN {which})"
        conn.execute(f"DELETE FROM {self._docs} WHERE rowid IN {keys}")
        conn.execute(
            f"DELETE FROM {self._keys} WHERE doc_id IN {which} AND NOT EXISTS "
            f"(SELECT 1 FROM {self._t} t WHERE t.doc_id = {self._keys}.doc_id)"
        )
        conn.execute(
            f"INSERT INTO {self._docs} (rowid, terms) SELECT k.key, "
            f"(SELECT group_concat(f.part, ' ') FROM {self._t} t JOIN {self._terms} f "
            f"ON f.rowid = t.rowid WHERE t.doc_id = k.doc_id) "
            f"FROM {self._keys} k WHERE k.doc_id IN {which}"
        )
        conn.execute(f"DELETE FROM {self._touched}")

    # ------------------------------------------------------------------ queries
    def query(
        self,
        conn: sqlite3.Connection,
        text: str,
        k: int,
        filter: Mapping[str, Any] | None,
        ids: Sequence[str] = (),
    ) -> tuple[list[ScoredChunk], dict[str, float], dict[str, Chunk]]:
        """One statement: the ``k`` best chunks by BM25 for ``text`` that ``filter`` keeps;
        the scores of the chunks of ``ids`` not among them (those holding a query term);
        the chunks of both, by id. A repeated query term counts each time."""
        params = {
            "terms": json.dumps(Counter(analyze(text))),
            "filter": json.dumps(filter) if filter else None,
            "weight": DOCUMENT_WEIGHT,
            "k": k,
            "ids": json.dumps(list(ids)),
        }
        rows = conn.execute(self._statement(bool(filter)), params).fetchall()
        chunks = {r[0]: stored_chunk(r[:4], self._where) for r in rows}
        top = sorted((r for r in rows if r[5]), key=lambda r: (-r[4], r[0]))[:k]
        shown = {r[0] for r in top}
        scores = {r[0]: r[4] for r in rows if r[0] not in shown and r[4] is not None}
        return [ScoredChunk(chunks[r[0]], r[4]) for r in top], scores, chunks

    def _statement(self, filtered: bool) -> str:
        """:meth:`query`'s statement: chunks scored and cut to the ``k`` best (ties at the cut
        kept) through ``chunk_docs``; ``T`` read only to filter and for the rows returned."""
        kept, source = "", "scored"
        if filtered:
            kept, source = (
                f"kept AS MATERIALIZED (SELECT s.r, s.score FROM scored s JOIN {self._t} t "
                "ON t.rowid = s.r WHERE pywrapai_keeps(t.metadata, :filter)),",
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
        """CTEs scoring one field: ``name`` (``key``, ``s``), the BM25 with Lucene's idf of each
        unit of ``fts`` holding a query term (``units`` counts them); ``CROSS JOIN`` looks the
        vocabulary up by term, never scanning it."""
        return f"""{name}_w AS MATERIALIZED (SELECT '"' || q.term || '"' AS phrase,
    q.n * pywrapai_idf_ratio((SELECT count(*) FROM {units}), v.doc) AS w
    FROM q CROSS JOIN {vocab} v ON v.term = q.term),
{name}_t AS MATERIALIZED (SELECT {fts}.rowid AS {key}, w.w * -bm25({fts}) AS s
    FROM {name}_w w JOIN {fts} ON {fts} MATCH w.phrase),
{name} AS MATERIALIZED (SELECT {key}, sum(s) AS s FROM {name}_t GROUP BY {key})"""
