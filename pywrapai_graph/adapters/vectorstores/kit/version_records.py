"""The values and pure rules of versioned documents (``versioned``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pywrapai_graph.domain import Chunk, ScoredChunk

__all__ = [
    "ID_KEY",
    "REPAIR_MARK",
    "VERSION_KEY",
    "DocRecord",
    "Hit",
    "StoredChunk",
    "committed_of",
    "docs_of",
    "engine_id",
    "next_ask",
    "seen_ns",
    "settle",
    "stale",
    "visible_of",
]

#: metadata/payload keys on each chunk
VERSION_KEY = "pywrapai_version"
ID_KEY = "pywrapai_id"


def engine_id(chunk_id: str, version: str) -> str:
    """The id a chunk of ``version`` is stored under (its own id when unversioned)."""
    return f"{chunk_id}@{version}" if version else chunk_id


#: One engine hit: the chunk with its score, and the version it was written under.
Hit = tuple[ScoredChunk, str]


def next_ask(k: int, asked: int, hits: list[Hit], visible: int) -> int:
    """How many hits to ask the engine for next, or 0 when the visible ones are the answer
    (engines answer a request for more than they hold with what they hold)."""
    if visible >= k or len(hits) < asked:
        return 0
    return asked * 2 + (len(hits) - visible)


def docs_of(pairs: Iterable[tuple[Any, str]]) -> list[str]:
    return sorted({(p.chunk if isinstance(p, ScoredChunk) else p).doc_id for p, _ in pairs})


def _committed(doc_id: str, version: str, known: dict[str, DocRecord]) -> bool:
    """Whether ``version`` is the committed one of ``doc_id`` (``""`` without a record)."""
    return version == (known[doc_id].version if doc_id in known else "")


def committed_of(pairs: list[tuple[Chunk, str]], known: dict[str, DocRecord]) -> list[Chunk]:
    return [c for c, version in pairs if _committed(c.doc_id, version, known)]


def visible_of(hits: list[Hit], known: dict[str, DocRecord]) -> list[ScoredChunk]:
    return [h for h, version in hits if _committed(h.chunk.doc_id, version, known)]


@dataclass(frozen=True, slots=True)
class DocRecord:
    """What the store knows of one document's versions."""

    doc_id: str
    version: str = ""
    manifest: str = ""
    pending: str = ""


#: Record ids of repair marks (``manifest`` = ``<ns, hex>:<version>``: when a repair first
#: saw it pending), records of their own: marking never writes a record being committed.
REPAIR_MARK = "\u2063pywrapai-repair-seen:"


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as the engine holds it: engine id, the caller's id, its version."""

    engine_id: str
    chunk_id: str
    version: str
    doc_id: str


def seen_ns(mark: DocRecord | None, pending: str) -> int | None:
    """When a repair first saw ``pending`` pending, if one did."""
    when, colon, version = mark.manifest.partition(":") if mark else ("", "", "")
    if not colon or version != pending:
        return None
    try:
        return int(when, 16)
    except ValueError:
        return None


def stale(record: DocRecord, stored: list[StoredChunk]) -> list[str]:
    """The engine ids of the chunks ``record`` makes stale."""
    if record.pending == record.version:  # committed: the other versions are stale
        return [c.engine_id for c in stored if c.version != record.version]
    return [c.engine_id for c in stored if c.version == record.pending]  # never committed


def settle(
    batches: list[list[Hit]], known: dict[str, DocRecord], k: int
) -> list[list[ScoredChunk] | None]:
    """Each query's visible top ``k``, or None where it must be searched again alone."""
    out: list[list[ScoredChunk] | None] = []
    for hits in batches:
        visible = visible_of(hits, known)
        out.append(None if next_ask(k, k, hits, len(visible)) else visible[:k])
    return out
