"""How the Qdrant store lays chunks out as points: ids, payload fields, sparse vector names."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_inputs import canonical_json

__all__ = [
    "CARRIER",
    "DOCUMENT_SPARSE",
    "EMBEDDER",
    "FIELDS",
    "HIDDEN",
    "SPARSE",
    "TERMS",
    "chunk_of",
    "hits_of",
    "metadata_conditions",
    "metadata_fields",
    "point_id",
    "version_of",
]

# Non-UUID chunk ids map to stable UUIDv5 point ids; the original id stays in the payload.
_ID_NAMESPACE = uuid.UUID("2b9d0c7e-61c4-4a53-8e0f-5f0c3f7b1a44")
#: the sparse vectors of a chunk's BM25 term weights and its document's
SPARSE = "pywrapai_bm25"
DOCUMENT_SPARSE = "pywrapai_bm25_doc"
#: a chunk's own distinct term indices (a lexical query ranks only chunks holding a term)
TERMS = "pywrapai_terms"
#: the payload flag of one chunk per document version: the document IDF's corpus
CARRIER = "pywrapai_carrier"
#: a chunk hidden from searches (a version not committed, or replaced), and its embedder
HIDDEN = "pywrapai_hidden"
EMBEDDER = "pywrapai_embedder"

# Metadata again under hex-encoded keys (Qdrant's key paths split on '.' and refuse quotes):
# scalars under ``k<hex>``, lists and None under ``j<hex>`` as canonical JSON text (Qdrant
# matches an array when *any* element matches, and cannot match null).
FIELDS = "pywrapai_fields"


def _field(key: str, value: Any) -> str:
    kind = "k" if isinstance(value, str | int | float | bool) else "j"
    return f"{FIELDS}.{kind}{key.encode('utf-8').hex()}"


def metadata_fields(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {
        _field(k, v).split(".", 1)[1]: v
        if isinstance(v, str | int | float | bool)
        else canonical_json(v)
        for k, v in metadata.items()
    }


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk id (the id itself when it is a UUID)."""
    try:
        return str(uuid.UUID(chunk_id))
    except ValueError:
        return str(uuid.uuid5(_ID_NAMESPACE, chunk_id))


def chunk_of(payload: dict[str, Any] | None) -> Chunk:
    """The chunk a point's payload carries (every point this store writes has one)."""
    if payload is None:
        raise VectorStoreError("a Qdrant point has no payload: not a point this store wrote")
    return Chunk(
        text=payload["text"],
        doc_id=payload["doc_id"],
        metadata=dict(payload.get("metadata") or {}),
        id=payload["id"],
    )


def version_of(payload: dict[str, Any] | None) -> str:
    return str((payload or {}).get("version", ""))


def metadata_conditions(m: Any, filter: Mapping[str, Any] | None) -> list[Any]:
    """The Qdrant conditions (``m``: ``qdrant_client.models``) of a metadata filter."""
    conditions = []
    for key, value in (filter or {}).items():
        field = _field(key, value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            # a range, not a match: MatchValue(1) misses a stored 1.0 (other stores match)
            conditions.append(m.FieldCondition(key=field, range=m.Range(gte=value, lte=value)))
        else:  # a scalar, or a list/None as the canonical JSON text written next to it
            wanted = value if isinstance(value, bool | int | str) else canonical_json(value)
            conditions.append(m.FieldCondition(key=field, match=m.MatchValue(value=wanted)))
    return conditions


def hits_of(points: Sequence[Any], cosine: bool = True) -> list[Hit]:
    """Scored points as hits (a cosine capped at 1) with their versions; the embedder of one is
    told to the caller's identity probe."""
    stamps = ((p.payload or {}).get(EMBEDDER) for p in points)
    stamp = next((str(s) for s in stamps if s), "")
    if stamp:
        report_identity(EmbedderIdentity.from_json(stamp))
    return [
        (
            ScoredChunk(chunk_of(p.payload), min(float(p.score), 1.0) if cosine else p.score),
            version_of(p.payload),
        )
        for p in points
    ]
