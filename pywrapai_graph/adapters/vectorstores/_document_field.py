"""The document field of engine-served lexical search (Qdrant, Chroma), engine-neutral part.

A chunk ``c`` of document ``D`` scores ``BM25(q, c) + DOCUMENT_WEIGHT · BM25(q, D)``, ``D``
being the concatenation of its chunks, each without the start it repeats from the chunk
before it (``text_analysis.document_parts``: Chunker's overlap counts once). Chunks are taken
in the order of their write; stored chunks a write keeps (a plain ``add`` to a document, a
``delete`` of some of its chunks, an upgrade) in the order the engine lists them. The engine
holds the document statistics: of the chunks of one document version, exactly one (its
*carrier*) holds the document's terms in a second field (Qdrant: a second sparse vector with
the IDF modifier; Chroma: metadata), so the engine's document frequencies count documents,
and a version's field goes with its chunks when they are deleted. Documents are written
whole by ``replace_document``; a plain ``add`` or ``delete`` of some chunks of a document
writes its field again from every chunk the document then has (:func:`plan_writes`).

A query asks the engine for the chunks and the documents best matching it, then for the
chunks of those documents and the documents of those chunks, and adds the two scores of
each chunk (:func:`combine`): a chunk takes the score of its own version's document only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pywrapai_graph.adapters.vectorstores._version_records import Hit, engine_id
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk

__all__ = [
    "DOCUMENT_SHORTLIST",
    "FIELDED_SHORTLIST",
    "STRONG_DOCUMENTS",
    "Group",
    "GroupChunk",
    "WritePlan",
    "combine",
    "document_counts",
    "plan_writes",
]

#: One document version: (doc_id, version).
Group = tuple[str, str]
#: chunks asked of the engine per fielded query, at least
FIELDED_SHORTLIST = 100
#: documents asked of the engine per fielded query (only their ids and scores come back)
DOCUMENT_SHORTLIST = 300
#: the best documents whose chunks are asked for as well
STRONG_DOCUMENTS = 30


@dataclass(frozen=True, slots=True)
class GroupChunk:
    """A stored chunk of a document version, as the document field needs it."""

    engine_id: str
    text: str
    #: it holds the document field now
    carries: bool
    #: the engine's own record of it (a Qdrant point), when rewriting it needs one
    raw: Any = None


@dataclass(slots=True)
class WritePlan:
    """Where a batch's document fields go: the carriers' terms by batch index, and the
    stored chunks whose field moves to a carrier of the batch (to be cleared)."""

    carriers: dict[int, Counter[str]] = field(default_factory=dict)
    clear: list[GroupChunk] = field(default_factory=list)


def document_counts(texts: Sequence[str]) -> Counter[str]:
    """A document's term frequencies from its chunks in order: the sum of their parts'."""
    counts: Counter[str] = Counter()
    for part in document_parts(texts, [""] * len(texts)):
        counts.update(analyze(part))
    return counts


def plan_writes(
    chunks: Sequence[Chunk], versions: Sequence[str], stored: dict[Group, list[GroupChunk]]
) -> WritePlan:
    """The document fields of a batch: each document version's first chunk in the batch
    carries the terms of its stored chunks the batch leaves, then of the batch's chunks."""
    written = {engine_id(c.id, v) for c, v in zip(chunks, versions, strict=True)}
    groups: dict[Group, list[int]] = {}  # the batch indices of each document version
    for i, (chunk, version) in enumerate(zip(chunks, versions, strict=True)):
        groups.setdefault((chunk.doc_id, version), []).append(i)
    plan = WritePlan()
    for group, indices in groups.items():
        kept = [g for g in stored.get(group, []) if g.engine_id not in written]
        texts = [g.text for g in kept] + [chunks[i].text for i in indices]
        plan.carriers[indices[0]] = document_counts(texts)
        plan.clear += [g for g in kept if g.carries]
    return plan


def combine(hits: Iterable[Hit], documents: dict[Group, float]) -> list[Hit]:
    """Each chunk hit once, scored ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(its document)``
    (its own version's document), best first, ties by chunk id."""
    out: dict[str, Hit] = {}
    for scored, version in hits:
        chunk = scored.chunk
        score = scored.score + DOCUMENT_WEIGHT * documents.get((chunk.doc_id, version), 0.0)
        out[engine_id(chunk.id, version)] = (ScoredChunk(chunk, score), version)
    return sorted(out.values(), key=lambda h: (-h[0].score, h[0].chunk.id))
