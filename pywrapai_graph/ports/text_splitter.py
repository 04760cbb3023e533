"""The text-splitter port: one document in, chunks out."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pywrapai_graph.domain import Chunk, Document

__all__ = ["TextSplitter"]


@runtime_checkable
class TextSplitter(Protocol):
    """Anything with ``split(doc) -> list[Chunk]``, such as ``Chunker``."""

    def split(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` into chunks carrying its id and metadata."""
        ...
