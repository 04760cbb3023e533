"""One retrieval, whole (:class:`StoreQuery`), answered by a store in one engine request
(``native_retrieval``); without its own ``_retrieve`` the retriever fuses dense and lexical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports.store_inputs import check_query_text, check_query_vector

__all__ = ["Fusion", "RetrievalMode", "StoreQuery", "check_store_query"]

#: dense: cosine over embeddings; lexical: BM25 over text; hybrid: both, fused.
RetrievalMode = Literal["dense", "lexical", "hybrid"]
#: rescored: every candidate gets both scores, min-max scaled over the candidates, weighted
#: sum; rrf: reciprocal-rank fusion; weighted: each list's own scores min-max scaled, summed.
Fusion = Literal["rescored", "rrf", "weighted"]


@dataclass(frozen=True, slots=True)
class StoreQuery:
    """The whole of one retrieval, checked by the retriever that built it.

    Attributes:
        mode: see :data:`RetrievalMode`.
        k: how many hits to return, best first.
        vector: the query's embedding (``dense`` and ``hybrid``), else None.
        text: the query's text (``lexical`` and ``hybrid``), else None.
        filter: metadata equality filter (a tenant scope is part of it), or None.
        candidates: ``hybrid``: how many hits of each side are fused (:attr:`depth`).
        fusion: ``hybrid``: ``rescored``, ``rrf`` or ``weighted`` (``application.fusion``).
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


def check_store_query(query: StoreQuery, method: str, store: str, native: bool) -> None:
    """Raises unless a store (``native``: with ``native_retrieval``) can answer ``query``
    and its vector and text are well formed."""
    if query.mode == "hybrid" and not native:
        raise UnsupportedOperationError(
            f"{store} has no one-request retrieval: {method}() serves "
            "dense and lexical queries; VectorRetriever fuses them for hybrid"
        )
    if query.mode != "lexical":
        check_query_vector(query.vector, method)
    if query.mode != "dense":
        check_query_text(query.text, method)
