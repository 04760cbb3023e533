"""The document-field BM25 written out plainly, for the tests of PostgreSQL's statements.

A chunk ``c`` of document ``D`` scores ``BM25(q, c) + DOCUMENT_WEIGHT * BM25(q, D)``: the same
Okapi BM25 (Lucene's idf, a query term counted as often as it occurs) once over the chunks and
once over the documents, a document being the concatenation of its chunks (doc_id groups
them) without the overlap each repeats from the one before it in the list (``document_parts``:
the chunks given in the order they were written, in one write). Statistics cover every chunk
given; the filter selects among the candidates (the chunks holding a query term).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk

__all__ = ["chunk_bm25", "expected_ranking", "expected_scores"]


def _bm25(
    query: list[str], units: Mapping[str, Counter[str]], k1: float, b: float
) -> dict[str, float]:
    """Okapi BM25 (Lucene idf) of every unit holding a query term."""
    n = len(units)
    total = sum(sum(t.values()) for t in units.values())
    avgdl = total / n if total else 1.0
    df = {term: sum(1 for t in units.values() if term in t) for term in set(query)}
    scores: dict[str, float] = {}
    for key, terms in units.items():
        length, score = sum(terms.values()), 0.0
        for term in query:
            tf = terms.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
        if score > 0:
            scores[key] = score
    return scores


def chunk_bm25(chunks: list[Chunk], query: str) -> dict[str, float]:
    """Plain BM25 of each chunk holding a query term (the chunk field alone)."""
    return _bm25(analyze(query), {c.id: Counter(analyze(c.text)) for c in chunks}, 1.2, 0.75)


def expected_scores(
    chunks: list[Chunk], query: str, *, k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """Every candidate chunk's document-field score."""
    terms = analyze(query)
    by_chunk = {c.id: Counter(analyze(c.text)) for c in chunks}
    by_doc: dict[str, Counter[str]] = defaultdict(Counter)
    parts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
    for c, part in zip(chunks, parts, strict=True):
        by_doc[c.doc_id].update(analyze(part))  # created even when the part has no term
    chunk_scores = _bm25(terms, by_chunk, k1, b)
    doc_scores = _bm25(terms, by_doc, k1, b)
    doc_of = {c.id: c.doc_id for c in chunks}
    return {i: s + DOCUMENT_WEIGHT * doc_scores[doc_of[i]] for i, s in chunk_scores.items()}


def expected_ranking(
    chunks: list[Chunk],
    query: str,
    k: int = 10,
    *,
    filter: Mapping[str, Any] | None = None,
    **bm25: float,
) -> list[tuple[str, float]]:
    """The ``k`` best (chunk id, score), ties by chunk id."""
    keep = {c.id for c in chunks if all(c.metadata.get(f) == v for f, v in (filter or {}).items())}
    scores = expected_scores(chunks, query, **bm25)
    ranked = sorted(((i, s) for i, s in scores.items() if i in keep), key=lambda p: (-p[1], p[0]))
    return ranked[:k]
