"""The BM25 statements of PGVectorStore: ranking and re-scoring, each one statement.

A chunk ``c`` of document ``D`` scores (the document field, as every backend computes it)::

    score(q, c) = BM25(q, c) + DOCUMENT_WEIGHT · BM25(q, D)

Both are Okapi BM25 with Lucene's idf (a term repeated in the query counts each time): over
chunks with the chunk statistics (``N`` chunks, ``df`` chunks holding the term, ``|c|``, mean
chunk length), and over documents with the document statistics (``N_doc`` documents,
``df_doc`` documents holding the term, ``tf(t, D)`` and ``|D|`` summed over the shares of
its chunks — each chunk's text without the overlap it repeats from the chunk before it,
:func:`~pywrapai_graph.application.text_analysis.document_parts` — and the mean ``|D|``).
Statistics cover the whole table; a metadata filter selects among the candidates, the chunks
holding a query term.

A statement reads the postings of the query's terms once for each field (index range scans
ordered by term then document, so the per-term counts are window counts and the per-document
groups stream without a sort), the statistics' delta rows, the lengths of the documents it
scores and, for a search, the rows of the ``k`` hits: its cost follows the postings of its
terms, not the size of the tables. It runs in one snapshot: only committed writes count, and
a document another process replaced or deleted is scored as it is now. Every sum over terms
runs in term order, so chunks that tie score the same to the last bit, and their order is the
chunk ids'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores._pg_lexical import names
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT

__all__ = ["QUERY_SETTINGS", "bm25_params", "bm25_query", "bm25_scores_query"]

#: Run before :func:`bm25_query` in its transaction: memory for its hash aggregates (one group
#: per candidate chunk); with the default 4MB it spilled to disk at 100,000 chunks (226 ms vs
#: 125 ms for a Cranfield query).
QUERY_SETTINGS = "SET LOCAL work_mem = '32MB'; "


def _weight(qtf: str, tf: str, length: str, n: str, df: str, total: str) -> str:
    """SQL of one term's BM25 weight (``prm`` holds k1 and b)."""
    avgdl = f"(CASE WHEN {total} > 0 THEN {total} / {n} ELSE 1 END)"
    return (
        f"{qtf} * ln(1 + ({n} - {df} + 0.5) / ({df} + 0.5)) * {tf} * (prm.k1 + 1) / "
        f"({tf} + prm.k1 * (1 - prm.b + prm.b * {length} / {avgdl}))"
    )


_QTF = "prm.qtf[array_position(prm.terms, m.term)]"

#: The candidates' scores: ``c`` the chunk field of each candidate chunk (``{where}`` selects
#: among them), ``d`` the document field of each document holding a query term (``{docs}``
#: may select among them). Each reads the postings of the query's terms in index order —
#: by term, then document — so the per-term counts are window counts and the per-document
#: groups stream without a sort, and every sum runs in term order. Parameters: the terms,
#: their counts, k1, b, the document weight, the terms, ``{where}``'s, the terms.
_SCORED = (
    "WITH prm AS (SELECT %s::text[] AS terms, %s::int[] AS qtf, %s::float8 AS k1, "
    "%s::float8 AS b, %s::float8 AS w), "
    "st AS (SELECT greatest(coalesce(sum(n), 0), 1)::float8 AS n, "
    "greatest(coalesce(sum(docs), 0), 1)::float8 AS nd, "
    "coalesce(sum(total), 0)::float8 AS total, "
    "coalesce(sum(dtotal), 0)::float8 AS dtotal FROM {s}), "
    "c AS (SELECT m.chunk_id AS id, m.doc_id, sum("
    + _weight(_QTF, "m.tf", "m.dl", "st.n", "m.df", "st.total")
    + ") AS score FROM (SELECT term, doc_id, chunk_id, tf::float8 AS tf, dl, "
    "count(*) OVER (PARTITION BY term)::float8 AS df FROM {p} "
    "WHERE term = ANY (%s::text[]) AND tf > 0) m CROSS JOIN st CROSS JOIN prm {where} "
    "GROUP BY m.chunk_id, m.doc_id), "
    "d AS (SELECT m.doc_id, sum("
    + _weight(_QTF, "m.tf", "l.len", "st.nd", "m.df", "st.dtotal")
    + ") AS score FROM (SELECT term, doc_id, sum(dtf)::float8 AS tf, "
    "count(*) OVER (PARTITION BY term)::float8 AS df FROM {p} "
    "WHERE term = ANY (%s::text[]) AND dtf > 0 GROUP BY term, doc_id) m "
    "JOIN {l} l USING (doc_id) CROSS JOIN st CROSS JOIN prm {docs} GROUP BY m.doc_id) "
)
_COMBINED = "c.score + prm.w * d.score"
_OF_CANDIDATES = "WHERE m.doc_id IN (SELECT doc_id FROM c)"


def _scored(sql: Any, table: str, where: Any, tail: str) -> Any:
    docs = sql.SQL("" if where is None else _OF_CANDIDATES)
    where = sql.SQL("") if where is None else where
    return sql.SQL(_SCORED + tail).format(where=where, docs=docs, **names(sql, table))


def bm25_params(
    terms: Sequence[str], counts: Sequence[int], k1: float, b: float, chosen: Sequence[Any], *k: int
) -> list[Any]:
    """The parameters of :func:`bm25_query` (``chosen``: the filter's parameters; then ``k``)
    and of :func:`bm25_scores_query` (``chosen``: the chunk ids)."""
    listed = list(terms)
    return [listed, list(counts), k1, b, DOCUMENT_WEIGHT, listed, *chosen, listed, *k]


def bm25_query(sql: Any, table: str, keep: Any | None) -> Any:
    """One statement ranking the chunks; ``keep`` is the filter's predicate on a chunk row
    (None: no filter). Only the ``k`` best chunks' rows are read for their text: ``(id,
    doc_id, text, metadata, score)`` best first, ties by id. Parameters:
    :func:`bm25_params` with the filter's parameters and ``k``. Run it after
    :data:`QUERY_SETTINGS`.
    """
    # the filter selects among the scored postings (the statistics count them all)
    where = (
        None
        if keep is None
        else sql.SQL("WHERE m.chunk_id IN (SELECT id FROM {t} WHERE {keep})").format(
            t=sql.Identifier(table), keep=keep
        )
    )
    return _scored(
        sql,
        table,
        where,
        "SELECT t.id, t.doc_id, t.text, t.metadata, top.score FROM ("
        f"SELECT c.id, {_COMBINED} AS score FROM c JOIN d USING (doc_id) CROSS JOIN prm "
        "ORDER BY 2 DESC, 1 LIMIT %s) top JOIN {t} t USING (id) ORDER BY top.score DESC, t.id",
    )


def bm25_scores_query(sql: Any, table: str) -> Any:
    """One statement scoring the given chunks as :func:`bm25_query` ranks them: ``(chunk_id,
    score)`` of each given chunk that holds a query term. Parameters: :func:`bm25_params`
    with the chunk ids."""
    return _scored(
        sql,
        table,
        sql.SQL("WHERE m.chunk_id = ANY (%s::text[])"),  # and their documents alone
        f"SELECT c.id, {_COMBINED} FROM c JOIN d USING (doc_id) CROSS JOIN prm",
    )
