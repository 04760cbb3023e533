"""The text-splitter port: one document in, chunks out."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from pywrapai_graph.domain import Chunk, Document

__all__ = ["StreamingTextSplitter", "TextSplitter"]


@runtime_checkable
class TextSplitter(Protocol):
    """Anything with ``split(doc) -> list[Chunk]``, such as ``Chunker``."""

    def split(self, doc: Document) -> list[Chunk]:
        """Split ``doc`` into chunks carrying its id and metadata."""
        ...


@runtime_checkable
class StreamingTextSplitter(TextSplitter, Protocol):
    """A splitter that can also hand out chunks as it finds them (``Chunker.iter_split``):
    ingest then embeds the first batches of a long document while the rest is split."""

    def iter_split(self, doc: Document) -> Iterator[Chunk]:
        """The chunks of :meth:`split`, one at a time."""
        ...
