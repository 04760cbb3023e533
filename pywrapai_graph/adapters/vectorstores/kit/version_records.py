"""The values and pure rules of versioned documents (``versioned``)."""

from __future__ import annotations

from dataclasses import dataclass

from pywrapai_graph.domain import ScoredChunk

__all__ = [
    "ID_KEY",
    "REPAIR_MARK",
    "VERSION_KEY",
    "DocRecord",
    "Hit",
    "StoredChunk",
    "engine_id",
    "seen_ns",
    "stale",
]

#: metadata/payload keys on each chunk
VERSION_KEY = "pywrapai_version"
ID_KEY = "pywrapai_id"


def engine_id(chunk_id: str, version: str) -> str:
    """The id a chunk of ``version`` is stored under (its own id when unversioned)."""
    return f"{chunk_id}@{version}" if version else chunk_id


#: One engine hit: the chunk with its score, and the version it was written under.
Hit = tuple[ScoredChunk, str]


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
