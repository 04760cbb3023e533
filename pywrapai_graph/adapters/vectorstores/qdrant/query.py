"""One retrieval in one ``query_points``: the part of :class:`QdrantVectorStore` that
answers a :class:`StoreQuery` (see ``ports/store_query``), on a server and on Qdrant Edge.

``dense`` is a nearest query on the dense vector (``min_score`` as its score threshold);
``lexical`` a formula over two prefetches, the chunk's sparse vector and its document's (IDF
over the carriers), adding ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(document)`` (see
``document``); ``hybrid`` both as prefetches of ``depth`` hits each, fused by the
engine: ``rrf`` by Qdrant's weighted RRF (``k + 1``: Qdrant counts ranks from 0, so the
scores are ``application.fusion``'s), ``rescored`` and ``weighted`` by its DBSF (chosen on
Cranfield over RRF; their own formulas need every candidate's two scores, which one query
cannot give). Hits of uncommitted versions are dropped as in dense search, the engine asked
again, deeper, when they took places.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit
from pywrapai_graph.adapters.vectorstores.qdrant.document import (
    UPGRADE_NEEDED,
    QdrantDocumentField,
    query_indices,
)
from pywrapai_graph.adapters.vectorstores.qdrant.points import (
    CARRIER,
    DOCUMENT_SPARSE,
    SPARSE,
    TERMS,
    hits_of,
)
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.errors import InvalidStateError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.ports.sync_async import adrive

if TYPE_CHECKING:
    from qdrant_client import AsyncQdrantClient

__all__ = ["QdrantQuery"]

#: chunks each field's prefetch ranks for a lexical query, at least (the formula adds the
#: two scores of the chunks either ranks; a chunk one misses gets 0 there)
_SHORTLIST = 1000
#: a reply holds this many times the hits asked, so chunks tied at the cut go by chunk id
_TIES = 2


def _hits(query: StoreQuery, points: Sequence[Any], n: int) -> list[Hit]:
    """The ``n`` best of a reply, chunks tied in score by chunk id (as ``application.fusion``
    and the other stores cut ties), from a reply of up to ``_TIES · n``."""
    hits = hits_of(points, cosine=query.mode == "dense")
    return sorted(hits, key=lambda h: (-h[0].score, h[0].chunk.id))[:n]


class QdrantQuery(QdrantDocumentField):
    """``retrieve`` and ``lexical_search`` of :class:`QdrantVectorStore`."""

    #: what each read asks of a cluster (the store's)
    _consistency: dict[str, Any]

    if TYPE_CHECKING:  # the store's

        def _errors(self) -> AbstractContextManager[None]: ...

        def _existing_dimension(self) -> int | None: ...

        def _aclient(self) -> AsyncQdrantClient: ...

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        return self._retrieve(StoreQuery("lexical", k, text=query, filter=filter, k1=k1, b=b))

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """One ``query_points`` (asked again, deeper, only while chunks of uncommitted
        versions took places)."""
        with self._lock:
            selector = self._ready(query)
            if selector is False:
                return []
            return self._search_visible(lambda n: self._ranked(query, n, selector), query.k)

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        if not self._native_async:
            return await offload(self._retrieve, query)
        selector = self._ready(query)
        if selector is False:
            return []

        async def read(asked: tuple[Any, ...]) -> Any:
            if asked[0] != "query":
                return await self._aread(asked)
            with self._errors():
                got = await self._aclient().query_points(
                    self._collection,
                    **self._request(query, asked[2], selector),
                    **self._consistency,
                )
            return _hits(query, got.points, asked[2])

        return await adrive(self._visible_top(query.k), read)

    def _ready(self, query: StoreQuery) -> Any:
        """The engine filter of ``query`` (False: nothing to rank)."""
        if query.mode != "dense":
            self._check_lexical(query.k1, query.b)
        if self._known_dim() is None:
            return False
        if query.mode != "dense" and not self._sparse:
            with self._errors():  # another process may have re-created the collection
                self._dim = self._existing_dimension()
            if not self._sparse:
                raise InvalidStateError(UPGRADE_NEEDED.format(name=self._collection))
        if query.mode == "lexical" and not query_indices(query.text or ""):
            return False
        return self._selector(query.filter)

    def _ranked(self, query: StoreQuery, n: int, selector: Any) -> list[Hit]:
        with self._errors():
            got = self._client.query_points(
                self._collection, **self._request(query, n, selector), **self._consistency
            )
        return _hits(query, got.points, n)

    def _request(self, query: StoreQuery, n: int, selector: Any) -> dict[str, Any]:
        """``query_points``' arguments for the ``n`` best hits of ``query``."""
        m = self._models
        threshold = query.min_score if query.min_score > -1.0 else None
        dense = {"query": list(query.vector or []), "score_threshold": threshold}
        asked = {"limit": _TIES * n, "query_filter": selector, "with_payload": True}
        if query.mode == "dense":
            return {**dense, **asked}
        indices = query_indices(query.text or "")
        if query.mode == "lexical":
            side = self._lexical(indices, n, selector)
            return {"query": side.query, "using": side.using, "prefetch": side.prefetch, **asked}
        depth = max(query.depth, n)
        sides = [m.Prefetch(limit=depth, filter=selector, **dense)]
        if indices:
            sides.append(self._lexical(indices, depth, selector))
        if query.fusion == "rrf":
            weights = list(query.weights[: len(sides)])
            # Qdrant counts ranks from 0: k + 1 gives application.fusion's sum
            fused = m.RrfQuery(rrf=m.Rrf(k=query.rrf_k + 1, weights=weights))
        else:
            fused = m.FusionQuery(fusion=m.Fusion.DBSF)
        return {"query": fused, "prefetch": sides, **asked}

    def _lexical(self, indices: list[int], n: int, selector: Any) -> Any:
        """The lexical side, as a prefetch of its ``n`` best chunks: a formula adding the
        chunk's BM25 and ``DOCUMENT_WEIGHT`` times its document's (IDF over the carriers),
        over the best chunks of each (see ``document``)."""
        m = self._models
        terms = m.SparseVector(indices=indices, values=[1.0] * len(indices))
        held = m.FieldCondition(key=TERMS, match=m.MatchAny(any=indices))
        carriers = m.FieldCondition(key=CARRIER, match=m.MatchValue(value=True))
        wide = max(n, _SHORTLIST)
        sides = [
            m.Prefetch(query=terms, using=SPARSE, limit=wide, filter=selector),
            m.Prefetch(
                query=terms,
                using=DOCUMENT_SPARSE,
                limit=wide,
                filter=m.Filter(must=[held] if selector is None else [selector, held]),
                params=m.SearchParams(idf=m.IdfCorpusParams(corpus=m.Filter(must=[carriers]))),
            ),
        ]
        formula = m.SumExpression(
            sum=["$score[0]", m.MultExpression(mult=[float(DOCUMENT_WEIGHT), "$score[1]"])]
        )
        fielded = m.FormulaQuery(formula=formula, defaults={"$score[0]": 0.0, "$score[1]": 0.0})
        return m.Prefetch(prefetch=sides, query=fielded, limit=n, filter=selector)
