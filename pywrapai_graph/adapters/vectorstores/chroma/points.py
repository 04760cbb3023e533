"""How the Chroma store lays chunks out: each chunk's metadata as JSON and again flattened
for Chroma's ``where`` filters, whether it is hidden (a version not committed, or replaced)
and the embedder recorded when it was written; and the hits and stored copies read back."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores.kit.versioned import ID_KEY, VERSION_KEY, Hit, StoredChunk
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.store_inputs import canonical_json

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import GetResult, Include, QueryResult

__all__ = [
    "DOC",
    "EMBEDDER",
    "HIDDEN",
    "HITS",
    "chunk_metadata",
    "chunk_of",
    "found_of",
    "ids_where",
    "paged_chunks",
    "pages",
    "stored_of",
    "visible_where",
]

_PAGE = 5000  # chunks per request of a paged read

META = "pywrapai_meta"  # the chunk's metadata as JSON
DOC = "pywrapai_doc_id"
FIELD = "m."  # scalar metadata values, flattened for Chroma's where filters
# lists and None as canonical JSON text: Chroma cannot match either by equality
JSON_FIELD = "j."
SCALARS = (str, int, float, bool)
#: True on a chunk no reader may see (absent on chunks written before this key existed)
HIDDEN = "pywrapai_hidden"
#: the embedder identity recorded when the chunk was written ("" for none)
EMBEDDER = "pywrapai_embedder"

HITS: Include = ["documents", "metadatas", "distances"]


def chunk_of(engine_id: str, text: str | None, meta: Any) -> tuple[Chunk, str]:
    """The chunk a stored row carries (its text and metadata), and its version."""
    chunk = Chunk(
        text=text or "",
        doc_id=str(meta[DOC]),
        metadata=json.loads(str(meta[META])),
        id=str(meta.get(ID_KEY, engine_id)),
    )
    return chunk, str(meta.get(VERSION_KEY, ""))


def pages(collection: Collection, include: Include, where: Any = None) -> Iterator[GetResult]:
    """The records ``where`` selects, one ``get`` of :data:`_PAGE` records at a time (a page
    that comes back short is the last; an empty one is not yielded)."""
    offset = 0
    while True:
        got = collection.get(where=where, include=include, limit=_PAGE, offset=offset)
        if got["ids"]:
            yield got
        if len(got["ids"]) < _PAGE:
            return
        offset += len(got["ids"])


def paged_chunks(collection: Collection, where: Any) -> list[tuple[Chunk, str]]:
    """Every chunk (with its version) ``where`` selects, read a page at a time."""
    return [
        pair
        for got in pages(collection, ["documents", "metadatas"], where)
        for pair in map(chunk_of, got["ids"], got["documents"] or [], got["metadatas"] or [])
    ]


def found_of(result: QueryResult) -> tuple[list[list[Hit]], str]:
    """Each query's hits (with their chunk versions) from one ``query`` result, and an
    embedder identity (JSON) one of them was written under ("" when none was)."""
    rows = zip(
        result["ids"],
        result.get("documents") or [],
        result.get("metadatas") or [],
        result.get("distances") or [],
        strict=True,
    )
    stamp = ""
    hits: list[list[Hit]] = []
    for row in rows:
        hits.append([])
        for chunk_id, doc, meta, distance in zip(*row, strict=True):
            chunk, version = chunk_of(chunk_id, doc, meta)
            hits[-1].append((ScoredChunk(chunk, min(1.0 - float(distance), 1.0)), version))
            stamp = stamp or str(meta.get(EMBEDDER) or "")
    return hits, stamp


def ids_where(ids: Sequence[str]) -> Any:
    """The ``where`` of the chunks (any version) with these chunk ids."""
    return {ID_KEY: {"$in": list(ids)}}


def visible_where(filter: MetadataFilter | None) -> Any:
    """The ``where`` of the visible chunks ``filter`` keeps."""
    clauses: list[dict[str, Any]] = [{HIDDEN: {"$ne": True}}]
    for key, value in (filter or {}).items():
        if isinstance(value, SCALARS):
            clauses.append({FIELD + key: value})
        else:  # a list or None: the canonical JSON text written next to it
            clauses.append({JSON_FIELD + key: canonical_json(value)})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    out: dict[str, Any] = {META: metadata_json(chunk), DOC: chunk.doc_id}
    for key, value in chunk.metadata.items():
        if isinstance(value, SCALARS):
            out[FIELD + key] = value
        else:
            out[JSON_FIELD + key] = canonical_json(value)
    return out


def stored_of(got: Any) -> list[StoredChunk]:
    return [
        StoredChunk(i, str(m.get(ID_KEY, i)), str(m.get(VERSION_KEY, "")), str(m.get(DOC, "")))
        for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
    ]
