"""The BM25 and hybrid statements of PGVectorStore: a whole retrieval, one statement.

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

A hybrid retrieval (:func:`hybrid_statement`) adds to the lexical side the dense one (the HNSW
index, with the session's ``hnsw.ef_search``) in the same statement, gives the union of
the two candidate lists both scores when the fusion asks for them, fuses them as
:mod:`~pywrapai_graph.application.fusion` does (the same float operations, so the scores
are the composed retrieval's) and reads the ``k`` hits' rows and the recorded embedder.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.postgres.lexical import names, query_terms
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["WORK_MEM", "bm25_params", "bm25_query", "hybrid_params", "hybrid_statement"]

#: Set once per pooled connection: memory for the statements' hash aggregates (one group per
#: candidate chunk); with the default 4MB they spilled to disk at 100,000 chunks (226 ms vs
#: 125 ms for a Cranfield query).
WORK_MEM = "32MB"


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


def _scored(sql: Any, table: str, where: Any, tail: str, **more: Any) -> Any:
    docs = sql.SQL("" if where is None else _OF_CANDIDATES)
    where = sql.SQL("") if where is None else where
    return sql.SQL(_SCORED + tail).format(where=where, docs=docs, **names(sql, table), **more)


def bm25_params(
    terms: Sequence[str], counts: Sequence[int], k1: float, b: float, chosen: Sequence[Any], *k: int
) -> list[Any]:
    """The parameters of :func:`bm25_query` and of :func:`hybrid_query`'s lexical side
    (``chosen``: the filter's parameters; then ``k``)."""
    listed = list(terms)
    return [listed, list(counts), k1, b, DOCUMENT_WEIGHT, listed, *chosen, listed, *k]


def _candidates_of(sql: Any, table: str, keep: Any | None) -> Any | None:
    """The filter as a selection among the scored postings (the statistics count them all)."""
    if keep is None:
        return None
    return sql.SQL("WHERE m.chunk_id IN (SELECT id FROM {t} WHERE {keep})").format(
        t=sql.Identifier(table), keep=keep
    )


def bm25_query(sql: Any, table: str, keep: Any | None) -> Any:
    """One statement ranking the chunks; ``keep`` is the filter's predicate on a chunk row
    (None: no filter). Only the ``k`` best chunks' rows are read for their text: ``(id,
    doc_id, text, metadata, score)`` best first, ties by id. Parameters:
    :func:`bm25_params` with the filter's parameters and ``k``.
    """
    return _scored(
        sql,
        table,
        _candidates_of(sql, table, keep),
        "SELECT t.id, t.doc_id, t.text, t.metadata, top.score FROM ("
        f"SELECT c.id, {_COMBINED} AS score FROM c JOIN d USING (doc_id) CROSS JOIN prm "
        "ORDER BY 2 DESC, 1 LIMIT %s) top JOIN {t} t USING (id) ORDER BY top.score DESC, t.id",
    )


def _min_max(x: str) -> str:
    """SQL of ``x`` min-max scaled over the rows (all 1 when they are equal), as
    :mod:`~pywrapai_graph.application.fusion` scales."""
    low, span = f"min({x}) OVER ()", f"(max({x}) OVER () - min({x}) OVER ())"
    return f"CASE WHEN {span} > 0 THEN ({x} - {low}) / {span} ELSE 1 END"


_RANK = "row_number() OVER (ORDER BY score DESC, id)"
#: Each fusion's fused scores ``sc(id, score)`` of the candidates, with its parameters:
#: ``v`` the query vector, ``w``/``wl`` the dense/lexical weights, ``r`` rrf_k.
_FUSIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    # every candidate of either side gets both scores: a lexical-only one its cosine, read
    # by id, a dense-only one its BM25 (0 when it holds no query term)
    "rescored": (
        "u AS (SELECT id, dt.score AS cs, lt.score AS bs FROM dt FULL JOIN lt USING (id)), "
        "us AS (SELECT id, coalesce(u.cs, least(1 - (t.embedding <=> %s), 1)) AS cs, "
        "coalesce(u.bs, lex.score, 0) AS bs FROM u JOIN {t} t USING (id) "
        "LEFT JOIN lex USING (id)), "
        f"sc AS (SELECT id, %s::float8 * {_min_max('cs')} + %s::float8 * {_min_max('bs')} "
        "AS score FROM us)",
        ("v", "w", "wl"),
    ),
    "weighted": (
        "sc AS (SELECT id, sum(s) AS score FROM ("
        f"SELECT id, %s::float8 * {_min_max('score')} AS s FROM dt UNION ALL "
        f"SELECT id, %s::float8 * {_min_max('score')} FROM lt) x GROUP BY id)",
        ("w", "wl"),
    ),
    "rrf": (
        "sc AS (SELECT id, sum(s) AS score FROM ("
        f"SELECT id, %s::float8 / (%s::float8 + {_RANK}) AS s FROM dt UNION ALL "
        f"SELECT id, %s::float8 / (%s::float8 + {_RANK}) FROM lt) x GROUP BY id)",
        ("w", "r", "wl", "r"),
    ),
}

