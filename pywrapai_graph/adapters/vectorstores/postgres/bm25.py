"""The statements of PGVectorStore's retrievals, one for each, and their rows back into hits.

A chunk ``c`` of document ``D`` scores (the document field, as every backend computes it)::

    score(q, c) = BM25(q, c) + DOCUMENT_WEIGHT · BM25(q, D)

Both are Okapi BM25 with Lucene's idf (a term repeated in the query counts each time), over
the chunk statistics and over the document statistics (``tf(t, D)`` and ``|D|`` summed over
the shares of its chunks, ``lexical``). Statistics cover the whole table; a metadata filter
selects among the candidates, the chunks holding a query term. A statement reads the
postings of the query's terms once for each field, the statistics' delta rows and, for the
hits, their rows: its cost follows the postings of its terms, not the size of the tables.
It runs in one snapshot, so only committed writes count; every sum over terms runs in term
order, so chunks that tie score the same to the last bit, ordered by id.

A hybrid statement adds the dense side (the HNSW index, with the session's
``hnsw.ef_search``), gives the union of the two candidate lists both scores when the fusion
asks for them, and fuses them as :mod:`~pywrapai_graph.application.fusion` does (the same
float operations, so the scores are the composed retrieval's). Every statement also reads
the recorded embedder, told to the caller's identity probe at no extra round trip.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.postgres.rows import from_pg, names, query_terms
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["WORK_MEM", "scored_row", "search_hits", "statement", "statement_params"]

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
_COMBINED = "c.score + prm.w * d.score"

#: The candidates' BM25 ``lex``: ``c`` the chunk field of each candidate chunk (``{where}``
#: selects among them), ``d`` the document field of each document holding a query term
#: (``{docs}`` may select among them). Each reads the postings of the query's terms in index
#: order — by term, then document — so the per-term counts are window counts and the
#: per-document groups stream without a sort. Parameters: the terms, their counts, k1, b, the
#: document weight, the terms, ``{where}``'s, the terms.
_LEXICAL = (
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
    "JOIN {l} l USING (doc_id) CROSS JOIN st CROSS JOIN prm {docs} GROUP BY m.doc_id), "
    f"lex AS (SELECT c.id, {_COMBINED} AS score FROM c JOIN d USING (doc_id) CROSS JOIN prm)"
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

#: The two candidate lists of a hybrid retrieval: ``lt`` the ``depth`` best by BM25, ``dt``
#: the ``depth`` nearest by the HNSW index, cosines below ``min_score`` dropped.
_SIDES = (
    ", lt AS (SELECT id, score FROM lex ORDER BY score DESC, id LIMIT %s), "
    "dn AS MATERIALIZED (SELECT id, embedding <=> %s AS dist FROM {t} {dw} "
    "ORDER BY dist LIMIT %s), "
    "dt AS (SELECT id, least(1 - dist, 1) AS score FROM dn WHERE least(1 - dist, 1) >= %s), "
)
_EMBEDDER = "(SELECT value FROM {i} WHERE key = 'embedder')"
#: The ``k`` best of ``{ranked}`` with their rows and the recorded embedder, best first.
_TOP = (
    ", top AS (SELECT id, score FROM {ranked} ORDER BY score DESC, id LIMIT %s) "
    f"SELECT t.id, t.doc_id, t.text, t.metadata, top.score, {_EMBEDDER} "
    "FROM top JOIN {t} t USING (id) ORDER BY top.score DESC, t.id"
)
#: A dense search: the HNSW index (``{dw}`` the filter), the recorded embedder in the same
#: snapshot. Parameters: the vector, the filter's, the vector, ``k``.
_DENSE = (
    f"SELECT id, doc_id, text, metadata, 1 - (embedding <=> %s) AS score, {_EMBEDDER} "
    "FROM {t} {dw} ORDER BY embedding <=> %s LIMIT %s"
)


@functools.lru_cache(maxsize=256)
def statement(sql: Any, table: str, mode: str, fusion: str, keep: str | None) -> Any:
    """The one statement answering a query of ``mode`` (and ``fusion``, in hybrid; a text
    without terms ranks by the dense side alone): ``(id, doc_id, text, metadata, score,
    embedder)`` best first, ties by id. ``keep`` is the filter's predicate on a chunk row
    (None: no filter). Built once per table, mode, fusion and filter shape. Parameters:
    :func:`statement_params`."""
    if mode == "dense":
        text = _DENSE
    elif mode == "lexical":
        text = _LEXICAL + _TOP.replace("{ranked}", "lex")
    else:
        text = _LEXICAL + _SIDES + _FUSIONS[fusion][0] + _TOP.replace("{ranked}", "sc")
    predicate = None if keep is None else sql.SQL(keep)
    where = "" if keep is None else "WHERE m.chunk_id IN (SELECT id FROM {t} WHERE {keep})"
    return sql.SQL(text).format(
        where=sql.SQL(where).format(t=sql.Identifier(table), keep=predicate),
        docs=sql.SQL("" if keep is None else "WHERE m.doc_id IN (SELECT doc_id FROM c)"),
        dw=sql.SQL("") if predicate is None else sql.SQL("WHERE ") + predicate,
        i=sql.Identifier(table + "__info"),
        **names(sql, table),
    )


def statement_params(query: StoreQuery, chosen: Sequence[Any], vector: Any) -> list[Any]:
    """The parameters of :func:`statement` for ``query``, the filter's parameters ``chosen``
    and the query's ``vector`` (adapted; None in lexical mode)."""
    if query.mode == "dense":
        return [vector, *chosen, vector, query.k]
    terms, counts = query_terms(query.text or "")
    lexical = [terms, counts, query.k1, query.b, DOCUMENT_WEIGHT, terms, *chosen, terms]
    if query.mode == "lexical":
        return [*lexical, query.k]
    given = {"v": vector, "w": query.weights[0], "wl": query.weights[1], "r": query.rrf_k}
    return [
        *lexical,
        *(query.depth, vector, *chosen, query.depth, query.min_score),
        *(given[name] for name in _FUSIONS[query.fusion][1]),
        query.k,
    ]


def scored_row(row: Sequence[Any], *, clamp: bool = True) -> ScoredChunk:
    """A hit from a row of ``id, doc_id, text, metadata, score`` (a cosine, at most 1, unless
    ``clamp`` is False: a fused or BM25 score)."""
    chunk = Chunk(text=from_pg(row[2]), doc_id=row[1], metadata=dict(row[3]), id=row[0])
    score = float(row[4])
    return ScoredChunk(chunk, min(score, 1.0) if clamp else score)


def search_hits(rows: list[Any], *, clamp: bool = True) -> list[ScoredChunk]:
    """The hits of a retrieval statement, best first; the recorded embedder identity (JSON or
    NULL) that ends each row is told to the caller's identity probe
    (:mod:`...ports.identity_probe`)."""
    if rows:
        value = rows[0][5]
        report_identity(None if value is None else EmbedderIdentity.from_json(value))
    hits = [scored_row(r, clamp=clamp) for r in rows]
    hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
    return hits
