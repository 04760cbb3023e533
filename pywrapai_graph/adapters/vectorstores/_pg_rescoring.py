"""Hybrid retrieval's re-scoring on PostgreSQL: the cosines and BM25 scores of given chunks.

Each is one statement: the cosines read the chunks' vectors by primary key; the BM25 scores
read the postings of the query's terms (their counts per term are the document frequencies)
and, of those, the given chunks' only (:func:`_pg_lexical.bm25_scores_query`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pywrapai_graph.adapters.vectorstores._exact_index import prepare_query
from pywrapai_graph.adapters.vectorstores._lexical_index import check_bm25
from pywrapai_graph.adapters.vectorstores._pg_lexical import bm25_scores_query, query_terms

__all__ = ["PGRescoring"]

T = TypeVar("T")


class PGRescoring:
    """``similarities`` and ``lexical_scores`` of :class:`PGVectorStore`."""

    _sql: Any
    _table: str
    _dim: int

    @abstractmethod
    def _ident(self, suffix: str = "") -> Any: ...

    @abstractmethod
    def _read(self, work: Callable[[Any], T]) -> T: ...

    def lexical_scores(
        self, query: str, ids: Sequence[str], *, k1: float = 1.2, b: float = 0.75
    ) -> dict[str, float]:
        """BM25 scores of the chunks ``ids`` that hold a query term, in one statement."""
        check_bm25(k1, b)
        terms, counts = query_terms(query)
        if not terms or not ids:
            return {}
        statement = bm25_scores_query(self._sql, self._table)
        params = [terms, terms, list(ids), counts, terms, k1, k1, b, b]
        return {str(i): float(score) for i, score in self._rows(statement, params)}

    def similarities(self, query_vector: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """Cosines of the stored vectors of ``ids``: one statement by primary key."""
        query = prepare_query(query_vector, self._dim)
        if not ids:
            return {}
        statement = self._sql.SQL(
            "SELECT id, 1 - (embedding <=> %s) FROM {t} WHERE id = ANY(%s)"
        ).format(t=self._ident())
        return {str(i): min(float(s), 1.0) for i, s in self._rows(statement, [query, list(ids)])}

    def _rows(self, statement: Any, params: list[Any]) -> list[Any]:
        def work(cur: Any) -> list[Any]:
            cur.execute(statement, params)
            return list(cur.fetchall())

        return self._read(work)