#: The two candidate lists of a hybrid retrieval after the lexical scores ``c``, ``d``:
#: ``lt`` the ``depth`` best by BM25 (``lex``: every candidate's), ``dt`` the ``depth``
#: nearest by the HNSW index, cosines below ``min_score`` dropped.
_SIDES = (
    f", lex AS (SELECT c.id, {_COMBINED} AS score FROM c JOIN d USING (doc_id) CROSS JOIN prm), "
    "lt AS (SELECT id, score FROM lex ORDER BY score DESC, id LIMIT %s), "
    "dn AS MATERIALIZED (SELECT id, embedding <=> %s AS dist FROM {t} {dw} "
    "ORDER BY dist LIMIT %s), "
    "dt AS (SELECT id, least(1 - dist, 1) AS score FROM dn WHERE least(1 - dist, 1) >= %s), "
)
_TOP = (
    ", top AS (SELECT id, score FROM sc ORDER BY score DESC, id LIMIT %s) "
    "SELECT t.id, t.doc_id, t.text, t.metadata, top.score, "
    "(SELECT value FROM {i} WHERE key = 'embedder') "
    "FROM top JOIN {t} t USING (id) ORDER BY top.score DESC, t.id"
)


@functools.lru_cache(maxsize=256)
def hybrid_statement(sql: Any, table: str, fusion: str, keep: str | None) -> Any:
    """One statement answering a hybrid query: both candidate lists (a text without terms:
    the dense one alone), the fusion and the recorded embedder, ``(id, doc_id, text,
    metadata, score, embedder)`` best first, ties by id. ``keep`` is the filter's predicate
    (None: no filter). Built once per table, fusion and filter shape. Parameters:
    :func:`hybrid_params`.
    """
    predicate = None if keep is None else sql.SQL(keep)
    return _scored(
        sql,
        table,
        _candidates_of(sql, table, predicate),
        _SIDES + _FUSIONS[fusion][0] + _TOP,
        dw=sql.SQL("") if predicate is None else sql.SQL("WHERE ") + predicate,
        i=sql.Identifier(table + "__info"),
    )


def hybrid_params(query: StoreQuery, chosen: list[Any], vector: Any) -> list[Any]:
    """The parameters of :func:`hybrid_statement` for ``query``, the filter's parameters
    ``chosen`` and the query's ``vector`` (adapted)."""
    terms, counts = query_terms(query.text or "")
    given = {"v": vector, "w": query.weights[0], "wl": query.weights[1], "r": query.rrf_k}
    return [
        *bm25_params(terms, counts, query.k1, query.b, chosen, query.depth),
        *(vector, *chosen, query.depth, query.min_score),
        *(given[name] for name in _FUSIONS[query.fusion][1]),
        query.k,
    ]
