"""The Milvus store's rows and filter expressions. An expression compares SHA-256 digests only
(of ids, record keys, metadata items), so no caller's string is spliced into one (milvus-lite
takes no templates); a filter is ``array_contains(tags, <digest>)`` per key, of the key and the
value's canonical JSON (``True`` is not ``1``, ``1`` is ``1.0``, a list matches an equal list).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.version_records import Hit, StoredChunk, engine_id
from pywrapai_graph.application.text_analysis import STOP_WORDS, analyze
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.store_inputs import canonical_json

__all__ = ["CHUNK_SCHEMA", "RECORD_SCHEMA", "chunk_row", "digest", "hits_of"]
__all__ += ["is_in", "stored_of", "terms_of", "visible"]

#: Milvus's standard tokenizer over the library's analysed terms (``application.text_analysis``)
#: and our stop words, so the engine computes BM25 over the library's terms, dropping no more.
ANALYZER = {"tokenizer": "standard", "filter": [{"type": "stop", "stop_words": sorted(STOP_WORDS)}]}
#: bytes of analysed text one chunk may hold (a VARCHAR's limit)
MAX_TERMS = 65_535
#: metadata keys one chunk may carry (an ARRAY's capacity)
MAX_TAGS = 4_096
_KEY = ("VARCHAR", {"max_length": 64})
_TERMS = {"max_length": MAX_TERMS, "enable_analyzer": True, "analyzer_params": ANALYZER}
#: the chunks' fields: name -> (Milvus type, settings); the store gives ``dense`` its dim
CHUNK_SCHEMA: dict[str, tuple[str, dict[str, Any]]] = {
    "pk": ("VARCHAR", {"max_length": 64, "is_primary": True}),  # of the engine id
    "key": _KEY,  # of the chunk id
    "doc": _KEY,  # of the document id
    "version": _KEY,
    "hidden": ("BOOL", {}),  # a version not (or no longer) committed: see the store
    "body": ("JSON", {}),  # the chunk (id, document, text, metadata) and its embedder
    "terms": ("VARCHAR", _TERMS),  # the analysed text
    "tags": ("ARRAY", {"max_length": 64, "max_capacity": MAX_TAGS}),  # of metadata items
    "sparse": ("SPARSE_FLOAT_VECTOR", {}),  # BM25's, the engine's function of ``terms``
}
#: the records' fields (a one-value vector: Milvus wants one in every collection)
RECORD_SCHEMA = {"pk": CHUNK_SCHEMA["pk"], "pending": _KEY, "body": ("JSON", {})}
RECORD_SCHEMA["v"] = ("FLOAT_VECTOR", {"dim": 2})


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def is_in(field: str, digests: Iterable[str]) -> str:
    """``field in [...]`` over hex digests (safe to splice: hex only)."""
    return f"{field} in {json.dumps(list(digests))}"


def _tag(key: str, value: Any) -> str:
    return digest(canonical_json([key, value]))


def visible(filter: Mapping[str, Any] | None) -> str:
    """The expression of the shown chunks a metadata equality filter keeps."""
    tags = [f'array_contains(tags, "{_tag(k, v)}")' for k, v in (filter or {}).items()]
    return " and ".join(["hidden == false", *tags])


def terms_of(text: str) -> str:
    """The analysed text the engine's BM25 function reads."""
    return " ".join(analyze(text))


def chunk_row(
    chunk: Chunk, vector: list[float], version: str, hidden: bool, embedder: str
) -> dict[str, Any]:
    terms = terms_of(chunk.text)
    if len(terms.encode("utf-8", "surrogatepass")) > MAX_TERMS or len(chunk.metadata) > MAX_TAGS:
        raise InvalidArgumentError(
            f"chunk {chunk.id!r} is too large for Milvus: at most {MAX_TERMS} bytes of "
            f"analysed text and {MAX_TAGS} metadata keys; split it into smaller chunks"
        )
    body = {"id": chunk.id, "doc_id": chunk.doc_id, "text": chunk.text, "embedder": embedder}
    return {
        "pk": digest(engine_id(chunk.id, version)),
        "key": digest(chunk.id),
        "doc": digest(chunk.doc_id),
        "version": version,
        "hidden": hidden,
        "body": {**body, "metadata": dict(chunk.metadata)},
        "terms": terms,
        "tags": [_tag(k, v) for k, v in chunk.metadata.items()],
        "dense": vector,
    }


def stored_of(rows: Iterable[Mapping[str, Any]]) -> list[StoredChunk]:
    found = [(row["body"], str(row["version"])) for row in rows]
    return [StoredChunk(engine_id(b["id"], v), b["id"], v, b["doc_id"]) for b, v in found]


def hits_of(found: Sequence[Any], mode: str, n: int) -> list[Hit]:
    """The ``n`` best of a reply, ties by chunk id (as ``application.fusion``); cosines capped
    at 1; BM25 positive (milvus-lite reports them negated, a server as similarities). The
    embedder a hit was written under (if one was) is told to the caller's identity probe."""
    hits, stamp = [], ""
    for hit in found:
        score = float(hit["distance"])
        score = min(score, 1.0) if mode == "dense" else abs(score) if mode == "lexical" else score
        body = hit["entity"]["body"]
        chunk = Chunk(body["text"], doc_id=body["doc_id"], metadata=body["metadata"], id=body["id"])
        hits.append((ScoredChunk(chunk, score), str(hit["entity"]["version"])))
        stamp = stamp or body.get("embedder", "")
    if stamp:
        report_identity(EmbedderIdentity.from_json(stamp))
    return sorted(hits, key=lambda h: (-h[0].score, h[0].chunk.id))[:n]
