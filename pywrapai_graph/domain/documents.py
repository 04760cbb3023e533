"""RAG values: a source document, a chunk of it, and a scored search hit."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pywrapai_graph.errors import ArgumentTypeError

__all__ = ["Chunk", "Document", "ScoredChunk"]


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class Document:
    """Raw text before chunking; ``id`` is a fresh UUID unless given."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=_new_id)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise ArgumentTypeError(f"Document.text must be str, got {type(self.text).__name__}")


@dataclass(slots=True)
class Chunk:
    """The unit that is embedded and stored.

    Mutable on purpose (as the reference says): ``embedding`` is None until it is set.
    """

    text: str
    doc_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=_new_id)
    embedding: list[float] | None = None


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A search hit: the chunk and its cosine similarity to the query (higher is closer)."""

    chunk: Chunk
    score: float
