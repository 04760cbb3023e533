"""The part of :class:`BaseVectorStore` that hybrid retrieval uses: both scores of given
candidates, a cosine (``similarities``) and a BM25 score (``lexical_scores``).

Template methods like the rest of the port: each checks its inputs, then calls the store's
primitive (``_similarities``, ``_asimilarities``, ``_lexical_scores``). Built-in stores answer
for exactly the ids asked; the defaults here, for any other store, rank the whole store once
and keep the ids asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import check_query_vector, check_score_ids

if TYPE_CHECKING:
    from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["StoreRescoring"]


class StoreRescoring:
    """``similarities``, ``asimilarities`` and ``lexical_scores`` of a vector store."""

    if TYPE_CHECKING:  # BaseVectorStore's

        def __len__(self) -> int: ...

        def _search_page(
            self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None
        ) -> list[ScoredChunk]: ...

        def _lexical_search(
            self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
        ) -> list[ScoredChunk]: ...

        def _check_lexical_query(self, query: str, k1: float, b: float, method: str) -> None: ...

    def similarities(self, query_vector: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of ``query_vector`` to each stored chunk of ``ids`` (ids
        not stored are left out).

        Raises:
            ValueError: as for :meth:`search`; ``ids`` not a list of str.
        """
        check_query_vector(query_vector, "similarities")
        return self._similarities(query_vector, check_score_ids(ids, "similarities"))

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        wanted = set(ids)
        if not wanted or len(self) == 0:
            return {}
        hits = self._search_page(query_vector, len(self), None)
        return {h.chunk.id: h.score for h in hits if h.chunk.id in wanted}

    def lexical_scores(
        self, query: str, ids: Sequence[str], *, k1: float = 1.2, b: float = 0.75
    ) -> dict[str, float]:
        """The BM25 score of each chunk of ``ids`` sharing a term with ``query``, as
        :meth:`lexical_search` scores it (chunks sharing none and ids not stored left out).

        Raises:
            UnsupportedOperationError: the store has no lexical index (``lexical`` is False).
            ValueError: as for :meth:`lexical_search`; ``ids`` not a list of str.
        """
        self._check_lexical_query(query, k1, b, "lexical_scores")
        wanted = check_score_ids(ids, "lexical_scores")
        return self._lexical_scores(query, wanted, k1=k1, b=b)

    def _lexical_scores(
        self, query: str, ids: list[str], *, k1: float, b: float
    ) -> dict[str, float]:
        wanted = set(ids)
        if not wanted or len(self) == 0:
            return {}
        hits = self._lexical_search(query, len(self), None, k1=k1, b=b)
        return {h.chunk.id: h.score for h in hits if h.chunk.id in wanted}

    async def asimilarities(
        self, query_vector: Sequence[float], ids: Sequence[str]
    ) -> dict[str, float]:
        """Async :meth:`similarities`."""
        check_query_vector(query_vector, "similarities")
        return await self._asimilarities(query_vector, check_score_ids(ids, "similarities"))

    async def _asimilarities(
        self, query_vector: Sequence[float], ids: list[str]
    ) -> dict[str, float]:
        return await offload(self._similarities, query_vector, ids)
