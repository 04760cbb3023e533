"""How ``BaseVectorStore``'s searches keep only hits equal to the filter, asking for more.

A store's search primitive returns its best hits; :class:`FilteredPages` keeps those whose
metadata is *equal* to the filter (``True`` is not ``1``: a store comparing with Python's
``==`` still gives the same answers as the others) and, when a full page lost hits that
way, says how many to ask for next (twice as many, up to :data:`MAX_K`). A store whose
search takes no filter at all (the reference's ``search(query_vector, k)``) is asked for
four times ``k`` at first: the filter is then applied here alone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.errors import ArgumentTypeError
from pywrapai_graph.ports.store_inputs import (
    MAX_K,
    check_filter,
    check_k,
    check_query_vector,
    matches_filter,
)
from pywrapai_graph.ports.sync_async import Core

__all__ = ["FilteredPages", "checked_filter", "checked_query_vectors"]

#: how many more hits a store that cannot filter is asked for at first, per hit wanted
_UNFILTERED_FIRST_PAGE = 4


def checked_filter(filter: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The filter after :func:`check_filter`, a tuple value given as the JSON list it is."""
    check_filter(filter)
    if filter and any(isinstance(v, tuple) for v in filter.values()):
        return {key: list(v) if isinstance(v, tuple) else v for key, v in filter.items()}
    return filter


def checked_query_vectors(query_vectors: object) -> list[Any]:
    """The query vectors of ``search_many`` as a list (an iterator is read once), each one
    following :func:`check_query_vector`."""
    if isinstance(query_vectors, str | bytes | Mapping) or not isinstance(query_vectors, Iterable):
        raise ArgumentTypeError(
            f"search_many() takes a list of query vectors, got a {type(query_vectors).__name__}"
        )
    vectors = list(query_vectors)
    for vector in vectors:
        check_query_vector(vector, "search_many")
    return vectors


class FilteredPages:
    """One search's ``k`` and filter, checked, and the pages of hits a store returned.

    Use: ``pages = FilteredPages(k, filter)``; ask the store for ``pages.asked`` hits, hand
    them to :meth:`keep`; while :meth:`more` says so, ask again for ``pages.asked``; the
    answer is :meth:`best`. :meth:`collect` is that loop, for ``drive`` / ``adrive``.
    """

    def __init__(
        self, k: int, filter: Mapping[str, Any] | None, *, store_filters: bool = True
    ) -> None:
        self.k = check_k(k)
        self.filter = checked_filter(filter)
        first = self.k if store_filters or not self.filter else self.k * _UNFILTERED_FIRST_PAGE
        self.asked = min(first, MAX_K)
        self._hits: Sequence[ScoredChunk] = []
        self._kept: list[ScoredChunk] = []

    def keep(self, hits: Sequence[ScoredChunk]) -> None:
        """Take one page of the store's hits, best first, keeping those equal to the filter."""
        self._hits = hits
        if not self.filter:
            self._kept = list(hits)
            return
        wanted = self.filter
        self._kept = [h for h in hits if matches_filter(h.chunk.metadata, wanted)]

    def of(self, hits: Sequence[ScoredChunk]) -> FilteredPages:
        """A copy of these pages (before any was kept) that keeps ``hits``: one query's
        pages of a batch."""
        pages = copy.copy(self)
        pages.keep(hits)
        return pages

    def more(self) -> bool:
        """True when the last page was full but the filter left fewer than ``k`` hits: the
        store should then be asked again for ``asked`` (now larger) hits."""
        lost = len(self._kept) < min(len(self._hits), self.k)
        if not lost or len(self._hits) < self.asked or self.asked >= MAX_K:
            return False
        self.asked = min(self.asked * 2, MAX_K)
        return True

    def collect(self) -> Core[FilteredPages, list[ScoredChunk]]:
        """The search, written once for the sync and async twins: yields these pages each
        time the store must be asked for ``asked`` hits (``filter``), is sent its page."""
        self.keep((yield self))
        while self.more():
            self.keep((yield self))
        return self.best()

    def best(self) -> list[ScoredChunk]:
        """The kept hits, at most ``k`` of them."""
        return self._kept[: self.k]
