"""RetrieveContext: retrieval + D4 injection of the current message, sync or async."""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.application.inject_context import inject_context, query_text
from pywrapai_graph.domain import Message, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import BaseRetriever, MetadataFilter
from pywrapai_graph.ports.retriever import retrieve_filtered

__all__ = ["RetrieveContext"]


def _check_k(k: int) -> int:
    if not is_positive_int(k):
        raise InvalidArgumentError(f"rag_k must be a positive int, got {k!r}")
    return k


class RetrieveContext:
    """Retrieves chunks for the current user message and injects them (D4 template).

    The same steps serve both paths: :meth:`run` calls the retriever's ``search``,
    :meth:`arun` its ``aretrieve`` (native async or the bounded offload), so the async path
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

    def _query(self, current: Sequence[Message], k: int | None) -> tuple[str, int] | None:
        found = query_text(current)
        if found is None:
            return None
        return found[1], self._k if k is None else _check_k(k)

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
        query = self._query(current, k)
        if query is None:
            return list(current), []
        text, wanted = query
        hits = retrieve_filtered(self._retriever, text, wanted, filter)[:wanted]
        return inject_context(current, hits), hits

    async def arun(
        self,
        current: Sequence[Message],
        *,
        k: int | None = None,
        filter: MetadataFilter | None = None,
    ) -> tuple[list[Message], list[ScoredChunk]]:
        """Async :meth:`run`."""
        query = self._query(current, k)
        if query is None:
            return list(current), []
        text, wanted = query
        hits = (await self._retriever.aretrieve(text, wanted, filter))[:wanted]
        return inject_context(current, hits), hits
