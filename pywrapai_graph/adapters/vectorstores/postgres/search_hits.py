"""The hits of PGVectorStore's search statements, and the embedder identity read with them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.postgres.text import from_pg
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports.identity_probe import report_identity

__all__ = ["scored_row", "search_hits"]


def scored_row(row: Sequence[Any], *, clamp: bool = True) -> ScoredChunk:
    """A hit from a row of ``id, doc_id, text, metadata, score`` (a cosine, at most 1, unless
    ``clamp`` is False: a fused score)."""
    chunk = Chunk(text=from_pg(row[2]), doc_id=row[1], metadata=dict(row[3]), id=row[0])
    score = float(row[4])
    return ScoredChunk(chunk, min(score, 1.0) if clamp else score)


def search_hits(rows: list[Any], *, clamp: bool = True) -> list[ScoredChunk]:
    """The hits of a search statement, best first; each row ends with the recorded embedder
    identity (JSON or NULL), read by the same statement and told to the caller's identity
    probe (:mod:`...ports.identity_probe`) at no extra round trip."""
    if rows:
        value = rows[0][5]
        report_identity(None if value is None else EmbedderIdentity.from_json(value))
    hits = [scored_row(r, clamp=clamp) for r in rows]
    hits.sort(key=lambda h: h.score, reverse=True)  # relaxed_order may permute slightly
    return hits
