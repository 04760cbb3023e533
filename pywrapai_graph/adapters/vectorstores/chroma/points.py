"""How a Chroma chunk is laid out: its metadata as JSON and again as ``where`` fields, a
hidden flag (a version not committed, or replaced) and the embedder it was written under."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores.kit.versioned import ID_KEY, VERSION_KEY, Hit, StoredChunk
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_inputs import canonical_json

if TYPE_CHECKING:
    from chromadb.api.types import Include, QueryResult

__all__ = ["DOC", "EMBEDDER", "HIDDEN", "HITS", "chunk_metadata", "hits_of", "stored_of", "where"]

META = "pywrapai_meta"  # the chunk's metadata as JSON
DOC = "pywrapai_doc_id"
#: True on a chunk no reader may see (absent on chunks written before this key existed)
HIDDEN = "pywrapai_hidden"
#: the embedder identity recorded when the chunk was written ("" for none)
EMBEDDER = "pywrapai_embedder"
HITS: Include = ["documents", "metadatas", "distances"]


def _field(key: str, value: Any) -> tuple[str, Any]:
    """A metadata value as its ``where`` field: scalars as ``m.<key>``, lists and None (which
    Chroma cannot match by equality) as canonical JSON text in ``j.<key>``."""
    if isinstance(value, str | int | float | bool):
        return "m." + key, value
    return "j." + key, canonical_json(value)


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    fields = dict(_field(k, v) for k, v in chunk.metadata.items())
    return {META: metadata_json(chunk), DOC: chunk.doc_id, **fields}


def where(filter: MetadataFilter | None) -> Any:
    """The ``where`` of the shown chunks ``filter`` keeps."""
    clauses: list[Any] = [{HIDDEN: {"$ne": True}}]
    clauses += [dict([_field(k, v)]) for k, v in (filter or {}).items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def hits_of(result: QueryResult) -> list[list[Hit]]:
    """Each query's hits (with their versions) of one ``query`` result; the embedder one of
    them was written under is told to the caller's identity probe (none: the retriever asks)."""
    metas = result["metadatas"] or []
    rows = zip(
        result["ids"], result["documents"] or [], metas, result["distances"] or [], strict=True
    )
    hits = [[_hit(*hit) for hit in zip(*row, strict=True)] for row in rows]
    stamp = next((str(m[EMBEDDER]) for ms in metas for m in ms if m.get(EMBEDDER)), "")
    if stamp:
        report_identity(EmbedderIdentity.from_json(stamp))
    return hits


def _hit(engine_id: str, text: str | None, meta: Any, distance: float) -> Hit:
    chunk = Chunk(
        text=text or "",
        doc_id=str(meta[DOC]),
        metadata=json.loads(str(meta[META])),
        id=str(meta.get(ID_KEY, engine_id)),
    )
    return ScoredChunk(chunk, min(1.0 - float(distance), 1.0)), str(meta.get(VERSION_KEY, ""))


def stored_of(got: Any) -> list[StoredChunk]:
    return [
        StoredChunk(i, str(m.get(ID_KEY, i)), str(m.get(VERSION_KEY, "")), str(m.get(DOC, "")))
        for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
    ]
