"""The vector-store port: the reference's ``BaseVectorStore`` ABC, plus what real users need."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, Self

from pywrapai_graph.domain import Chunk, ScoredChunk

__all__ = ["BaseVectorStore", "MetadataFilter"]

#: Metadata equality filter: every key must be present with exactly this value.
MetadataFilter = Mapping[str, Any]


class BaseVectorStore(ABC):
    """Stores embedded chunks and finds the nearest ones to a query vector.

    Every backend behaves the same:

    * ``add`` upserts by chunk id (adding an id again replaces it) and is all-or-nothing: a
      batch with any bad vector (missing, NaN/inf, zero norm, wrong dimension) raises
      ``ValueError`` naming the chunk and the problem, and the store is left as it was.
    * ``search`` returns at most ``k`` hits, highest cosine similarity first, whatever the
      engine's native measure; an empty store gives ``[]``. Returned chunks carry no
      embedding (``chunk.embedding is None``).
    * ``filter`` keeps chunks whose metadata has every given key with an equal value.

    Capability flags (properties, as some depend on the mode a store was opened in) tell
    the contract suite what a backend promises: ``persistent`` (data survives closing and
    reopening) and ``exact`` (exhaustive, not approximate, search).
    """

    @property
    def persistent(self) -> bool:
        """Data survives closing and reopening the store."""
        return False

    @property
    def exact(self) -> bool:
        """Search is exhaustive, not approximate."""
        return True

    @abstractmethod
    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (each must have ``embedding`` set).

        Raises:
            ValueError: any chunk lacks a usable embedding; nothing is written.
        """

    @abstractmethod
    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector``, best first.

        Raises:
            ValueError: the query has the wrong dimension, NaN/inf or zero norm, or k < 1.
        """

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> int:
        """Remove chunks by id (unknown ids are ignored); returns how many were removed."""

    @abstractmethod
    def delete_by_doc(self, doc_id: str) -> int:
        """Remove every chunk of one document; returns how many were removed."""

    @abstractmethod
    def clear(self) -> None:
        """Remove every chunk."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored chunks."""

    def close(self) -> None:  # noqa: B027 - optional hook, most stores hold nothing
        """Release connections and file locks (no-op for stores that hold none)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
