"""What a store remembers about each document and about the embedder that filled it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DocumentManifest", "EmbedderIdentity", "manifests_from_json"]


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
        return cls._from_dict(json.loads(text))

    @classmethod
    def _from_dict(cls, data: Any) -> EmbedderIdentity:
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
        embedder = EmbedderIdentity._from_dict(data["embedder"])
        return cls(doc_id, str(data["content_hash"]), int(data["chunk_count"]), embedder)


def manifests_from_json(rows: Iterable[tuple[str, str]]) -> Iterator[tuple[str, DocumentManifest]]:
    """``(doc_id, manifest)`` for rows of ``(doc_id, DocumentManifest.to_json())`` (what a
    store's batch lookup reads)."""
    for doc_id, text in rows:
        yield doc_id, DocumentManifest.from_json(doc_id, text)
