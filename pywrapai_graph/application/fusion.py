"""Fusing ranked lists of chunks: reciprocal-rank fusion and weighted score fusion.

Both key hits by chunk id, keep the first copy of each chunk, and break ties by chunk id so
the fused order never depends on dict or engine order.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["DEFAULT_RRF_K", "fusion_problem", "reciprocal_rank_fusion", "weighted_score_fusion"]

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
        ValueError: rrf_k not a finite number >= 0, or weights of the wrong length, NaN,
            infinite or negative.
    """
    problem = fusion_problem(weights, len(rankings), rrf_k)
    if problem:
        raise InvalidArgumentError(problem)
    w = [1.0] * len(rankings) if weights is None else weights
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
        ValueError: weights of the wrong length, NaN, infinite or negative.
    """
    problem = fusion_problem(weights, len(rankings))
    if problem:
        raise InvalidArgumentError(problem)
    w = [1.0] * len(rankings) if weights is None else weights
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


def _finite(x: object, low: float = 0.0) -> bool:
    """A real number (not a bool), finite, at least ``low``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return False
    value = float(x)
    return math.isfinite(value) and value >= low


def fusion_problem(weights: object, n: int, rrf_k: object = DEFAULT_RRF_K) -> str | None:
    """What is wrong with these fusion settings for ``n`` lists, or None.

    ``weights`` (None: all 1) must be ``n`` finite numbers >= 0 and ``rrf_k`` one: a NaN
    weight makes every fused score NaN, and the order arbitrary.
    """
    if not _finite(rrf_k):
        return f"rrf_k must be a finite number >= 0, got {rrf_k!r}"
    if weights is None:
        return None
    if isinstance(weights, str | bytes) or not isinstance(weights, Sequence):
        return f"weights are {n} numbers, got {weights!r:.60}"
    if len(weights) != n or not all(_finite(x) for x in weights):
        return f"need {n} finite, non-negative weights, got {list(weights)!r:.80}"
    return None
