"""What a store remembers about each document and about the embedder that filled it."""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["DocumentManifest", "EmbedderIdentity"]


@dataclass(frozen=True, slots=True)
class EmbedderIdentity:
    """Which embedding model made a store's vectors: vectors of two identities never mix."""

    provider: str
    model: str
    dimension: int

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} ({self.dimension}d)"

    def to_json(self) -> str:
        """A stable JSON form, for stores that persist it."""
        return json.dumps(
            {"provider": self.provider, "model": self.model, "dimension": self.dimension},
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> EmbedderIdentity:
        """The identity :meth:`to_json` wrote."""
        data = json.loads(text)
        return cls(str(data["provider"]), str(data["model"]), int(data["dimension"]))


@dataclass(frozen=True, slots=True)
class DocumentManifest:
    """The record a store writes last, when every chunk of a document version is stored.

    A store returns a manifest only for a complete version, so "the same content hash and a
    manifest" is what makes a document unchanged.

    Attributes:
        doc_id: the document.
        content_hash: a digest of the text and of how it was chunked.
        chunk_count: how many chunks the version has.
        embedder: the embedding model that made its vectors.
    """

    doc_id: str
    content_hash: str
    chunk_count: int
    embedder: EmbedderIdentity

    def to_json(self) -> str:
        """Everything but the document id, as JSON (stores key their rows by the id)."""
        return json.dumps(
            {
                "content_hash": self.content_hash,
                "chunk_count": self.chunk_count,
                "embedder": json.loads(self.embedder.to_json()),
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, doc_id: str, text: str) -> DocumentManifest:
        """The manifest :meth:`to_json` wrote for ``doc_id``."""
        data = json.loads(text)
        return cls(
            doc_id,
            str(data["content_hash"]),
            int(data["chunk_count"]),
            EmbedderIdentity.from_json(json.dumps(data["embedder"])),
        )
