"""The retriever port: text query in, scored chunks out (sync and async)."""

from __future__ import annotations

import functools
import inspect
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.text_splitter import TextSplitter
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["BaseRetriever", "retrieve_filtered"]


class BaseRetriever(ABC):
    """A retrieval strategy (vector search, BM25, hybrid, ...).

    Subclass it to plug your own strategy into ``GraphLLM(retriever=...)`` and
    ``retrieval_tool``. Only :meth:`retrieve` and :meth:`add_documents` are required:

    * :meth:`retrieve` takes ``(query, k=None, filter=None)``; a retriever that cannot filter
      by metadata may leave ``filter`` out (as the reference's ``BM25Retriever`` does): a
      filtered call then raises :class:`~pywrapai_graph.errors.ScopeError`;
    * :meth:`aretrieve` (same arguments) and :meth:`aadd_documents` run the sync methods in a
      bounded thread pool, so the async path never blocks the event loop; override them with
      native async code when your backend has it.

    ``retrieve_matching`` and ``search`` are the previous release's names of :meth:`retrieve`
    with a filter; they still work and warn (``DeprecationWarning``).
    """

    @abstractmethod
    def retrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Up to ``k`` chunks relevant to ``query``, best first; with ``filter``, only chunks
        whose metadata matches it.

        Raises:
            ScopeError: a ``filter`` this retriever cannot apply.
        """

    @abstractmethod
    def add_documents(self, docs: Sequence[Document], chunker: TextSplitter | None = None) -> int:
        """Index ``docs`` (split by ``chunker`` when given); returns the number of chunks added."""

    async def aretrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`retrieve`; never blocks the event loop."""
        return await offload(retrieve_filtered, self, query, k, filter)

    async def aadd_documents(
        self, docs: Sequence[Document], chunker: TextSplitter | None = None
    ) -> int:
        """Async :meth:`add_documents`."""
        return await offload(self.add_documents, docs, chunker)

    def retrieve_matching(
        self, query: str, filter: MetadataFilter, k: int | None = None
    ) -> list[ScoredChunk]:
        """Deprecated: ``retrieve(query, k, filter=filter)``."""
        _deprecated("retrieve_matching(query, filter, k)")
        return retrieve_filtered(self, query, k, filter)

    def search(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Deprecated: ``retrieve(query, k, filter=filter)``."""
        _deprecated("search(query, k, filter)")
        return retrieve_filtered(self, query, k, filter)


def _deprecated(old: str) -> None:
    warnings.warn(
        f"BaseRetriever.{old} is deprecated and goes in the next release; "
        "use retrieve(query, k=None, filter=None)",
        DeprecationWarning,
        stacklevel=3,
    )


@functools.cache
def _takes_filter(method: Callable[..., Any]) -> bool:
    """Whether a ``retrieve`` accepts a third argument (the filter)."""
    try:
        params = list(inspect.signature(method).parameters.values())[1:]  # without self
    except (TypeError, ValueError):  # a builtin or C method: assume the current signature
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    kinds = [p.kind for p in params]
    return kinds.count(positional[0]) + kinds.count(positional[1]) >= 3 or (
        inspect.Parameter.VAR_POSITIONAL in kinds
    )


def retrieve_filtered(
    retriever: BaseRetriever,
    query: str,
    k: int | None = None,
    filter: MetadataFilter | None = None,
) -> list[ScoredChunk]:
    """``retriever.retrieve(query, k, filter)``, for every retriever a user may have written:
    one whose ``retrieve`` has no filter parameter (the reference's example) is called without
    it, and a filter goes to its ``retrieve_matching`` when it overrides that (the previous
    release's way), else is refused.

    Raises:
        ScopeError: a filter for a retriever that cannot filter.
    """
    kind = type(retriever)
    if _takes_filter(kind.retrieve):
        return retriever.retrieve(query, k, filter)
    if not filter:
        return retriever.retrieve(query, k)
    if kind.retrieve_matching is not BaseRetriever.retrieve_matching:
        return retriever.retrieve_matching(query, filter, k)
    raise ScopeError(
        f"{kind.__name__} cannot filter by metadata: its retrieve() takes no filter; "
        "give it a filter parameter, or use VectorRetriever for per-request scope"
    )
