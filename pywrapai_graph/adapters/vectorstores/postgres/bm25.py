"""PGVectorStore's retrievals, one statement each, and their rows back into hits.

A chunk ``c`` of document ``D`` scores ``BM25(q, c) + DOCUMENT_WEIGHT · BM25(q, D)``, Okapi
BM25 with Lucene's idf over the table (``D``'s counts summed over its chunks' shares); a filter
selects among the candidates. The cost follows the query terms' postings, read once per field,
not the table's size; sums run in term order, so ties score the same to the last bit, by id.
A hybrid statement adds the HNSW side and fuses as :mod:`~pywrapai_graph.application.fusion`
does (the same float operations). Every statement reads the recorded embedder too.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.postgres.rows import from_pg, names
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["EMBEDDER", "WORK_MEM", "scored_row", "search_hits", "statement", "statement_params"]

#: Set per pooled connection: the hash aggregates (one group per candidate chunk) spilled to
#: disk with the default 4MB at 100,000 chunks.
WORK_MEM = "32MB"


def _idf(n: str, df: str) -> str:
    return f"ln(1 + ({n} - {df} + 0.5) / ({df} + 0.5))"


#: The candidates' BM25 ``lex``: a term weighs ``a · tf / (tf + k0 + kl · length)`` in a
#: field, constants per term in ``tw``. ``g``: the query terms' postings summed by term and
#: document (frequencies, and the document field ``d``); ``c``: the chunk field of each chunk
#: holding a query term, kept by the filter (``{keep}``).
_LEXICAL = (
    "WITH prm AS (SELECT %(terms)s::text[] AS terms, %(qtf)s::int[] AS qtf, "
    "%(k1)s::float8 AS k1, %(b)s::float8 AS b, %(dw)s::float8 AS w), "
    "st AS (SELECT greatest(coalesce(sum(n), 0), 1)::float8 AS n, "
    "greatest(coalesce(sum(docs), 0), 1)::float8 AS nd, "
    "coalesce(sum(total), 0)::float8 AS total, "
    "coalesce(sum(dtotal), 0)::float8 AS dtotal FROM {s}), "
    "g AS MATERIALIZED (SELECT term, doc_id, count(*) FILTER (WHERE tf > 0) AS n, "
    "sum(dtf)::float8 AS tf FROM {p} WHERE term = ANY (%(terms)s::text[]) "
    "GROUP BY term, doc_id), "
    "tw AS MATERIALIZED (SELECT f.term, q.qtf * "
    + _idf("st.n", "f.df")
    + " * (prm.k1 + 1) AS ac, q.qtf * "
    + _idf("st.nd", "f.ddf")
    + " * (prm.k1 + 1) AS ad, prm.k1 * (1 - prm.b) AS k0, "
    "prm.k1 * prm.b / (CASE WHEN st.total > 0 THEN st.total / st.n ELSE 1 END) AS kc, "
    "prm.k1 * prm.b / (CASE WHEN st.dtotal > 0 THEN st.dtotal / st.nd ELSE 1 END) AS kd "
    "FROM (SELECT term, sum(n)::float8 AS df, count(*) FILTER (WHERE tf > 0)::float8 AS ddf "
    "FROM g GROUP BY term) f "
    "JOIN (SELECT unnest(terms) AS term, unnest(qtf) AS qtf FROM prm) q USING (term) "
    "CROSS JOIN st CROSS JOIN prm), "
    "d AS (SELECT g.doc_id, sum(tw.ad * g.tf / (g.tf + tw.k0 + tw.kd * l.len)) AS score "
    "FROM g JOIN tw USING (term) JOIN {l} l USING (doc_id) WHERE g.tf > 0 GROUP BY g.doc_id), "
    "c AS (SELECT p.chunk_id AS id, p.doc_id, "
    "sum(tw.ac * p.tf / (p.tf + tw.k0 + tw.kc * p.dl)) AS score "
    "FROM {p} p JOIN tw USING (term) WHERE p.term = ANY (%(terms)s::text[]) AND p.tf > 0 "
    "GROUP BY p.chunk_id, p.doc_id), "
    "lex AS (SELECT c.id, c.score + %(dw)s::float8 * d.score AS score FROM c JOIN d USING (doc_id) "
    "{keep})"
)


def _min_max(x: str) -> str:
    """SQL of ``x`` min-max scaled over the rows (all 1 when equal), as ``fusion`` scales."""
    low, span = f"min({x}) OVER ()", f"(max({x}) OVER () - min({x}) OVER ())"
    return f"CASE WHEN {span} > 0 THEN ({x} - {low}) / {span} ELSE 1 END"


_RANK = "row_number() OVER (ORDER BY score DESC, id)"
#: Each fusion's scores ``sc(id, score)``: ``wd``/``wl`` the weights, ``rrf`` rrf_k.
_FUSIONS = {
    # every candidate of either side gets both scores: a lexical-only one its cosine, read
    # by id, a dense-only one its BM25 (0 when it holds no query term)
    "rescored": (
        "u AS (SELECT id, dt.score AS cs, lt.score AS bs FROM dt FULL JOIN lt USING (id)), "
        "us AS (SELECT id, coalesce(u.cs, least(1 - (t.embedding <=> %(vec)s), 1)) AS cs, "
        "coalesce(u.bs, lx.score, 0) AS bs FROM u JOIN {t} t USING (id) "
        "LEFT JOIN (SELECT id, score FROM lex WHERE id IN (SELECT id FROM dn)) lx USING (id)), "
        f"sc AS (SELECT id, %(wd)s::float8 * {_min_max('cs')} + %(wl)s::float8 * "
        f"{_min_max('bs')} AS score FROM us)"
    ),
    "weighted": (
        "sc AS (SELECT id, sum(s) AS score FROM ("
        f"SELECT id, %(wd)s::float8 * {_min_max('score')} AS s FROM dt UNION ALL "
        f"SELECT id, %(wl)s::float8 * {_min_max('score')} FROM lt) x GROUP BY id)"
    ),
    "rrf": (
        "sc AS (SELECT id, sum(s) AS score FROM ("
        f"SELECT id, %(wd)s::float8 / (%(rrf)s::float8 + {_RANK}) AS s FROM dt UNION ALL "
        f"SELECT id, %(wl)s::float8 / (%(rrf)s::float8 + {_RANK}) FROM lt) x GROUP BY id)"
    ),
}

#: The two candidate lists of a hybrid retrieval: ``lt`` the ``depth`` best by BM25, ``dt``
#: the ``depth`` nearest by the HNSW index, cosines below ``min_score`` dropped.
_SIDES = (
    ", lt AS (SELECT id, score FROM lex ORDER BY score DESC, id LIMIT %(depth)s), "
    "dn AS MATERIALIZED (SELECT id, embedding <=> %(vec)s AS dist FROM {t} {dw} "
    "ORDER BY dist LIMIT %(depth)s), "
    "dt AS (SELECT id, least(1 - dist, 1) AS score FROM dn WHERE least(1 - dist, 1) >= %(min)s), "
)
#: The recorded embedder (JSON or NULL), read with every retrieval.
EMBEDDER = "(SELECT value FROM {i} WHERE key = 'embedder')"
#: The ``k`` best of ``{ranked}`` with their rows and the recorded embedder, best first.
_TOP = (
    ", top AS (SELECT id, score FROM {ranked} ORDER BY score DESC, id LIMIT %(k)s) "
    f"SELECT t.id, t.doc_id, t.text, t.metadata, top.score, {EMBEDDER} "
    "FROM top JOIN {t} t USING (id) ORDER BY top.score DESC, t.id"
)
#: A dense search (``{dw}`` the filter).
_DENSE = (
    f"SELECT id, doc_id, text, metadata, 1 - (embedding <=> %(vec)s) AS score, {EMBEDDER} "
    "FROM {t} {dw} ORDER BY embedding <=> %(vec)s LIMIT %(k)s"
)


@functools.lru_cache(maxsize=256)
def statement(sql: Any, table: str, mode: str, fusion: str, keep: str | None) -> Any:
    """The statement answering a query of ``mode`` and ``fusion``: ``(id, doc_id, text,
    metadata, score, embedder)`` best first, ties by id. ``keep``: the filter's predicate on
    a chunk row (None: no filter). Built once per table, mode, fusion and filter shape."""
    if mode == "dense":
        text = _DENSE
    elif mode == "lexical":
        text = _LEXICAL + _TOP.replace("{ranked}", "lex")
    else:
        text = _LEXICAL + _SIDES + _FUSIONS[fusion] + _TOP.replace("{ranked}", "sc")
    ids = {k: _quoted(sql, ident) for k, ident in names(sql, table).items() if k in "tplsi"}
    kept = {"keep": sql.SQL(""), "dw": sql.SQL("")}
    if keep is not None:  # the chunk rows the filter keeps: BM25 candidates, dense side
        kept = {
            "keep": sql.SQL("JOIN {t} t USING (id) WHERE ").format(t=ids["t"]),
            "dw": sql.SQL("WHERE "),
        }
        kept = {name: part + sql.SQL(keep) for name, part in kept.items()}
    # rendered once here: psycopg2 renders a composed statement again at every execute
    return sql.SQL(sql.SQL(text).format(**kept, **ids).as_string(None))


def _quoted(sql: Any, ident: Any) -> Any:
    """``ident`` quoted as PostgreSQL quotes it, as SQL that renders without a connection."""
    return sql.SQL(".".join('"' + s.replace('"', '""') + '"' for s in ident.strings))


def statement_params(query: StoreQuery, given: dict[str, Any], vector: Any) -> dict[str, Any]:
    """The parameters of :func:`statement`: ``given`` the filter's, ``vector`` adapted."""
    counts = Counter(analyze(query.text or ""))
    return {
        **given,
        "vec": vector,
        "k": query.k,
        "terms": list(counts),
        "qtf": list(counts.values()),
        "k1": query.k1,
        "b": query.b,
        "dw": DOCUMENT_WEIGHT,
        "depth": query.depth,
        "min": query.min_score,
        "wd": query.weights[0],
        "wl": query.weights[1],
        "rrf": query.rrf_k,
    }


def scored_row(row: Sequence[Any], *, clamp: bool = True) -> ScoredChunk:
    """A hit from a row of ``id, doc_id, text, metadata, score`` (a cosine, at most 1, unless
    ``clamp`` is False: a fused or BM25 score)."""
    chunk = Chunk(text=from_pg(row[2]), doc_id=row[1], metadata=dict(row[3]), id=row[0])
    score = float(row[4])
    return ScoredChunk(chunk, min(score, 1.0) if clamp else score)


def search_hits(rows: list[Any], *, clamp: bool = True) -> list[ScoredChunk]:
    """The hits of a retrieval statement, best first; the embedder recorded (each row's last
    column) is told to the caller's identity probe."""
    if rows:
        value = rows[0][5]
        report_identity(None if value is None else EmbedderIdentity.from_json(value))
    hits = [scored_row(r, clamp=clamp) for r in rows]
    hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
    return hits
