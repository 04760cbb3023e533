"""Fusing ranked lists of chunks: reciprocal-rank fusion and weighted score fusion.

Both key hits by chunk id, keep the first copy of each chunk, and break ties by chunk id so
the fused order never depends on dict or engine order.
"""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["DEFAULT_RRF_K", "reciprocal_rank_fusion", "weighted_score_fusion"]

#: The constant of Cormack, Clarke and Büttcher (2009): ranks past ~60 barely matter.
DEFAULT_RRF_K = 60


def _ranked(scores: dict[str, float], chunks: dict[str, Chunk], k: int | None) -> list[ScoredChunk]:
    order = sorted(scores, key=lambda cid: (-scores[cid], cid))
    return [ScoredChunk(chunks[cid], scores[cid]) for cid in order[:k]]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[ScoredChunk]],
    *,
    rrf_k: int = DEFAULT_RRF_K,
    weights: Sequence[float] | None = None,
    k: int | None = None,
) -> list[ScoredChunk]:
    """Fuse ranked lists by ``score(c) = Σ_i w_i / (rrf_k + rank_i(c))`` (ranks start at 1).

    A chunk missing from a list gets nothing from it. Only ranks matter, so lists with
    incomparable scores (cosine and BM25) fuse without normalisation.

    Raises:
        ValueError: rrf_k < 0, or weights of the wrong length or negative.
    """
    if rrf_k < 0:
        raise InvalidArgumentError(f"rrf_k must be >= 0, got {rrf_k}")
    w = _weights(weights, len(rankings))
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            cid = hit.chunk.id
            chunks.setdefault(cid, hit.chunk)
            scores[cid] = scores.get(cid, 0.0) + weight / (rrf_k + rank)
    return _ranked(scores, chunks, k)


def weighted_score_fusion(
    rankings: Sequence[Sequence[ScoredChunk]],
    *,
    weights: Sequence[float] | None = None,
    k: int | None = None,
) -> list[ScoredChunk]:
    """Fuse by ``Σ_i w_i · norm_i(score)``, each list's scores min-max scaled to [0, 1].

    A list whose scores are all equal scales them to 1; a chunk missing from a list gets 0
    from it.

    Raises:
        ValueError: weights of the wrong length or negative.
    """
    w = _weights(weights, len(rankings))
    scores: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for weight, ranking in zip(w, rankings, strict=True):
        if not ranking:
            continue
        low = min(h.score for h in ranking)
        span = max(h.score for h in ranking) - low
        for hit in ranking:
            cid = hit.chunk.id
            chunks.setdefault(cid, hit.chunk)
            scaled = (hit.score - low) / span if span > 0 else 1.0
            scores[cid] = scores.get(cid, 0.0) + weight * scaled
    return _ranked(scores, chunks, k)


def _weights(weights: Sequence[float] | None, n: int) -> Sequence[float]:
    if weights is None:
        return [1.0] * n
    if len(weights) != n or any(x < 0 for x in weights):
        raise InvalidArgumentError(f"need {n} non-negative weights, got {list(weights)}")
    return weights
