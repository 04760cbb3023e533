"""One retrieval, whole, as a store answers it in one engine request.

The retriever hands a store a :class:`StoreQuery` (mode, the query vector and text, filter,
``k``, candidate count, fusion) and the store answers it with one request to its engine: one
SQL statement, one ``query_points``, one pass in process (``native_retrieval``). A store
without its own ``_retrieve`` answers ``dense`` with its ``search`` and ``lexical`` with its
``lexical_search``; the retriever fuses those two for ``hybrid``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import check_query_text, check_query_vector

__all__ = ["Fusion", "RetrievalMode", "StoreQuery", "StoreRetrieval"]

#: dense: cosine over embeddings; lexical: BM25 over text; hybrid: both, fused.
RetrievalMode = Literal["dense", "lexical", "hybrid"]
#: rescored: every candidate gets both scores, min-max scaled over the candidates, weighted
#: sum; rrf: reciprocal-rank fusion; weighted: each list's own scores min-max scaled, summed.
Fusion = Literal["rescored", "rrf", "weighted"]


@dataclass(frozen=True, slots=True)
class StoreQuery:
    """The whole of one retrieval, checked by the retriever that built it.

    Attributes:
        mode: ``dense`` ranks by the cosine of ``vector``, ``lexical`` by the BM25 score of
            ``text`` (with the document field), ``hybrid`` fuses the two.
        k: how many hits to return, best first.
        vector: the query's embedding (``dense`` and ``hybrid``), else None.
        text: the query's text (``lexical`` and ``hybrid``), else None.
        filter: metadata equality filter (a tenant scope is part of it), or None.
        candidates: ``hybrid``: how many hits of each side are fused (:attr:`depth`).
        fusion: ``hybrid``: ``rescored``, ``rrf`` or ``weighted`` (as
            ``pywrapai_graph.application.fusion`` computes them).
        weights: ``hybrid``: the (dense, lexical) weights.
        rrf_k: ``rrf``: the rank constant.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
        min_score: the least cosine a dense hit keeps (both modes that rank by cosine).
    """

    mode: RetrievalMode
    k: int
    vector: Sequence[float] | None = None
    text: str | None = None
    filter: Mapping[str, Any] | None = None
    candidates: int = 100
    fusion: Fusion = "rescored"
    weights: tuple[float, float] = (0.6, 0.4)
    rrf_k: int = 60
    k1: float = 1.2
    b: float = 0.75
    min_score: float = -1.0

    @property
    def depth(self) -> int:
        """How many hits each side ranks: ``k`` alone, ``max(k, candidates)`` in hybrid."""
        return self.k if self.mode != "hybrid" else max(self.k, self.candidates)


class StoreRetrieval:
    """``retrieve`` and ``aretrieve`` of a vector store: one request per retrieval."""

    if TYPE_CHECKING:  # BaseVectorStore's

        def search(
            self, query_vector: Sequence[float], k: int = 4, filter: Mapping[str, Any] | None = None
        ) -> list[ScoredChunk]: ...

        async def asearch(
            self, query_vector: Sequence[float], k: int = 4, filter: Mapping[str, Any] | None = None
        ) -> list[ScoredChunk]: ...

        def lexical_search(
            self,
            query: str,
            k: int = 4,
            filter: Mapping[str, Any] | None = None,
            *,
            k1: float = 1.2,
            b: float = 0.75,
        ) -> list[ScoredChunk]: ...

    @property
    def native_retrieval(self) -> bool:
        """The store answers a whole :class:`StoreQuery`, hybrid included, with one engine
        request (it implements ``_retrieve``)."""
        return type(self)._retrieve is not StoreRetrieval._retrieve

    def retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Up to ``query.k`` hits, best first: cosines in ``dense`` mode, BM25 scores in
        ``lexical``, fused scores in ``hybrid``.

        Raises:
            UnsupportedOperationError: ``hybrid`` on a store without ``native_retrieval``
                (the retriever fuses its two sides), or a mode the store has no index for.
            ValueError: the query's vector or text is malformed.
        """
        self._check_query(query, "retrieve")
        return self._retrieve(query)

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """:meth:`retrieve`'s work, one engine request (the query checked). This default
        serves ``dense`` from ``search`` (keeping cosines >= ``min_score``) and ``lexical``
        from ``lexical_search``."""
        if query.mode == "dense":
            hits = self.search(query.vector or [], query.k, query.filter)
            return [h for h in hits if h.score >= query.min_score]
        return self.lexical_search(query.text or "", query.k, query.filter, k1=query.k1, b=query.b)

    async def aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Async :meth:`retrieve` (by default ``asearch``, or the bounded offload pool)."""
        self._check_query(query, "aretrieve")
        return await self._aretrieve(query)

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        if query.mode == "dense" and not self.native_retrieval:
            hits = await self.asearch(query.vector or [], query.k, query.filter)
            return [h for h in hits if h.score >= query.min_score]
        return await offload(self._retrieve, query)

    def _check_query(self, query: StoreQuery, method: str) -> None:
        if query.mode == "hybrid" and not self.native_retrieval:
            raise UnsupportedOperationError(
                f"{type(self).__name__} has no one-request retrieval: {method}() serves "
                "dense and lexical queries; VectorRetriever fuses them for hybrid"
            )
        if query.mode != "lexical":
            check_query_vector(query.vector, method)
        if query.mode != "dense":
            check_query_text(query.text, method)
