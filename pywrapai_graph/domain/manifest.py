"""What a store remembers about each document and about the embedder that filled it."""

from __future__ import annotations

import json
import re
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
        return cls._from_dict(doc_id, data, EmbedderIdentity._from_dict(data["embedder"]))

    @classmethod
    def _from_dict(cls, doc_id: str, data: Any, embedder: EmbedderIdentity) -> DocumentManifest:
        return cls(doc_id, str(data["content_hash"]), int(data["chunk_count"]), embedder)


#: What :meth:`DocumentManifest.to_json` writes (sorted keys, default separators), read
#: without a JSON parser: a content hash without escapes is its own JSON text, and the
#: embedder's JSON (the same in nearly every row) is parsed once per distinct text.
_WRITTEN = re.compile(
    r'\{"chunk_count": (0|[1-9][0-9]*), "content_hash": "([^"\\\x00-\x1f]*)", '
    r'"embedder": (\{.*\})\}',
    re.DOTALL,
)


def manifests_from_json(rows: Iterable[tuple[str, str]]) -> Iterator[tuple[str, DocumentManifest]]:
    """``(doc_id, manifest)`` for rows of ``(doc_id, DocumentManifest.to_json())``.

    What a store's batch lookup uses: the embedder, the same in nearly every row, is
    built once per distinct value; a row in :meth:`DocumentManifest.to_json`'s own form is
    read without a JSON parser (anything else is parsed as JSON, with the same result).
    """
    by_text: dict[str, EmbedderIdentity] = {}
    by_value: dict[tuple[Any, ...], EmbedderIdentity] = {}
    for doc_id, text in rows:
        written = _WRITTEN.fullmatch(text)
        if written is not None:
            count, digest, raw_embedder = written.groups()
            embedder = by_text.get(raw_embedder)
            if embedder is None:
                try:
                    parsed = json.loads(raw_embedder)
                except ValueError:  # more keys after the embedder: not our form after all
                    parsed = None
                if parsed is not None:
                    embedder = by_text[raw_embedder] = _identity(parsed, by_value)
            if embedder is not None:
                yield doc_id, DocumentManifest(doc_id, digest, int(count), embedder)
                continue
        data = json.loads(text)
        yield (
            doc_id,
            DocumentManifest._from_dict(doc_id, data, _identity(data["embedder"], by_value)),
        )


def _identity(raw: Any, known: dict[tuple[Any, ...], EmbedderIdentity]) -> EmbedderIdentity:
    """The identity of a parsed ``embedder`` object, built once per distinct value."""
    key = (raw.get("provider"), raw.get("model"), raw.get("dimension"))
    embedder = known.get(key)
    if embedder is None:
        embedder = known[key] = EmbedderIdentity._from_dict(raw)
    return embedder
