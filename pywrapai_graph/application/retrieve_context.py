"""RetrieveContext: retrieval + D4 injection of the current message, sync or async."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pywrapai_graph.application.inject_context import inject_context, query_text
from pywrapai_graph.domain import Message, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import BaseRetriever, MetadataFilter
from pywrapai_graph.ports.retriever import retrieve_filtered
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["RetrieveContext"]


def _check_k(k: int) -> int:
    if not is_positive_int(k):
        raise InvalidArgumentError(f"rag_k must be a positive int, got {k!r}")
    return k


class RetrieveContext:
    """Retrieves chunks for the current user message and injects them (D4 template).

    The same steps serve both paths: :meth:`run` retrieves blocking, :meth:`arun` through
    the retriever's ``aretrieve`` (native async or the bounded offload), so the async path
    never blocks the event loop.

    Args:
        retriever: where chunks come from.
        k: how many chunks to inject at most, unless a call asks for another number.

    Raises:
        ValueError: ``k`` < 1.
    """

    def __init__(self, retriever: BaseRetriever, k: int = 4) -> None:
        self._retriever = retriever
        self._k = _check_k(k)

    @property
    def retriever(self) -> BaseRetriever:
        """The retriever in use."""
        return self._retriever

    @property
    def k(self) -> int:
        """The default number of chunks."""
        return self._k

    def run(
        self,
        current: Sequence[Message],
        *,
        k: int | None = None,
        filter: MetadataFilter | None = None,
    ) -> tuple[list[Message], list[ScoredChunk]]:
        """``current`` with its last user message augmented, and the injected chunks.

        Raises:
            ValueError: ``k`` < 1.
            ScopeError: ``filter`` given to a retriever that cannot filter.
        """
        search = functools.partial(retrieve_filtered, self._retriever)
        return drive(self._steps(current, k, filter), lambda query: search(*query))

    async def arun(
        self,
        current: Sequence[Message],
        *,
        k: int | None = None,
        filter: MetadataFilter | None = None,
    ) -> tuple[list[Message], list[ScoredChunk]]:
        """Async :meth:`run`."""
        return await adrive(
            self._steps(current, k, filter), lambda query: self._retriever.aretrieve(*query)
        )

    def _steps(
        self, current: Sequence[Message], k: int | None, filter: MetadataFilter | None
    ) -> Core[tuple[str, int, MetadataFilter | None], tuple[list[Message], list[ScoredChunk]]]:
        """:meth:`run` and :meth:`arun`, written once: yields the retrieval (query, k,
        filter) it needs, is sent the hits."""
        found = query_text(current)
        if found is None:
            return list(current), []
        wanted = self._k if k is None else _check_k(k)
        hits: list[ScoredChunk] = (yield found[1], wanted, filter)[:wanted]
        return inject_context(current, hits), hits
