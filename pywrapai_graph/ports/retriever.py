"""The retriever port: text query in, scored chunks out (sync and async)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.text_splitter import TextSplitter
from pywrapai_graph.ports.vector_store import MetadataFilter

__all__ = ["BaseRetriever"]


class BaseRetriever(ABC):
    """A retrieval strategy (vector search, BM25, hybrid, ...).

    Subclass it to plug your own strategy into ``GraphLLM(retriever=...)`` and
    ``retrieval_tool``. Only :meth:`retrieve` and :meth:`add_documents` are required:

    * :meth:`retrieve_matching` (a metadata filter, for per-request scope) raises
      :class:`~pywrapai_graph.errors.ScopeError` unless overridden;
    * :meth:`aretrieve` and :meth:`aadd_documents` run the sync methods in a bounded thread
      pool, so the async path never blocks the event loop; override them with native async
      code when your backend has it.
    """

    @abstractmethod
    def retrieve(self, query: str, k: int | None = None) -> list[ScoredChunk]:
        """Up to ``k`` chunks relevant to ``query``, best first."""

    @abstractmethod
    def add_documents(self, docs: Sequence[Document], chunker: TextSplitter | None = None) -> int:
        """Index ``docs`` (split by ``chunker`` when given); returns the number of chunks added."""

    def retrieve_matching(
        self, query: str, filter: MetadataFilter, k: int | None = None
    ) -> list[ScoredChunk]:
        """Like :meth:`retrieve`, keeping only chunks whose metadata matches ``filter``.

        Raises:
            ScopeError: this retriever cannot filter (the default; override to support it).
        """
        raise ScopeError(
            f"{type(self).__name__} cannot filter by metadata; override retrieve_matching() "
            "or use VectorRetriever for per-request scope"
        )

    def search(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """:meth:`retrieve` when ``filter`` is empty, else :meth:`retrieve_matching`."""
        if filter:
            return self.retrieve_matching(query, filter, k)
        return self.retrieve(query, k)

    async def aretrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`search` (``filter`` optional); never blocks the event loop."""
        return await offload(self.search, query, k, filter)

    async def aadd_documents(
        self, docs: Sequence[Document], chunker: TextSplitter | None = None
    ) -> int:
        """Async :meth:`add_documents`."""
        return await offload(self.add_documents, docs, chunker)
