"""BM25 term weights for engines that hold the lexical index themselves (Qdrant, Chroma).

Terms come from :func:`pywrapai_graph.application.text_analysis.analyze`. A chunk's BM25
score for a query is ``Σ_t idf(t) · w(t, d)`` over the distinct query terms ``t``, with::

    w(t, d) = tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
    idf(t)  = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

(the formula of :mod:`_lexical_index`, with a query term counted once). Where the engine
multiplies by ``idf`` itself (Qdrant's IDF modifier on a sparse vector), ``w`` is written
with the chunk and the query carries weight 1 per term; ``N`` and ``df`` are then the
engine's, current at query time.

``avgdl`` is the mean analysed length of the chunks the store has ever written, kept as two
running totals in the store's records (:class:`LengthTotals`). Each write weighs its chunks
with the mean including its own batch, then adds them to the totals. Concurrent writers may
lose each other's increments (no transaction spans the read and the write); the mean stays
a mean of written chunks, which is all it needs to be: on Cranfield, an ``avgdl`` off by a
factor of 0.5 to 1.25 moves nDCG@10 by under 0.005.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pywrapai_graph.application.text_analysis import analyze
from pywrapai_graph.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "LengthTotals",
    "check_fixed_bm25",
    "idf",
    "query_indices",
    "saturated",
    "term_index",
    "weights",
]

DEFAULT_K1 = 1.2
DEFAULT_B = 0.75


def term_index(term: str) -> int:
    """A term's stable sparse-vector index: CRC-32 of its UTF-8 bytes (same in every process)."""
    return zlib.crc32(term.encode("utf-8"))


def idf(df: int, n: int) -> float:
    """Lucene's non-negative BM25 idf (the one Qdrant's IDF modifier computes)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def saturated(tf: int, length: int, avgdl: float, k1: float, b: float) -> float:
    """``w(t, d)`` of the module docstring."""
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length / avgdl))


def weights(
    terms: Counter[str], avgdl: float, k1: float = DEFAULT_K1, b: float = DEFAULT_B
) -> tuple[list[int], list[float]]:
    """A chunk's sparse vector: sorted term indices and their saturated weights.

    Two terms hashing to one index (about one pair in 10^5 for a 300-term vocabulary per
    chunk) share it: their weights add up, as two occurrences of one term would score.
    """
    length = sum(terms.values())
    merged: dict[int, float] = {}
    for term, tf in terms.items():
        index = term_index(term)
        merged[index] = merged.get(index, 0.0) + saturated(tf, length, avgdl, k1, b)
    indices = sorted(merged)
    return indices, [merged[i] for i in indices]


def query_indices(query: str) -> list[int]:
    """The distinct term indices of a query (each weighs 1), sorted."""
    return sorted({term_index(t) for t in analyze(query)})


def check_fixed_bm25(k1: float, b: float, engine: str) -> None:
    """Engines that weigh terms when writing serve the default k1 and b only."""
    if (k1, b) != (DEFAULT_K1, DEFAULT_B):
        raise InvalidArgumentError(
            f"{engine} weighs terms when a chunk is written, with k1={DEFAULT_K1} and "
            f"b={DEFAULT_B}; got k1={k1}, b={b}. Use the defaults with this store (or "
            "PostgreSQL or an embedded store, which apply k1 and b per query)."
        )


@dataclass(frozen=True, slots=True)
class LengthTotals:
    """Running totals of analysed chunk lengths: how ``avgdl`` is kept (module docstring)."""

    tokens: int = 0
    chunks: int = 0

    @property
    def avgdl(self) -> float:
        return self.tokens / self.chunks if self.tokens and self.chunks else 1.0

    def plus(self, lengths: Sequence[int]) -> LengthTotals:
        return LengthTotals(self.tokens + sum(lengths), self.chunks + len(lengths))
