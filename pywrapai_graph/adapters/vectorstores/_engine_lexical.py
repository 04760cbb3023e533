"""Lexical (BM25) search answered by the engine, for the versioned stores (Qdrant, Chroma).

The process keeps no copy of the index: each write stores its chunks' terms with them (in the
engine's form: a sparse vector, a metadata field), and each query is answered from what the
engine holds at that moment, so a write, replace or delete by any process is what every
other process's next query sees. Hits of uncommitted versions are dropped as in dense search
(:meth:`VersionedDocuments._search_visible`). ``avgdl`` comes from running totals kept with
the document records (see :mod:`_sparse_terms`).

Hybrid retrieval re-scores its candidates here too: the same engine queries, restricted to
the candidates' chunk ids (:meth:`EngineLexicalSearch._ids_selector`), give each its cosine
(``similarities``) and its BM25 score (``lexical_scores``), of its committed version.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores._sparse_terms import LengthTotals, weigh_batch
from pywrapai_graph.adapters.vectorstores._vector_batches import prepare_query
from pywrapai_graph.adapters.vectorstores._versioned import Hit, VersionedDocuments
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.ports import MetadataFilter

__all__ = ["EngineLexicalSearch"]


class EngineLexicalSearch(VersionedDocuments):
    """``lexical_search`` over an engine query primitive, and the write-side term weighing."""

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    @abstractmethod
    def _length_totals(self) -> LengthTotals:
        """The running totals of chunk lengths recorded in the engine (zeros when none)."""

    @abstractmethod
    def _put_length_totals(self, totals: LengthTotals) -> None: ...

    @abstractmethod
    def _lexical_query(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        """The engine's ``n`` best BM25 hits of every version, best first."""

    @abstractmethod
    def _ids_selector(self, ids: Sequence[str]) -> Any:
        """The engine's selector of the chunks with these (non-empty) chunk ids."""

    def _check_lexical(self, k1: float, b: float) -> None:
        """Refuse BM25 parameters the engine cannot apply (all are accepted by default)."""

    def _weigh(self, texts: Sequence[str]) -> tuple[list[Counter[str]], float]:
        """Analyse a batch about to be written; returns each text's terms and the avgdl."""
        return weigh_batch(texts, self._length_totals, self._put_length_totals)

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        """The ``k`` chunks whose text best matches ``query`` by BM25, best first."""
        self._check_lexical(k1, b)
        with self._lock:
            if self._known_dim() is None:
                return []
            selector = self._selector(filter)
            return self._search_visible(
                lambda n: self._lexical_query(query, n, selector, k1, b), k, self._available()
            )

    def _lexical_scores(
        self, query: str, ids: list[str], *, k1: float, b: float
    ) -> dict[str, float]:
        """The BM25 score of each chunk of ``ids`` sharing a term with ``query``: the
        engine's lexical query restricted to those ids."""
        self._check_lexical(k1, b)
        with self._lock:
            if not ids or self._known_dim() is None:
                return {}
            selector = self._ids_selector(ids)
            hits = self._search_visible(
                lambda n: self._lexical_query(query, n, selector, k1, b),
                len(ids),
                self._available(),
            )
        return {h.chunk.id: h.score for h in hits}

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        """Cosines of ``ids``: the engine's vector query restricted to those ids."""
        with self._lock:
            if not ids or self._known_dim() is None:
                return {}
            query = prepare_query(query_vector, self._dim)
            ask = self._asker(query, self._ids_selector(ids))
            hits = self._search_visible(ask, len(ids), self._available())
        return {h.chunk.id: h.score for h in hits}

    async def _asimilarities(
        self, query_vector: Sequence[float], ids: list[str]
    ) -> dict[str, float]:
        """Async :meth:`_similarities` (the native async client where there is one)."""
        if not self._native_async:
            return await super()._asimilarities(query_vector, ids)
        if not ids or self._known_dim() is None:
            return {}
        query = prepare_query(query_vector, self._dim)
        hits = await self._asearch_visible(query, len(ids), self._ids_selector(ids))
        return {h.chunk.id: h.score for h in hits}
