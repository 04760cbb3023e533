"""The retriever port: text query in, scored chunks out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.ports.text_splitter import TextSplitter

__all__ = ["BaseRetriever"]


class BaseRetriever(ABC):
    """A retrieval strategy (vector search, BM25, hybrid, ...).

    Subclass it to plug your own strategy into ``GraphLLM(retriever=...)`` and
    ``retrieval_tool``.
    """

    @abstractmethod
    def retrieve(self, query: str, k: int | None = None) -> list[ScoredChunk]:
        """Up to ``k`` chunks relevant to ``query``, best first."""

    @abstractmethod
    def add_documents(self, docs: Sequence[Document], chunker: TextSplitter | None = None) -> int:
        """Index ``docs`` (split by ``chunker`` when given); returns the number of chunks added."""
